// Zero-Pad folding: the pads move into the Conv or AveragePool that reads the Pad.
#include "passes/pad_fusion.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>

#include "ir/text.h"
#include "ir/verify.h"
#include "passes/dead_code.h"
#include "runtime/executor.h"

namespace cleave {
namespace {

std::string fold(const char* text, PassResult* result = nullptr) {
  Graph graph = parse_graph(text);
  PassResult r = fold_pads(graph);
  eliminate_dead_code(graph);
  verify_graph(graph);
  if (result) *result = r;
  return print_graph(graph);
}

TEST(PadFolding, AveragePoolCountsTheZerosItNoLongerSees) {
  PassResult result;
  EXPECT_EQ(fold(R"(graph main [ai.onnx=17] (%x: f32[1,2,5,5]) {
  @pads: i64[8] = [0, 0, 1, 1, 0, 0, 1, 1]
  %p = Pad[mode="constant"](%x, @pads)
  %y = AveragePool[ceil_mode=0, kernel_shape=[3,3], pads=[0,0,0,0], strides=[1,1]](%p)
  return %y
})",
                 &result),
            R"(graph main [ai.onnx=17] (%x: f32[1,2,5,5]) {
  %y = AveragePool[ceil_mode=0, kernel_shape=[3,3], pads=[1,1,1,1], strides=[1,1], count_include_pad=1](%x)
  return %y
}
)");
  EXPECT_EQ(result.summary(), "Pad folding: 1 Pads folded into AveragePool");
}

TEST(PadFolding, ConvPadsGrowByThePadsBeforeAndAfter) {
  EXPECT_EQ(fold(R"(graph main [ai.onnx=10] (%x: f32[1,1,4,4]) {
  @w: f32[1,1,3,3] = [1, 1, 1, 1, 1, 1, 1, 1, 1]
  %p = Pad[pads=[0,0,2,0,0,0,1,3]](%x)
  %y = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%p, @w)
  return %y
})"),
            R"(graph main [ai.onnx=10] (%x: f32[1,1,4,4]) {
  @w: f32[1,1,3,3] = [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]
  %y = Conv[kernel_shape=[3,3], pads=[3,1,2,4]](%x, @w)
  return %y
}
)");
}

TEST(PadFolding, KeepsAPadOfAnotherValue) {
  const char* text = R"(graph main [ai.onnx=17] (%x: f32[1,1,4,4]) {
  @pads: i64[8] = [0, 0, 1, 1, 0, 0, 1, 1]
  @value: f32[] = [1]
  %p = Pad[mode="constant"](%x, @pads, @value)
  %y = AveragePool[kernel_shape=[3,3]](%p)
  return %y
})";
  PassResult result;
  fold(text, &result);
  EXPECT_FALSE(result.changed());
}

TEST(PadFolding, KeepsAReflectPadAndAChannelPad) {
  PassResult result;
  fold(R"(graph main [ai.onnx=17] (%x: f32[1,1,4,4]) {
  @pads: i64[8] = [0, 0, 1, 1, 0, 0, 1, 1]
  %p = Pad[mode="reflect"](%x, @pads)
  %y = AveragePool[kernel_shape=[3,3]](%p)
  return %y
})",
       &result);
  EXPECT_FALSE(result.changed());
  fold(R"(graph main [ai.onnx=17] (%x: f32[1,1,4,4]) {
  @pads: i64[8] = [0, 1, 0, 0, 0, 0, 0, 0]
  %p = Pad[mode="constant"](%x, @pads)
  %y = AveragePool[kernel_shape=[3,3]](%p)
  return %y
})",
       &result);
  EXPECT_FALSE(result.changed());
}

TEST(PadFolding, KeepsAPoolThatWouldAverageDifferently) {
  PassResult result;
  // Its own pads are not counted, the Pad's would be: no single count_include_pad fits.
  fold(R"(graph main [ai.onnx=17] (%x: f32[1,1,4,4]) {
  @pads: i64[8] = [0, 0, 1, 1, 0, 0, 1, 1]
  %p = Pad[mode="constant"](%x, @pads)
  %y = AveragePool[kernel_shape=[3,3], pads=[1,1,1,1]](%p)
  return %y
})",
       &result);
  EXPECT_FALSE(result.changed());
  // ceil_mode windows may start in the explicit padding but not in implicit padding.
  fold(R"(graph main [ai.onnx=17] (%x: f32[1,1,4,4]) {
  @pads: i64[8] = [0, 0, 1, 1, 0, 0, 1, 1]
  %p = Pad[mode="constant"](%x, @pads)
  %y = AveragePool[ceil_mode=1, kernel_shape=[3,3], strides=[2,2]](%p)
  return %y
})",
       &result);
  EXPECT_FALSE(result.changed());
}

TEST(PadFolding, MaxPoolKeepsItsPadAndOtherReadersStillSeeIt) {
  EXPECT_EQ(fold(R"(graph main [ai.onnx=17] (%x: f32[1,1,4,4]) {
  @pads: i64[8] = [0, 0, 1, 1, 0, 0, 1, 1]
  %p = Pad[mode="constant"](%x, @pads)
  %a = AveragePool[kernel_shape=[3,3]](%p)
  %m = MaxPool[kernel_shape=[3,3]](%p)
  return %a, %m
})"),
            R"(graph main [ai.onnx=17] (%x: f32[1,1,4,4]) {
  @pads: i64[8] = [0, 0, 1, 1, 0, 0, 1, 1]
  %p = Pad[mode="constant"](%x, @pads)
  %a = AveragePool[kernel_shape=[3,3], pads=[1,1,1,1], count_include_pad=1](%x)
  %m = MaxPool[kernel_shape=[3,3]](%p)
  return %a, %m
}
)");
}

TEST(PadFolding, OutputsAreUnchanged) {
  std::string weights;
  for (int i = 0; i < 24; ++i) weights += (i ? ", " : "") + std::to_string((i * 7 % 11) / 5.0 - 1);
  const std::string text = R"(graph main [ai.onnx=17] (%x: f32[1,3,6,6]) {
  @pads: i64[8] = [0, 0, 1, 2, 0, 0, 2, 1]
  @w: f32[2,3,2,2] = [)" + weights +
                           R"(]
  %p = Pad[mode="constant"](%x, @pads)
  %a = AveragePool[kernel_shape=[3,3], strides=[2,1]](%p)
  %c = Conv[kernel_shape=[2,2], pads=[1,0,0,1]](%p, @w)
  return %a, %c
})";
  Graph original = parse_graph(text);
  Graph folded = parse_graph(text);
  PassResult result = fold_pads(folded);
  ASSERT_EQ(result.count("Pads folded into AveragePool"), 1);
  ASSERT_EQ(result.count("Pads folded into Conv"), 1);
  eliminate_dead_code(folded);
  std::mt19937 random(3);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  Tensor x = Tensor::allocate(DataType::kFloat, {1, 3, 6, 6});
  for (int64_t i = 0; i < x.element_count(); ++i) x.data<float>()[i] = uniform(random);
  std::vector<Tensor> expected = Executor(original).run({{"x", x}});
  std::vector<Tensor> actual = Executor(folded).run({{"x", x}});
  ASSERT_EQ(expected.size(), actual.size());
  for (std::size_t o = 0; o < expected.size(); ++o) {
    ASSERT_EQ(expected[o].shape(), actual[o].shape());
    auto want = expected[o].values<float>();
    auto got = actual[o].values<float>();
    for (std::size_t i = 0; i < want.size(); ++i)
      EXPECT_NEAR(got[i], want[i], 1e-5) << o << ":" << i;
  }
}

}  // namespace
}  // namespace cleave
