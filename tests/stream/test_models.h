// Tiny ONNX-like graphs for stream tests: dense layers with fixed pseudo-random weights.
#pragma once

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "frontend/load.h"
#include "ir/graph.h"
#include "onnx/onnx_export.h"
#include "stream/executor.h"
#include "stream/stream_planner.h"

namespace cleave::testing {

/// x: f32[in_shape] -> reshape [1, k] -> MatMul [k, n] -> activation -> reshape out_shape.
inline std::shared_ptr<Graph> dense_model(const std::string& name, std::vector<int64_t> in_shape,
                                          int64_t n, std::vector<int64_t> out_shape,
                                          const std::string& activation, int seed) {
  int64_t k = 1;
  for (int64_t d : in_shape) k *= d;
  auto g = std::make_shared<Graph>();
  g->name = name;
  const ValueId x = g->add_input("x", DataType::kFloat, Shape::of(in_shape));
  const ValueId s1 =
      g->add_initializer("s1", TensorData::from<int64_t>(DataType::kInt64, {2}, {1, k}));
  std::vector<float> weights(static_cast<std::size_t>(k * n));
  for (std::size_t i = 0; i < weights.size(); ++i) {
    weights[i] = static_cast<float>(std::sin(0.7 * static_cast<double>(i) + seed)) * 0.5f;
  }
  const ValueId w =
      g->add_initializer("w", TensorData::from<float>(DataType::kFloat, {k, n}, weights));
  const ValueId s2 = g->add_initializer(
      "s2", TensorData::from<int64_t>(DataType::kInt64, {static_cast<int64_t>(out_shape.size())},
                                      out_shape));
  const ValueId r = g->add_value("r");
  g->add_node("Reshape", {x, s1}, {r});
  const ValueId m = g->add_value("m");
  g->add_node("MatMul", {r, w}, {m});
  const ValueId a = g->add_value("a");
  g->add_node(activation, {m}, {a});
  const ValueId y = g->add_value("y", DataType::kFloat, Shape::of(out_shape));
  g->add_node("Reshape", {a, s2}, {y});
  g->mark_output(y);
  infer_shapes(*g, name);
  return g;
}

/// A fresh empty directory for one test's files.
inline std::filesystem::path scratch_dir(const std::string& test) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("cleave_stream_" + test + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace cleave::testing

namespace cleave::testing {

/// A row-wise linear layer: x f32[rows, k] -> MatMul W f32[k, n] -> y f32[rows, n].
inline std::shared_ptr<Graph> linear_model(int64_t rows, int64_t k, int64_t n) {
  auto g = std::make_shared<Graph>();
  const ValueId x = g->add_input("x", DataType::kFloat, Shape::of({rows, k}));
  std::vector<float> weights(static_cast<std::size_t>(k * n));
  for (std::size_t i = 0; i < weights.size(); ++i) {
    weights[i] = static_cast<float>(std::cos(0.37 * static_cast<double>(i)));
  }
  const ValueId w =
      g->add_initializer("w", TensorData::from<float>(DataType::kFloat, {k, n}, weights));
  const ValueId y = g->add_value("y", DataType::kFloat, Shape::of({rows, n}));
  g->add_node("MatMul", {x, w}, {y});
  g->mark_output(y);
  return g;
}

}  // namespace cleave::testing

namespace cleave::testing {

/// Run options for `workers` threads, placed by cost unless `placement` is given.
inline StreamRunOptions on_workers(int workers, std::vector<int> placement = {},
                                   bool mixed_items = false) {
  StreamRunOptions options;
  options.workers = workers;
  options.placement = std::move(placement);
  options.mixed_items = mixed_items;
  return options;
}

}  // namespace cleave::testing
