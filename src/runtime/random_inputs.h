// Seeded random inputs for a graph, so runs, profiles and benchmarks need no input files.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "runtime/tensor.h"

namespace cleave {

/// Floats uniform in [-1, 1), integers in [0, 4) (valid as indices for most index-like
/// inputs), booleans at random. Inputs must have static shapes (Error naming the input).
Tensor random_tensor(const Value& value, uint64_t seed);
std::map<std::string, Tensor> random_inputs(const Graph& graph, uint64_t seed);

}  // namespace cleave
