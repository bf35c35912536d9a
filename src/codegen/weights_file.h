// The weights of a generated program: every initializer's bytes in one aligned binary file.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace cleave {

/// Where one initializer lies in the weights file.
struct WeightEntry {
  ValueId value = kNoValue;
  std::string name;
  DataType dtype = DataType::kUndefined;
  std::vector<int64_t> shape;
  std::size_t offset = 0;  ///< Bytes from the start of the file; a multiple of kWeightAlignment.
  std::size_t bytes = 0;
};

inline constexpr std::size_t kWeightAlignment = 64;

struct WeightsFile {
  std::string bytes;                 ///< The file's contents.
  std::vector<WeightEntry> entries;  ///< In graph initializer order.
};

/// Lays out the initializers read by live nodes, each at a 64-byte-aligned offset (what the
/// kernels' vector loads want once the file is memory-mapped). Throws Error naming an
/// initializer without data or of a type the file cannot hold (strings).
WeightsFile make_weights_file(const Graph& graph);

/// The index as JSON: [{"name", "dtype" (numpy name), "shape", "offset", "bytes"}], for the
/// Python side (numpy.memmap).
nlohmann::json weights_index_json(const WeightsFile& file);

/// numpy's name for an element type ("float32", "int64", ...); throws Error for others.
std::string numpy_dtype_name(DataType dtype);

}  // namespace cleave
