// Convolution layouts: channels-last kernels, same outputs either way, and the measured choice.
#include "pipeline/layout_choice.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "ir/text.h"
#include "runtime/executor.h"
#include "runtime/kernels/dnnl_util.h"

namespace cleave {
namespace {

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
    NodeRunner runner(graph, conv, /*blocked_outputs_allowed=*/true, channels_last);
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

TEST(ChannelsLast, OutputsMatchTheBlockedLayouts) {
  Graph graph = parse_graph(branchy_model());
  std::map<std::string, Tensor> inputs = model_inputs();
  ExecutorOptions blocked_options;
  ExecutorOptions channels_last_options;
  channels_last_options.channels_last = true;
  Executor blocked(graph, blocked_options);
  Executor channels_last(graph, channels_last_options);
  for (int run = 0; run < 3; ++run) {  // Run 2 on, Concat inputs are placed in the output.
    std::vector<Tensor> want = blocked.run(inputs);
    std::vector<Tensor> got = channels_last.run(inputs);
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
  EXPECT_GT(first.blocked_ms, 0);
  EXPECT_GT(first.channels_last_ms, 0);
  EXPECT_EQ(first.channels_last, first.channels_last_ms < first.blocked_ms);
  LayoutChoice second = choose_layouts(graph, ExecutorOptions{}, model_inputs(), options_);
  EXPECT_TRUE(second.cached);
  EXPECT_EQ(second.channels_last, first.channels_last);
  EXPECT_EQ(second.blocked_ms, first.blocked_ms);
  // Another thread count is another entry.
  ExecutorOptions two_threads;
  two_threads.threads = 2;
  EXPECT_FALSE(choose_layouts(graph, two_threads, model_inputs(), options_).cached);
}

TEST_F(LayoutChoiceTest, ADamagedCacheEntryIsMeasuredAgain) {
  Graph graph = parse_graph(branchy_model());
  choose_layouts(graph, ExecutorOptions{}, model_inputs(), options_);
  int entries = 0;
  for (const auto& entry : std::filesystem::directory_iterator(cache_)) {
    std::ofstream(entry.path()) << "{\"channels_last\": ";
    ++entries;
  }
  ASSERT_EQ(entries, 1);
  LayoutChoice again = choose_layouts(graph, ExecutorOptions{}, model_inputs(), options_);
  EXPECT_TRUE(again.measured);
  EXPECT_FALSE(again.cached);
}

TEST_F(LayoutChoiceTest, NothingToChooseWithoutConvolutions) {
  Graph graph = parse_graph(R"(graph main [ai.onnx=17] (%x: f32[1,3,12,12]) {
  %y = Relu(%x)
  return %y
})");
  EXPECT_FALSE(layouts_can_differ(graph));
  LayoutChoice choice = choose_layouts(graph, ExecutorOptions{}, model_inputs(), options_);
  EXPECT_FALSE(choice.measured);
  EXPECT_FALSE(choice.channels_last);
  EXPECT_FALSE(std::filesystem::exists(cache_)) << "nothing measured, nothing cached";
}

TEST_F(LayoutChoiceTest, PlainLayoutsAreNotMeasured) {
  Graph graph = parse_graph(branchy_model());
  ExecutorOptions plain;
  plain.blocked_layouts = false;
  EXPECT_FALSE(choose_layouts(graph, plain, model_inputs(), options_).measured);
}

TEST(LayoutChoiceDescription, SaysWhichWonAndByHowMuch) {
  LayoutChoice choice{true, true, false, 118.25, 107.5};
  EXPECT_EQ(describe(choice), "channels-last (measured: 107.500 ms vs 118.250 ms blocked)");
  choice.channels_last = false;
  choice.cached = true;
  EXPECT_EQ(describe(choice),
            "16-channel blocks (measured earlier: 118.250 ms vs 107.500 ms channels-last)");
}

}  // namespace
}  // namespace cleave
