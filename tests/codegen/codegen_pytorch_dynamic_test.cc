// `cleave codegen --lang pytorch` of the ops whose results follow the data (TopK, NonZero,
// NonMaxSuppression, GatherND, ScatterElements, Range, Mod, RoiAlign, GridSample, a Slice
// bounded at run time) and of GRU and LSTM: each generated module matches `cleave run`.
#include <gtest/gtest.h>

#include <cmath>

#include "codegen_fixture.h"

namespace cleave {
namespace {

class CodegenPytorchDynamic : public PytorchRunFixture {};

// Scores of 0, 0.5, -0.5 and -1 only: many ties, which ONNX breaks by the lower index.
const char* kTopK = R"(graph main [ai.onnx=17] (%x: f32[2,9]) {
  @two: f32[] = [2]
  @k: i64[1] = [5]
  %m = Mul(%x, @two)
  %f = Floor(%m)
  %s = Div(%f, @two)
  %v, %i = TopK[axis=1, largest=LARGEST](%s, @k)
  return %v, %i
})";

std::string top_k(const char* largest) {
  std::string text = kTopK;
  text.replace(text.find("LARGEST"), 7, largest);
  return text;
}

TEST_F(CodegenPytorchDynamic, TopKLargestKeepsLowerIndexAmongTies) {
  EXPECT_EQ(largest_difference(top_k("1"), {"v", "i"}), 0.0);
  EXPECT_NE(model_.find("stable=True"), std::string::npos) << model_;
}

TEST_F(CodegenPytorchDynamic, TopKSmallestKeepsLowerIndexAmongTies) {
  EXPECT_EQ(largest_difference(top_k("0"), {"v", "i"}), 0.0);
}

TEST_F(CodegenPytorchDynamic, NonZeroListsIndicesAxisByAxis) {
  EXPECT_EQ(largest_difference(R"(graph main [ai.onnx=17] (%x: f32[3,4]) {
  @zero: f32[] = [0]
  %b = Greater(%x, @zero)
  %y = NonZero(%b)
  return %y
})",
                               {"y"}),
            0.0);
}

// Boxes 0 and 1 are the same box with the same score: the lower index is kept. Box 2 overlaps
// box 0 by IoU 0.82, box 4 overlaps box 3 by 0.33 (under 0.4), box 5 is kept by score order
// until max_output_boxes_per_class stops it. x * 0 keeps the scores a run-time value.
TEST_F(CodegenPytorchDynamic, NonMaxSuppressionBreaksTiesByLowerIndex) {
  const double difference = largest_difference(R"(graph main [ai.onnx=17] (%x: f32[1,1,6]) {
  @boxes: f32[1,6,4] = [0,0,1,1, 0,0,1,1, 0,0.1,1,1.1, 2,2,3,3, 2,2.5,3,3.5, 5,5,6,6]
  @base: f32[1,1,6] = [0.9, 0.9, 0.8, 0.9, 0.8, 0.7]
  @zero: f32[] = [0]
  @most: i64[1] = [3]
  @iou: f32[1] = [0.4]
  %m = Mul(%x, @zero)
  %s = Add(%m, @base)
  %y = NonMaxSuppression(@boxes, %s, @most, @iou)
  return %y
})",
                                               {"y"});
  EXPECT_EQ(difference, 0.0);
}

TEST_F(CodegenPytorchDynamic, GatherNDGathersSlicesByIndexTuples) {
  EXPECT_EQ(largest_difference(R"(graph main [ai.onnx=17] (%x: f32[3,4,2]) {
  @idx: i64[2,2] = [0, 3, 2, -1]
  %y = GatherND(%x, @idx)
  return %y
})",
                               {"y"}),
            0.0);
}

TEST_F(CodegenPytorchDynamic, ScatterElementsAddsAtNegativeIndices) {
  EXPECT_LT(largest_difference(R"(graph main [ai.onnx=17] (%x: f32[3,4]) {
  @idx: i64[2,4] = [0, -1, 1, 2, 2, 0, -3, 1]
  @up: f32[2,4] = [1, 2, 3, 4, 5, 6, 7, 8]
  %y = ScatterElements[axis=0, reduction="add"](%x, @idx, @up)
  return %y
})",
                               {"y"}),
            1e-6);
}

// The limit of the Range and the end of the Slice depend on x, so neither is folded away.
TEST_F(CodegenPytorchDynamic, RangeAndSliceBoundedAtRunTime) {
  const double difference = largest_difference(R"(graph main [ai.onnx=17] (%x: f32[2,8]) {
  @zero: f32[] = [0]
  @five: f32[] = [5]
  @one: i64[] = [1]
  @start: i64[1] = [1]
  @axis: i64[1] = [1]
  %m = Mul(%x, @zero)
  %r = ReduceMax[keepdims=0](%m)
  %l = Add(%r, @five)
  %limit = Cast[to=7](%l)
  %y = Range(@one, %limit, @one)
  %e = Reshape(%limit, @axis)
  %s = Slice(%x, @start, %e, @axis)
  return %y, %s
})",
                                               {"y", "s"});
  EXPECT_EQ(difference, 0.0);
  EXPECT_NE(model_.find("1:int("), std::string::npos) << model_;
}

TEST_F(CodegenPytorchDynamic, ModTakesTheDivisorsSign) {
  EXPECT_LT(largest_difference(R"(graph main [ai.onnx=17] (%x: f32[2,5]) {
  @ten: f32[] = [10]
  @d: f32[5] = [3, -3, 2.5, -0.7, 4]
  %m = Mul(%x, @ten)
  %y = Mod[fmod=1](%m, @d)
  return %y
})",
                               {"y"}),
            1e-5);
}

TEST_F(CodegenPytorchDynamic, ReduceProdOverTwoAxes) {
  EXPECT_LT(largest_difference(R"(graph main [ai.onnx=17] (%x: f32[2,3,4]) {
  @half: f32[] = [0.5]
  %h = Add(%x, @half)
  %y = ReduceProd[axes=[0,2], keepdims=0](%h)
  return %y
})",
                               {"y"}),
            1e-6);
}

TEST_F(CodegenPytorchDynamic, RoiAlignAveragesHalfPixelBins) {
  EXPECT_LT(largest_difference(R"(graph main [ai.onnx=17] (%x: f32[2,3,8,8]) {
  @rois: f32[3,4] = [0,0,4,4, 1.5,2,7,6.5, 2,1,3,7]
  @batch: i64[3] = [0, 1, 1]
  %y = RoiAlign[output_height=2, output_width=3, sampling_ratio=2, spatial_scale=0.9](%x, @rois, @batch)
  return %y
})",
                               {"y"}),
            1e-5);
}

std::string grid_sample(const std::string& attributes) {
  return R"(graph main [ai.onnx=17] (%x: f32[1,2,5,5]) {
  @grid: f32[1,2,3,2] = [-1.2, -1, -0.5, 0.3, 0, 0, 0.25, -0.75, 0.9, 1.1, 1, 1]
  %y = GridSample[)" +
         attributes + R"(](%x, @grid)
  return %y
})";
}

TEST_F(CodegenPytorchDynamic, GridSampleBilinearWithZeroPadding) {
  EXPECT_LT(largest_difference(grid_sample(R"(mode="bilinear")"), {"y"}), 1e-5);
}

TEST_F(CodegenPytorchDynamic, GridSampleNearestWithBorderPaddingAndAlignedCorners) {
  EXPECT_LT(largest_difference(
                grid_sample(R"(mode="nearest", padding_mode="border", align_corners=1)"), {"y"}),
            1e-6);
}

// The condition compares the sum of x with a threshold: far below it takes the then branch,
// far above it the else branch. Each branch reads x from the enclosing graph; the else branch
// keeps a Constant node.
std::string if_model(const char* threshold) {
  return std::string(R"(graph main [ai.onnx=17] (%x: f32[2,3]) {
  @t: f32[] = [)") +
         threshold + R"(]
  @w: f32[2,3]
  %s = ReduceSum[keepdims=0](%x)
  %c = Greater(%s, @t)
  %xw = Mul(%x, @w)
  %y = If[then_branch=graph then_body [ai.onnx=17] () {
    %r = Relu(%x)
    %a = Add(%r, %xw)
    return %a
  }, else_branch=graph else_body [ai.onnx=17] () {
    %k = Constant[value=tensor<f32[]>[2.5]]()
    %n = Neg(%x)
    %m = Mul(%n, %k)
    return %m
  }](%c)
  return %y
})";
}

TEST_F(CodegenPytorchDynamic, IfTakesTheThenBranch) {
  EXPECT_LT(largest_difference(if_model("-100"), {"y"}), 1e-6);
  EXPECT_NE(model_.find("if bool("), std::string::npos) << model_;
}

TEST_F(CodegenPytorchDynamic, IfTakesTheElseBranch) {
  EXPECT_LT(largest_difference(if_model("100"), {"y"}), 1e-6);
  // The generated code runs the branch it was not emitted for: the other output would differ.
  EXPECT_NE(model_.find("torch.neg("), std::string::npos) << model_;
}

// NonZero's count follows x: the shape ops after it must read their shapes at run time, not
// spell the shapes of the preparing run (cleave's seeded input). Run on an x of all 0.5, every
// element is counted, which the seeded input (half negative) does not give.
TEST_F(CodegenPytorchDynamic, ShapeOpsAfterNonZeroFollowAnotherInput) {
  const std::string text = R"(graph main [ai.onnx=17] (%x: f32[2,6]) {
  @zero: f32[] = [0]
  @one: i64[1] = [1]
  @flat: i64[1] = [-1]
  %b = Greater(%x, @zero)
  %nz = NonZero(%b)
  %t = Transpose[perm=[1,0]](%nz)
  %g = GatherND(%x, %t)
  %u = Unsqueeze(%g, @one)
  %s = Shape(%u)
  %c = ConstantOfShape[value=tensor<f32[1]>[1.5]](%s)
  %e = Add(%u, %c)
  %q = Squeeze(%e, @one)
  %y = Reshape(%q, @flat)
  return %y
})";
  write_model(text, path("m.onnx"));
  Tensor all_positive = Tensor::allocate(DataType::kFloat, {2, 6});
  for (int i = 0; i < 12; ++i) all_positive.data<float>()[i] = 0.5f;
  write_npy(path("x.npy"), all_positive);
  CommandOutput generated = cleave("codegen m.onnx --lang pytorch -o py");
  ASSERT_EQ(generated.exit_code, 0) << generated.text;
  const std::string model = read_text_file(path("py/model.py"));
  EXPECT_NE(model.find("torch.tensor(u.shape"), std::string::npos) << model;
  ASSERT_EQ(cleave("run m.onnx --input x=x.npy --output-dir ref").exit_code, 0);
  CommandOutput run =
      shell("/usr/bin/python3 py/run.py --input x=x.npy --output-dir out --sequential");
  ASSERT_EQ(run.exit_code, 0) << run.text << model;
  const Tensor expected = read_npy(path("ref/y.npy")), actual = read_npy(path("out/y.npy"));
  EXPECT_EQ(expected.shape(), (std::vector<int64_t>{12}));
  EXPECT_EQ(actual.shape(), expected.shape());
  EXPECT_EQ(actual.to_double_vector(), expected.to_double_vector());
}

std::string recurrent(const std::string& op, const std::string& attributes, int gates,
                      int directions) {
  const std::string d = std::to_string(directions), g = std::to_string(4 * gates);
  return "graph main [ai.onnx=17] (%x: f32[5,2,3]) {\n  @w: f32[" + d + "," + g +
         ",3]\n  @r: f32[" + d + "," + g + ",4]\n  @b: f32[" + d + "," + std::to_string(8 * gates) +
         "]\n  @h0: f32[" + d + ",2,4]\n  %y, %yh = " + op + "[hidden_size=4" + attributes +
         "](%x, @w, @r, @b, _, @h0)\n  return %y, %yh\n}";
}

TEST_F(CodegenPytorchDynamic, GruForward) {
  EXPECT_LT(largest_difference(recurrent("GRU", "", 3, 1), {"y", "yh"}), 1e-5);
}

TEST_F(CodegenPytorchDynamic, GruReverseWithLinearBeforeReset) {
  EXPECT_LT(
      largest_difference(recurrent("GRU", R"(, direction="reverse", linear_before_reset=1)", 3, 1),
                         {"y", "yh"}),
      1e-5);
}

TEST_F(CodegenPytorchDynamic, LstmForward) {
  EXPECT_LT(largest_difference(recurrent("LSTM", "", 4, 1), {"y", "yh"}), 1e-5);
}

TEST_F(CodegenPytorchDynamic, LstmBidirectional) {
  EXPECT_LT(
      largest_difference(recurrent("LSTM", R"(, direction="bidirectional")", 4, 2), {"y", "yh"}),
      1e-5);
}

// No initializers: weights.bin is empty, which np.memmap refuses to map.
TEST_F(CodegenPytorchDynamic, ModelWithoutWeightsLoads) {
  EXPECT_EQ(largest_difference(R"(graph main [ai.onnx=17] (%x: f32[2,3]) {
  %y = Relu(%x)
  return %y
})",
                               {"y"}),
            0.0);
}

}  // namespace
}  // namespace cleave
