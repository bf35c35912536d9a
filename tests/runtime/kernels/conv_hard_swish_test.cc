// A Conv with hard swish fused (oneDNN's post-op) computes what Conv, HardSigmoid and Mul compute.
#include <fmt/core.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "ir/text.h"
#include "runtime/executor.h"

namespace cleave {
namespace {

std::vector<float> run(const std::string& body, const std::vector<float>& x) {
  std::vector<float> w;
  for (int i = 0; i < 16 * 16 * 9; ++i) w.push_back(static_cast<float>(i % 17) / 17.0f - 0.45f);
  Graph graph = parse_graph(fmt::format(
      "graph main [ai.onnx=13] (%x: f32[1,16,6,6]) {{\n  @w: f32[16,16,3,3] = [{}]\n{}}}",
      fmt::join(w, ", "), body));
  Executor executor(graph);
  Tensor input = Tensor::allocate(DataType::kFloat, {1, 16, 6, 6});
  std::copy(x.begin(), x.end(), input.data<float>());
  Tensor y = executor.run({{"x", input}}).at(0);
  return std::vector<float>(y.data<float>(), y.data<float>() + y.element_count());
}

TEST(ConvHardSwish, FusedEqualsHardSigmoidTimesInput) {
  std::vector<float> x;
  for (int i = 0; i < 16 * 36; ++i) x.push_back(static_cast<float>(i % 29) / 3.0f - 4.5f);
  std::vector<float> fused =
      run("  %y = Conv[pads=[1,1,1,1], activation=\"HardSwish\"](%x, @w)\n  return %y\n", x);
  std::vector<float> apart =
      run("  %c = Conv[pads=[1,1,1,1]](%x, @w)\n"
          "  %s = HardSigmoid[alpha=0.16666667, beta=0.5](%c)\n"
          "  %y = Mul(%c, %s)\n  return %y\n",
          x);
  ASSERT_EQ(fused.size(), apart.size());
  int clipped_low = 0, clipped_high = 0;
  for (std::size_t i = 0; i < fused.size(); ++i) {
    EXPECT_NEAR(fused[i], apart[i], 1e-4 * (1 + std::fabs(apart[i]))) << "at " << i;
    clipped_low += apart[i] == 0.0f;
    clipped_high += apart[i] > 3.0f;
  }
  // Both clipped ends of hard swish are exercised, not only its middle.
  EXPECT_GT(clipped_low, 0);
  EXPECT_GT(clipped_high, 0);
}

}  // namespace
}  // namespace cleave
