// QLinearConv and QLinearMatMul with a non-zero output zero point against sums computed here:
// y = saturate(round_half_even(sum · multiplier) + zero point), ONNX's order, on ties and on
// both bounds.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "runtime/executor.h"
#include "runtime/kernels/math/quantize_util.h"

namespace cleave {
namespace {

using kernel_test::listed;
using kernel_test::make_tensor;
using kernel_test::random_values;

constexpr int64_t kIn = 16, kOut = 16, kSide = 8, kPlane = kSide * kSide;
constexpr int kDataZero = 3;

// A 1x1 QLinearConv of u8[1,16,8,8], or a QLinearMatMul of u8[64,16] by i8[16,16], with
// constant weights `w` (oneDNN's form where it has VNNI) and x·w scales 0.25 · 2 over y's 1:
// every sum times exactly 0.5, so an odd sum is a tie.
std::string graph_text(bool conv, const std::vector<double>& w, const std::string& y_zero) {
  const std::string x_type = conv ? "u8[1,16,8,8]" : "u8[64,16]";
  const std::string w_type = conv ? "i8[16,16,1,1]" : "i8[16,16]";
  return "graph g [ai.onnx=13] (%x: " + x_type + ") {\n  @x_scale: f32[] = [0.25]\n" +
         "  @x_zero: u8[] = [" + std::to_string(kDataZero) + "]\n  @w: " + w_type + " = " +
         listed(w) + "\n  @w_scale: f32[] = [2.0]\n  @w_zero: i8[] = [0]\n" +
         "  @y_scale: f32[] = [1.0]\n  @y_zero: " + y_zero +
         "\n  %y = " + (conv ? "QLinearConv" : "QLinearMatMul") +
         "(%x, @x_scale, @x_zero, @w, @w_scale, @w_zero, @y_scale, @y_zero)\n  return %y\n}\n";
}

// The kinds of element the expected values cover: a test that met none of these would pass
// with the zero point dropped, added before rounding or after saturating.
struct Coverage {
  int odd_ties = 0, below = 0, above = 0, inside = 0;
};

// The expected output for `sum`, in double (exact here), rounded as ONNX does.
double requantized(double sum, int zero_point, double low, double high, Coverage& coverage) {
  const double shifted = std::nearbyint(sum * 0.5) + zero_point;
  const bool inside = shifted >= low && shifted <= high;
  coverage.odd_ties += std::fmod(std::abs(sum), 2.0) == 1.0 && shifted > low && shifted < high;
  coverage.below += shifted < low;
  coverage.above += shifted > high;
  coverage.inside += inside;
  return std::clamp(shifted, low, high);
}

// Data x[c, i] (channel c of pixel i; the matmul's row i, column c) times weights w[m, c]
// (the matmul's w[c, m]), requantized, in the op's output layout.
std::vector<double> expected(bool conv, const std::vector<double>& x, const std::vector<double>& w,
                             int zero_point, double low, double high, Coverage& coverage) {
  std::vector<double> y(static_cast<std::size_t>(kOut * kPlane));
  for (int64_t m = 0; m < kOut; ++m) {
    for (int64_t i = 0; i < kPlane; ++i) {
      double sum = 0;
      for (int64_t c = 0; c < kIn; ++c) {
        const double data = conv ? x[c * kPlane + i] : x[i * kIn + c];
        sum += (data - kDataZero) * (conv ? w[m * kIn + c] : w[c * kOut + m]);
      }
      y[conv ? m * kPlane + i : i * kOut + m] = requantized(sum, zero_point, low, high, coverage);
    }
  }
  return y;
}

void expect_requantized(bool conv, DataType type, int zero_point) {
  const std::vector<double> x = random_values(kIn * kPlane, 0, 20, 3);
  const std::vector<double> w = random_values(kIn * kOut, -9, 9, 4);
  const bool u8 = type == DataType::kUInt8;
  const std::string y_zero = (u8 ? "u8[] = [" : "i8[] = [") + std::to_string(zero_point) + "]";
  Executor executor(parse_graph(graph_text(conv, w, y_zero)));
  const std::vector<int64_t> shape =
      conv ? std::vector<int64_t>{1, kIn, kSide, kSide} : std::vector<int64_t>{kPlane, kIn};
  const Tensor y = executor.run({{"x", make_tensor(DataType::kUInt8, shape, x)}})[0];
  if (quantize_detail::dnnl_int8_products_exact()) {
    EXPECT_NE(executor.stats().implementations[0], "") << "the constant form did not run on oneDNN";
  }
  Coverage coverage;
  const std::vector<double> want =
      expected(conv, x, w, zero_point, u8 ? 0 : -128, u8 ? 255 : 127, coverage);
  EXPECT_GT(coverage.odd_ties, 0);
  EXPECT_GT(coverage.below, 0);
  EXPECT_GT(coverage.above, 0);
  EXPECT_GT(coverage.inside, 0);
  ASSERT_EQ(y.dtype(), type);
  const std::vector<double> got = y.to_double_vector();
  ASSERT_EQ(got.size(), want.size());
  int differing = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (got[i] != want[i] && ++differing <= 5) {
      ADD_FAILURE() << "element " << i << ": " << got[i] << ", expected " << want[i];
    }
  }
  EXPECT_EQ(differing, 0) << "of " << got.size() << " elements";
}

TEST(Int8OutputZeroPoint, QLinearConvToU8RoundsThenAddsThenSaturates) {
  expect_requantized(true, DataType::kUInt8, 101);
}

TEST(Int8OutputZeroPoint, QLinearConvToI8RoundsThenAddsThenSaturates) {
  expect_requantized(true, DataType::kInt8, -17);
}

TEST(Int8OutputZeroPoint, QLinearMatMulToU8RoundsThenAddsThenSaturates) {
  expect_requantized(false, DataType::kUInt8, 101);
}

}  // namespace
}  // namespace cleave
