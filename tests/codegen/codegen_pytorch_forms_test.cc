// `cleave codegen --lang pytorch` of the forms once refused: GatherND with batch_dims, RoiAlign's
// max mode, GRU/LSTM with sequence_lens and clip, Loop and Scan; each matches `cleave run`.
#include <gtest/gtest.h>

#include <cmath>

#include "codegen_fixture.h"

namespace cleave {
namespace {

class CodegenPytorchForms : public PytorchRunFixture {};

// Batch 0 gathers rows (0, 2) and (1, -1); batch 1 rows (2, 0) and (-3, 3).
TEST_F(CodegenPytorchForms, GatherNDWithOneBatchDimension) {
  EXPECT_EQ(largest_difference(R"(graph main [ai.onnx=17] (%x: f32[2,3,4,2]) {
  @idx: i64[2,2,2] = [0, 2, 1, -1, 2, 0, -3, 3]
  %y = GatherND[batch_dims=1](%x, @idx)
  return %y
})",
                               {"y"}),
            0.0);
}

TEST_F(CodegenPytorchForms, GatherNDWithTwoBatchDimensions) {
  EXPECT_EQ(largest_difference(R"(graph main [ai.onnx=17] (%x: f32[2,3,4]) {
  @idx: i64[2,3,1] = [0, 3, -1, 2, 1, 0]
  %y = GatherND[batch_dims=2](%x, @idx)
  return %y
})",
                               {"y"}),
            0.0);
}

// The last RoI reaches past the 8×8 plane, so some of its samples fall outside and count as 0.
std::string roi_align_max(int opset) {
  return "graph main [ai.onnx=" + std::to_string(opset) + R"(] (%x: f32[2,3,8,8]) {
  @rois: f32[4,4] = [0,0,4,4, 1.5,2,7,6.5, 2,1,3,7, 5,5,11,12]
  @batch: i64[4] = [0, 1, 1, 0]
  %y = RoiAlign[mode="max", output_height=2, output_width=3, sampling_ratio=2, spatial_scale=0.9](%x, @rois, @batch)
  return %y
})";
}

TEST_F(CodegenPytorchForms, RoiAlignMaxWithHalfPixelBins) {
  EXPECT_LT(largest_difference(roi_align_max(17), {"y"}), 1e-5);
}

// Opset 10's output_half_pixel, and sampling_ratio 0 (a grid of ceil(bin size) samples).
TEST_F(CodegenPytorchForms, RoiAlignMaxWithOutputHalfPixelAndAdaptiveSampling) {
  std::string text = roi_align_max(10);
  text.replace(text.find("sampling_ratio=2"), 16, "sampling_ratio=0");
  EXPECT_LT(largest_difference(text, {"y"}), 1e-5);
}

// Batch of 2 sequences of 5 steps, hidden size 4; lengths 3 and 5 where `lens` is given. An
// LSTM also returns its cell state and may take peepholes.
std::string recurrent(const std::string& op, const std::string& attributes, int directions,
                      bool lens, bool peepholes = false) {
  const bool lstm = op == "LSTM";
  const int gates = lstm ? 4 : 3;
  const std::string d = std::to_string(directions), g = std::to_string(4 * gates);
  std::string text = "graph main [ai.onnx=17] (%x: f32[5,2,3]) {\n  @w: f32[" + d + "," + g +
                     ",3]\n  @r: f32[" + d + "," + g + ",4]\n  @b: f32[" + d + "," +
                     std::to_string(8 * gates) + "]\n  @h0: f32[" + d +
                     ",2,4]\n  @lens: i32[2] = [3, 5]\n";
  if (peepholes) text += "  @p: f32[" + d + ",12]\n";
  text += std::string(lstm ? "  %y, %yh, %yc = " : "  %y, %yh = ") + op + "[hidden_size=4" +
          attributes + "](%x, @w, @r, @b, " + (lens ? "@lens" : "_") + ", @h0" +
          (peepholes ? ", _, @p" : "") + ")\n";
  text += lstm ? "  return %y, %yh, %yc\n}" : "  return %y, %yh\n}";
  return text;
}

TEST_F(CodegenPytorchForms, GruWithSequenceLens) {
  EXPECT_LT(largest_difference(recurrent("GRU", "", 1, true), {"y", "yh"}), 1e-5);
}

TEST_F(CodegenPytorchForms, GruReverseWithSequenceLens) {
  EXPECT_LT(largest_difference(recurrent("GRU", R"(, direction="reverse")", 1, true), {"y", "yh"}),
            1e-5);
}

TEST_F(CodegenPytorchForms, LstmBidirectionalWithSequenceLens) {
  EXPECT_LT(largest_difference(recurrent("LSTM", R"(, direction="bidirectional")", 2, true),
                               {"y", "yh", "yc"}),
            1e-5);
}

// layout=1: x is [batch, steps, input], the states [batch, directions, hidden].
TEST_F(CodegenPytorchForms, GruBatchMajorReverseWithSequenceLens) {
  EXPECT_LT(largest_difference(R"(graph main [ai.onnx=17] (%x: f32[2,5,3]) {
  @w: f32[1,12,3]
  @r: f32[1,12,4]
  @b: f32[1,24]
  @h0: f32[2,1,4]
  @lens: i32[2] = [4, 2]
  %y, %yh = GRU[hidden_size=4, layout=1, direction="reverse"](%x, @w, @r, @b, @lens, @h0)
  return %y, %yh
})",
                               {"y", "yh"}),
            1e-5);
}

TEST_F(CodegenPytorchForms, GruWithClip) {
  EXPECT_LT(largest_difference(recurrent("GRU", ", clip=0.1", 1, false), {"y", "yh"}), 1e-5);
  EXPECT_NE(model_.find("torch.clamp("), std::string::npos) << model_;
}

TEST_F(CodegenPytorchForms, GruLinearBeforeResetWithClip) {
  EXPECT_LT(largest_difference(recurrent("GRU", ", clip=0.1, linear_before_reset=1", 1, false),
                               {"y", "yh"}),
            1e-5);
}

TEST_F(CodegenPytorchForms, LstmWithClipAndPeepholes) {
  EXPECT_LT(largest_difference(recurrent("LSTM", ", clip=0.1", 1, false, true), {"y", "yh", "yc"}),
            1e-5);
}

// Four iterations over x: each adds the iteration number and the enclosing graph's x (read by
// name), keeps tanh of it and stacks the sum.
TEST_F(CodegenPytorchForms, LoopWithTripCountCarriesAndStacks) {
  EXPECT_LT(largest_difference(R"(graph main [ai.onnx=17] (%x: f32[2,3]) {
  @m: i64[] = [4]
  %c = Constant[value=tensor<bool[]>[1]]()
  %out, %scan = Loop[body=graph b [ai.onnx=17] (%i: i64[], %cond: bool[], %v: f32[2,3]) {
    %f = Cast[to=1](%i)
    %w = Add(%v, %f)
    %a = Add(%w, %x)
    %t = Tanh(%a)
    %same = Identity(%cond)
    return %same, %t, %a
  }](@m, %c, %x)
  return %out, %scan
})",
                               {"out", "scan"}),
            1e-6);
  EXPECT_NE(model_.find("while "), std::string::npos) << model_;
}

// An If nested in the body reads the loop's carried value and x from two graphs out; it takes
// the then branch on even iterations only.
TEST_F(CodegenPytorchForms, LoopBodyWithAnIfReadingTheOutermostValue) {
  EXPECT_LT(largest_difference(R"(graph main [ai.onnx=17] (%x: f32[2,3]) {
  @m: i64[] = [5]
  %c = Constant[value=tensor<bool[]>[1]]()
  %out = Loop[body=graph b [ai.onnx=17] (%i: i64[], %cond: bool[], %v: f32[2,3]) {
    %two = Constant[value=tensor<i64[]>[2]]()
    %zero = Constant[value=tensor<i64[]>[0]]()
    %r = Mod(%i, %two)
    %even = Equal(%r, %zero)
    %w = If[then_branch=graph t [ai.onnx=17] () {
      %a = Add(%v, %x)
      return %a
    }, else_branch=graph e [ai.onnx=17] () {
      %n = Mul(%v, %x)
      return %n
    }](%even)
    %same = Identity(%cond)
    return %same, %w
  }](@m, %c, %x)
  return %out
})",
                               {"out"}),
            1e-6);
}

// No trip count: the body adds 0.25 until the largest element passes 2, which takes a number of
// iterations set by x (and so a scan output of that length).
const char* kLoopUntil = R"(graph main [ai.onnx=17] (%x: f32[2,3]) {
  %c = Constant[value=tensor<bool[]>[1]]()
  %out, %scan = Loop[body=graph b [ai.onnx=17] (%i: i64[], %cond: bool[], %v: f32[2,3]) {
    %step = Constant[value=tensor<f32[]>[0.25]]()
    %limit = Constant[value=tensor<f32[]>[2]]()
    %w = Add(%v, %step)
    %top = ReduceMax[keepdims=0](%w)
    %more = Less(%top, %limit)
    return %more, %w, %top
  }](TRIPS, %c, %x)
  return %out, %scan
})";

std::string loop_until(const char* trips) {
  std::string text = kLoopUntil;
  text.replace(text.find("TRIPS"), 5, trips);
  return text;
}

TEST_F(CodegenPytorchForms, LoopWithOnlyAConditionRunsUntilItTurnsFalse) {
  EXPECT_LT(largest_difference(loop_until("_"), {"out", "scan"}), 1e-6);
}

// The trip count of 2 ends the loop before the condition would.
TEST_F(CodegenPytorchForms, LoopWithTripCountAndConditionStopsAtTheFirst) {
  std::string text = loop_until("@m");
  text.insert(text.find("  %c = "), "  @m: i64[] = [2]\n");
  EXPECT_LT(largest_difference(text, {"out", "scan"}), 1e-6);
}

// A running sum over the rows of x, with tanh of each partial sum stacked.
TEST_F(CodegenPytorchForms, ScanAlongTheFirstAxis) {
  EXPECT_LT(largest_difference(R"(graph main [ai.onnx=17] (%x: f32[4,3]) {
  @s: f32[3] = [0, 0, 0]
  %y, %z = Scan[body=graph b [ai.onnx=17] (%acc: f32[3], %row: f32[3]) {
    %next = Add(%acc, %row)
    %t = Tanh(%next)
    return %next, %t
  }, num_scan_inputs=1](@s, %x)
  return %y, %z
})",
                               {"y", "z"}),
            1e-6);
}

// The columns of x from the last, paired with the rows of k from the first; one output stacked
// along axis 1 in reverse, the other along axis 0.
TEST_F(CodegenPytorchForms, ScanWithOtherAxesAndDirections) {
  EXPECT_LT(largest_difference(R"(graph main [ai.onnx=17] (%x: f32[3,4]) {
  @s: f32[3] = [0, 0, 0]
  @k: f32[4,3]
  %y, %z, %u = Scan[body=graph b [ai.onnx=17] (%acc: f32[3], %col: f32[3], %row: f32[3]) {
    %p = Mul(%col, %row)
    %next = Add(%acc, %p)
    %t = Tanh(%next)
    %q = Sub(%next, %col)
    return %next, %t, %q
  }, num_scan_inputs=2, scan_input_axes=[1, 0], scan_input_directions=[1, 0], scan_output_axes=[1, 0], scan_output_directions=[1, 0]](@s, %x, @k)
  return %y, %z, %u
})",
                               {"y", "z", "u"}),
            1e-6);
}

// Scan-8: a batch axis first, each entry scanned on its own; sequence_lens at the full length.
TEST_F(CodegenPytorchForms, ScanOfOpsetEightScansEachBatchEntry) {
  EXPECT_LT(largest_difference(R"(graph main [ai.onnx=8] (%x: f32[2,3,2]) {
  @lens: i64[2] = [3, 3]
  @s: f32[2,2]
  %y, %z = Scan[body=graph b [ai.onnx=8] (%acc: f32[2], %row: f32[2]) {
    %next = Add(%acc, %row)
    %t = Tanh(%next)
    return %next, %t
  }, num_scan_inputs=1, directions=[1]](@lens, @s, %x)
  return %y, %z
})",
                               {"y", "z"}),
            1e-6);
}

// Neither a trip count nor a condition: the loop would never end, so no code is written.
TEST_F(CodegenPytorchForms, LoopWithoutTripCountOrConditionIsRefusedNamingTheNode) {
  const std::string text = R"(graph main [ai.onnx=17] (%x: f32[2,3]) {
  %out = Loop[body=graph b [ai.onnx=17] (%i: i64[], %cond: bool[], %v: f32[2,3]) {
    %w = Neg(%v)
    %same = Identity(%cond)
    return %same, %w
  }](_, _, %x)
  return %out
})";
  write_model(text, path("m.onnx"));
  CommandOutput generated = cleave("codegen m.onnx --lang pytorch -o py");
  EXPECT_NE(generated.exit_code, 0);
  EXPECT_NE(generated.text.find("'out'"), std::string::npos) << generated.text;
  EXPECT_NE(generated.text.find("neither a trip count nor a condition"), std::string::npos)
      << generated.text;
}

}  // namespace
}  // namespace cleave
