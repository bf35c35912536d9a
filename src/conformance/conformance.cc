// ONNX backend conformance: scope checks, tensor comparison, and crash-proof case isolation.
#include "conformance/conformance.h"

#include <fmt/core.h>
#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "ir/scope.h"
#include "ir/verify.h"
#include "onnx/onnx_import.h"
#include "passes/optimize.h"
#include "runtime/executor.h"
#include "support/atomic_output.h"
#include "support/isolated.h"

namespace cleave {

namespace fs = std::filesystem;

namespace {

// The ops issue 3 puts in the runtime's scope (and Einsum since MaxViT needed it), the int8
// quantization ops and, from NegativeLogLikelihoodLoss on, those of issue 44 (what ONNX Runtime
// runs): a case using any other op is out of scope.
const std::set<std::string, std::less<>> kInScopeOps = {"Conv",
                                                        "NonZero",
                                                        "Compress",
                                                        "Unique",
                                                        "NonMaxSuppression",
                                                        "If",
                                                        "Loop",
                                                        "Scan",
                                                        "SequenceEmpty",
                                                        "SequenceConstruct",
                                                        "SequenceInsert",
                                                        "SequenceErase",
                                                        "SequenceAt",
                                                        "SequenceLength",
                                                        "SplitToSequence",
                                                        "ConcatFromSequence",
                                                        "ConvTranspose",
                                                        "Gemm",
                                                        "MatMul",
                                                        "Einsum",
                                                        "QuantizeLinear",
                                                        "DequantizeLinear",
                                                        "DynamicQuantizeLinear",
                                                        "MatMulInteger",
                                                        "ConvInteger",
                                                        "QLinearMatMul",
                                                        "QLinearConv",
                                                        "MaxPool",
                                                        "AveragePool",
                                                        "GlobalAveragePool",
                                                        "GlobalMaxPool",
                                                        "BatchNormalization",
                                                        "LRN",
                                                        "InstanceNormalization",
                                                        "LayerNormalization",
                                                        "Softmax",
                                                        "LogSoftmax",
                                                        "Relu",
                                                        "LeakyRelu",
                                                        "PRelu",
                                                        "Elu",
                                                        "Selu",
                                                        "Celu",
                                                        "Sigmoid",
                                                        "HardSigmoid",
                                                        "HardSwish",
                                                        "Tanh",
                                                        "Softplus",
                                                        "Softsign",
                                                        "Exp",
                                                        "Log",
                                                        "Sqrt",
                                                        "Reciprocal",
                                                        "Abs",
                                                        "Neg",
                                                        "Floor",
                                                        "Ceil",
                                                        "Round",
                                                        "Sign",
                                                        "Erf",
                                                        "Sin",
                                                        "Cos",
                                                        "Tan",
                                                        "Asin",
                                                        "Acos",
                                                        "Atan",
                                                        "Sinh",
                                                        "Cosh",
                                                        "Asinh",
                                                        "Acosh",
                                                        "Atanh",
                                                        "ThresholdedRelu",
                                                        "Shrink",
                                                        "Clip",
                                                        "Add",
                                                        "Sub",
                                                        "Mul",
                                                        "Div",
                                                        "Pow",
                                                        "Max",
                                                        "Min",
                                                        "Sum",
                                                        "Mean",
                                                        "Mod",
                                                        "Concat",
                                                        "ReduceMean",
                                                        "ReduceSum",
                                                        "ReduceMax",
                                                        "ReduceMin",
                                                        "ReduceProd",
                                                        "ReduceL1",
                                                        "ReduceL2",
                                                        "ReduceSumSquare",
                                                        "ReduceLogSumExp",
                                                        "ReduceLogSum",
                                                        "Reshape",
                                                        "Flatten",
                                                        "Transpose",
                                                        "Squeeze",
                                                        "Unsqueeze",
                                                        "Slice",
                                                        "Split",
                                                        "Gather",
                                                        "GatherElements",
                                                        "Shape",
                                                        "Size",
                                                        "Constant",
                                                        "ConstantOfShape",
                                                        "Expand",
                                                        "Tile",
                                                        "Pad",
                                                        "Resize",
                                                        "Where",
                                                        "Cast",
                                                        "Range",
                                                        "Identity",
                                                        "Dropout",
                                                        "DepthToSpace",
                                                        "SpaceToDepth",
                                                        "TopK",
                                                        "CumSum",
                                                        "Trilu",
                                                        "ArgMax",
                                                        "ArgMin",
                                                        "Equal",
                                                        "Greater",
                                                        "Less",
                                                        "GreaterOrEqual",
                                                        "LessOrEqual",
                                                        "And",
                                                        "Or",
                                                        "Xor",
                                                        "Not",
                                                        "IsNaN",
                                                        "IsInf",
                                                        "NegativeLogLikelihoodLoss",
                                                        "SoftmaxCrossEntropyLoss",
                                                        "Hardmax",
                                                        "CastLike",
                                                        "BitShift",
                                                        "GatherND",
                                                        "ScatterND",
                                                        "ScatterElements",
                                                        "Scatter",
                                                        "OneHot",
                                                        "EyeLike",
                                                        "HannWindow",
                                                        "HammingWindow",
                                                        "BlackmanWindow",
                                                        "ReverseSequence",
                                                        "MeanVarianceNormalization",
                                                        "Det",
                                                        "GridSample",
                                                        "RoiAlign",
                                                        "MaxUnpool",
                                                        "Upsample",
                                                        "TfIdfVectorizer",
                                                        "MelWeightMatrix",
                                                        "RNN",
                                                        "GRU",
                                                        "LSTM"};

bool in_scope_type(DataType type) {
  switch (type) {
    case DataType::kFloat:
    case DataType::kDouble:
    case DataType::kFloat16:
    case DataType::kInt8:
    case DataType::kInt16:
    case DataType::kInt32:
    case DataType::kInt64:
    case DataType::kUInt8:
    case DataType::kUInt16:
    case DataType::kUInt32:
    case DataType::kUInt64:
    case DataType::kBool:
      return true;
    default:
      return false;
  }
}

Tensor read_tensor_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  onnx::TensorProto proto;
  if (!in || !proto.ParseFromIstream(&in))
    throw Error(fmt::format("{}: not a TensorProto", path.string()));
  return Tensor::from_data(tensor_from_onnx(proto, path.string()));
}

std::vector<fs::path> numbered_files(const fs::path& folder, const std::string& prefix) {
  std::vector<fs::path> files;
  for (int i = 0;; ++i) {
    fs::path file = folder / fmt::format("{}_{}.pb", prefix, i);
    if (!fs::exists(file)) break;
    files.push_back(file);
  }
  return files;
}

// Returns an empty string when equal within tolerance, else what differs.
std::string compare(const Tensor& actual, const Tensor& expected,
                    const ConformanceOptions& options) {
  if (actual.dtype() != expected.dtype()) {
    return fmt::format("type {} instead of {}", dtype_name(actual.dtype()),
                       dtype_name(expected.dtype()));
  }
  if (actual.shape() != expected.shape()) {
    return fmt::format("shape [{}] instead of [{}]", fmt::join(actual.shape(), ","),
                       fmt::join(expected.shape(), ","));
  }
  std::vector<double> a = actual.to_double_vector();
  std::vector<double> e = expected.to_double_vector();
  bool exact = actual.dtype() != DataType::kFloat && actual.dtype() != DataType::kDouble;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(e[i]) && std::isnan(a[i])) continue;
    if (std::isinf(e[i]) && a[i] == e[i]) continue;
    double allowed =
        exact ? 0 : options.absolute_tolerance + options.relative_tolerance * std::abs(e[i]);
    if (!(std::abs(a[i] - e[i]) <= allowed)) {
      return fmt::format("element {} is {} instead of {}", i, a[i], e[i]);
    }
  }
  return "";
}

CaseResult classify(const Graph& graph, CaseResult result) {
  for (NodeId id : graph.node_ids()) {
    const Node& node = graph.node(id);
    if (!node.domain.empty() && node.domain != "ai.onnx") {
      result.in_scope = false;
      result.reason = fmt::format("out of scope: op {}.{}", node.domain, node.op_type);
      return result;
    }
    if (!kInScopeOps.count(node.op_type)) {
      result.in_scope = false;
      result.reason = fmt::format("out of scope: op {}", node.op_type);
      return result;
    }
  }
  for (std::size_t id = 0; id < graph.value_capacity(); ++id) {
    const Value& v = graph.value(static_cast<ValueId>(id));
    bool boundary = v.is_graph_input || v.is_graph_output;
    if (boundary && v.opaque_type) {
      // Sequences and optionals: the runtime's values are tensors only.
      result.in_scope = false;
      result.reason = fmt::format("out of scope: '{}' is not a tensor", v.name);
      return result;
    }
    if (boundary && v.dtype != DataType::kUndefined && !in_scope_type(v.dtype)) {
      result.in_scope = false;
      result.reason = fmt::format("out of scope: {} tensor '{}'", dtype_name(v.dtype), v.name);
      return result;
    }
  }
  return result;
}

}  // namespace

std::string_view status_name(CaseStatus status) {
  switch (status) {
    case CaseStatus::kPass:
      return "pass";
    case CaseStatus::kFail:
      return "fail";
    case CaseStatus::kUnsupported:
      return "unsupported";
  }
  return "?";
}

namespace {

// Initializers also listed as graph inputs are defaults a caller may override; the data sets
// feed only the graph's other inputs (in order), so every run of a case keeps the defaults:
// they are constants here, which the passes may use (a sequence position, a shape).
void freeze_defaults(Graph& graph) {
  for (ValueId id : graph.initializers()) graph.value(id).is_graph_input = false;
}

}  // namespace

CaseResult run_case(const std::string& directory, const std::string& name,
                    const ConformanceOptions& options) {
  CaseResult result;
  result.name = name;
  try {
    Graph graph;
    try {
      graph = import_onnx((fs::path(directory) / "model.onnx").string());
    } catch (const UnsupportedError& e) {
      // Import refuses other domains' ops, which classify counts as out of scope too.
      result.in_scope = false;
      result.status = CaseStatus::kUnsupported;
      result.reason = fmt::format("out of scope: {}", e.what());
      return result;
    }
    result = classify(graph, result);
    if (!result.in_scope) {
      result.status = CaseStatus::kUnsupported;
      return result;
    }
    verify_graph(graph);
    std::vector<fs::path> sets;
    for (const auto& entry : fs::directory_iterator(directory)) {
      if (entry.is_directory() &&
          entry.path().filename().string().rfind("test_data_set_", 0) == 0) {
        sets.push_back(entry.path());
      }
    }
    std::sort(sets.begin(), sets.end());
    if (sets.empty()) throw Error("no test_data_set_* folder");
    freeze_defaults(graph);
    make_captures_explicit(graph);
    OptimizeOptions optimize;
    optimize.fuse_activations = true;
    optimize.fold_channel_scales = true;
    optimize_graph(graph, optimize);
    Executor executor(graph);
    for (const fs::path& set : sets) {
      std::vector<fs::path> input_files = numbered_files(set, "input");
      std::map<std::string, Tensor> inputs;
      std::size_t next = 0;
      for (ValueId id : graph.inputs()) {
        if (next >= input_files.size()) break;
        inputs[graph.value(id).name] = read_tensor_file(input_files[next++]);
      }
      std::vector<Tensor> outputs = executor.run(inputs);
      std::vector<fs::path> expected_files = numbered_files(set, "output");
      if (expected_files.size() != outputs.size()) {
        throw Error(
            fmt::format("{} outputs, the test expects {}", outputs.size(), expected_files.size()));
      }
      for (std::size_t i = 0; i < outputs.size(); ++i) {
        std::string difference = compare(outputs[i], read_tensor_file(expected_files[i]), options);
        if (!difference.empty()) {
          result.status = CaseStatus::kFail;
          result.reason = fmt::format("{}: output {} ('{}'): {}", set.filename().string(), i,
                                      graph.value(graph.outputs()[i]).name, difference);
          return result;
        }
      }
    }
    result.status = CaseStatus::kPass;
  } catch (const UnsupportedError& e) {
    result.status = CaseStatus::kUnsupported;
    result.reason = e.what();
  } catch (const std::exception& e) {
    result.status = CaseStatus::kFail;
    result.reason = e.what();
  }
  return result;
}

std::vector<std::pair<std::string, std::string>> find_cases(const std::string& root) {
  std::vector<std::pair<std::string, std::string>> cases;
  if (!fs::is_directory(root)) throw Error(fmt::format("{}: not a directory", root));
  auto add_suite = [&](const fs::path& suite) {
    for (const auto& entry : fs::directory_iterator(suite)) {
      if (fs::exists(entry.path() / "model.onnx")) {
        cases.emplace_back(entry.path().string(),
                           suite.filename().string() + "/" + entry.path().filename().string());
      }
    }
  };
  if (fs::exists(fs::path(root) / "model.onnx")) {
    fs::path path(root);
    cases.emplace_back(path.string(),
                       path.parent_path().filename().string() + "/" + path.filename().string());
  } else {
    bool is_suite = false;
    for (const auto& entry : fs::directory_iterator(root)) {
      is_suite = is_suite || fs::exists(entry.path() / "model.onnx");
    }
    if (is_suite) {
      add_suite(root);
    } else {
      for (const auto& entry : fs::directory_iterator(root)) {
        if (entry.is_directory()) add_suite(entry.path());
      }
    }
  }
  std::sort(cases.begin(), cases.end(),
            [](const auto& a, const auto& b) { return a.second < b.second; });
  return cases;
}

std::vector<CaseResult> run_cases(const std::vector<std::pair<std::string, std::string>>& cases,
                                  const ConformanceOptions& options,
                                  const std::function<void(const CaseResult&)>& on_result) {
  std::vector<CaseResult> results;
  for (const auto& [directory, name] : cases) {
    if (!options.filter.empty() && name.find(options.filter) == std::string::npos) continue;
    // Each case in a child process: a kernel that crashes or hangs fails its case only.
    const auto work = [&, directory = directory, name = name] {
      CaseResult result = run_case(directory, name, options);
      const std::string message = fmt::format("{}\n{}\n{}", static_cast<int>(result.status),
                                              result.in_scope ? 1 : 0, result.reason);
      return std::vector<char>(message.begin(), message.end());
    };
    const ChildOutcome outcome = run_in_children({work}, options.timeout_seconds, "case").front();
    const std::vector<char>& sent = outcome.bytes ? *outcome.bytes : outcome.received;
    const std::string message(sent.begin(), sent.end());
    const bool timed_out = outcome.timed_out;

    CaseResult result;
    result.name = name;
    if (timed_out) {
      result.status = CaseStatus::kFail;
      result.reason = fmt::format("timed out after {} s", options.timeout_seconds);
    } else if (outcome.signal != 0) {
      result.status = CaseStatus::kFail;
      result.reason = fmt::format("crashed with signal {}", outcome.signal);
    } else {
      std::istringstream lines(message);
      std::string status_line, scope_line;
      std::getline(lines, status_line);
      std::getline(lines, scope_line);
      std::getline(lines, result.reason, '\0');
      result.status =
          status_line.empty() ? CaseStatus::kFail : static_cast<CaseStatus>(std::stoi(status_line));
      result.in_scope = scope_line != "0";
      if (status_line.empty()) result.reason = "the case process exited without a result";
    }
    std::replace(result.reason.begin(), result.reason.end(), '\n', ' ');
    if (on_result) on_result(result);
    results.push_back(std::move(result));
  }
  return results;
}

std::vector<std::pair<std::string, std::string>> read_case_lines(
    const std::string& path, const std::string& what, const std::vector<std::string>& statuses) {
  std::ifstream in(path);
  if (!in) throw Error(fmt::format("{}: cannot open {}", path, what));
  std::vector<std::pair<std::string, std::string>> cases;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    std::string name, status;
    words >> name >> status;
    if (std::find(statuses.begin(), statuses.end(), status) == statuses.end()) {
      throw Error(fmt::format("{}:{}: expected '<case> {}', got '{}'", path, number,
                              fmt::join(statuses, "|"), line));
    }
    cases.emplace_back(std::move(name), std::move(status));
  }
  return cases;
}

std::map<std::string, CaseStatus> read_expectations(const std::string& path) {
  const std::map<std::string, CaseStatus> status_of = {{"pass", CaseStatus::kPass},
                                                       {"fail", CaseStatus::kFail},
                                                       {"unsupported", CaseStatus::kUnsupported}};
  std::map<std::string, CaseStatus> expected;
  for (const auto& [name, status] :
       read_case_lines(path, "expectations file", {"pass", "fail", "unsupported"})) {
    expected[name] = status_of.at(status);
  }
  return expected;
}

void write_expectations(const std::string& path, const std::vector<CaseResult>& results) {
  std::ostringstream out;
  out << "# ONNX backend conformance expectations: <case> <status> [# reason]\n"
         "# Regenerate: cleave conformance /usr/share/libonnx-testdata/data --write-expectations "
         "FILE\n";
  for (const CaseResult& result : results) {
    out << result.name << ' ' << status_name(result.status);
    if (!result.reason.empty()) out << "  # " << result.reason;
    out << '\n';
  }
  write_file_atomically(path, out.str());
}

}  // namespace cleave
