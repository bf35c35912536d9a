// ShapeMaps: text in, text out; several ranges per dimension; malformed text refused.
#include "spatial/shape_map.h"

#include <gtest/gtest.h>

#include "split_testing.h"

namespace cleave {
namespace {

TEST(ShapeMap, RoundTripsTextWithSeveralRangesPerDimension) {
  const std::string text = R"(shapemap 2 {
  %y: f32[1,4,8,8]
    m0: [0:1, 0:4, 0:4, 0:8]
    m1: [0:1, 0:4, 4:8, 0:2|6:8]
  %z: f32[1,4]
    m0: [0:1, 0:2]
    m1: [-, -]
}
)";
  EXPECT_EQ(print_shape_map(parse_shape_map(text)), text);
}

TEST(ShapeMap, RefusesARangeOutsideTheTensorNamingTheLine) {
  try {
    parse_shape_map("shapemap 1 {\n  %y: f32[1,4]\n    m0: [0:1, 2:9]\n}\n");
    FAIL() << "accepted a range past the tensor";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("line 3"), std::string::npos) << e.what();
  }
}

TEST(ShapeMap, SplitOfAConvPrintsEachMachinesRows) {
  Graph g = testing::graph_with_weights(R"(graph main [ai.onnx=17] (%x: f32[1,1,6,4]) {
  @w: f32[2,1,3,3]
  %y: f32[1,2,6,4] = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%x, @w)
  return %y
})");
  SplitResult r = testing::split(g, 2, SplitDim::kH);
  EXPECT_EQ(print_shape_map(r.shape_map), R"(shapemap 2 {
  %x: f32[1,1,6,4]
    m0: [0:1, 0:1, 0:6, 0:4]
    m1: [0:1, 0:1, 0:6, 0:4]
  %y: f32[1,2,6,4]
    m0: [0:1, 0:2, 0:3, 0:4]
    m1: [0:1, 0:2, 3:6, 0:4]
}
)");
}

}  // namespace
}  // namespace cleave
