// What the exact int8 convolutions without VNNI hold beside oneDNN's kernel: one packed copy of
// the weights for the clamped and the excess pass, and their int32 sums and data copies in the
// running thread's staging slots (one set for every such kernel it runs), not in each kernel.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <thread>
#include <vector>

#include "kernel_test_util.h"
#include "runtime/executor.h"
#include "runtime/kernels/dnnl_util.h"
#include "runtime/kernels/math/quantize_util.h"
#include "runtime/kernels/staging.h"

namespace cleave {
namespace {

using kernel_test::make_tensor;

constexpr const char* kNeedsSplit =
    "runs where oneDNN's int8 products need the split (no VNNI: "
    "ONEDNN_MAX_CPU_ISA=AVX2, as the capped CI run sets)";

std::string listed(const std::vector<double>& values) {
  std::string text;
  for (double v : values) text += (text.empty() ? "" : ", ") + std::to_string(int(v));
  return "[" + text + "]";
}

// `convs` QLinearConvs of one u8 input of zero point 0 (the clamped-data path), each with
// 3x3 weights of its own, 16 to 32 channels on a 32x32 map.
std::string convs_text(int convs, std::mt19937& rng) {
  std::uniform_int_distribution<int> weight(-128, 127);
  std::string text =
      "graph g [ai.onnx=13] (%x: u8[1,16,32,32]) {\n  @zero: u8[] = [0]\n"
      "  @w_zero: i8[] = [0]\n  @x_scale: f32[] = [0.05]\n"
      "  @w_scale: f32[] = [0.01]\n  @y_scale: f32[] = [0.5]\n";
  std::string outputs;
  for (int i = 0; i < convs; ++i) {
    std::vector<double> w(32 * 16 * 9);
    for (double& v : w) v = weight(rng);
    const std::string n = std::to_string(i);
    text += "  @w" + n + ": i8[32,16,3,3] = " + listed(w) + "\n  %y" + n +
            " = QLinearConv[pads=[1, 1, 1, 1]](%x, @x_scale, @zero, @w" + n +
            ", @w_scale, @w_zero, @y_scale, @zero)\n";
    outputs += (i ? ", %y" : "%y") + n;
  }
  return text + "  return " + outputs + "\n}\n";
}

// Full-range data: half of it above 127, so the excess runs on oneDNN's pass too.
Tensor full_range_input(std::mt19937& rng) {
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<double> x(16 * 32 * 32);
  for (double& v : x) v = byte(rng);
  return make_tensor(DataType::kUInt8, {1, 16, 32, 32}, x);
}

struct Held {
  std::size_t packed = 0;   // Bytes of packed constants the executor holds after a run.
  std::size_t staging = 0;  // Bytes of the running thread's staging slots.
};

// Runs an executor of `convs` such convolutions on a thread of its own (whose staging starts
// empty).
Held held_after_a_run(int convs) {
  Held held;
  std::thread thread([&] {
    std::mt19937 rng(3);
    const std::size_t before = packed_constant_bytes();
    Executor executor(parse_graph(convs_text(convs, rng)));
    executor.run({{"x", full_range_input(rng)}});
    for (const std::string& implementation : executor.stats().implementations) {
      EXPECT_NE(implementation.find("data split at 127"), std::string::npos) << implementation;
    }
    held.packed = packed_constant_bytes() - before;
    held.staging = thread_staging_bytes();
  });
  thread.join();
  return held;
}

// The clamped pass, the excess pass and the rows share one packed copy (two were packed, and the
// rows kept a third copy).
TEST(Int8TwoPartMemory, ClampedDataPacksItsWeightsOnce) {
  if (quantize_detail::dnnl_int8_products_exact()) GTEST_SKIP() << kNeedsSplit;
  const std::size_t weights = 32 * 16 * 9;
  const Held one = held_after_a_run(1);
  EXPECT_GE(one.packed, weights);
  EXPECT_LT(one.packed, 2 * weights) << "one packed copy (and oneDNN's padding)";
}

// The int32 sums of both parts (requantized: 32x32x32 each) and the clamped copy of the data are
// the thread's; a second such kernel on the thread reuses them (each kernel held its own).
TEST(Int8TwoPartMemory, SumsAndDataCopiesAreTheThreadsStaging) {
  if (quantize_detail::dnnl_int8_products_exact()) GTEST_SKIP() << kNeedsSplit;
  const std::size_t sums = 32 * 32 * 32 * sizeof(int32_t), data = 16 * 32 * 32;
  const Held one = held_after_a_run(1);
  EXPECT_GE(one.staging, 2 * sums + data);
  EXPECT_EQ(held_after_a_run(2).staging, one.staging) << "a second kernel adds nothing";
}

}  // namespace
}  // namespace cleave
