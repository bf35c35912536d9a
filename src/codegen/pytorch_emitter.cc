// PyTorch generation: names, the sequential forward, one method per worker, runners, run.py.
#include "codegen/pytorch_emitter.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <cctype>
#include <set>

#include "codegen/kernel_specs.h"
#include "codegen/pytorch_ops.h"
#include "codegen/pytorch_templates.h"
#include "codegen/weights_file.h"
#include "ir/text.h"

namespace cleave {

namespace {

// Python names for values: readable, unique, never a keyword or a name the code itself uses.
class PythonNames {
 public:
  explicit PythonNames(const Graph& graph) : names_(graph.value_capacity()) {
    for (ValueId id : graph.initializers()) assign(graph, id, "w_");
    for (ValueId id : graph.inputs()) assign(graph, id, "");
    for (NodeId node : graph.topological_order()) {
      for (ValueId output : graph.node(node).outputs) {
        if (output != kNoValue) assign(graph, output, "");
      }
    }
  }
  const std::string& local(ValueId id) const { return names_.at(id); }

 private:
  void assign(const Graph& graph, ValueId id, const std::string& prefix) {
    std::string base;
    for (char c : graph.value(id).name) {
      const bool word = std::isalnum(static_cast<unsigned char>(c));
      if (word) {
        base += static_cast<char>(c);
      } else if (!base.empty() && base.back() != '_') {
        base += '_';
      }
    }
    while (!base.empty() && base.back() == '_') base.pop_back();
    base = prefix + base;
    static const std::set<std::string> reserved = {
        "False",  "None",     "True",  "and",    "as",   "assert", "async",  "await",    "break",
        "class",  "continue", "def",   "del",    "elif", "else",   "except", "finally",  "for",
        "from",   "global",   "if",    "import", "in",   "is",     "lambda", "nonlocal", "not",
        "or",     "pass",     "raise", "return", "try",  "while",  "with",   "yield",    "self",
        "inputs", "ch",       "F",     "torch",  "np",   "w",      "_",      "folder"};
    if (base.empty() || std::isdigit(static_cast<unsigned char>(base.front())) ||
        reserved.count(base)) {
      base = "v_" + base;
    }
    std::string name = base;
    for (int k = 2; taken_.count(name); ++k) name = fmt::format("{}_{}", base, k);
    taken_.insert(name);
    names_[id] = name;
  }

  std::vector<std::string> names_;
  std::set<std::string> taken_;
};

std::string value_type(const Graph& graph, ValueId id) {
  const Value& v = graph.value(id);
  return print_type(v.dtype, v.shape);
}

// "# conv1 (Conv): f32[1,3,8,8], w_conv1_weight f32[4,3,3,3] -> f32[1,4,8,8]"
std::string node_comment(const Graph& graph, NodeId id) {
  const Node& node = graph.node(id);
  std::vector<std::string> inputs, outputs;
  for (ValueId input : node.inputs) {
    if (input != kNoValue) inputs.push_back(value_type(graph, input));
  }
  for (ValueId output : node.outputs) {
    if (output != kNoValue) outputs.push_back(value_type(graph, output));
  }
  return fmt::format("# {}: {} -> {}", graph.describe(id), fmt::join(inputs, ", "),
                     fmt::join(outputs, ", "));
}

std::string py_string(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// Every node's statements, per node id.
using NodeLines = std::vector<std::vector<std::string>>;

// The input element types run.py reads from .npy files and hands to torch.
bool feedable(DataType type) {
  static const std::set<DataType> types{DataType::kFloat, DataType::kDouble, DataType::kFloat16,
                                        DataType::kInt64, DataType::kInt32,  DataType::kInt16,
                                        DataType::kInt8,  DataType::kUInt8,  DataType::kBool};
  return types.count(type) > 0;
}

// What run.py cannot feed or the code cannot return: a graph output no node computes, an input
// of an element type numpy and torch do not share.
void check_model_ends(const Graph& graph) {
  for (ValueId id : graph.outputs()) {
    if (graph.value(id).producer < 0) {
      throw Error(fmt::format("output '{}' is not computed by a node; nothing to generate",
                              graph.value(id).name));
    }
  }
  for (ValueId id : graph.inputs()) {
    if (!feedable(graph.value(id).dtype))
      throw Error(
          fmt::format("input '{}' is {}; run.py passes inputs of float, integer (up to "
                      "64-bit, unsigned only 8-bit) and bool types",
                      graph.value(id).name, dtype_name(graph.value(id).dtype)));
  }
}

// The docstring, imports and constants at the top of model.py; `channel_count` gets the number
// of values passed between workers.
std::string module_header(const Graph& graph, const WorkerProgram& program,
                          const PythonNames& names, const std::string& model_name,
                          int& channel_count) {
  std::string code = fmt::format(
      "\"\"\"{} as PyTorch, generated by cleave codegen: plan {} on {} worker(s) x {} "
      "thread(s).\n\n"
      "Model.forward is the sequential version. Model.worker_N runs worker N's nodes in the\n"
      "plan's order and passes values to other workers through queues (ch.put / ch.get).\n"
      "\"\"\"\nimport json\nimport os\nimport queue\nimport threading\n\nimport numpy as np\n"
      "import torch\nimport torch.nn.functional as F\n\n",
      model_name, program.strategy, program.workers, program.threads_per_worker);
  std::vector<std::string> input_names, input_shapes, input_dtypes, output_names;
  for (ValueId id : graph.inputs()) {
    input_names.push_back(py_string(graph.value(id).name));
    input_shapes.push_back(fmt::format("{}: [{}]", py_string(graph.value(id).name),
                                       fmt::join(graph.value(id).shape.sizes(), ", ")));
    input_dtypes.push_back(fmt::format("{}: \"{}\"", py_string(graph.value(id).name),
                                       numpy_dtype_name(graph.value(id).dtype)));
  }
  for (ValueId id : graph.outputs()) output_names.push_back(py_string(graph.value(id).name));
  std::vector<std::string> channels;
  channel_count = 0;
  for (NodeId id : graph.topological_order()) {
    for (ValueId output : graph.node(id).outputs) {
      if (output == kNoValue || program.remote_readers[output].empty()) continue;
      ++channel_count;
      channels.push_back(fmt::format("    {}: [{}],", py_string(names.local(output)),
                                     fmt::join(program.remote_readers[output], ", ")));
    }
  }
  code += fmt::format(
      "HERE = os.path.dirname(os.path.abspath(__file__))\nMODEL_NAME = {}\nWORKERS = {}\n"
      "THREADS_PER_WORKER = {}\nTIMEOUT_SECONDS = 300\nINPUTS = [{}]\nINPUT_SHAPES = {{{}}}\n"
      "INPUT_DTYPES = {{{}}}\nOUTPUTS = [{}]\n"
      "# Per value passed between workers: the workers that read it.\n"
      "CHANNELS = {{\n{}{}}}\n\n\n",
      py_string(model_name), program.workers, program.threads_per_worker,
      fmt::join(input_names, ", "), fmt::join(input_shapes, ", "), fmt::join(input_dtypes, ", "),
      fmt::join(output_names, ", "), fmt::join(channels, "\n"), channels.empty() ? "" : "\n");
  return code;
}

// The conv2d helper, then the Model class up to the end of __init__, which loads the weights.
std::string model_init(const Graph& graph, const PythonNames& names, const WeightsFile& weights) {
  std::string code =
      "def conv2d(x, weight, bias, stride, padding, dilation, groups):\n"
      "    \"\"\"F.conv2d, always through oneDNN where torch has it. torch 1.13 sends a 1x1\n"
      "    convolution of batch 1 on one thread to its BLAS instead, which in Debian's torch\n"
      "    (generic BLAS) is about ten times slower: every worker of one thread paid it.\"\"\"\n"
      "    if torch.backends.mkldnn.is_available() and x.dtype == torch.float32:\n"
      "        return torch.mkldnn_convolution(x, weight, bias, padding, stride, dilation, "
      "groups)\n"
      "    return F.conv2d(x, weight, bias, stride, padding, dilation, groups)\n\n\n";
  code +=
      "class Model(torch.nn.Module):\n"
      "    def __init__(self, folder=HERE):\n"
      "        super().__init__()\n"
      "        with open(os.path.join(folder, \"weights.json\")) as index_file:\n"
      "            index = {entry[\"name\"]: entry for entry in json.load(index_file)}\n" +
      std::string(weights.entries.empty()
                      // np.memmap refuses the empty file of a model without weights.
                      ? "        data = np.zeros(0, dtype=np.uint8)\n"
                      : "        data = np.memmap(os.path.join(folder, \"weights.bin\"), "
                        "dtype=np.uint8, mode=\"r\")\n") +
      "\n"
      "        def w(name):\n"
      "            entry = index[name]\n"
      "            count = int(np.prod(entry[\"shape\"], dtype=np.int64))\n"
      "            array = np.frombuffer(data, entry[\"dtype\"], count, entry[\"offset\"])\n"
      "            return torch.from_numpy(array.reshape(entry[\"shape\"]).copy())\n\n";
  for (const WeightEntry& entry : weights.entries) {
    code += fmt::format("        self.{} = w({})  # {}\n", names.local(entry.value),
                        py_string(entry.name), value_type(graph, entry.value));
  }
  if (weights.entries.empty()) code += "        del w\n";
  return code;
}

// Model.forward: the sequential version.
std::string forward_method(const Graph& graph, const PythonNames& names, const NodeLines& lines) {
  std::vector<std::string> parameters;
  for (ValueId id : graph.inputs()) parameters.push_back(names.local(id));
  std::string code = fmt::format("\n    def forward(self{}{}):\n", parameters.empty() ? "" : ", ",
                                 fmt::join(parameters, ", "));
  code += "        \"\"\"The sequential version: every node in one topological order.\"\"\"\n";
  for (NodeId id : graph.topological_order()) {
    code += "        " + node_comment(graph, id) + "\n";
    for (const std::string& line : lines[id]) code += "        " + line + "\n";
  }
  std::vector<std::string> results;
  for (ValueId id : graph.outputs()) results.push_back(names.local(id));
  code += fmt::format("        return {}\n", results.size() == 1
                                                 ? results.front()
                                                 : fmt::format("({},)", fmt::join(results, ", ")));
  return code;
}

// Model.worker_<w>: worker w's nodes in the plan's order, taking values from the inputs or
// the channels and handing on those other workers read.
std::string worker_method(const Graph& graph, const WorkerProgram& program,
                          const PythonNames& names, const NodeLines& lines, int w) {
  std::string code = fmt::format("\n    def worker_{}(self, inputs, ch):\n", w);
  code += fmt::format("        \"\"\"Worker {}: {} node(s) in the plan's order.\"\"\"\n", w,
                      program.order[w].size());
  std::set<ValueId> available;
  std::vector<std::string> produced_outputs;
  for (NodeId id : program.order[w]) {
    const Node& node = graph.node(id);
    for (ValueId input : node.inputs) {
      if (input == kNoValue || available.count(input) || graph.value(input).initializer) continue;
      available.insert(input);
      if (graph.value(input).producer < 0) {
        code += fmt::format("        {} = inputs[{}]\n", names.local(input),
                            py_string(graph.value(input).name));
      } else {
        code += fmt::format("        {} = ch.get({})  # from worker {}\n", names.local(input),
                            py_string(names.local(input)),
                            program.worker_of_node[graph.value(input).producer]);
      }
    }
    code += "        " + node_comment(graph, id) + "\n";
    for (const std::string& line : lines[id]) code += "        " + line + "\n";
    for (ValueId output : node.outputs) {
      if (output == kNoValue) continue;
      available.insert(output);
      if (!program.remote_readers[output].empty()) {
        code += fmt::format("        ch.put({}, {})\n", py_string(names.local(output)),
                            names.local(output));
      }
      if (graph.value(output).is_graph_output) {
        produced_outputs.push_back(
            fmt::format("{}: {}", py_string(graph.value(output).name), names.local(output)));
      }
    }
  }
  code += fmt::format("        return {{{}}}\n", fmt::join(produced_outputs, ", "));
  return code;
}

}  // namespace

PytorchCodegenSummary emit_pytorch(const Graph& model, const WorkerProgram& program,
                                   const std::string& model_name, AtomicFolder& out) {
  // Shapes as the kernels compute them: shape inference leaves some values without one, and
  // the generated code spells every reshape with its static output shape.
  check_model_ends(model);
  const Graph graph = with_prepared_shapes(model);
  PythonNames names(graph);
  const auto expression = [&](ValueId id) {
    return graph.value(id).initializer ? "self." + names.local(id) : names.local(id);
  };
  // Every node's statements first: an op without a mapping stops here, before any output.
  NodeLines lines(graph.node_capacity());
  for (NodeId id : graph.topological_order()) lines[id] = pytorch_lines(graph, id, expression);
  const WeightsFile weights = make_weights_file(graph);

  int channel_count = 0;
  std::string code = module_header(graph, program, names, model_name, channel_count);
  code += pytorch_helpers(lines);
  code += model_init(graph, names, weights);
  code += forward_method(graph, names, lines);
  for (int w = 0; w < program.workers; ++w) code += worker_method(graph, program, names, lines, w);
  code += pytorch_templates::kRuntime;

  out.write_file("model.py", code);
  out.write_file("run.py", fmt::format(fmt::runtime(pytorch_templates::kRunScript),
                                       fmt::arg("name", model_name)));
  out.set_executable("run.py");
  out.write_file("weights.bin", weights.bytes);
  out.write_file("weights.json", weights_index_json(weights).dump(1) + "\n");
  out.write_file(
      "README.md",
      fmt::format(
          fmt::runtime(pytorch_templates::kReadme), fmt::arg("name", model_name),
          fmt::arg("strategy", program.strategy), fmt::arg("workers", program.workers),
          fmt::arg("threads", program.threads_per_worker), fmt::arg("nodes", graph.node_count()),
          fmt::arg("channels", channel_count),
          fmt::arg("input", graph.inputs().empty() ? std::string("x")
                                                   : graph.value(graph.inputs().front()).name)));
  PytorchCodegenSummary summary;
  summary.nodes = static_cast<int>(graph.node_count());
  summary.channels = channel_count;
  summary.weights_bytes = weights.bytes.size();
  return summary;
}

}  // namespace cleave
