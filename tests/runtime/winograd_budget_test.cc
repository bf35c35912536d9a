// The Winograd family's weight budget: which 3x3 convolutions keep Winograd, and the override.
#include "runtime/winograd_budget.h"

#include <fmt/core.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/text.h"
#include "runtime/cpu_isa.h"
#include "runtime/kernels/dnnl_util.h"
#include "runtime/kernels/nn/conv_problem.h"
#include "runtime/node_runner.h"
#include "support/error.h"
#include "text_numbers.h"

namespace cleave {
namespace {

using ::testing::HasSubstr;

// Sets CLEAVE_WINOGRAD_BUDGET for one test and puts back what was there.
class BudgetVariable {
 public:
  explicit BudgetVariable(const char* value) {
    if (const char* old = std::getenv(kName)) old_ = old;
    if (value) {
      setenv(kName, value, 1);
    } else {
      unsetenv(kName);
    }
  }
  ~BudgetVariable() {
    if (old_) {
      setenv(kName, old_->c_str(), 1);
    } else {
      unsetenv(kName);
    }
  }

 private:
  static constexpr const char* kName = "CLEAVE_WINOGRAD_BUDGET";
  std::optional<std::string> old_;
};

// Two 3x3 convolutions of one size of weight: %big on a 64x64 map, %small on an 8x8 one (the
// smallest square map Winograd pays on). Weights without data: the budget reads shapes only.
Graph two_maps(int channels) {
  return parse_graph(
      fmt::format(R"(graph main [ai.onnx=17] (%x: f32[1,{0},64,64], %s: f32[1,{0},8,8]) {{
  @wb: f32[{0},{0},3,3]
  @ws: f32[{0},{0},3,3]
  %big: f32[1,{0},64,64] = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%x, @wb)
  %small: f32[1,{0},8,8] = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%s, @ws)
  return %big, %small
}})",
                  channels));
}

NodeId producer(const Graph& graph, const std::string& value) {
  return graph.value(*graph.find_value(value)).producer;
}

WinogradBudget fraction(double f) {
  WinogradBudget budget;
  budget.fraction = f;
  budget.floor_bytes = 0;
  budget.applies_above = 0;
  return budget;
}

// oneDNN's F(4x4, 3x3): weights x4, 3/4 of the flops saved.
constexpr WinogradKernel kFourByFour{4.0, 0.75};

std::vector<NodeId> nodes_of(const std::vector<WinogradCandidate>& candidates) {
  std::vector<NodeId> nodes;
  for (const WinogradCandidate& c : candidates)
    nodes.insert(nodes.end(), c.nodes.begin(), c.nodes.end());
  return nodes;
}

TEST(WinogradBudget, SmallGainPerByteFallsBackToDirect) {
  // Each weight's Winograd copy adds 3x its plain bytes; twice the model's weights has room
  // for one of the two, and the 8x8 map saves a 64th of the 64x64 one's flops.
  const Graph graph = two_maps(16);
  const WinogradSelection selection = select_winograd(graph, fraction(2.0), 1, kFourByFour);
  EXPECT_EQ(nodes_of(selection.direct), std::vector<NodeId>{producer(graph, "small")});
  EXPECT_TRUE(selection.runs_direct(producer(graph, "small")));
}

TEST(WinogradBudget, LargeGainPerByteKeepsWinograd) {
  const Graph graph = two_maps(16);
  const WinogradSelection selection = select_winograd(graph, fraction(2.0), 1, kFourByFour);
  EXPECT_EQ(nodes_of(selection.kept), std::vector<NodeId>{producer(graph, "big")});
  EXPECT_FALSE(selection.runs_direct(producer(graph, "big")));
}

TEST(WinogradBudget, KeptBytesStayWithinTheBudget) {
  // Maps of 64, 32, 16 and 8 pixels a side, channels 8 to 64: gains and bytes of every order.
  std::string text = "graph main [ai.onnx=17] (%x: f32[1,8,64,64]) {\n";
  std::string previous = "x";
  int channels = 8;
  for (int side : {64, 32, 16, 8}) {
    const int out = channels * 2;
    text += fmt::format(
        "  @w{0}: f32[{1},{2},3,3]\n  %c{0}: f32[1,{1},{0},{0}] = "
        "Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%{3}, @w{0})\n",
        side, out, channels, previous);
    text += fmt::format(
        "  @d{0}: f32[{1},{1},3,3]\n  %p{0}: f32[1,{1},{2},{2}] = "
        "Conv[kernel_shape=[3,3], pads=[1,1,1,1], strides=[2,2]](%c{0}, @d{0})\n",
        side, out, side / 2);
    previous = fmt::format("p{}", side);
    channels = out;
  }
  text += "  return %" + previous + "\n}";
  const Graph graph = parse_graph(text);
  for (double f : {0.0, 0.1, 0.3, 0.5, 1.0}) {
    const WinogradSelection selection = select_winograd(graph, fraction(f), 1);
    EXPECT_EQ(selection.kept.size() + selection.direct.size(), 4u) << "stride 2 is no candidate";
    EXPECT_DOUBLE_EQ(selection.budget_bytes, f * selection.plain_weight_bytes);
    EXPECT_LE(selection.kept_bytes(), selection.budget_bytes) << f;
    // Greedy: each one left out did not fit beside those kept.
    for (const WinogradCandidate& c : selection.direct)
      EXPECT_GT(selection.kept_bytes() + c.extra_bytes, selection.budget_bytes) << f;
  }
  EXPECT_TRUE(select_winograd(graph, fraction(0), 1).kept.empty());
}

TEST(WinogradBudget, FloorKeepsSmallModelsWhole) {
  WinogradBudget budget;  // The default: a quarter of the weights, at least 32 MiB.
  const WinogradSelection selection = select_winograd(two_maps(16), budget, 1, kFourByFour);
  EXPECT_TRUE(selection.direct.empty());
  EXPECT_DOUBLE_EQ(selection.budget_bytes, budget.floor_bytes);
}

// The default budget cuts only where every candidate kept would add more than the plain
// weights: F(4x4)'s x4 copies (3x added) do, F(2x2)'s x16/9 (0.78x added) do not.
TEST(WinogradBudget, TheDefaultAppliesOnlyWhereWinogradMoreThanDoublesTheWeights) {
  WinogradBudget budget;
  budget.floor_bytes = 0;  // So that the quarter alone decides, on a small graph.
  const Graph graph = two_maps(64);
  const WinogradSelection four = select_winograd(graph, budget, 1, kFourByFour);
  EXPECT_FALSE(four.direct.empty());
  EXPECT_LE(four.kept_bytes(), 0.25 * four.plain_weight_bytes);
  const WinogradSelection two =
      select_winograd(graph, budget, 1, WinogradKernel{16.0 / 9.0, 5.0 / 9.0});
  EXPECT_TRUE(two.direct.empty());
  EXPECT_EQ(two.kept.size(), 2u);
  EXPECT_THAT(describe(two), HasSubstr("where the budget starts to apply"));
  // A fraction asked for applies whatever the copies add.
  const WinogradSelection asked = select_winograd(graph, parse_winograd_budget("0.25", "test"), 1,
                                                  WinogradKernel{16.0 / 9.0, 5.0 / 9.0});
  EXPECT_FALSE(asked.direct.empty());
}

TEST(WinogradBudget, ReadersOfASharedWeightGoTogether) {
  // A detector's head: one weight read on each pyramid level, one packed copy for all.
  const Graph graph =
      parse_graph(R"(graph main [ai.onnx=17] (%a: f32[1,16,16,16], %b: f32[1,16,8,8]) {
  @w: f32[16,16,3,3]
  @v: f32[16,16,3,3]
  %ya: f32[1,16,16,16] = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%a, @w)
  %yb: f32[1,16,8,8] = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%b, @w)
  %yc: f32[1,16,16,16] = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%a, @v)
  return %ya, %yb, %yc
})");
  const WinogradSelection all =
      select_winograd(graph, WinogradBudget{std::nullopt, 0}, 1, kFourByFour);
  ASSERT_EQ(all.kept.size(), 2u) << "one candidate per weight";
  const WinogradCandidate& shared = all.kept.front();
  EXPECT_EQ(shared.nodes, (std::vector<NodeId>{producer(graph, "ya"), producer(graph, "yb")}));
  EXPECT_DOUBLE_EQ(shared.extra_bytes, 3.0 * 16 * 16 * 9 * 4);
  EXPECT_GT(shared.saved_flops, all.kept.back().saved_flops) << "both readers' flops";
  // Room for one weight: the shared one saves more per byte, and its readers stay together.
  const WinogradSelection one = select_winograd(graph, fraction(1.5), 1, kFourByFour);
  EXPECT_EQ(nodes_of(one.kept), shared.nodes);
  EXPECT_TRUE(one.runs_direct(producer(graph, "yc")));
}

TEST(WinogradBudget, NoneKeepsEveryCandidate) {
  const WinogradSelection selection =
      select_winograd(two_maps(16), parse_winograd_budget("none", "test"), 1, kFourByFour);
  EXPECT_EQ(selection.kept.size(), 2u);
  EXPECT_TRUE(selection.direct.empty());
}

// One case of the rule: a map, its channels, the run and the answer wanted.
struct PaysCase {
  int64_t height, width, channels_in, channels_out;
  conv_detail::WinogradRun run;
  bool pays;
  const char* why;
};

std::string describe_case(const PaysCase& c) {
  return fmt::format("{}x{} map, {} -> {} channels, {} thread(s), {} kernel: {} ({})", c.height,
                     c.width, c.channels_in, c.channels_out, c.run.threads,
                     c.run.own_kernel ? "own" : "oneDNN", c.pays ? "Winograd" : "direct", c.why);
}

TEST(WinogradPays, NotOnSmallMapsOfManyChannelsNorOnTinyMaps) {
  const conv_detail::WinogradRun one{1, false};
  const std::vector<PaysCase> cases = {
      {4, 4, 512, 512, one, false, "a ResNet's layer4 at 128x128"},
      {5, 5, 128, 128, one, false, "5.8 M multiply-adds"},
      {3, 3, 128, 128, one, false, "1.33 M multiply-adds"},
      {1, 25, 256, 256, one, false, "25 pixels in a row"},
      {2, 2, 32, 32, one, false, "tiny: direct at any size"},
      {1, 1, 16, 16, one, false, "tiny"},
      {1, 4, 8, 8, one, false, "tiny"},
      {4, 4, 64, 64, one, true, "590 k multiply-adds"},
      {4, 4, 128, 32, one, true, "590 k multiply-adds"},
      {5, 5, 64, 64, one, true, "922 k multiply-adds"},
      {1, 5, 8, 8, one, true, "few multiply-adds"},
      {6, 6, 64, 64, one, true, "26 pixels and more: not small at 1 thread"},
      {6, 6, 512, 512, one, true, "not small at 1 thread"},
      {1, 26, 512, 512, one, true, "not small at 1 thread"},
      {7, 7, 128, 128, one, true, "not small at 1 thread"},
      {7, 7, 512, 512, one, true, "not small at 1 thread"},
      {-1, 4, 512, 512, one, true, "a map not known is decided at run time"},
      {4, -1, 512, 512, one, true, "a map not known"},
      {4, 4, -1, 512, one, true, "channels not known"},
  };
  for (const PaysCase& c : cases) {
    EXPECT_EQ(conv_detail::winograd_pays(c.height, c.width, c.channels_in, c.channels_out, c.run),
              c.pays)
        << describe_case(c);
  }
}

// On 2 threads and more oneDNN's kernel loses 6x6 and 7x7 maps from 1 M to 12 M multiply-adds.
TEST(WinogradPays, OneDnnOnTwoThreadsLeavesMapsToSevenBySevenToTheDirectKernel) {
  for (int threads : {2, 4}) {
    const conv_detail::WinogradRun team{threads, false};
    const std::vector<PaysCase> cases = {
        {6, 6, 64, 64, team, false, "1.33 M multiply-adds, 1.36-1.44x measured"},
        {7, 7, 128, 32, team, false, "1.8 M multiply-adds (densenet121's), 1.19-1.65x"},
        {7, 7, 128, 128, team, false, "7.2 M multiply-adds, 1.02-1.11x"},
        {7, 7, 160, 160, team, false, "11.3 M multiply-adds, 1.10x"},
        {7, 7, 192, 192, team, true, "16.3 M multiply-adds: even, 1.01x"},
        {7, 7, 256, 256, team, true, "29 M multiply-adds: 0.93-1.04x"},
        {6, 6, 512, 512, team, true, "85 M multiply-adds: Winograd 0.92-0.94x"},
        {7, 7, 512, 512, team, true, "116 M multiply-adds: 0.97-1.03x"},
        {7, 7, 1024, 256, team, true, "116 M multiply-adds"},
        {1, 49, 128, 128, team, false, "49 pixels in a row, 7.2 M multiply-adds"},
        {7, 7, 16, 16, team, true, "113 k multiply-adds"},
        {6, 6, 32, 32, team, true, "332 k multiply-adds"},
        {4, 4, 64, 64, team, true, "590 k multiply-adds, as at 1 thread"},
        {4, 4, 512, 512, team, false, "as at 1 thread"},
        {2, 2, 8, 8, team, false, "tiny"},
        {8, 8, 64, 64, team, true, "64 pixels: not small"},
        {1, 50, 512, 512, team, true, "50 pixels: not small"},
        {8, 8, 128, 128, team, true, "not small"},
        {-1, 7, 128, 128, team, true, "a map not known"},
    };
    for (const PaysCase& c : cases) {
      EXPECT_EQ(conv_detail::winograd_pays(c.height, c.width, c.channels_in, c.channels_out, c.run),
                c.pays)
          << describe_case(c);
    }
  }
}

// cleave's own kernel: the 1-thread small maps at any team, and no 512-channel map to 8x8.
TEST(WinogradPays, OwnKernelLeaves512ChannelMapsToEightByEightToTheDirectKernel) {
  for (int threads : {1, 2}) {
    const conv_detail::WinogradRun own{threads, true};
    const std::vector<PaysCase> cases = {
        {8, 8, 512, 512, own, false, "wide_resnet50_2's layer3 at 128x128"},
        {7, 7, 512, 512, own, false, "resnet50's layer4 at 224x224"},
        {6, 6, 1024, 1024, own, false, "wider"},
        {1, 64, 512, 512, own, false, "64 pixels in a row"},
        {4, 4, 512, 512, own, false, "small"},
        {5, 5, 256, 256, own, false, "small: 14.7 M multiply-adds"},
        {9, 9, 512, 512, own, true, "81 pixels"},
        {14, 14, 512, 512, own, true, "196 pixels"},
        {8, 8, 256, 256, own, true, "256 channels"},
        {8, 8, 512, 256, own, true, "256 out"},
        {8, 8, 256, 512, own, true, "256 in"},
        {7, 7, 128, 128, own, true, "no 2-thread small maps for the own kernel"},
        {6, 6, 64, 64, own, true, "not small"},
        {-1, 8, 512, 512, own, true, "a map not known"},
    };
    for (const PaysCase& c : cases) {
      EXPECT_EQ(conv_detail::winograd_pays(c.height, c.width, c.channels_in, c.channels_out, c.run),
                c.pays)
          << describe_case(c);
    }
  }
}

// The graph-level form reads the Conv's output map and weight from the graph, static or not.
TEST(WinogradPays, ReadsTheOutputMapAndWeightOfTheGraph) {
  const Graph graph = parse_graph(R"(graph main [ai.onnx=17] (%a: f32[1,128,4,4],
      %b: f32[1,128,6,6], %c: f32[1,128,H,W], %d: f32[1,128,3,9], %e: f32[1,16,4,4],
      %f: f32[1,16,2,2], %g: f32[C,D,3,3]) {
  @w: f32[128,128,3,3]
  @v: f32[16,16,3,3]
  %ya: f32[1,128,4,4] = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%a, @w)
  %yb: f32[1,128,4,4] = Conv[kernel_shape=[3,3]](%b, @w)
  %yc: f32[1,128,H,W] = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%c, @w)
  %yd: f32[1,128,3,9] = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%d, @w)
  %ye: f32[1,128,6,6] = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%b, @w)
  %yf: f32[1,16,4,4] = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%e, @v)
  %yg: f32[1,16,2,2] = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%f, @v)
  %yh: f32[1,C,4,4] = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%a, %g)
  return %ya, %yb, %yc, %yd, %ye, %yf, %yg, %yh
})");
  const std::map<std::string, bool> want = {{"ya", false}, {"yb", false}, {"yc", true},
                                            {"yd", true},  {"ye", true},  {"yf", true},
                                            {"yg", false}, {"yh", true}};
  for (const auto& [name, pays] : want) {
    EXPECT_EQ(winograd_map_pays(graph, graph.node(producer(graph, name)), {1, false}), pays)
        << name;
  }
  // On 2 threads oneDNN's kernel leaves the 6x6 map of 5.3 M multiply-adds; the own kernel
  // keeps it.
  const Node& ye = graph.node(producer(graph, "ye"));
  EXPECT_FALSE(winograd_map_pays(graph, ye, {2, false}));
  EXPECT_TRUE(winograd_map_pays(graph, ye, {2, true}));
  EXPECT_TRUE(winograd_map_pays(graph, graph.node(producer(graph, "yf")), {2, false}))
      << "590 k multiply-adds";
}

// Three Winograd-shaped convolutions: %big at 16x16, %tiny at 4x4 (128 channels) and %dot at
// 1x1.
Graph with_small_maps() {
  return parse_graph(R"(graph main [ai.onnx=17] (%x: f32[1,16,16,16], %t: f32[1,128,4,4],
                                                 %s: f32[1,16,1,1]) {
  @wb: f32[16,16,3,3]
  @wt: f32[128,128,3,3]
  @ws: f32[16,16,3,3]
  %big: f32[1,16,16,16] = "big" Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%x, @wb)
  %tiny: f32[1,128,4,4] = "tiny" Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%t, @wt)
  %dot: f32[1,16,1,1] = "dot" Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%s, @ws)
  return %big, %tiny, %dot
})");
}

TEST(WinogradBudget, SmallMapsRunDirectWhateverTheBudget) {
  const Graph graph = with_small_maps();
  const NodeId tiny = producer(graph, "tiny"), dot = producer(graph, "dot");
  for (const WinogradBudget& budget :
       {parse_winograd_budget("none", "test"), WinogradBudget{}, fraction(100.0)}) {
    const WinogradSelection selection = select_winograd(graph, budget, 1, kFourByFour);
    EXPECT_EQ(selection.small_maps, (std::vector<NodeId>{tiny, dot}));
    EXPECT_EQ(nodes_of(selection.kept), std::vector<NodeId>{producer(graph, "big")})
        << "small maps are no candidates";
    EXPECT_TRUE(selection.direct.empty());
    EXPECT_TRUE(selection.runs_direct(tiny));
    EXPECT_TRUE(selection.runs_direct(dot));
    EXPECT_FALSE(selection.runs_direct(producer(graph, "big")));
    EXPECT_EQ(direct_node_names(graph, selection), (std::vector<std::string>{"tiny", "dot"}));
    EXPECT_THAT(describe(selection), HasSubstr("2 more on small maps run direct"));
    EXPECT_DOUBLE_EQ(selection.kept_bytes(), 3.0 * 16 * 16 * 9 * 4) << "only big's copy";
  }
  const BudgetVariable none("none");
  EXPECT_TRUE(winograd_over_budget(graph, tiny, 1)) << "even with no budget";
  EXPECT_FALSE(winograd_over_budget(graph, producer(graph, "big"), 1));
}

// The selection's small maps are those of its team and kernel: a 7x7 map of 128 channels is
// a candidate at 1 thread and for the own kernel, a small map for oneDNN's on 2 threads; an
// 8x8 map of 512 channels a small map for the own kernel only.
TEST(WinogradBudget, SmallMapsFollowTheTeamAndTheKernel) {
  const Graph graph =
      parse_graph(R"(graph main [ai.onnx=17] (%a: f32[1,128,7,7], %b: f32[1,512,8,8]) {
  @w: f32[128,128,3,3]
  @v: f32[512,512,3,3]
  %seven: f32[1,128,7,7] = "seven" Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%a, @w)
  %eight: f32[1,512,8,8] = "eight" Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%b, @v)
  return %seven, %eight
})");
  const NodeId seven = producer(graph, "seven"), eight = producer(graph, "eight");
  const WinogradBudget none = parse_winograd_budget("none", "test");
  const WinogradKernel own{16.0 / 9.0, 5.0 / 9.0, false, true};
  EXPECT_TRUE(select_winograd(graph, none, 1, kFourByFour).small_maps.empty());
  const WinogradSelection two = select_winograd(graph, none, 2, kFourByFour);
  EXPECT_EQ(two.small_maps, std::vector<NodeId>{seven});
  EXPECT_EQ(nodes_of(two.kept), std::vector<NodeId>{eight});
  EXPECT_THAT(describe(two), HasSubstr("1 more on small maps run direct"));
  for (int threads : {1, 2}) {
    const WinogradSelection selection = select_winograd(graph, none, threads, own);
    EXPECT_EQ(selection.small_maps, std::vector<NodeId>{eight}) << threads;
    EXPECT_EQ(nodes_of(selection.kept), std::vector<NodeId>{seven}) << threads;
  }
}

TEST(WinogradBudget, AWeightAlsoReadOnASmallMapAddsItsWholeWinogradCopy) {
  // The 2x2 reader holds the weight packed for the direct kernel; the 8x8 one's Winograd copy
  // comes on top of it, not in place of it.
  const Graph graph =
      parse_graph(R"(graph main [ai.onnx=17] (%a: f32[1,16,8,8], %b: f32[1,16,2,2]) {
  @w: f32[16,16,3,3]
  %ya: f32[1,16,8,8] = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%a, @w)
  %yb: f32[1,16,2,2] = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%b, @w)
  return %ya, %yb
})");
  const WinogradSelection selection =
      select_winograd(graph, parse_winograd_budget("none", "test"), 1, kFourByFour);
  ASSERT_EQ(selection.kept.size(), 1u);
  EXPECT_EQ(selection.kept.front().nodes, std::vector<NodeId>{producer(graph, "ya")});
  EXPECT_DOUBLE_EQ(selection.kept.front().extra_bytes, 4.0 * 16 * 16 * 9 * 4);
  EXPECT_EQ(selection.small_maps, std::vector<NodeId>{producer(graph, "yb")});
}

TEST(WinogradBudget, ParsesFractions) {
  const WinogradBudget budget = parse_winograd_budget("0.25", "test");
  ASSERT_TRUE(budget.fraction);
  EXPECT_DOUBLE_EQ(*budget.fraction, 0.25);
  EXPECT_EQ(budget.floor_bytes, 0);
  EXPECT_FALSE(parse_winograd_budget("none", "test").fraction);
}

TEST(WinogradBudget, BadTextNamesTheOriginAndTheForms) {
  for (const char* bad : {"", "abc", "-0.5", "0.5x", "inf", "nan", "None"}) {
    try {
      parse_winograd_budget(bad, "CLEAVE_WINOGRAD_BUDGET");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("CLEAVE_WINOGRAD_BUDGET"), std::string::npos) << message;
      EXPECT_NE(message.find("\"none\""), std::string::npos) << message;
    }
  }
}

TEST(WinogradBudget, EnvironmentSetsTheBudget) {
  const Graph graph = two_maps(16);
  const NodeId small = producer(graph, "small");
  {
    const BudgetVariable unset(nullptr);
    EXPECT_FALSE(winograd_over_budget(graph, small, 1)) << "the floor covers a small model";
  }
  {
    const BudgetVariable half("0.5");
    EXPECT_TRUE(winograd_over_budget(graph, small, 1));
  }
  {
    const BudgetVariable none("none");
    EXPECT_FALSE(winograd_over_budget(graph, small, 1));
  }
  const BudgetVariable bad("lots");
  EXPECT_THROW(winograd_over_budget(graph, small, 1), Error);
}

TEST(WinogradBudget, TheFamilyKeyNamesTheBudgetAndTheSmallMapRule) {
  const BudgetVariable half("0.5");
  EXPECT_EQ(winograd_family_key(),
            winograd_budget_key(fraction(0.5)) + "-m25-1000000-4-t49-12000000-o64-512");
}

TEST(WinogradBudget, CacheKeysTellBudgetsApart) {
  EXPECT_NE(winograd_budget_key(WinogradBudget{}), winograd_budget_key(fraction(0.25)))
      << "the floor is in the key";
  EXPECT_NE(winograd_budget_key(fraction(0.25)), winograd_budget_key(fraction(0.5)));
  EXPECT_EQ(winograd_budget_key(parse_winograd_budget("none", "test")), "wbnone");
}

// The Conv kernel `family` prepares for `graph`'s `output` (%y by default), run once on an input
// in 16-channel blocks (as a convolution before it writes them) or plain: its implementation,
// output and the output's layout (none: plain).
struct PreparedConv {
  std::string implementation;
  Tensor output;
  std::optional<dnnl::memory::desc> layout;
};

PreparedConv prepare_conv(const Graph& graph, ConvolutionFamily family,
                          const std::string& output = "y", bool blocked_input = false) {
  const NodeId conv = producer(graph, output);
  const Value& weights = graph.value(graph.node(conv).inputs[1]);
  Tensor x =
      Tensor::allocate(DataType::kFloat, graph.value(graph.node(conv).inputs[0]).shape.sizes());
  for (int64_t i = 0; i < x.element_count(); ++i) x.data<float>()[i] = (i % 7) * 0.1f;
  if (blocked_input) {
    x.set_layout(dnnl::memory::desc(to_dnnl_dims(x.shape()), dnnl::memory::data_type::f32,
                                    dnnl::memory::format_tag::nChw16c));
  }
  const Tensor w =
      Tensor::borrow(DataType::kFloat, weights.shape.sizes(), weights.initializer->bytes->data());
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  BufferPool pool;
  NodeRunner runner(graph, conv, /*blocked_outputs_allowed=*/true, family);
  std::vector<Tensor> outputs;
  runner.run({&x, &w}, {false, true}, outputs, pool, engine, stream, 1);
  std::optional<dnnl::memory::desc> layout = outputs[0].layout();
  return {runner.implementation(), to_plain(outputs[0], engine, stream), layout};
}

// The implementation the Winograd family's Conv kernel prepares for `graph`'s %y.
std::string winograd_family_implementation(const Graph& graph) {
  return prepare_conv(graph, ConvolutionFamily::kWinograd).implementation;
}

TEST(WinogradBudget, TheConvKernelRunsDirectOverTheBudgetAndWinogradWithNone) {
  if (!winograd_available()) GTEST_SKIP() << "needs a Winograd kernel (AVX2 or AVX-512)";
  // 64 channels at 14x14: above the minimum of cleave's own kernel.
  const Graph graph = parse_graph(fmt::format(R"(graph main [ai.onnx=17] (%x: f32[1,64,14,14]) {{
  @w: f32[64,64,3,3] = [{}]
  %y: f32[1,64,14,14] = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%x, @w)
  return %y
}})",
                                              text_numbers(64 * 64 * 9, 3)));
  {
    const BudgetVariable zero("0");
    EXPECT_EQ(winograd_family_implementation(graph).find("wino"), std::string::npos);
  }
  const BudgetVariable none("none");
  EXPECT_NE(winograd_family_implementation(graph).find("wino"), std::string::npos);
}

// A 3x3 convolution of 64 channels at 14x14 and a 1x1 one beside it, with weights.
Graph three_and_one() {
  return parse_graph(fmt::format(R"(graph main [ai.onnx=17] (%x: f32[1,64,14,14]) {{
  @w: f32[64,64,3,3] = [{}]
  @p: f32[64,64,1,1] = [{}]
  %y: f32[1,64,14,14] = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%x, @w)
  %z: f32[1,64,14,14] = Conv[kernel_shape=[1,1]](%y, @p)
  return %z
}})",
                                 text_numbers(64 * 64 * 9, 3), text_numbers(64 * 64, 5)));
}

bool brgemm_here() {
  return isa_includes(effective_isa(), dnnl::cpu_isa::avx512_core);
}

TEST(WinogradBudget, AConvSentDirectComputesChannelsLastOnBrgemmFromBlocks) {
  if (!brgemm_here()) GTEST_SKIP() << "oneDNN's brgemm convolutions need AVX-512";
  const Graph graph = three_and_one();
  const BudgetVariable zero("0");
  const PreparedConv direct = prepare_conv(graph, ConvolutionFamily::kWinograd, "y", true);
  EXPECT_THAT(direct.implementation, ::testing::StartsWith("brg"));
  ASSERT_TRUE(direct.layout.has_value()) << "channels-last flows on to the next node";
  const dnnl::memory::desc nhwc({1, 64, 14, 14}, dnnl::memory::data_type::f32,
                                dnnl::memory::format_tag::nhwc);
  EXPECT_EQ(*direct.layout, nhwc);
  // The same sums as the blocked family's direct kernel, up to the order of the additions.
  const PreparedConv blocked = prepare_conv(graph, ConvolutionFamily::kBlocked, "y", true);
  ASSERT_EQ(blocked.output.element_count(), direct.output.element_count());
  for (int64_t i = 0; i < direct.output.element_count(); ++i) {
    const float want = blocked.output.data<float>()[i];
    ASSERT_NEAR(direct.output.data<float>()[i], want, 1e-4f * (1.0f + std::abs(want))) << i;
  }
}

TEST(WinogradBudget, ConvsTheBudgetDoesNotSendDirectKeepTheirKernels) {
  if (!brgemm_here()) GTEST_SKIP() << "oneDNN's brgemm convolutions need AVX-512";
  const Graph graph = three_and_one();
  {
    // Within the budget: Winograd, on channel blocks.
    const BudgetVariable none("none");
    const PreparedConv kept = prepare_conv(graph, ConvolutionFamily::kWinograd, "y", true);
    EXPECT_THAT(kept.implementation, HasSubstr("wino"));
  }
  const BudgetVariable zero("0");
  // A 1x1 convolution is no Winograd candidate: its kernel reads the channel blocks it gets.
  EXPECT_THAT(prepare_conv(graph, ConvolutionFamily::kWinograd, "z", true).implementation,
              ::testing::Not(::testing::StartsWith("brg")));
  // The blocked family's 3x3 convolution has no budget: the blocked direct kernel.
  const PreparedConv blocked = prepare_conv(graph, ConvolutionFamily::kBlocked, "y", true);
  EXPECT_THAT(blocked.implementation, ::testing::Not(::testing::StartsWith("brg")));
  ASSERT_TRUE(blocked.layout.has_value());
  EXPECT_EQ(blocked.layout->data.format_desc.blocking.inner_nblks, 1) << "channel blocks";
}

// A 3x3 convolution of 192 channels on a 4x4 map: the Winograd family runs it direct, even
// with no budget, where the same weights on an 8x8 map keep Winograd; above cleave's own
// kernel's minimum (AVX2) at both sizes.
TEST(WinogradBudget, TheConvKernelRunsASmallMapDirectEvenWithNoBudget) {
  if (!winograd_available()) GTEST_SKIP() << "needs a Winograd kernel (AVX2 or AVX-512)";
  const std::string weights = text_numbers(192 * 192 * 9, 3);
  auto graph_at = [&](int side) {
    return parse_graph(fmt::format(R"(graph main [ai.onnx=17] (%x: f32[1,192,{0},{0}]) {{
  @w: f32[192,192,3,3] = [{1}]
  %y: f32[1,192,{0},{0}] = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%x, @w)
  return %y
}})",
                                   side, weights));
  };
  const BudgetVariable none("none");
  EXPECT_THAT(winograd_family_implementation(graph_at(8)), HasSubstr("wino"));
  const Graph small = graph_at(4);
  for (bool blocked_input : {false, true}) {
    const PreparedConv direct =
        prepare_conv(small, ConvolutionFamily::kWinograd, "y", blocked_input);
    EXPECT_THAT(direct.implementation, ::testing::Not(HasSubstr("wino"))) << blocked_input;
    const PreparedConv blocked =
        prepare_conv(small, ConvolutionFamily::kBlocked, "y", blocked_input);
    ASSERT_EQ(blocked.output.element_count(), direct.output.element_count());
    int nonzero = 0;
    for (int64_t i = 0; i < direct.output.element_count(); ++i) {
      const float want = blocked.output.data<float>()[i];
      ASSERT_NEAR(direct.output.data<float>()[i], want, 1e-4f * (1.0f + std::abs(want))) << i;
      nonzero += want != 0.0f;
    }
    EXPECT_GT(nonzero, 1000);
  }
}

}  // namespace
}  // namespace cleave
