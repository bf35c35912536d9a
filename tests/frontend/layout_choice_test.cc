// Convolution families: channels-last and Winograd kernels, same outputs, the measured choice.
#include "frontend/layout_choice.h"

#include <fmt/core.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "ir/text.h"
#include "runtime/cpu_isa.h"
#include "runtime/executor.h"
#include "runtime/kernels/dnnl_util.h"
#include "support/timing.h"

namespace cleave {
namespace {

bool winograd_on_this_isa() {
  return winograd_available();
}

// Two 3x3 convolutions with a fused activation, a pool and a concat of both branches.
std::string branchy_model() {
  std::string w1, w2;
  for (int i = 0; i < 16 * 3 * 9; ++i)
    w1 += (i ? ", " : "") + std::to_string((i * 7 % 13) / 13.0 - 0.5);
  for (int i = 0; i < 16 * 16 * 9; ++i)
    w2 += (i ? ", " : "") + std::to_string((i * 5 % 11) / 11.0 - 0.5);
  return R"(graph main [ai.onnx=17] (%x: f32[1,3,12,12]) {
  @w1: f32[16,3,3,3] = [)" +
         w1 + R"(]
  @w2: f32[16,16,3,3] = [)" +
         w2 + R"(]
  %a = Conv[kernel_shape=[3,3], pads=[1,1,1,1], activation="Relu"](%x, @w1)
  %b = Conv[kernel_shape=[3,3], pads=[1,1,1,1], activation="Swish"](%a, @w2)
  %c = MaxPool[kernel_shape=[3,3], pads=[1,1,1,1], strides=[1,1]](%a)
  %y = Concat[axis=1](%b, %c)
  return %y
})";
}

std::map<std::string, Tensor> model_inputs() {
  std::mt19937 random(5);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  Tensor x = Tensor::allocate(DataType::kFloat, {1, 3, 12, 12});
  for (int64_t i = 0; i < x.element_count(); ++i) x.data<float>()[i] = uniform(random);
  return {{"x", x}};
}

TEST(ChannelsLast, ConvolutionOnAPlainInputComputesInNhwc) {
  Graph graph = parse_graph(branchy_model());
  const NodeId conv = graph.value(*graph.find_value("a")).producer;
  std::map<std::string, Tensor> inputs = model_inputs();
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  BufferPool pool;
  for (bool channels_last : {false, true}) {
    NodeRunner runner(
        graph, conv, /*blocked_outputs_allowed=*/true,
        channels_last ? ConvolutionFamily::kChannelsLast : ConvolutionFamily::kBlocked);
    std::vector<Tensor> outputs;
    const Tensor& x = inputs.at("x");
    const Tensor w =
        Tensor::borrow(DataType::kFloat, {16, 3, 3, 3},
                       graph.value(*graph.find_value("w1")).initializer->bytes->data());
    runner.run({&x, &w}, {false, true}, outputs, pool, engine, stream, 1);
    ASSERT_EQ(runner.specs().size(), 1u);
    ASSERT_TRUE(runner.specs()[0].layout) << "a blocked or nhwc output was expected";
    const dnnl::memory::desc nhwc({1, 16, 12, 12}, dnnl::memory::data_type::f32,
                                  dnnl::memory::format_tag::nhwc);
    EXPECT_EQ(*runner.specs()[0].layout == nhwc, channels_last);
  }
}

// Every family computes what the direct blocked kernels compute (Winograd to rounding).
void expect_same_outputs(ConvolutionFamily family) {
  Graph graph = parse_graph(branchy_model());
  std::map<std::string, Tensor> inputs = model_inputs();
  ExecutorOptions family_options;
  family_options.convolution_family = family;
  Executor blocked(graph, ExecutorOptions{});
  Executor other(graph, family_options);
  for (int run = 0; run < 3; ++run) {  // Run 2 on, Concat inputs are placed in the output.
    std::vector<Tensor> want = blocked.run(inputs);
    std::vector<Tensor> got = other.run(inputs);
    ASSERT_EQ(want.at(0).shape(), got.at(0).shape());
    auto expected = want[0].values<float>();
    auto actual = got[0].values<float>();
    int nonzero = 0;
    for (std::size_t i = 0; i < expected.size(); ++i) {
      EXPECT_NEAR(actual[i], expected[i], 1e-4 * std::abs(expected[i]) + 1e-5) << "at " << i;
      nonzero += expected[i] != 0.0f;
    }
    EXPECT_GT(nonzero, 100);
  }
}

TEST(ChannelsLast, OutputsMatchTheBlockedLayouts) {
  expect_same_outputs(ConvolutionFamily::kChannelsLast);
}

TEST(Winograd, OutputsMatchTheDirectKernels) {
  expect_same_outputs(ConvolutionFamily::kWinograd);
}

// The implementation a family gives one convolution of `model`, run alone on random inputs on
// `threads` intra-op threads.
std::string implementation_for(const std::string& model, ConvolutionFamily family,
                               int threads = 1) {
  Graph graph = parse_graph(model);
  const NodeId conv = graph.value(*graph.find_value("y")).producer;
  const Value& input = graph.value(graph.node(conv).inputs[0]);
  const Value& weights_value = graph.value(graph.node(conv).inputs[1]);
  Tensor x = Tensor::allocate(DataType::kFloat, input.shape.sizes());
  for (int64_t i = 0; i < x.element_count(); ++i) x.data<float>()[i] = (i % 7) * 0.25f - 0.75f;
  const Tensor w = Tensor::borrow(DataType::kFloat, weights_value.shape.sizes(),
                                  weights_value.initializer->bytes->data());
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  BufferPool pool;
  NodeRunner runner(graph, conv, /*blocked_outputs_allowed=*/true, family);
  std::vector<Tensor> outputs;
  runner.run({&x, &w}, {false, true}, outputs, pool, engine, stream, threads);
  return runner.implementation();
}

std::string single_conv(const std::string& attributes, int channels, int kernel) {
  std::string weights;
  for (int i = 0; i < channels * channels * kernel * kernel; ++i)
    weights += (i ? ", " : "") + std::to_string((i % 5) * 0.1 - 0.2);
  return fmt::format(R"(graph main [ai.onnx=17] (%x: f32[1,{0},14,14]) {{
  @w: f32[{0},{0},{1},{1}] = [{2}]
  %y = Conv[{3}](%x, @w)
  return %y
}})",
                     channels, kernel, weights, attributes);
}

TEST(Winograd, TakesThreeByThreeStrideOneConvolutions) {
  if (!winograd_on_this_isa())
    GTEST_SKIP() << "needs AVX512_CORE (oneDNN's Winograd) or AVX2 and FMA (cleave's own); "
                    "effective ISA "
                 << isa_name(effective_isa());
  // 64 channels at 14x14: 14 million flops, above cleave's kernel's minimum.
  const std::string model = single_conv("kernel_shape=[3,3], pads=[1,1,1,1]", 64, 3);
  const std::string winograd = implementation_for(model, ConvolutionFamily::kWinograd);
  EXPECT_NE(winograd.find("wino"), std::string::npos);
  // Below AVX-512, cleave's own kernel; on it, oneDNN's.
  EXPECT_EQ(winograd == "winograd_2x2_3x3:cleave_avx2",
            !isa_includes(effective_isa(), dnnl::cpu_isa::avx512_core));
  EXPECT_EQ(implementation_for(model, ConvolutionFamily::kBlocked).find("wino"), std::string::npos);
}

// Through the executor: a plain graph input reordered into blocks, a fused ReLU, a fused sum
// of the first convolution's output, and a plain graph output, as the direct kernels compute.
TEST(Winograd, FusedSumAndPlainEndsMatchTheDirectKernels) {
  if (!winograd_on_this_isa()) GTEST_SKIP() << "needs a Winograd kernel (AVX2 or AVX-512)";
  std::string w, b;
  for (int i = 0; i < 64 * 64 * 9; ++i)
    w += (i ? "," : "") + std::to_string((i * 7 % 17) / 170.0 - 0.05);
  for (int i = 0; i < 64; ++i) b += (i ? "," : "") + std::to_string((i % 5) * 0.1 - 0.2);
  const Graph graph = parse_graph(fmt::format(R"(graph main [ai.onnx=17] (%x: f32[1,64,14,14]) {{
  @w: f32[64,64,3,3] = [{0}]
  @b: f32[64] = [{1}]
  %a = Conv[kernel_shape=[3,3], pads=[1,1,1,1], activation="Relu"](%x, @w, @b)
  %y = Conv[kernel_shape=[3,3], pads=[1,1,1,1], activation="Relu", sum_input=3](%a, @w, @b, %a)
  return %y
}})",
                                              w, b));
  std::map<std::string, Tensor> inputs;
  Tensor x = Tensor::allocate(DataType::kFloat, {1, 64, 14, 14});
  for (int64_t i = 0; i < x.element_count(); ++i) x.data<float>()[i] = (i % 11) * 0.2f - 1.0f;
  inputs.emplace("x", x);
  ExecutorOptions winograd_options;
  winograd_options.convolution_family = ConvolutionFamily::kWinograd;
  Executor blocked(graph, ExecutorOptions{});
  Executor winograd(graph, winograd_options);
  const std::vector<Tensor> want = blocked.run(inputs);
  const std::vector<Tensor> got = winograd.run(inputs);
  int own = 0;
  for (const std::string& implementation : winograd.stats().implementations)
    own += implementation == "winograd_2x2_3x3:cleave_avx2";
  // Below AVX-512 cleave's own kernel takes both; oneDNN's (AVX-512) may leave a fused sum to
  // the direct kernels, and the outputs must agree either way.
  if (!isa_includes(effective_isa(), dnnl::cpu_isa::avx512_core)) {
    EXPECT_EQ(own, 2);
  }
  const auto expected = want.at(0).values<float>();
  const auto actual = got.at(0).values<float>();
  ASSERT_EQ(expected.size(), actual.size());
  int positive = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    ASSERT_NEAR(actual[i], expected[i], 1e-4 * std::abs(expected[i]) + 1e-4) << "at " << i;
    positive += expected[i] > 0.0f;
  }
  EXPECT_GT(positive, 1000);
}

TEST(Winograd, LeavesOtherConvolutionsToTheDirectKernels) {
  for (const std::string& model :
       {single_conv("kernel_shape=[3,3], pads=[1,1,1,1], strides=[2,2]", 32, 3),
        single_conv("kernel_shape=[1,1]", 32, 1),
        single_conv("kernel_shape=[3,3], pads=[2,2,2,2], dilations=[2,2]", 32, 3)}) {
    std::string implementation = implementation_for(model, ConvolutionFamily::kWinograd);
    EXPECT_FALSE(implementation.empty());
    EXPECT_EQ(implementation.find("wino"), std::string::npos) << model;
  }
}

TEST(Winograd, AppliesOnlyWhereAConvolutionHasItsShape) {
  EXPECT_EQ(winograd_can_apply(parse_graph(branchy_model()), 1), winograd_on_this_isa());
  EXPECT_FALSE(winograd_can_apply(parse_graph(single_conv("kernel_shape=[1,1]", 16, 1)), 1));
  EXPECT_FALSE(winograd_can_apply(
      parse_graph(single_conv("kernel_shape=[3,3], pads=[1,1,1,1], strides=[2,2]", 16, 3)), 1));
}

// 3x3 convolutions only on maps too small for Winograd run direct in the Winograd family too:
// its runs would time the blocked family's kernels again.
TEST(Winograd, DoesNotApplyWhereEveryMapIsSmall) {
  auto can_apply = [](int side, int channels, int threads = 1) {
    return winograd_can_apply(parse_graph(fmt::format(
                                  R"(graph main [ai.onnx=17] (%x: f32[1,{1},{0},{0}]) {{
  @w: f32[{1},{1},3,3]
  %y: f32[1,{1},{0},{0}] = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%x, @w)
  return %y
}})",
                                  side, channels)),
                              threads);
  };
  EXPECT_FALSE(can_apply(4, 128));
  EXPECT_FALSE(can_apply(5, 128));
  EXPECT_FALSE(can_apply(2, 16));
  EXPECT_EQ(can_apply(4, 16), winograd_on_this_isa()) << "few multiply-adds: Winograd pays";
  EXPECT_EQ(can_apply(6, 128), winograd_on_this_isa());
  // On 2 threads oneDNN's kernel leaves maps to 7x7 of 1 M multiply-adds and more; cleave's
  // own (below AVX-512) keeps them, but not 512 channels to 8x8.
  const bool avx512 = isa_includes(effective_isa(), dnnl::cpu_isa::avx512_core);
  EXPECT_EQ(can_apply(6, 128, 2), winograd_on_this_isa() && !avx512);
  EXPECT_EQ(can_apply(7, 64, 2), winograd_on_this_isa() && !avx512);
  EXPECT_EQ(can_apply(8, 64, 2), winograd_on_this_isa());
  EXPECT_EQ(can_apply(8, 512), avx512) << "the own kernel's 512-channel rule";
  EXPECT_EQ(can_apply(9, 512, 2), winograd_on_this_isa());
}

// One padded 3x3 convolution C -> C on a side x side map.
std::string square_conv(int side, int channels) {
  std::string weights;
  for (int i = 0; i < channels * channels * 9; ++i)
    weights += fmt::format("{}{:g}", i ? "," : "", (i % 5) * 0.1 - 0.2);
  return fmt::format(R"(graph main [ai.onnx=17] (%x: f32[1,{0},{1},{1}]) {{
  @w: f32[{0},{0},3,3] = [{2}]
  %y = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%x, @w)
  return %y
}})",
                     channels, side, weights);
}

// The kernel follows winograd_pays on its team: oneDNN's Winograd (AVX-512) takes a 7x7 map of
// 128 channels at 1 thread and leaves it to the direct kernel at 2; cleave's own (AVX2, or
// under ONEDNN_MAX_CPU_ISA=AVX2) takes it at both, and leaves an 8x8 map of 512 channels at
// both, which oneDNN's takes.
TEST(Winograd, TheKernelFollowsTheRuleOnItsTeam) {
  if (!winograd_on_this_isa()) GTEST_SKIP() << "needs a Winograd kernel (AVX2 or AVX-512)";
  const bool own = !isa_includes(effective_isa(), dnnl::cpu_isa::avx512_core);
  const std::string seven = square_conv(7, 128);
  const std::string wide = square_conv(8, 512);
  for (int threads : {1, 2}) {
    const std::string at_seven = implementation_for(seven, ConvolutionFamily::kWinograd, threads);
    const std::string at_wide = implementation_for(wide, ConvolutionFamily::kWinograd, threads);
    const bool seven_winograd = own || threads == 1;
    EXPECT_EQ(at_seven.find("wino") != std::string::npos, seven_winograd)
        << threads << " thread(s): " << at_seven;
    EXPECT_EQ(at_wide.find("wino") != std::string::npos, !own)
        << threads << " thread(s): " << at_wide;
    if (own) {
      EXPECT_EQ(at_seven, "winograd_2x2_3x3:cleave_avx2");
    }
  }
}

// Through the executor: the Winograd family runs an 8x8 map's 3x3 convolution on Winograd and,
// after a 2x2 pool, a 4x4 map's on the direct kernel (its implementation in the run's
// statistics), and computes what the blocked family computes.
TEST(Winograd, ASmallMapRunsDirectInARunOfTheFamily) {
  if (!winograd_on_this_isa()) GTEST_SKIP() << "needs a Winograd kernel (AVX2 or AVX-512)";
  std::string w, v;
  for (int i = 0; i < 96 * 96 * 9; ++i) {
    // Mostly positive, so that most outputs stay above the ReLUs.
    w += (i ? "," : "") + std::to_string((i * 7 % 17) / 170.0 - 0.04);
    v += (i ? "," : "") + std::to_string((i * 5 % 13) / 130.0 - 0.04);
  }
  const Graph graph = parse_graph(fmt::format(R"(graph main [ai.onnx=17] (%x: f32[1,96,8,8]) {{
  @w: f32[96,96,3,3] = [{0}]
  @v: f32[96,96,3,3] = [{1}]
  %a = Conv[kernel_shape=[3,3], pads=[1,1,1,1], activation="Relu"](%x, @w)
  %p = MaxPool[kernel_shape=[2,2], strides=[2,2]](%a)
  %y = Conv[kernel_shape=[3,3], pads=[1,1,1,1], activation="Relu"](%p, @v)
  return %y
}})",
                                              w, v));
  std::map<std::string, Tensor> inputs;
  Tensor x = Tensor::allocate(DataType::kFloat, {1, 96, 8, 8});
  for (int64_t i = 0; i < x.element_count(); ++i) x.data<float>()[i] = (i % 11) * 0.2f - 1.0f;
  inputs.emplace("x", x);
  ExecutorOptions winograd_options;
  winograd_options.convolution_family = ConvolutionFamily::kWinograd;
  Executor blocked(graph, ExecutorOptions{});
  Executor winograd(graph, winograd_options);
  const std::vector<Tensor> want = blocked.run(inputs);
  const std::vector<Tensor> got = winograd.run(inputs);
  const std::vector<std::string>& implementations = winograd.stats().implementations;
  const NodeId large = graph.value(*graph.find_value("a")).producer;
  const NodeId small = graph.value(*graph.find_value("y")).producer;
  ASSERT_GT(implementations.size(), std::max(large, small));
  EXPECT_NE(implementations[large].find("wino"), std::string::npos) << implementations[large];
  EXPECT_FALSE(implementations[small].empty());
  EXPECT_EQ(implementations[small].find("wino"), std::string::npos) << implementations[small];
  const auto expected = want.at(0).values<float>();
  const auto actual = got.at(0).values<float>();
  ASSERT_EQ(expected.size(), actual.size());
  int positive = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    ASSERT_NEAR(actual[i], expected[i], 1e-4 * std::abs(expected[i]) + 1e-4) << "at " << i;
    positive += expected[i] > 0.0f;
  }
  EXPECT_GT(positive, 100);
}

class LayoutChoiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cache_ =
        std::filesystem::temp_directory_path() /
        ("cleave_layouts_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
         "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(cache_);
    options_.cache_directory = cache_.string();
    options_.min_runs = 2;
    options_.max_runs = 2;
    options_.warmup = 1;
  }
  void TearDown() override { std::filesystem::remove_all(cache_); }
  std::filesystem::path cache_;
  LayoutChoiceOptions options_;
};

TEST_F(LayoutChoiceTest, PicksTheFasterAndCachesIt) {
  Graph graph = parse_graph(branchy_model());
  LayoutChoice first = choose_layouts(graph, ExecutorOptions{}, model_inputs(), options_);
  ASSERT_TRUE(first.measured);
  EXPECT_FALSE(first.cached);
  // All three families fit this model (its second convolution suits Winograd), where the ISA
  // has Winograd.
  ASSERT_EQ(first.fastest_ms.size(), winograd_on_this_isa() ? 3u : 2u);
  for (const auto& [family, ms] : first.fastest_ms) EXPECT_GT(ms, 0) << to_string(family);
  ASSERT_EQ(first.relative.size(), first.fastest_ms.size());
  EXPECT_EQ(first.relative.at(ConvolutionFamily::kBlocked), 1.0);
  EXPECT_EQ(first.family, pick_settled_family(first.ratios, kFamilyMargin,
                                              family_margins(graph, ExecutorOptions{}.threads)));
  // Each other family's per-round ratios, at least min_runs of them, whose median decided.
  ASSERT_EQ(first.ratios.size(), first.relative.size() - 1);
  for (const auto& [family, ratios] : first.ratios) {
    EXPECT_GE(ratios.size(), static_cast<std::size_t>(options_.min_runs)) << to_string(family);
    EXPECT_DOUBLE_EQ(median_of(ratios), first.relative.at(family)) << to_string(family);
  }
  LayoutChoice second = choose_layouts(graph, ExecutorOptions{}, model_inputs(), options_);
  EXPECT_TRUE(second.cached);
  EXPECT_EQ(second.family, first.family);
  EXPECT_EQ(second.fastest_ms, first.fastest_ms);
  EXPECT_EQ(second.relative, first.relative);
  EXPECT_EQ(second.ratios.size(), first.ratios.size());
  for (const auto& [family, ratios] : first.ratios) {
    ASSERT_EQ(second.ratios.at(family).size(), ratios.size());
    for (std::size_t i = 0; i < ratios.size(); ++i)
      EXPECT_NEAR(second.ratios.at(family)[i], ratios[i], 1e-12 * ratios[i]);
  }
  // Another thread count is another entry.
  ExecutorOptions two_threads;
  two_threads.threads = 2;
  EXPECT_FALSE(choose_layouts(graph, two_threads, model_inputs(), options_).cached);
}

// The rounds' two executors (blocked's and the family timed against it) run in turn: their
// static buffer plans share one arena, as large as the larger plan, not both.
TEST_F(LayoutChoiceTest, TheRoundsExecutorsHoldTheLargerArenaNotBoth) {
  Graph graph = parse_graph(branchy_model());
  options_.use_cache = false;
  const LayoutChoice choice = choose_layouts(graph, ExecutorOptions{}, model_inputs(), options_);
  ASSERT_TRUE(choice.measured);
  std::size_t blocked = 0, largest = 0;
  for (const auto& [family, ms] : choice.fastest_ms) {
    ExecutorOptions options;
    options.convolution_family = family;
    Executor alone(graph, options);
    for (int run = 0; run < 4; ++run) alone.run(model_inputs());
    ASSERT_TRUE(alone.last_run_planned()) << to_string(family);
    const std::size_t bytes = alone.stats().peak_activation_bytes;
    if (family == ConvolutionFamily::kBlocked) blocked = bytes;
    largest = std::max(largest, bytes);
  }
  EXPECT_GT(choice.rounds_activation_bytes, 0u);
  EXPECT_LE(choice.rounds_activation_bytes, largest);
  EXPECT_LT(choice.rounds_activation_bytes, blocked + largest);
  // Read from the cache, nothing was held.
  options_.use_cache = true;
  choose_layouts(graph, ExecutorOptions{}, model_inputs(), options_);
  EXPECT_EQ(
      choose_layouts(graph, ExecutorOptions{}, model_inputs(), options_).rounds_activation_bytes,
      0u);
}

// At one thread the rounds are timed in CPU time, recorded in the entry and read back with it;
// at two in wall time.
TEST_F(LayoutChoiceTest, OneThreadIsTimedInCpuTimeAndTheEntrySaysSo) {
  EXPECT_TRUE(times_in_cpu_time(1));
  EXPECT_FALSE(times_in_cpu_time(2));
  Graph graph = parse_graph(branchy_model());
  LayoutChoice one = choose_layouts(graph, ExecutorOptions{}, model_inputs(), options_);
  ASSERT_TRUE(one.measured);
  EXPECT_TRUE(one.cpu_time);
  EXPECT_NE(describe(one).find(" CPU ms"), std::string::npos) << describe(one);
  LayoutChoice again = choose_layouts(graph, ExecutorOptions{}, model_inputs(), options_);
  ASSERT_TRUE(again.cached);
  EXPECT_TRUE(again.cpu_time);
  ExecutorOptions two_threads;
  two_threads.threads = 2;
  LayoutChoice two = choose_layouts(graph, two_threads, model_inputs(), options_);
  ASSERT_TRUE(two.measured);
  EXPECT_FALSE(two.cpu_time);
  EXPECT_EQ(describe(two).find("CPU"), std::string::npos) << describe(two);
}

// A choice measured on one ISA (another CPU, or this one capped) is not read on another.
TEST_F(LayoutChoiceTest, AnEntryOfAnotherIsaIsNotRead) {
  Graph graph = parse_graph(branchy_model());
  choose_layouts(graph, ExecutorOptions{}, model_inputs(), options_);
  const std::string here = "-" + isa_cache_key() + "-";
  const std::string other = isa_cache_key() == "avx2" ? "-avx512_core-" : "-avx2-";
  int entries = 0;
  for (const auto& entry : std::filesystem::directory_iterator(cache_)) {
    std::string name = entry.path().filename().string();
    const std::size_t at = name.find(here);
    ASSERT_NE(at, std::string::npos) << name << " does not name the ISA " << isa_cache_key();
    std::filesystem::rename(entry.path(), cache_ / name.replace(at, here.size(), other));
    ++entries;
  }
  ASSERT_EQ(entries, 1);
  LayoutChoice again = choose_layouts(graph, ExecutorOptions{}, model_inputs(), options_);
  EXPECT_TRUE(again.measured);
  EXPECT_FALSE(again.cached);
}

TEST_F(LayoutChoiceTest, ADamagedCacheEntryIsMeasuredAgain) {
  Graph graph = parse_graph(branchy_model());
  choose_layouts(graph, ExecutorOptions{}, model_inputs(), options_);
  int entries = 0;
  for (const auto& entry : std::filesystem::directory_iterator(cache_)) {
    std::ofstream(entry.path()) << "{\"family\": ";
    ++entries;
  }
  ASSERT_EQ(entries, 1);
  LayoutChoice again = choose_layouts(graph, ExecutorOptions{}, model_inputs(), options_);
  EXPECT_TRUE(again.measured);
  EXPECT_FALSE(again.cached);
}

TEST_F(LayoutChoiceTest, AnEntryWithANegativeRatioIsMeasuredAgain) {
  Graph graph = parse_graph(branchy_model());
  choose_layouts(graph, ExecutorOptions{}, model_inputs(), options_);
  for (const auto& entry : std::filesystem::directory_iterator(cache_)) {
    std::ofstream(entry.path()) << R"({"family": "blocked", "fastest_ms": {"blocked": 1.0, )"
                                << R"("channels-last": 2.0, "winograd": 3.0}, )"
                                << R"("relative_to_blocked": {"channels-last": -2.0}})";
  }
  LayoutChoice again = choose_layouts(graph, ExecutorOptions{}, model_inputs(), options_);
  EXPECT_TRUE(again.measured);
  EXPECT_FALSE(again.cached);
}

TEST_F(LayoutChoiceTest, AnEntryWithANegativeRoundRatioIsMeasuredAgain) {
  Graph graph = parse_graph(branchy_model());
  choose_layouts(graph, ExecutorOptions{}, model_inputs(), options_);
  for (const auto& entry : std::filesystem::directory_iterator(cache_)) {
    std::ofstream(entry.path()) << R"({"family": "blocked", "fastest_ms": {"blocked": 1.0, )"
                                << R"("channels-last": 2.0, "winograd": 3.0}, )"
                                << R"("ratios": {"channels-last": [1.1, -0.5]}})";
  }
  std::vector<std::string> lines;
  options_.progress = [&](const std::string& line) { lines.push_back(line); };
  LayoutChoice again = choose_layouts(graph, ExecutorOptions{}, model_inputs(), options_);
  EXPECT_TRUE(again.measured);
  EXPECT_FALSE(again.cached);
  ASSERT_FALSE(lines.empty());
  EXPECT_NE(lines[0].find("ratios.channels-last"), std::string::npos) << lines[0];
}

TEST_F(LayoutChoiceTest, NothingToChooseWithoutConvolutions) {
  Graph graph = parse_graph(R"(graph main [ai.onnx=17] (%x: f32[1,3,12,12]) {
  %y = Relu(%x)
  return %y
})");
  EXPECT_FALSE(layouts_can_differ(graph));
  LayoutChoice choice = choose_layouts(graph, ExecutorOptions{}, model_inputs(), options_);
  EXPECT_FALSE(choice.measured);
  EXPECT_EQ(choice.family, ConvolutionFamily::kBlocked);
  EXPECT_FALSE(std::filesystem::exists(cache_)) << "nothing measured, nothing cached";
}

TEST_F(LayoutChoiceTest, PlainLayoutsAreNotMeasured) {
  Graph graph = parse_graph(branchy_model());
  ExecutorOptions plain;
  plain.blocked_layouts = false;
  EXPECT_FALSE(choose_layouts(graph, plain, model_inputs(), options_).measured);
}

TEST_F(LayoutChoiceTest, AnEntryWithoutWinogradIsMeasuredAgain) {
  Graph graph = parse_graph(branchy_model());
  choose_layouts(graph, ExecutorOptions{}, model_inputs(), options_);
  for (const auto& entry : std::filesystem::directory_iterator(cache_)) {
    std::ofstream(entry.path())
        << R"({"family": "blocked", "fastest_ms": {"blocked": 1.0, "channels-last": 2.0}})";
  }
  LayoutChoice again = choose_layouts(graph, ExecutorOptions{}, model_inputs(), options_);
  // Without Winograd on this ISA the entry is complete.
  EXPECT_EQ(again.cached, !winograd_on_this_isa());
  EXPECT_EQ(again.fastest_ms.count(ConvolutionFamily::kWinograd), winograd_on_this_isa() ? 1u : 0u);
}

TEST_F(LayoutChoiceTest, OneFamilyBesideBlockedIsAliveAtATime) {
  if (!winograd_on_this_isa()) GTEST_SKIP() << "needs a Winograd kernel (AVX2 or AVX-512)";
  // Every family's executor alive at once held a copy of the weights per family: fcn_resnet50's
  // first run peaked at 606 MiB against ONNX Runtime's 450.
  Graph graph = parse_graph(branchy_model());
  std::map<std::string, std::size_t> packed_when_preparing;
  options_.progress = [&](const std::string& line) {
    const std::string prefix = "layouts: preparing ";
    if (line.rfind(prefix, 0) == 0)
      packed_when_preparing[line.substr(prefix.size())] = packed_constant_bytes();
  };
  LayoutChoice choice = choose_layouts(graph, ExecutorOptions{}, model_inputs(), options_);
  ASSERT_EQ(packed_when_preparing.size(), 3u);
  // Blocked's copies are alive when Winograd's executor is made; Winograd's are gone when
  // channels-last's is.
  EXPECT_GT(packed_when_preparing.at("winograd"), packed_when_preparing.at("blocked"));
  EXPECT_EQ(packed_when_preparing.at("channels-last"), packed_when_preparing.at("winograd"));
  // Each family was still timed against blocked, in rounds of its own.
  EXPECT_EQ(choice.fastest_ms.size(), 3u);
  EXPECT_EQ(choice.relative.size(), 3u);
  EXPECT_EQ(choice.relative.at(ConvolutionFamily::kBlocked), 1.0);
}

TEST_F(LayoutChoiceTest, ProductsHoldNoPackedCopyDuringTheRounds) {
  // The loaded weights stay alive through the rounds for the executor that runs afterwards: a
  // classifier Gemm packed by blocked's executor was held twice (vgg11's first run: 472 MiB
  // loaded and 472 packed, its peak 1216 MiB against ONNX Runtime's 1000).
  constexpr int kColumns = 32, kInner = 16 * 12 * 12;
  std::string weights;
  for (int i = 0; i < kColumns * kInner; ++i)
    weights += fmt::format("{}{}", i ? "," : "", (i * 7 % 13) / 13.0 - 0.5);
  Graph graph = parse_graph(fmt::format(
      "graph main [ai.onnx=17] (%x: f32[1,3,12,12]) {{\n  @w1: f32[16,3,3,3] = [{}]\n"
      "  @fc: f32[{},{}] = [{}]\n"
      "  %a = Conv[kernel_shape=[3,3], pads=[1,1,1,1], activation=\"Relu\"](%x, @w1)\n"
      "  %f = Flatten[axis=1](%a)\n  %y = Gemm[transB=1](%f, @fc)\n  return %y\n}}",
      fmt::join(std::vector<double>(16 * 3 * 9, 0.25), ","), kColumns, kInner, weights));
  const std::size_t gemm_bytes = std::size_t{kColumns} * kInner * sizeof(float);
  const std::size_t before = packed_constant_bytes();
  std::map<std::string, std::size_t> packed_when_preparing;
  options_.progress = [&](const std::string& line) {
    const std::string prefix = "layouts: preparing ";
    if (line.rfind(prefix, 0) == 0)
      packed_when_preparing[line.substr(prefix.size())] = packed_constant_bytes() - before;
  };
  LayoutChoice choice = choose_layouts(graph, ExecutorOptions{}, model_inputs(), options_);
  ASSERT_TRUE(packed_when_preparing.count("channels-last"));
  // Blocked's executor is warm then: its convolution's weights are packed, the Gemm's are not.
  EXPECT_GT(packed_when_preparing.at("channels-last"), 0u);
  EXPECT_LT(packed_when_preparing.at("channels-last"), gemm_bytes);
  EXPECT_TRUE(choice.measured);
  EXPECT_TRUE(choice.relative.count(ConvolutionFamily::kChannelsLast));
  // The executor made afterwards packs them as before.
  Executor after(graph);
  after.run(model_inputs());
  EXPECT_GE(packed_constant_bytes() - before, gemm_bytes);
}

TEST(LayoutChoiceDescription, SaysWhichWonAndByHowMuch) {
  LayoutChoice choice;
  choice.family = ConvolutionFamily::kWinograd;
  choice.measured = true;
  choice.fastest_ms = {{ConvolutionFamily::kBlocked, 31.4},
                       {ConvolutionFamily::kWinograd, 25.7},
                       {ConvolutionFamily::kChannelsLast, 30.125}};
  EXPECT_EQ(describe(choice),
            "winograd (measured: 25.700 ms; blocked 31.400 ms, channels-last 30.125 ms)");
  choice.family = ConvolutionFamily::kBlocked;
  choice.cached = true;
  choice.fastest_ms.erase(ConvolutionFamily::kWinograd);
  EXPECT_EQ(describe(choice), "blocked (measured earlier: 31.400 ms; channels-last 30.125 ms)");
  choice.relative = {{ConvolutionFamily::kBlocked, 1.0}, {ConvolutionFamily::kChannelsLast, 1.04}};
  EXPECT_EQ(describe(choice),
            "blocked (measured earlier: 31.400 ms; channels-last 30.125 ms; median against "
            "blocked in interleaved rounds: channels-last 1.040)");
  EXPECT_EQ(describe(LayoutChoice{}), "blocked");
  choice.cpu_time = true;
  choice.relative.clear();
  EXPECT_EQ(describe(choice),
            "blocked (measured earlier: 31.400 CPU ms; channels-last 30.125 CPU ms)");
}

// What the 1-thread rounds measure: a sleep (the host's other processes holding the core) does
// not count, work does.
TEST(ProcessCpuSeconds, CountsWorkAndNotWaiting) {
  double start = process_cpu_seconds();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_LT(process_cpu_seconds() - start, 0.03);
  start = process_cpu_seconds();
  const auto wall = std::chrono::steady_clock::now();
  volatile double sink = 0;
  while (process_cpu_seconds() - start < 0.05 &&
         std::chrono::steady_clock::now() - wall < std::chrono::seconds(20)) {
    for (int i = 0; i < 10000; ++i) sink = sink + 1.0;
  }
  EXPECT_GE(process_cpu_seconds() - start, 0.05);
  EXPECT_GE(seconds_since(wall), 0.045);  // CPU time does not run ahead of the wall clock.
}

TEST(ConvolutionFamilyNames, RoundTrip) {
  for (ConvolutionFamily family : {ConvolutionFamily::kBlocked, ConvolutionFamily::kWinograd,
                                   ConvolutionFamily::kChannelsLast}) {
    EXPECT_EQ(parse_convolution_family(to_string(family)), family);
  }
  EXPECT_FALSE(parse_convolution_family("sideways"));
}

TEST(WinogradMargin, GrowsWithTheBytesBeyondThePlainWeights) {
  WinogradSelection selection;
  selection.plain_weight_bytes = 4.0;
  EXPECT_DOUBLE_EQ(winograd_margin(selection), kFamilyMargin);
  selection.kept.emplace_back().extra_bytes = 3.0;
  EXPECT_DOUBLE_EQ(winograd_margin(selection), kFamilyMargin);
  // 9 bytes added to 4: 2.25 margins.
  selection.kept.emplace_back().extra_bytes = 6.0;
  EXPECT_DOUBLE_EQ(winograd_margin(selection), 2.25 * kFamilyMargin);
  // Candidates sent direct add nothing.
  selection.kept.pop_back();
  selection.direct.emplace_back().extra_bytes = 6.0;
  EXPECT_DOUBLE_EQ(winograd_margin(selection), kFamilyMargin);
}

TEST(WinogradMargin, AGraphsMarginsFollowTheKernelsWeightCopies) {
  // Two 64-channel 3x3 convolutions on 32x32 maps: 288 KiB of weights, under the budget's
  // floor, so every copy is kept.
  const Graph graph = parse_graph(R"(graph main [ai.onnx=17] (%x: f32[1,64,32,32]) {
  @w1: f32[64,64,3,3]
  @w2: f32[64,64,3,3]
  %a: f32[1,64,32,32] = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%x, @w1)
  %b: f32[1,64,32,32] = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%a, @w2)
  return %b
})");
  // F(4x4, 3x3)'s copies hold 4x the weights: they add 3x.
  const FamilyMargins four = family_margins(graph, 1, WinogradKernel{4.0, 0.75});
  ASSERT_EQ(four.count(ConvolutionFamily::kWinograd), 1u);
  EXPECT_NEAR(four.at(ConvolutionFamily::kWinograd), 3.0 * kFamilyMargin, 1e-12);
  EXPECT_FALSE(four.count(ConvolutionFamily::kChannelsLast));
  // F(2x2, 3x3)'s hold 16/9: they add 7/9, and the margin stays.
  EXPECT_TRUE(family_margins(graph, 1, WinogradKernel{16.0 / 9.0, 5.0 / 9.0}).empty());
}

TEST(WinogradMargin, CountsTheLargestScratchpadOfTheKeptKernels) {
  WinogradSelection selection;
  selection.plain_weight_bytes = 4.0;
  WinogradCandidate& first = selection.kept.emplace_back();
  first.extra_bytes = 3.0;
  first.scratchpad_bytes = 3.0;
  // 3 bytes of weights and a 3-byte scratchpad added to 4: 1.5 margins.
  EXPECT_DOUBLE_EQ(winograd_margin(selection), 1.5 * kFamilyMargin);
  // One thread's scratchpad serves every kernel: the largest counts, not the sum.
  selection.kept.emplace_back().scratchpad_bytes = 2.0;
  EXPECT_DOUBLE_EQ(selection.kept_scratchpad_bytes(), 3.0);
  EXPECT_DOUBLE_EQ(winograd_margin(selection), 1.5 * kFamilyMargin);
  // A candidate sent direct books none.
  selection.direct.emplace_back().scratchpad_bytes = 10.0;
  EXPECT_DOUBLE_EQ(winograd_margin(selection), 1.5 * kFamilyMargin);
}

TEST(WinogradMargin, AsksOneDnnForTheScratchpadOfEachKeptConvolution) {
  if (!winograd_kernel_here().ask_onednn) GTEST_SKIP() << "no oneDNN Winograd kernel on this ISA";
  // raft_small's feature encoder: 8 channels on 64x64 maps at batch 2, where oneDNN's
  // F(4x4, 3x3) books megabytes of scratchpad for a 2 KiB weight.
  const Graph graph = parse_graph(R"(graph main [ai.onnx=17] (%x: f32[2,8,64,64]) {
  @w: f32[8,8,3,3]
  %y: f32[2,8,64,64] = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%x, @w)
  return %y
})");
  const WinogradSelection selection =
      select_winograd(graph, WinogradBudget{}, 1, winograd_kernel_here());
  ASSERT_EQ(selection.kept.size(), 1u);
  EXPECT_GT(selection.kept_scratchpad_bytes(), selection.plain_weight_bytes);
  const double margin = winograd_margin(selection);
  EXPECT_NEAR(margin,
              kFamilyMargin * (selection.kept_bytes() + selection.kept_scratchpad_bytes()) /
                  selection.plain_weight_bytes,
              1e-9);
  EXPECT_EQ(family_margins(graph, 1).at(ConvolutionFamily::kWinograd), margin);
}

}  // namespace
}  // namespace cleave
