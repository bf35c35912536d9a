// The reference comparison: which cases another runtime passes that cleave does not.
#include "conformance/reference.h"

#include <fmt/core.h>
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>
#include <map>

namespace cleave {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kTrainingDomain = "ai.onnx.preview.training";

bool is_string_type(const onnx::TypeProto& type) {
  switch (type.value_case()) {
    case onnx::TypeProto::kTensorType:
      return type.tensor_type().elem_type() == onnx::TensorProto::STRING;
    case onnx::TypeProto::kSequenceType:
      return is_string_type(type.sequence_type().elem_type());
    case onnx::TypeProto::kOptionalType:
      return is_string_type(type.optional_type().elem_type());
    default:
      return false;
  }
}

}  // namespace

std::set<std::string> read_reference_passes(const std::string& path) {
  std::set<std::string> passes;
  for (const auto& [name, status] :
       read_case_lines(path, "the reference results file", {"pass", "fail", "error"})) {
    if (status == "pass") passes.insert(name);
  }
  return passes;
}

std::string reference_exclusion(const std::string& directory) {
  const fs::path file = fs::path(directory) / "model.onnx";
  std::ifstream in(file, std::ios::binary);
  onnx::ModelProto model;
  if (!in || !model.ParseFromIstream(&in)) return "";  // The case itself reports the problem.
  for (const onnx::NodeProto& node : model.graph().node()) {
    if (node.domain() == kTrainingDomain) {
      return fmt::format("training domain op {}", node.op_type());
    }
  }
  for (const auto* values : {&model.graph().input(), &model.graph().output()}) {
    for (const onnx::ValueInfoProto& value : *values) {
      if (is_string_type(value.type())) return fmt::format("string tensor '{}'", value.name());
    }
  }
  return "";
}

ReferenceComparison compare_with_reference(
    const std::vector<std::pair<std::string, std::string>>& cases,
    const std::vector<CaseResult>& results, const std::set<std::string>& reference_passes) {
  std::map<std::string, std::string> directories;
  for (const auto& [directory, name] : cases) directories[name] = directory;
  ReferenceComparison comparison;
  for (const CaseResult& result : results) {
    if (!reference_passes.count(result.name)) continue;
    auto found = directories.find(result.name);
    if (found != directories.end() && !reference_exclusion(found->second).empty()) {
      ++comparison.excluded;
      continue;
    }
    ++comparison.reference_passed;
    if (result.status == CaseStatus::kPass) {
      ++comparison.both_passed;
    } else {
      comparison.missing.push_back(result);
    }
  }
  return comparison;
}

}  // namespace cleave
