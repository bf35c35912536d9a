// Split manifests: parsing, path confinement to the folder, and consistency of the transfers.
#include "distributed/split_manifest.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "runtime/tensor.h"
#include "support/json_file.h"

namespace cleave {

namespace fs = std::filesystem;

DataType split_dtype(const std::string& name, const std::string& where) {
  static const std::map<std::string, DataType> kNames = {
      {"float32", DataType::kFloat},  {"float16", DataType::kFloat16},
      {"float64", DataType::kDouble}, {"int8", DataType::kInt8},
      {"uint8", DataType::kUInt8},    {"int32", DataType::kInt32},
      {"int64", DataType::kInt64},    {"bool", DataType::kBool}};
  auto found = kNames.find(name);
  if (found == kNames.end()) {
    throw Error(
        fmt::format("{}: dtype '{}' is not one of float32, float16, float64, int8, uint8, "
                    "int32, int64, bool",
                    where, name));
  }
  return found->second;
}

namespace {

std::vector<int64_t> read_shape(const nlohmann::json& json, const std::string& where) {
  std::vector<int64_t> shape = json.get<std::vector<int64_t>>();
  for (int64_t d : shape) {
    if (d < 0) throw Error(fmt::format("{}: negative dimension in shape", where));
  }
  return shape;
}

SplitTensor read_tensor(const nlohmann::json& json, const std::string& where) {
  SplitTensor tensor;
  tensor.name = json.at("name").get<std::string>();
  tensor.dtype = split_dtype(json.at("dtype").get<std::string>(), where);
  tensor.shape = read_shape(json.at("shape"), where);
  tensor.machine = json.value("machine", 0);
  return tensor;
}

// A sub-model path must name a file inside the folder: no absolute path, nothing that climbs
// out of it (also through a symbolic link).
std::string confined_path(const std::string& folder, const std::string& relative,
                          const std::string& where) {
  fs::path path(relative);
  if (relative.empty() || path.is_absolute()) {
    throw Error(
        fmt::format("{}: model '{}' must be a path relative to the split folder", where, relative));
  }
  fs::path root = fs::weakly_canonical(fs::path(folder));
  fs::path full = fs::weakly_canonical(root / path);
  auto [root_end, full_it] = std::mismatch(root.begin(), root.end(), full.begin(), full.end());
  if (root_end != root.end() || full == root) {
    throw Error(
        fmt::format("{}: model '{}' lies outside the split folder {}", where, relative, folder));
  }
  return full.string();
}

}  // namespace

RankSplitManifest read_split_manifest(const std::string& folder) {
  const std::string file = (fs::path(folder) / "manifest.json").string();
  const nlohmann::json json = read_json_file(file, "split manifest");
  RankSplitManifest manifest;
  manifest.folder = folder;
  try {
    if (json.value("format", "") != "cleave-split") {
      throw Error(fmt::format("{}: format is not \"cleave-split\"", file));
    }
    if (json.value("version", 0) != 1) {
      throw Error(fmt::format("{}: version {} (this cleave reads version 1)", file,
                              json.value("version", 0)));
    }
    manifest.model = json.value("model", "");
    manifest.fingerprint = json.value("fingerprint", "");
    manifest.machines = json.at("machines").get<int>();
    if (manifest.machines < 1) throw Error(fmt::format("{}: machines must be at least 1", file));
    for (const auto& entry : json.at("inputs"))
      manifest.inputs.push_back(read_tensor(entry, file + ": inputs"));
    for (const auto& entry : json.at("outputs")) {
      manifest.outputs.push_back(read_tensor(entry, file + ": outputs"));
      if (manifest.outputs.back().machine != 0) {
        throw Error(fmt::format("{}: output '{}' ends on machine {}, not 0", file,
                                manifest.outputs.back().name, manifest.outputs.back().machine));
      }
    }
    const auto& all_steps = json.at("steps");
    if (static_cast<int>(all_steps.size()) != manifest.machines) {
      throw Error(fmt::format("{}: steps lists {} machines, machines says {}", file,
                              all_steps.size(), manifest.machines));
    }
    std::map<int, std::pair<int, int>> sends, recvs;  // tag -> (from, to)
    for (int m = 0; m < manifest.machines; ++m) {
      std::vector<SplitStep>& steps = manifest.steps.emplace_back();
      for (std::size_t i = 0; i < all_steps[m].size(); ++i) {
        const auto& entry = all_steps[m][i];
        const std::string where = fmt::format("{}: steps[{}][{}]", file, m, i);
        SplitStep step;
        const std::string op = entry.at("op").get<std::string>();
        if (op == "run") {
          step.kind = SplitStep::Kind::kRun;
          step.model = confined_path(folder, entry.at("model").get<std::string>(), where);
          step.inputs = entry.at("inputs").get<std::vector<std::string>>();
          step.outputs = entry.at("outputs").get<std::vector<std::string>>();
        } else if (op == "send" || op == "recv") {
          step.kind = op == "send" ? SplitStep::Kind::kSend : SplitStep::Kind::kRecv;
          step.peer = entry.at(op == "send" ? "to" : "from").get<int>();
          if (step.peer < 0 || step.peer >= manifest.machines || step.peer == m) {
            throw Error(
                fmt::format("{}: peer machine {} does not exist (or is itself)", where, step.peer));
          }
          step.name = entry.at("name").get<std::string>();
          step.dtype = split_dtype(entry.at("dtype").get<std::string>(), where);
          step.shape = read_shape(entry.at("shape"), where);
          step.bytes = entry.at("bytes").get<int64_t>();
          step.tag = entry.at("tag").get<int>();
          if (static_cast<int64_t>(plain_byte_size(step.dtype, step.shape)) != step.bytes) {
            throw Error(fmt::format("{}: bytes {} do not match dtype and shape ({} bytes)", where,
                                    step.bytes, plain_byte_size(step.dtype, step.shape)));
          }
          auto& seen = op == "send" ? sends : recvs;
          if (step.tag < 0 || !seen.emplace(step.tag, std::make_pair(op == "send" ? m : step.peer,
                                                                     op == "send" ? step.peer : m))
                                   .second) {
            throw Error(
                fmt::format("{}: tag {} is negative or used by two {}s", where, step.tag, op));
          }
          if (op == "send") {
            step.tensor = entry.at("tensor").get<std::string>();
            for (const auto& pair : entry.at("region")) {
              step.region.emplace_back(pair.at(0).get<int64_t>(), pair.at(1).get<int64_t>());
            }
            if (step.region.size() != step.shape.size()) {
              throw Error(fmt::format("{}: region has {} dimensions, shape {}", where,
                                      step.region.size(), step.shape.size()));
            }
            for (std::size_t d = 0; d < step.region.size(); ++d) {
              if (step.region[d].second - step.region[d].first != step.shape[d] ||
                  step.region[d].first < 0) {
                throw Error(fmt::format(
                    "{}: region [{}, {}) of dimension {} does not match "
                    "shape {}",
                    where, step.region[d].first, step.region[d].second, d, step.shape[d]));
              }
            }
          }
        } else {
          throw Error(fmt::format("{}: op '{}' is not run, send or recv", where, op));
        }
        steps.push_back(std::move(step));
      }
    }
    if (sends != recvs) {
      for (const auto& [tag, ends] : sends) {
        if (!recvs.count(tag) || recvs[tag] != ends) {
          throw Error(
              fmt::format("{}: the send with tag {} (machine {} to {}) has no matching "
                          "recv",
                          file, tag, ends.first, ends.second));
        }
      }
      throw Error(fmt::format("{}: a recv has no matching send", file));
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("{}: malformed manifest: {}", file, e.what()));
  }
  return manifest;
}

}  // namespace cleave
