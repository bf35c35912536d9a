// The HxW grid sizes its rows and columns by the machines' speed shares.
#include <gtest/gtest.h>

#include "spatial/naive_partition.h"
#include "split_testing.h"

namespace cleave {
namespace {

constexpr const char* kConv = R"(graph main [ai.onnx=17] (%x: f32[1,2,40,8]) {
  @w: f32[4,2,3,3]
  %y: f32[1,4,40,8] = "conv" Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%x, @w)
  return %y
})";

std::vector<std::string> tiles(const Graph& g, const SplitResult& r) {
  std::vector<std::string> out;
  for (const Box& b : r.partition.layers[*g.find_node("conv")]->owned) out.push_back(print_box(b));
  return out;
}

TEST(GridSpeeds, FasterRowGetsTallerTiles) {
  Graph g = testing::graph_with_weights(kConv);
  SplitModelOptions o;
  o.split.machines = 4;
  o.split.dim = SplitDim::kHW;
  o.split.speeds = {1, 1, 3, 3};  // a 2x2 grid: row 0 holds speed 2, row 1 speed 6
  SplitResult r = split_model(g, o);
  EXPECT_EQ(tiles(g, r),
            (std::vector<std::string>{"[0:1, 0:4, 0:10, 0:4]", "[0:1, 0:4, 0:10, 4:8]",
                                      "[0:1, 0:4, 10:40, 0:4]", "[0:1, 0:4, 10:40, 4:8]"}));
  EXPECT_LT(testing::split_error(g, r), 1e-5);
}

TEST(GridSpeeds, FasterColumnGetsWiderTiles) {
  Graph g = testing::graph_with_weights(kConv);
  SplitModelOptions o;
  o.split.machines = 4;
  o.split.dim = SplitDim::kHW;
  o.split.speeds = {1, 3, 1, 3};  // column 0 holds speed 2, column 1 speed 6
  SplitResult r = split_model(g, o);
  EXPECT_EQ(tiles(g, r),
            (std::vector<std::string>{"[0:1, 0:4, 0:20, 0:2]", "[0:1, 0:4, 0:20, 2:8]",
                                      "[0:1, 0:4, 20:40, 0:2]", "[0:1, 0:4, 20:40, 2:8]"}));
  EXPECT_LT(testing::split_error(g, r), 1e-5);
}

TEST(GridSpeeds, EqualSpeedsGiveEqualTiles) {
  Graph g = testing::graph_with_weights(kConv);
  SplitModelOptions o;
  o.split.machines = 4;
  o.split.dim = SplitDim::kHW;
  SplitResult r = split_model(g, o);
  EXPECT_EQ(tiles(g, r)[3], "[0:1, 0:4, 20:40, 4:8]");
}

}  // namespace
}  // namespace cleave
