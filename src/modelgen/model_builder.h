// Layers of the generated models with random weights and every output shape filled in.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "modelgen/random.h"

namespace cleave {

/// Appends NCHW float layers to a graph. Node names are the given names; each layer's output
/// value has the node's name, weights are "<name>.weight" and "<name>.bias".
class ModelBuilder {
 public:
  ModelBuilder(std::string graph_name, uint64_t seed);

  ValueId input(const std::string& name, std::vector<int64_t> dims);
  /// Conv with He-normal weights (std sqrt(2 / fan_in) times `gain`) and a small random bias.
  ValueId conv(const std::string& name, ValueId x, int64_t out_channels, int64_t kernel,
               int64_t stride, int64_t pad, double gain = 1.0);
  ValueId relu(const std::string& name, ValueId x);
  ValueId max_pool(const std::string& name, ValueId x, int64_t kernel, int64_t stride, int64_t pad);
  ValueId concat(const std::string& name, const std::vector<ValueId>& parts);
  ValueId add(const std::string& name, ValueId a, ValueId b);
  ValueId global_average_pool(const std::string& name, ValueId x);
  ValueId flatten(const std::string& name, ValueId x);
  /// Fully connected layer y = x W^T + b (Gemm with transB = 1), LeCun-normal weights.
  ValueId gemm(const std::string& name, ValueId x, int64_t out_features);
  void output(ValueId x) { graph_.mark_output(x); }

  const std::vector<int64_t>& dims(ValueId value) const;
  int64_t parameter_count() const { return parameter_count_; }
  Graph take() { return std::move(graph_); }

 private:
  ValueId random_initializer(const std::string& name, std::vector<int64_t> dims, double stddev);
  ValueId add_layer(const std::string& op_type, const std::string& name,
                    std::vector<ValueId> inputs, std::vector<int64_t> output_dims,
                    std::vector<std::pair<std::string, Attribute>> attributes = {});

  Graph graph_;
  DeterministicRandom random_;
  std::vector<std::vector<int64_t>> dims_;  // per value id
  int64_t parameter_count_ = 0;
};

}  // namespace cleave
