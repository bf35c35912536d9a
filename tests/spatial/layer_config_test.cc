// Per-layer configuration: overrides the default direction and shares; bad entries refused by name.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "spatial/naive_partition.h"
#include "split_testing.h"

namespace cleave {
namespace {

constexpr const char* kTwoConvs = R"(graph main [ai.onnx=17] (%x: f32[1,2,8,8]) {
  @w1: f32[4,2,3,3]
  @w2: f32[4,4,3,3]
  %a: f32[1,4,8,8] = "conv1" Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%x, @w1)
  %b: f32[1,4,8,8] = "conv2" Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%a, @w2)
  return %b
})";

std::string write_temp(const std::string& text) {
  std::string path = ::testing::TempDir() + "/layers.json";
  std::ofstream(path) << text;
  return path;
}

TEST(LayerConfig, OverridesDirectionAndShares) {
  Graph g = testing::graph_with_weights(kTwoConvs);
  SplitModelOptions o;
  o.split.machines = 2;
  o.split.layers =
      read_layer_configs(write_temp(R"({"layers": {"conv1": {"dim": "w", "shares": [1, 3]}}})"));
  SplitResult r = split_model(g, o);
  EXPECT_EQ(print_box(r.partition.layers[*g.find_node("conv1")]->owned[1]), "[0:1, 0:4, 0:8, 2:8]");
  EXPECT_EQ(print_box(r.partition.layers[*g.find_node("conv2")]->owned[1]), "[0:1, 0:4, 4:8, 0:8]");
  EXPECT_LT(testing::split_error(g, r), 1e-5);
}

TEST(LayerConfig, RefusesAnUnknownLayerByName) {
  Graph g = testing::graph_with_weights(kTwoConvs);
  SplitOptions o;
  o.layers["conv9"] = LayerConfig{SplitDim::kH, {}};
  try {
    naive_partition(g, o);
    FAIL() << "accepted an unknown layer";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("\"conv9\""), std::string::npos) << e.what();
  }
}

TEST(LayerConfig, RefusesSharesOfTheWrongCountByName) {
  Graph g = testing::graph_with_weights(kTwoConvs);
  SplitOptions o;
  o.machines = 2;
  o.layers["conv2"] = LayerConfig{std::nullopt, {1, 1, 1}};
  try {
    naive_partition(g, o);
    FAIL() << "accepted three shares for two machines";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("\"conv2\".shares: expected 2 shares"), std::string::npos)
        << e.what();
  }
}

TEST(LayerConfig, RefusesANonPositiveShareAndAnUnknownDim) {
  EXPECT_THROW(read_layer_configs(write_temp(R"({"layers": {"conv1": {"shares": [1, 0]}}})")),
               Error);
  EXPECT_THROW(read_layer_configs(write_temp(R"({"layers": {"conv1": {"dim": "z"}}})")), Error);
  EXPECT_THROW(read_layer_configs(write_temp(R"({"layers": {"conv1": {"dims": "h"}}})")), Error);
}

}  // namespace
}  // namespace cleave
