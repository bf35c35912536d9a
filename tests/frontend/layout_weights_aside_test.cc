// The layout choice's rounds hold no loaded copy of the weights blocked's executor packed.
#include <fmt/core.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "frontend/layout_choice.h"
#include "ir/text.h"
#include "runtime/cpu_isa.h"
#include "runtime/executor.h"
#include "runtime/kernels/packed_constants.h"

namespace cleave {
namespace {

// Two convolutions; @w2 (147,456 bytes) is large enough to be set aside, @w1 (36,864) is not.
// With `reduce`, a ReduceSum reads @w2 too, at run time.
std::string two_convolutions(bool reduce) {
  std::string w1, w2;
  for (int i = 0; i < 64 * 16 * 9; ++i)
    w1 += fmt::format("{}{}", i ? "," : "", (i * 7 % 13) / 13.0 - 0.5);
  for (int i = 0; i < 64 * 64 * 9; ++i)
    w2 += fmt::format("{}{}", i ? "," : "", (i * 5 % 11) / 11.0 - 0.5);
  return fmt::format(
      "graph main [ai.onnx=17] (%x: f32[1,16,28,28]) {{\n  @w1: f32[64,16,3,3] = [{}]\n"
      "  @w2: f32[64,64,3,3] = [{}]\n"
      "  %a: f32[1,64,28,28] = Conv[kernel_shape=[3,3], pads=[1,1,1,1], activation=\"Relu\"](%x, "
      "@w1)\n"
      "  %y: f32[1,64,28,28] = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%a, @w2)\n{}  return "
      "%y{}\n}}",
      w1, w2, reduce ? "  %s: f32[] = ReduceSum[keepdims=0](@w2)\n" : "", reduce ? ", %s" : "");
}

std::map<std::string, Tensor> inputs() {
  std::mt19937 random(3);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  Tensor x = Tensor::allocate(DataType::kFloat, {1, 16, 28, 28});
  for (int64_t i = 0; i < x.element_count(); ++i) x.data<float>()[i] = uniform(random);
  return {{"x", x}};
}

const std::vector<std::byte>& bytes_of(const Graph& graph, const std::string& name) {
  return *graph.value(*graph.find_value(name)).initializer->bytes;
}

// How many of the whole pages of `bytes` are resident (mincore).
std::size_t resident_pages(const std::vector<std::byte>& bytes, std::size_t* whole = nullptr) {
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<std::uintptr_t>(bytes.data());
  const std::uintptr_t first = (begin + page - 1) / page * page;
  const std::uintptr_t last = (begin + bytes.size()) / page * page;
  const std::size_t pages = last > first ? (last - first) / page : 0;
  if (whole) *whole = pages;
  std::vector<unsigned char> in(pages);
  if (pages == 0 || ::mincore(reinterpret_cast<void*>(first), last - first, in.data()) != 0)
    return 0;
  std::size_t resident = 0;
  for (unsigned char flag : in) resident += flag & 1;
  return resident;
}

bool same(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].byte_size() != b[i].byte_size() ||
        std::memcmp(a[i].raw(), b[i].raw(), a[i].byte_size()) != 0)
      return false;
  }
  return true;
}

class LayoutWeightsAside : public ::testing::Test {
 protected:
  void SetUp() override {
    cache_ = std::filesystem::temp_directory_path() /
             ("cleave_aside_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
              "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(cache_);
    options_.cache_directory = cache_.string();
    options_.min_runs = 2;
    options_.max_runs = 2;
    options_.warmup = 1;
  }
  void TearDown() override { std::filesystem::remove_all(cache_); }

  // choose_layouts on `graph`, noting @w2's resident pages and the bytes set aside when the
  // last family's executor (channels-last, timed on every ISA) is made.
  void choose(const Graph& graph) {
    options_.progress = [&](const std::string& line) {
      if (line != "layouts: preparing channels-last") return;
      resident_during_ = resident_pages(bytes_of(graph, "w2"), &pages_);
      aside_during_ = loaded_bytes_aside();
    };
    const LayoutChoice choice = choose_layouts(graph, ExecutorOptions{}, inputs(), options_);
    ASSERT_TRUE(choice.measured);
    ASSERT_TRUE(choice.relative.count(ConvolutionFamily::kChannelsLast));
  }

  std::filesystem::path cache_;
  LayoutChoiceOptions options_;
  std::size_t resident_during_ = 0, pages_ = 0, aside_during_ = 0;
};

TEST_F(LayoutWeightsAside, LoadedBytesAreOutOfMemoryDuringTheRoundsAndComeBackWhole) {
  // wide_resnet50_2's first run peaked at 804 MiB (ONNX Runtime's: 693): its loaded weights
  // beside blocked's packed copy and another family's.
  Graph graph = parse_graph(two_convolutions(false));
  const std::vector<std::byte> w2 = bytes_of(graph, "w2");
  Executor fresh(parse_graph(two_convolutions(false)));
  const std::vector<Tensor> expected = fresh.run(inputs());
  choose(graph);
  ASSERT_GT(pages_, 30u);
  EXPECT_EQ(resident_during_, 0u) << "of " << pages_ << " whole pages of @w2";
  EXPECT_GE(aside_during_, w2.size());
  // Afterwards every byte is back, resident, and the executor made then computes as before.
  EXPECT_EQ(loaded_bytes_aside(), 0u);
  EXPECT_EQ(resident_pages(bytes_of(graph, "w2")), pages_);
  EXPECT_TRUE(bytes_of(graph, "w2") == w2);
  Executor after(graph);
  EXPECT_TRUE(same(after.run(inputs()), expected));
}

TEST_F(LayoutWeightsAside, AWeightAKernelReadsAtRunTimeStaysLoaded) {
  Graph graph = parse_graph(two_convolutions(true));
  choose(graph);
  ASSERT_GT(pages_, 30u);
  EXPECT_EQ(resident_during_, pages_);
}

TEST_F(LayoutWeightsAside, AnotherCopyOfTheBytesKeepsThemLoadedUnlessIdle) {
  Graph graph = parse_graph(two_convolutions(false));
  const Graph other = graph;  // Shares the bytes: another thread could read them.
  choose(graph);
  ASSERT_GT(pages_, 30u);
  EXPECT_EQ(resident_during_, pages_);
  std::filesystem::remove_all(cache_);
  options_.idle_weight_copies = 1;  // The caller says nothing reads that copy meanwhile.
  choose(graph);
  EXPECT_EQ(resident_during_, 0u);
}

TEST(LoadedBytesAside, AnotherFamilyPacksTheWeightsBroughtBack) {
  std::vector<ConvolutionFamily> families = {ConvolutionFamily::kChannelsLast};
  if (winograd_available()) families.push_back(ConvolutionFamily::kWinograd);
  for (ConvolutionFamily family : families) {
    SCOPED_TRACE(to_string(family));
    Graph graph = parse_graph(two_convolutions(false));
    ExecutorOptions options;
    options.convolution_family = family;
    Executor fresh(parse_graph(two_convolutions(false)), options);
    const std::vector<Tensor> expected = fresh.run(inputs());
    std::vector<Tensor> got;
    {
      Executor blocked(graph);
      blocked.run(inputs());
      // The graph here and blocked's copy share the bytes.
      const LoadedBytesAside aside(graph, blocked.weights_packed_for_good(), 2);
      ASSERT_EQ(aside.weights(), 1u);  // @w2; @w1 is below the size worth it.
      EXPECT_EQ(resident_pages(bytes_of(graph, "w2")), 0u);
      Executor other(graph, options);
      got = other.run(inputs());
      EXPECT_EQ(resident_pages(bytes_of(graph, "w2")), 0u) << "handed back after its packing";
    }
    EXPECT_TRUE(same(got, expected));
  }
}

}  // namespace
}  // namespace cleave
