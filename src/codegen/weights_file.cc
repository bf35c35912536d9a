// Weights file layout: initializers of live nodes, 64-byte aligned, with a JSON index.
#include "codegen/weights_file.h"

#include <fmt/core.h>

#include <set>

namespace cleave {

std::string numpy_dtype_name(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat:
      return "float32";
    case DataType::kDouble:
      return "float64";
    case DataType::kFloat16:
      return "float16";
    case DataType::kInt64:
      return "int64";
    case DataType::kInt32:
      return "int32";
    case DataType::kInt16:
      return "int16";
    case DataType::kInt8:
      return "int8";
    case DataType::kUInt8:
      return "uint8";
    case DataType::kUInt16:
      return "uint16";
    case DataType::kUInt32:
      return "uint32";
    case DataType::kUInt64:
      return "uint64";
    case DataType::kBool:
      return "bool";
    default:
      throw Error(fmt::format("element type {} has no numpy name", dtype_name(dtype)));
  }
}

WeightsFile make_weights_file(const Graph& graph) {
  std::set<ValueId> used;
  for (NodeId id : graph.node_ids()) {
    for (ValueId input : graph.node(id).inputs) {
      if (input != kNoValue && graph.value(input).initializer) used.insert(input);
    }
  }
  for (ValueId output : graph.outputs()) {
    if (graph.value(output).initializer) used.insert(output);
  }
  WeightsFile file;
  for (ValueId id : graph.initializers()) {
    if (!used.count(id)) continue;
    const Value& value = graph.value(id);
    const TensorData& data = *value.initializer;
    if (data.dtype == DataType::kString || element_size(data.dtype) == 0) {
      throw Error(
          fmt::format("initializer '{}': element type {} cannot be written to a weights "
                      "file",
                      value.name, dtype_name(data.dtype)));
    }
    if (!data.bytes) throw Error(fmt::format("initializer '{}' has no data", value.name));
    WeightEntry entry;
    entry.value = id;
    entry.name = value.name;
    entry.dtype = data.dtype;
    entry.shape = data.dims;
    entry.bytes = data.bytes->size();
    const std::size_t expected =
        static_cast<std::size_t>(data.element_count()) * element_size(data.dtype);
    if (entry.bytes != expected) {
      throw Error(fmt::format("initializer '{}' holds {} bytes, its shape needs {}", value.name,
                              entry.bytes, expected));
    }
    entry.offset = (file.bytes.size() + kWeightAlignment - 1) / kWeightAlignment * kWeightAlignment;
    file.bytes.resize(entry.offset, '\0');
    file.bytes.append(reinterpret_cast<const char*>(data.bytes->data()), entry.bytes);
    file.entries.push_back(std::move(entry));
  }
  return file;
}

nlohmann::json weights_index_json(const WeightsFile& file) {
  nlohmann::json index = nlohmann::json::array();
  for (const WeightEntry& entry : file.entries) {
    index.push_back({{"name", entry.name},
                     {"dtype", numpy_dtype_name(entry.dtype)},
                     {"shape", entry.shape},
                     {"offset", entry.offset},
                     {"bytes", entry.bytes}});
  }
  return index;
}

}  // namespace cleave
