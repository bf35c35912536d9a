// Shapes completed by the runtime's kernels where ONNX's inference left them open.
#include "frontend/shape_completion.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "ir/text.h"
#include "passes/pass.h"
#include "support/process_memory.h"

namespace cleave {
namespace {

std::string type_of(const Graph& graph, const char* name) {
  const Value& value = graph.value(*graph.find_value(name));
  return print_type(value.dtype, value.shape);
}

// Whether a sweep over the graph of `text` leaves value `name` open and closes nothing.
bool stays_open(const char* text, const char* name) {
  Graph graph = parse_graph(text);
  return complete_shapes_by_kernels(graph) == 0 &&
         !graph.value(*graph.find_value(name)).shape.is_static();
}

TEST(ShapeCompletion, APadOfConstantPadsAndWhatReadsItCloseInOneSweep) {
  Graph graph = parse_graph(R"(graph g [ai.onnx=13] (%x: f32[1,2,3,3]) {
  @pads: i64[8] = [0, 0, 1, 1, 0, 0, 1, 1]
  %p = Pad(%x, @pads)
  %t = Transpose[perm=[0,2,3,1]](%p)
  return %t
})");
  ASSERT_FALSE(graph.value(*graph.find_value("p")).shape.is_static());
  EXPECT_EQ(complete_shapes_by_kernels(graph), 2);
  EXPECT_EQ(type_of(graph, "p"), "f32[1,2,5,5]");
  EXPECT_EQ(type_of(graph, "t"), "f32[1,5,5,2]");
}

TEST(ShapeCompletion, AShapeComputedAtRunTimeStaysOpen) {
  // The kernel would read the stand-in's zeros as the new shape.
  EXPECT_TRUE(stays_open(R"(graph g [ai.onnx=13] (%x: f32[2,6], %shape: i64[2]) {
  %y = Reshape(%x, %shape)
  return %y
})",
                         "y"));
}

TEST(ShapeCompletion, OpsWhoseShapeDependsOnValuesStayOpen) {
  EXPECT_TRUE(stays_open(R"(graph g [ai.onnx=13] (%x: f32[2,6]) {
  %y = NonZero(%x)
  return %y
})",
                         "y"));
}

TEST(ShapeCompletion, AnInputOfUnknownShapeStopsTheNodesAfterIt) {
  EXPECT_TRUE(stays_open(R"(graph g [ai.onnx=13] (%x: f32[2,N]) {
  %y = Relu(%x)
  %z = Transpose[perm=[1,0]](%y)
  return %z
})",
                         "y"));
}

TEST(ShapeCompletion, AValueTooLargeForAStandInStaysOpen) {
  EXPECT_TRUE(stays_open(R"(graph g [ai.onnx=13] (%x: f32[8192,4096]) {
  %y = Relu(%x)
  return %y
})",
                         "y"));
}

TEST(ShapeCompletion, AShapeWhoseSizeOverflowsIsRefusedQuietly) {
  EXPECT_TRUE(stays_open(R"(graph g [ai.onnx=13] (%x: f32[4294967296,4294967296]) {
  %y = Relu(%x)
  return %y
})",
                         "y"));
}

TEST(ShapeCompletion, AWeightLeftInItsFileGivesItsShapeWithoutItsBytes) {
  // swin_t's MatMuls and bias Adds, open until their padded input closes: their weights' bytes
  // were read for this alone when planning from sizes.
  Graph graph = parse_graph(R"(graph g [ai.onnx=13] (%x: f32[1,2,3,3]) {
  @pads: i64[8] = [0, 0, 1, 1, 0, 0, 1, 1]
  @w: f32[2,1100]
  @b: f32[1100]
  %p = Pad(%x, @pads)
  %t = Transpose[perm=[0,2,3,1]](%p)
  %m = MatMul(%t, @w)
  %y = Add(%m, @b)
  return %y
})");
  const std::size_t needs = unread_weight_needs().size();
  EXPECT_EQ(complete_shapes_by_kernels(graph), 4);
  EXPECT_EQ(type_of(graph, "y"), "f32[1,5,5,1100]");
  EXPECT_EQ(unread_weight_needs().size(), needs);
}

TEST(ShapeCompletion, AShapeDecidingWeightLeftInItsFileIsNeededAndStaysOpen) {
  Graph graph = parse_graph(R"(graph g [ai.onnx=13] (%x: f32[2,6]) {
  @shape: i64[2]
  %y = Reshape(%x, @shape)
  return %y
})");
  const std::size_t needs = unread_weight_needs().size();
  EXPECT_EQ(complete_shapes_by_kernels(graph), 0);
  EXPECT_FALSE(graph.value(*graph.find_value("y")).shape.is_static());
  ASSERT_EQ(unread_weight_needs().size(), needs + 1);
  EXPECT_EQ(unread_weight_needs().back(), "shape");
}

TEST(ShapeCompletion, AConvsAndAPoolsShapesFollowFromTheirAttributes) {
  // No kernel is made (it would pack the weights, here left unread), and nothing is needed.
  Graph graph = parse_graph(R"(graph g [ai.onnx=13] (%x: f32[1,3,9,9]) {
  @w: f32[16,3,3,3]
  %c = Conv[kernel_shape=[3,3], pads=[1,1,1,1], strides=[2,2]](%x, @w)
  %s = Conv[auto_pad="SAME_UPPER", strides=[2,2]](%x, @w)
  %d = Conv[dilations=[2,2]](%x, @w)
  %p = MaxPool[kernel_shape=[2,2], strides=[2,2]](%c)
  %a = AveragePool[kernel_shape=[3,3], auto_pad="VALID"](%d)
  return %p, %s, %a
})");
  const std::size_t needs = unread_weight_needs().size();
  EXPECT_EQ(complete_shapes_by_kernels(graph), 5);
  EXPECT_EQ(type_of(graph, "c"), "f32[1,16,5,5]");
  EXPECT_EQ(type_of(graph, "s"), "f32[1,16,5,5]");
  EXPECT_EQ(type_of(graph, "d"), "f32[1,16,5,5]");
  EXPECT_EQ(type_of(graph, "p"), "f32[1,16,2,2]");
  EXPECT_EQ(type_of(graph, "a"), "f32[1,16,3,3]");
  EXPECT_EQ(unread_weight_needs().size(), needs);
}

TEST(ShapeCompletion, APoolRoundingUpIsLeftToInference) {
  EXPECT_TRUE(stays_open(R"(graph g [ai.onnx=13] (%x: f32[1,3,9,9]) {
  %p = MaxPool[kernel_shape=[2,2], strides=[2,2], ceil_mode=1](%x)
  return %p
})",
                         "p"));
}

TEST(ShapeCompletion, AWindowLargerThanItsInputIsLeftToInference) {
  EXPECT_TRUE(stays_open(R"(graph g [ai.onnx=13] (%x: f32[1,3,2,2]) {
  %p = MaxPool[kernel_shape=[3,3]](%x)
  return %p
})",
                         "p"));
}

TEST(ShapeCompletion, AShapeOfAValueOfKnownRankIsItsRank) {
  // NonZero's output has a known rank only: no kernel takes a stand-in for it.
  Graph graph = parse_graph(R"(graph g [ai.onnx=15] (%x: f32[2,6]) {
  %n = NonZero(%x)
  %s = Shape(%n)
  %t = Shape[start=-1](%n)
  %z = Size(%n)
  return %s, %t, %z
})");
  Value& nonzero = graph.value(*graph.find_value("n"));
  nonzero.shape.rank_known = true;
  nonzero.shape.dims = {Dim::unknown(), Dim::unknown()};
  nonzero.dtype = DataType::kInt64;
  EXPECT_EQ(complete_shapes_by_kernels(graph), 3);
  EXPECT_EQ(type_of(graph, "s"), "i64[2]");
  EXPECT_EQ(type_of(graph, "t"), "i64[1]");
  EXPECT_EQ(type_of(graph, "z"), "i64[]");
}

// com.microsoft.QGemm (QDQ fusion's quantized Gemm with a bias) has no ONNX schema: its (M, N)
// comes from A's and B's dims, so inference can go on after it.
TEST(ShapeCompletion, AQGemmsShapeFollowsFromItsOperands) {
  const char* text = R"(graph g [ai.onnx=13, com.microsoft=1] (%a: u8[5,4], %at: u8[4,5]) {
  @s: f32[] = [0.5]
  @z: u8[] = [3]
  @w: i8[4,3] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]
  @wt: i8[3,4] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]
  @wz: i8[] = [0]
  @bias: i32[3] = [1, 2, 3]
  %y = com.microsoft.QGemm(%a, @s, @z, @w, @s, @wz, @bias, @s, @z)
  %yt = com.microsoft.QGemm[transA=1, transB=1](%at, @s, @z, @wt, @s, @wz, @bias, @s, @z)
  %bad = com.microsoft.QGemm(%a, @s, @z, @wt, @s, @wz, @bias, @s, @z)
  return %y, %yt, %bad
})";
  Graph graph = parse_graph(text);
  for (const char* name : {"y", "yt", "bad"}) {
    graph.value(*graph.find_value(name)).shape = Shape();
    graph.value(*graph.find_value(name)).dtype = DataType::kUndefined;
  }
  EXPECT_EQ(complete_shapes_by_kernels(graph), 2);
  EXPECT_EQ(type_of(graph, "y"), "u8[5,3]");
  EXPECT_EQ(type_of(graph, "yt"), "u8[5,3]");
  // Inner dims that disagree: left open for the run to report.
  EXPECT_FALSE(graph.value(*graph.find_value("bad")).shape.rank_known);
}

TEST(ShapeCompletion, AStandInInputIsNeverMadeResident) {
  // 64 MiB of stand-in for %x: only its shape is read. Zeroing it faulted in every page (0.3 s
  // of retinanet_resnet50_fpn's load). Measured in a child, whose peak starts at its size now.
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer's shadow memory of the 64 MiB output is resident as well";
#endif
  const pid_t pid = fork();
  if (pid == 0) {
    Graph graph = parse_graph(R"(graph g [ai.onnx=13] (%x: f32[4096,4096]) {
  %t = Transpose[perm=[1,0]](%x)
  return %t
})");
    const std::size_t before = peak_rss_bytes();
    if (complete_shapes_by_kernels(graph) != 1) _exit(2);
    _exit(peak_rss_bytes() - before < (std::size_t{16} << 20) ? 0 : 3);
  }
  ASSERT_GT(pid, 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "2: the shape was not completed; 3: the peak grew 16 MiB";
}

}  // namespace
}  // namespace cleave
