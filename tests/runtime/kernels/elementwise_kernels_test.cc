// Elementwise kernels: each op against a reference, broadcasting, integer semantics, layouts.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "ir/text.h"
#include "kernel_test_util.h"
#include "run_kernel.h"
#include "runtime/cpu_isa.h"
#include "runtime/executor.h"
#include "runtime/kernel.h"
#include "runtime/kernels/dnnl_util.h"
#include "runtime/kernels/fast_math.h"
#include "runtime/tensor.h"

namespace cleave {
namespace {

using kernel_test::expect_values;
using kernel_test::floats;
using kernel_test::make_tensor;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInfinity = std::numeric_limits<double>::infinity();

// Values 0, 1, ... scaled into [low, high] (deterministic, no two equal).
std::vector<double> ramp(int64_t count, double low, double high) {
  std::vector<double> values(count);
  for (int64_t i = 0; i < count; ++i) {
    values[i] = low + (high - low) * static_cast<double>(i) / static_cast<double>(count - 1);
  }
  return values;
}

std::vector<Tensor> run(std::string_view text, const std::map<std::string, Tensor>& inputs,
                        ExecutorOptions options = {}) {
  return kernel_test::run_graph(text, inputs, options);
}

Tensor run_one(std::string_view text, const std::map<std::string, Tensor>& inputs,
               ExecutorOptions options = {}) {
  auto outputs = run(text, inputs, options);
  EXPECT_EQ(outputs.size(), 1u);
  return outputs.at(0);
}

std::string error_of(std::string_view text, const std::map<std::string, Tensor>& inputs) {
  try {
    run(text, inputs);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// ---- Unary float ops against std:: references, on the plain path and the oneDNN path ----

struct UnaryCase {
  std::string op;  // With attributes, as the text form writes them.
  double (*reference)(double);
  double low;
  double high;
};

void PrintTo(const UnaryCase& c, std::ostream* out) {
  *out << c.op;
}

class UnaryFloatTest : public testing::TestWithParam<UnaryCase> {};

double sigmoid(double x) {
  return 1 / (1 + std::exp(-x));
}

const UnaryCase kUnaryCases[] = {
    {"Relu", [](double x) { return std::max(0.0, x); }, -3, 3},
    {"LeakyRelu[alpha=0.1]", [](double x) { return x < 0 ? 0.1 * x : x; }, -3, 3},
    {"Elu[alpha=0.5]", [](double x) { return x < 0 ? 0.5 * std::expm1(x) : x; }, -3, 3},
    {"Selu",
     [](double x) {
       return x <= 0 ? 1.05070102214813232421875 * 1.67326319217681884765625 * std::expm1(x)
                     : 1.05070102214813232421875 * x;
     },
     -3, 3},
    {"Celu[alpha=2.0]",
     [](double x) { return std::max(0.0, x) + std::min(0.0, 2 * std::expm1(x / 2)); }, -3, 3},
    {"Sigmoid", sigmoid, -8, 8},
    {"HardSigmoid[alpha=0.25, beta=0.4]",
     [](double x) { return std::clamp(0.25 * x + 0.4, 0.0, 1.0); }, -4, 4},
    {"HardSwish", [](double x) { return x * std::clamp(x / 6 + 0.5, 0.0, 1.0); }, -5, 5},
    {"Tanh", [](double x) { return std::tanh(x); }, -4, 4},
    {"Softplus", [](double x) { return std::log1p(std::exp(x)); }, -10, 10},
    {"Softsign", [](double x) { return x / (1 + std::abs(x)); }, -4, 4},
    {"ThresholdedRelu[alpha=0.5]", [](double x) { return x > 0.5 ? x : 0; }, -2, 2},
    {"Shrink[lambd=1.0, bias=0.25]",
     [](double x) { return x < -1  ? x + 0.25
                           : x > 1 ? x - 0.25
                                   : 0; }, -3, 3},
    {"Exp", [](double x) { return std::exp(x); }, -5, 5},
    {"Log", [](double x) { return std::log(x); }, 0.01, 50},
    {"Sqrt", [](double x) { return std::sqrt(x); }, 0, 50},
    {"Reciprocal", [](double x) { return 1 / x; }, 0.1, 5},
    {"Abs", [](double x) { return std::abs(x); }, -3, 3},
    {"Neg", [](double x) { return -x; }, -3, 3},
    {"Floor", [](double x) { return std::floor(x); }, -3.3, 3.3},
    {"Ceil", [](double x) { return std::ceil(x); }, -3.3, 3.3},
    {"Sign", [](double x) { return double((x > 0) - (x < 0)); }, -3, 3},
    {"Erf", [](double x) { return std::erf(x); }, -5, 5},
    {"Sin", [](double x) { return std::sin(x); }, -4, 4},
    {"Cos", [](double x) { return std::cos(x); }, -4, 4},
    {"Tan", [](double x) { return std::tan(x); }, -1.4, 1.4},
    {"Asin", [](double x) { return std::asin(x); }, -1, 1},
    {"Acos", [](double x) { return std::acos(x); }, -1, 1},
    {"Atan", [](double x) { return std::atan(x); }, -4, 4},
    {"Sinh", [](double x) { return std::sinh(x); }, -4, 4},
    {"Cosh", [](double x) { return std::cosh(x); }, -4, 4},
    {"Asinh", [](double x) { return std::asinh(x); }, -4, 4},
    {"Acosh", [](double x) { return std::acosh(x); }, 1, 5},
    {"Atanh", [](double x) { return std::atanh(x); }, -0.99, 0.99},
};

void check_unary(const UnaryCase& c, int64_t count) {
  const std::vector<double> x = ramp(count, c.low, c.high);
  const std::string text = "graph g (%x: f32[" + std::to_string(count) + "]) {\n  %y = " + c.op +
                           "(%x)\n  return %y\n}\n";
  std::vector<double> expected;
  // The reference sees the float-rounded input the kernel sees.
  for (double v : x) expected.push_back(c.reference(static_cast<float>(v)));
  expect_values(run_one(text, {{"x", floats({count}, x)}}), expected, 2e-5);
}

// Below every oneDNN threshold: the plain loops.
TEST_P(UnaryFloatTest, SmallTensorMatchesReference) {
  check_unary(GetParam(), 33);
}

// Big enough for oneDNN's eltwise primitive where the op has one.
TEST_P(UnaryFloatTest, LargeTensorMatchesReference) {
  check_unary(GetParam(), 20001);
}

INSTANTIATE_TEST_SUITE_P(Ops, UnaryFloatTest, testing::ValuesIn(kUnaryCases),
                         [](const testing::TestParamInfo<UnaryCase>& info) {
                           std::string name = info.param.op.substr(0, info.param.op.find('['));
                           return name;
                         });

TEST(UnaryKernels, DoubleInputsAreComputedInDouble) {
  Tensor x = make_tensor(DataType::kDouble, {2}, {0.5, 2.0});
  Tensor y = run_one("graph g (%x: f64[2]) {\n %y = Exp(%x)\n return %y\n}", {{"x", x}});
  ASSERT_EQ(y.dtype(), DataType::kDouble);
  expect_values(y, {std::exp(0.5), std::exp(2.0)}, 1e-15);
}

TEST(UnaryKernels, RoundHalvesToEven) {
  const std::vector<double> x = {0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4, 2.6};
  const std::vector<double> expected = {0, 2, 2, -0.0, -2, -2, 2, 3};
  const char* text = "graph g (%x: f32[8]) {\n %y = Round(%x)\n return %y\n}";
  expect_values(run_one(text, {{"x", floats({8}, x)}}), expected);
}

TEST(UnaryKernels, RoundHalvesToEvenOnTheOneDnnPath) {
  std::vector<double> x;
  std::vector<double> expected;
  for (int i = 0; i < 5000; ++i) {  // Round is transcendental here: oneDNN from 64 elements.
    x.push_back(i % 10 - 4.5);      // -4.5 ... 4.5 in steps of 1
    expected.push_back(std::nearbyint(x.back()));
  }
  const char* text = "graph g (%x: f32[5000]) {\n %y = Round(%x)\n return %y\n}";
  expect_values(run_one(text, {{"x", floats({5000}, x)}}), expected);
}

TEST(UnaryKernels, SigmoidAndSoftplusStayFiniteAtExtremes) {
  const char* text =
      "graph g (%x: f32[4]) {\n %s = Sigmoid(%x)\n %p = Softplus(%x)\n return %s, %p\n}";
  auto outputs = run(text, {{"x", floats({4}, {-100, -20, 20, 100})}});
  expect_values(outputs[0], {sigmoid(-100), sigmoid(-20), sigmoid(20), 1.0}, 1e-6);
  expect_values(outputs[1], {0, std::log1p(std::exp(-20.0)), 20, 100}, 1e-6);
}

TEST(UnaryKernels, ReciprocalOfNegativesAndZerosOnTheOneDnnPath) {
  std::vector<double> x = ramp(20000, -4, -0.25);
  x[0] = 0.0;
  x[1] = -0.0;
  std::vector<double> expected;
  for (double v : x) expected.push_back(1 / static_cast<float>(v));
  const char* text = "graph g (%x: f32[20000]) {\n %y = Reciprocal(%x)\n return %y\n}";
  Tensor y = run_one(text, {{"x", floats({20000}, x)}});
  EXPECT_EQ(y.data<float>()[0], std::numeric_limits<float>::infinity());
  EXPECT_EQ(y.data<float>()[1], -std::numeric_limits<float>::infinity());
  expect_values(y, expected, 1e-6);
}

TEST(UnaryKernels, ErfIsAccurateAcrossItsRange) {
  const std::vector<double> x = ramp(4001, -6, 6);
  const char* text = "graph g (%x: f32[4001]) {\n %y = Erf(%x)\n return %y\n}";
  Tensor y = run_one(text, {{"x", floats({4001}, x)}});
  double worst = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double exact = std::erf(static_cast<double>(static_cast<float>(x[i])));
    worst = std::max(worst, std::abs(y.data<float>()[i] - exact));
  }
  EXPECT_LT(worst, 1e-6);
}

TEST(FastMath, SwishKeepsItsRelativeAccuracyWhereSigmoidIsTiny) {
  // The tanh form 0.5+0.5·tanh(x/2) loses all relative accuracy below x ≈ -15; the exp form
  // must not. Odd counts exercise the vector loops' tails.
  const std::vector<double> x = ramp(40001, -100, 100);
  std::vector<float> in(x.begin(), x.end());
  std::vector<float> out(in.size());
  elementwise::swish_float(in.data(), out.data(), static_cast<int64_t>(in.size()));
  double worst = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    const double v = in[i];
    const double exact = v / (1 + std::exp(-v));
    if (v < -87) {
      // exp(x) is below float's normal range there: only "practically zero" is asked for.
      EXPECT_LE(out[i], 0.0f);
      EXPECT_GT(out[i], -1e-35f) << "at " << v;
      continue;
    }
    if (exact == 0) continue;
    worst = std::max(worst, std::abs(out[i] - exact) / std::abs(exact));
  }
  EXPECT_LT(worst, 1e-5);
  float zero = 0.0f;
  elementwise::swish_float(&zero, &zero, 1);
  EXPECT_EQ(zero, 0.0f) << "padding channels of blocked layouts must stay zero";
}

TEST(UnaryKernels, ErfPropagatesNaN) {
  const char* text = "graph g (%x: f32[3]) {\n %y = Erf(%x)\n return %y\n}";
  expect_values(run_one(text, {{"x", floats({3}, {kNaN, kInfinity, -kInfinity})}}), {kNaN, 1, -1});
}

TEST(UnaryKernels, IntegerReluAbsNegSign) {
  const std::vector<double> x = {-5, -1, 0, 3};
  const char* text = R"(graph g (%x: i64[4]) {
  %r = Relu(%x)
  %a = Abs(%x)
  %n = Neg(%x)
  %s = Sign(%x)
  return %r, %a, %n, %s
})";
  auto outputs = run(text, {{"x", make_tensor(DataType::kInt64, {4}, x)}});
  ASSERT_EQ(outputs[0].dtype(), DataType::kInt64);
  expect_values(outputs[0], {0, 0, 0, 3});
  expect_values(outputs[1], {5, 1, 0, 3});
  expect_values(outputs[2], {5, 1, 0, -3});
  expect_values(outputs[3], {-1, -1, 0, 1});
}

TEST(UnaryKernels, Int32NegOfMostNegativeWraps) {
  Tensor x = make_tensor(DataType::kInt32, {2}, {-2147483648.0, 7});
  Tensor y = run_one("graph g (%x: i32[2]) {\n %y = Neg(%x)\n return %y\n}", {{"x", x}});
  EXPECT_EQ(y.data<int32_t>()[0], std::numeric_limits<int32_t>::min());
  EXPECT_EQ(y.data<int32_t>()[1], -7);
}

TEST(UnaryKernels, SignKeepsNaN) {
  const char* text = "graph g (%x: f32[3]) {\n %y = Sign(%x)\n return %y\n}";
  expect_values(run_one(text, {{"x", floats({3}, {kNaN, -0.0, 2})}}), {kNaN, 0, 1});
}

TEST(UnaryKernels, IsNaNAndIsInfProduceBool) {
  const char* text = R"(graph g (%x: f32[4]) {
  %n = IsNaN(%x)
  %i = IsInf(%x)
  %p = IsInf[detect_negative=0](%x)
  return %n, %i, %p
})";
  auto outputs = run(text, {{"x", floats({4}, {kNaN, kInfinity, -kInfinity, 1})}});
  ASSERT_EQ(outputs[0].dtype(), DataType::kBool);
  expect_values(outputs[0], {1, 0, 0, 0});
  expect_values(outputs[1], {0, 1, 1, 0});
  expect_values(outputs[2], {0, 1, 0, 0});
}

TEST(UnaryKernels, NotInvertsBools) {
  Tensor x = make_tensor(DataType::kBool, {3}, {1, 0, 1});
  Tensor y = run_one("graph g (%x: bool[3]) {\n %y = Not(%x)\n return %y\n}", {{"x", x}});
  ASSERT_EQ(y.dtype(), DataType::kBool);
  expect_values(y, {0, 1, 0});
}

TEST(UnaryKernels, FloatOpRejectsIntegerInput) {
  Tensor x = make_tensor(DataType::kInt32, {2}, {1, 2});
  try {
    run("graph g (%x: i32[2]) {\n %y = Exp(%x)\n return %y\n}", {{"x", x}});
    FAIL() << "expected UnsupportedError";
  } catch (const UnsupportedError& e) {
    EXPECT_NE(std::string(e.what()).find("i32"), std::string::npos) << e.what();
  }
}

// ---- Clip ---------------------------------------------------------------------------------------

TEST(ClipKernel, AttributesBeforeOpset11) {
  const char* text = R"(graph g [ai.onnx=6] (%x: f32[4]) {
  %y = Clip[min=-1.0, max=2.0](%x)
  return %y
})";
  expect_values(run_one(text, {{"x", floats({4}, {-3, -0.5, 1.5, 9})}}), {-1, -0.5, 1.5, 2});
}

TEST(ClipKernel, OmittedMinLeavesLowValues) {
  const char* text = R"(graph g [ai.onnx=13] (%x: f32[4]) {
  @max: f32[] = [6.0]
  %y = Clip(%x, _, @max)
  return %y
})";
  expect_values(run_one(text, {{"x", floats({4}, {-30, 0, 5, 9})}}), {-30, 0, 5, 6});
}

TEST(ClipKernel, OmittedMaxLeavesHighValues) {
  const char* text = R"(graph g [ai.onnx=13] (%x: f32[4]) {
  @min: f32[] = [0.0]
  %y = Clip(%x, @min)
  return %y
})";
  expect_values(run_one(text, {{"x", floats({4}, {-30, 0, 5, 1e9})}}), {0, 0, 5, 1e9});
}

TEST(ClipKernel, Relu6OnTheOneDnnPath) {
  const std::vector<double> x = ramp(20000, -10, 10);
  std::vector<double> expected;
  for (double v : x)
    expected.push_back(std::clamp(static_cast<double>(static_cast<float>(v)), 0.0, 6.0));
  const char* text = R"(graph g [ai.onnx=13] (%x: f32[20000]) {
  @min: f32[] = [0.0]
  @max: f32[] = [6.0]
  %y = Clip(%x, @min, @max)
  return %y
})";
  expect_values(run_one(text, {{"x", floats({20000}, x)}}), expected);
}

TEST(ClipKernel, BoundsComputedByTheGraphAreReadAtRunTime) {
  const char* text = R"(graph g [ai.onnx=13] (%x: f32[3], %low: f32[], %high: f32[]) {
  %y = Clip(%x, %low, %high)
  return %y
})";
  expect_values(run_one(text, {{"x", floats({3}, {-5, 0.5, 5})},
                               {"low", floats({}, {-1})},
                               {"high", floats({}, {1})}}),
                {-1, 0.5, 1});
}

TEST(ClipKernel, MinAboveMaxGivesMax) {
  const char* text = R"(graph g [ai.onnx=13] (%x: f32[3]) {
  @min: f32[] = [2.0]
  @max: f32[] = [1.0]
  %y = Clip(%x, @min, @max)
  return %y
})";
  expect_values(run_one(text, {{"x", floats({3}, {0, 1.5, 3})}}), {1, 1, 1});
}

TEST(ClipKernel, IntegerInputsFromOpset12) {
  const char* text = R"(graph g [ai.onnx=12] (%x: i32[4]) {
  @min: i32[] = [-2]
  @max: i32[] = [3]
  %y = Clip(%x, @min, @max)
  return %y
})";
  Tensor y = run_one(text, {{"x", make_tensor(DataType::kInt32, {4}, {-7, -2, 2, 100})}});
  ASSERT_EQ(y.dtype(), DataType::kInt32);
  expect_values(y, {-2, -2, 2, 3});
}

// ---- Broadcasting -------------------------------------------------------------------------------

TEST(Broadcasting, ColumnTimesRow) {
  const char* text = "graph g (%a: f32[3,1], %b: f32[1,4]) {\n %y = Add(%a, %b)\n return %y\n}";
  Tensor y =
      run_one(text, {{"a", floats({3, 1}, {0, 10, 20})}, {"b", floats({1, 4}, {1, 2, 3, 4})}});
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{3, 4}));
  expect_values(y, {1, 2, 3, 4, 11, 12, 13, 14, 21, 22, 23, 24});
}

TEST(Broadcasting, ScalarOperand) {
  const char* text = "graph g (%a: f32[], %b: f32[2,2]) {\n %y = Sub(%a, %b)\n return %y\n}";
  Tensor y = run_one(text, {{"a", floats({}, {10})}, {"b", floats({2, 2}, {1, 2, 3, 4})}});
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{2, 2}));
  expect_values(y, {9, 8, 7, 6});
}

TEST(Broadcasting, ScalarsGiveAScalar) {
  const char* text = "graph g (%a: f32[], %b: f32[]) {\n %y = Mul(%a, %b)\n return %y\n}";
  Tensor y = run_one(text, {{"a", floats({}, {3})}, {"b", floats({}, {-2})}});
  EXPECT_EQ(y.rank(), 0u);
  expect_values(y, {-6});
}

TEST(Broadcasting, LowerRankAlignsToTheRight) {
  const char* text = "graph g (%a: f32[2,2,3], %b: f32[3]) {\n %y = Div(%a, %b)\n return %y\n}";
  std::vector<double> a = ramp(12, 1, 12);
  Tensor y = run_one(text, {{"a", floats({2, 2, 3}, a)}, {"b", floats({3}, {1, 2, 4})}});
  std::vector<double> expected;
  for (int i = 0; i < 12; ++i) expected.push_back(a[i] / std::vector<double>{1, 2, 4}[i % 3]);
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{2, 2, 3}));
  expect_values(y, expected, 1e-7);
}

TEST(Broadcasting, MiddleAxisBroadcast) {
  const char* text = "graph g (%a: f32[2,3,2], %b: f32[2,1,2]) {\n %y = Sub(%a, %b)\n return %y\n}";
  Tensor y = run_one(text, {{"a", floats({2, 3, 2}, ramp(12, 0, 11))},
                            {"b", floats({2, 1, 2}, {0, 1, 100, 200})}});
  expect_values(y, {0, 0, 2, 2, 4, 4, -94, -193, -92, -191, -90, -189});
}

TEST(Broadcasting, ZeroSizedDimensionGivesAnEmptyResult) {
  const char* text = "graph g (%a: f32[0,3], %b: f32[1,3]) {\n %y = Add(%a, %b)\n return %y\n}";
  Tensor y = run_one(text, {{"a", floats({0, 3}, {})}, {"b", floats({1, 3}, {1, 2, 3})}});
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(y.element_count(), 0);
}

TEST(Broadcasting, ZeroAgainstOneBroadcastsToZero) {
  const char* text = "graph g (%a: f32[2,0], %b: f32[2,1]) {\n %y = Mul(%a, %b)\n return %y\n}";
  Tensor y = run_one(text, {{"a", floats({2, 0}, {})}, {"b", floats({2, 1}, {1, 2})}});
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{2, 0}));
}

TEST(Broadcasting, IncompatibleShapesNameTheNode) {
  const char* text = "graph g (%a: f32[2,3], %b: f32[4]) {\n %y = Add(%a, %b)\n return %y\n}";
  const std::string message =
      error_of(text, {{"a", floats({2, 3}, ramp(6, 0, 5))}, {"b", floats({4}, {1, 2, 3, 4})}});
  EXPECT_NE(message.find("'y'"), std::string::npos) << message;
  EXPECT_NE(message.find("do not broadcast"), std::string::npos) << message;
}

TEST(Broadcasting, LegacyBroadcastPlacesInputOneAtAxis) {
  const char* text = R"(graph g [ai.onnx=6] (%a: f32[2,3], %b: f32[2]) {
  %y = Add[broadcast=1, axis=0](%a, %b)
  return %y
})";
  Tensor y = run_one(text, {{"a", floats({2, 3}, ramp(6, 0, 5))}, {"b", floats({2}, {10, 20})}});
  expect_values(y, {10, 11, 12, 23, 24, 25});
}

TEST(Broadcasting, LegacyBroadcastAlignsRightByDefault) {
  const char* text = R"(graph g [ai.onnx=6] (%a: f32[2,3], %b: f32[3]) {
  %y = Mul[broadcast=1](%a, %b)
  return %y
})";
  Tensor y = run_one(text, {{"a", floats({2, 3}, ramp(6, 0, 5))}, {"b", floats({3}, {1, 2, 3})}});
  expect_values(y, {0, 2, 6, 3, 8, 15});
}

TEST(Broadcasting, LegacyBroadcastMismatchIsAnError) {
  const char* text = R"(graph g [ai.onnx=6] (%a: f32[2,3], %b: f32[2]) {
  %y = Add[broadcast=1](%a, %b)
  return %y
})";
  const std::string message =
      error_of(text, {{"a", floats({2, 3}, ramp(6, 0, 5))}, {"b", floats({2}, {1, 2})}});
  EXPECT_NE(message.find("axis=1"), std::string::npos) << message;
}

// Big per-channel broadcasts go to oneDNN (plain layouts) or to the loops; both must agree
// with the reference, for every binary op and both operand orders.
class LargeBinaryTest : public testing::TestWithParam<std::string> {};

TEST_P(LargeBinaryTest, PerChannelBroadcastMatchesReference) {
  const std::string op = GetParam();
  const std::vector<double> big = ramp(8 * 48 * 48, 0.5, 9);
  const std::vector<double> channel = {1, 2, 3, 4, -1, -2, 0.5, 8};
  auto reference = [&](double a, double b) {
    if (op == "Add") return a + b;
    if (op == "Sub") return a - b;
    if (op == "Mul") return a * b;
    return a / b;
  };
  for (bool big_first : {true, false}) {
    const std::string text = big_first
                                 ? "graph g (%a: f32[1,8,48,48], %b: f32[8,1,1]) {\n %y = " + op +
                                       "(%a, %b)\n return %y\n}"
                                 : "graph g (%b: f32[8,1,1], %a: f32[1,8,48,48]) {\n %y = " + op +
                                       "(%b, %a)\n return %y\n}";
    std::vector<double> expected;
    for (std::size_t i = 0; i < big.size(); ++i) {
      const double a = static_cast<float>(big[i]);
      const double b = channel[i / (48 * 48)];
      expected.push_back(big_first ? reference(a, b) : reference(b, a));
    }
    Tensor y =
        run_one(text, {{"a", floats({1, 8, 48, 48}, big)}, {"b", floats({8, 1, 1}, channel)}});
    EXPECT_EQ(y.shape(), (std::vector<int64_t>{1, 8, 48, 48}));
    expect_values(y, expected, 1e-6);
  }
}

TEST_P(LargeBinaryTest, RowBroadcastMatchesReference) {
  // [rows, 768] with [rows, 1]: the shape of a decomposed LayerNorm's division.
  const std::string op = GetParam();
  const std::vector<double> big = ramp(32 * 768, -3, 3);
  const std::vector<double> rows = ramp(32, 0.5, 2);
  const std::string text =
      "graph g (%a: f32[1,32,768], %b: f32[1,32,1]) {\n %y = " + op + "(%a, %b)\n return %y\n}";
  std::vector<double> expected;
  for (std::size_t i = 0; i < big.size(); ++i) {
    const double a = static_cast<float>(big[i]);
    const double b = static_cast<float>(rows[i / 768]);
    expected.push_back(op == "Add" ? a + b : op == "Sub" ? a - b : op == "Mul" ? a * b : a / b);
  }
  expect_values(run_one(text, {{"a", floats({1, 32, 768}, big)}, {"b", floats({1, 32, 1}, rows)}}),
                expected, 1e-6);
}

TEST_P(LargeBinaryTest, ScaleOfWeightsAlongTheirInputChannels) {
  // [O, C, 1, 1] with [1, C, 1, 1]: what channel-scale folding leaves. 1,500 x 50 elements
  // split between two threads at a point that is no multiple of the 50 channels.
  const std::string op = GetParam();
  const std::vector<double> big = ramp(1500 * 50, -4, 4);
  const std::vector<double> scale = ramp(50, 0.25, 3);
  const std::string text = "graph g (%a: f32[1500,50,1,1], %b: f32[1,50,1,1]) {\n %y = " + op +
                           "(%a, %b)\n return %y\n}";
  std::vector<double> expected;
  for (std::size_t i = 0; i < big.size(); ++i) {
    const double a = static_cast<float>(big[i]);
    const double b = static_cast<float>(scale[i % 50]);
    expected.push_back(op == "Add" ? a + b : op == "Sub" ? a - b : op == "Mul" ? a * b : a / b);
  }
  ExecutorOptions two_threads;
  two_threads.threads = 2;
  for (const ExecutorOptions& options : {ExecutorOptions{}, two_threads}) {
    expect_values(
        run_one(text, {{"a", floats({1500, 50, 1, 1}, big)}, {"b", floats({1, 50, 1, 1}, scale)}},
                options),
        expected, 1e-6);
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, LargeBinaryTest, testing::Values("Add", "Sub", "Mul", "Div"));

TEST(Broadcasting, TwoThreadsGiveTheSameResult) {
  const char* text = "graph g (%a: i64[300,400], %b: i64[400]) {\n %y = Mul(%a, %b)\n return %y\n}";
  std::map<std::string, Tensor> inputs = {
      {"a", make_tensor(DataType::kInt64, {300, 400}, ramp(300 * 400, -60000, 59999))},
      {"b", make_tensor(DataType::kInt64, {400}, ramp(400, 1, 400))}};
  ExecutorOptions two_threads;
  two_threads.threads = 2;
  Tensor one = run_one(text, inputs);
  Tensor two = run_one(text, inputs, two_threads);
  EXPECT_EQ(one.to_double_vector(), two.to_double_vector());
}

// ---- Integer arithmetic -------------------------------------------------------------------------

TEST(IntegerArithmetic, DivTruncatesTowardZero) {
  const char* text = "graph g (%a: i32[4], %b: i32[4]) {\n %y = Div(%a, %b)\n return %y\n}";
  Tensor y = run_one(text, {{"a", make_tensor(DataType::kInt32, {4}, {7, -7, 7, -7})},
                            {"b", make_tensor(DataType::kInt32, {4}, {2, 2, -2, -2})}});
  ASSERT_EQ(y.dtype(), DataType::kInt32);
  expect_values(y, {3, -3, -3, 3});
}

TEST(IntegerArithmetic, DivByZeroIsAnErrorNamingTheNode) {
  const char* text = "graph g (%a: i64[2], %b: i64[2]) {\n %y = Div(%a, %b)\n return %y\n}";
  const std::string message = error_of(text, {{"a", make_tensor(DataType::kInt64, {2}, {1, 2})},
                                              {"b", make_tensor(DataType::kInt64, {2}, {1, 0})}});
  EXPECT_NE(message.find("'y'"), std::string::npos) << message;
  EXPECT_NE(message.find("division by zero"), std::string::npos) << message;
}

TEST(IntegerArithmetic, MostNegativeDividedByMinusOneWraps) {
  const char* text = "graph g (%a: i64[1], %b: i64[1]) {\n %y = Div(%a, %b)\n return %y\n}";
  Tensor a = Tensor::allocate(DataType::kInt64, {1});
  a.data<int64_t>()[0] = std::numeric_limits<int64_t>::min();
  Tensor y = run_one(text, {{"a", a}, {"b", make_tensor(DataType::kInt64, {1}, {-1})}});
  EXPECT_EQ(y.data<int64_t>()[0], std::numeric_limits<int64_t>::min());
}

TEST(IntegerArithmetic, AddOverflowWraps) {
  const char* text = "graph g (%a: i32[1], %b: i32[1]) {\n %y = Add(%a, %b)\n return %y\n}";
  Tensor y = run_one(text, {{"a", make_tensor(DataType::kInt32, {1}, {2147483647})},
                            {"b", make_tensor(DataType::kInt32, {1}, {1})}});
  EXPECT_EQ(y.data<int32_t>()[0], std::numeric_limits<int32_t>::min());
}

TEST(IntegerArithmetic, ModTakesTheDivisorsSign) {
  const char* text = "graph g (%a: i32[6], %b: i32[6]) {\n %y = Mod(%a, %b)\n return %y\n}";
  Tensor y = run_one(text, {{"a", make_tensor(DataType::kInt32, {6}, {-4, 7, 5, -7, 6, -9})},
                            {"b", make_tensor(DataType::kInt32, {6}, {3, -3, 3, 3, -3, -4})}});
  expect_values(y, {2, -2, 2, 2, 0, -1});
}

TEST(IntegerArithmetic, FmodTakesTheDividendsSign) {
  const char* text = "graph g (%a: i64[4], %b: i64[4]) {\n %y = Mod[fmod=1](%a, %b)\n return %y\n}";
  Tensor y = run_one(text, {{"a", make_tensor(DataType::kInt64, {4}, {-4, 7, 5, -7})},
                            {"b", make_tensor(DataType::kInt64, {4}, {3, -3, 3, 3})}});
  expect_values(y, {-1, 1, 2, -1});
}

TEST(IntegerArithmetic, ModByZeroIsAnError) {
  const char* text = "graph g (%a: i32[1], %b: i32[1]) {\n %y = Mod(%a, %b)\n return %y\n}";
  const std::string message = error_of(text, {{"a", make_tensor(DataType::kInt32, {1}, {5})},
                                              {"b", make_tensor(DataType::kInt32, {1}, {0})}});
  EXPECT_NE(message.find("division by zero"), std::string::npos) << message;
}

TEST(FloatArithmetic, FloatModNeedsFmod) {
  const char* ok = "graph g (%a: f32[3], %b: f32[3]) {\n %y = Mod[fmod=1](%a, %b)\n return %y\n}";
  Tensor y = run_one(ok, {{"a", floats({3}, {-4.5, 7, 5.25})}, {"b", floats({3}, {2, -3, 2})}});
  expect_values(y, {std::fmod(-4.5, 2), std::fmod(7, -3), std::fmod(5.25, 2)});
  const char* bad = "graph g (%a: f32[1], %b: f32[1]) {\n %y = Mod(%a, %b)\n return %y\n}";
  EXPECT_NE(error_of(bad, {{"a", floats({1}, {1})}, {"b", floats({1}, {2})}}).find("fmod=1"),
            std::string::npos);
}

TEST(FloatArithmetic, DivByZeroGivesInfinity) {
  const char* text = "graph g (%a: f32[3], %b: f32[3]) {\n %y = Div(%a, %b)\n return %y\n}";
  Tensor y = run_one(text, {{"a", floats({3}, {1, -1, 0})}, {"b", floats({3}, {0, 0, 0})}});
  expect_values(y, {kInfinity, -kInfinity, kNaN});
}

TEST(BitShiftKernel, ShiftsBothWaysAndDropsAllBitsBeyondTheWidth) {
  const char* text = R"(graph g (%a: u8[4], %b: u8[4]) {
  %l = BitShift[direction="LEFT"](%a, %b)
  %r = BitShift[direction="RIGHT"](%a, %b)
  return %l, %r
})";
  auto outputs = run(text, {{"a", make_tensor(DataType::kUInt8, {4}, {1, 3, 255, 16})},
                            {"b", make_tensor(DataType::kUInt8, {4}, {1, 2, 9, 8})}});
  expect_values(outputs[0], {2, 12, 0, 0});
  expect_values(outputs[1], {0, 0, 0, 0});
}

// ---- Pow ------------------------------------------------------------------------------------

TEST(PowKernel, FloatBaseFloatExponent) {
  const char* text = "graph g (%a: f32[3], %b: f32[3]) {\n %y = Pow(%a, %b)\n return %y\n}";
  Tensor y = run_one(text, {{"a", floats({3}, {2, 9, -2})}, {"b", floats({3}, {3, 0.5, 2})}});
  expect_values(y, {8, 3, 4}, 1e-6);
}

TEST(PowKernel, FloatBaseIntegerExponent) {
  const char* text = "graph g (%a: f32[3], %b: i64[3]) {\n %y = Pow(%a, %b)\n return %y\n}";
  Tensor y = run_one(text, {{"a", floats({3}, {2, -3, 4})},
                            {"b", make_tensor(DataType::kInt64, {3}, {3, 3, -1})}});
  ASSERT_EQ(y.dtype(), DataType::kFloat);
  expect_values(y, {8, -27, 0.25}, 1e-7);
}

TEST(PowKernel, IntegerBaseIntegerExponent) {
  const char* text = "graph g (%a: i64[4], %b: i64[4]) {\n %y = Pow(%a, %b)\n return %y\n}";
  Tensor y = run_one(text, {{"a", make_tensor(DataType::kInt64, {4}, {2, -3, 10, 5})},
                            {"b", make_tensor(DataType::kInt64, {4}, {10, 3, 0, 1})}});
  expect_values(y, {1024, -27, 1, 5});
}

TEST(PowKernel, ConstantSquareOnSmallAndLargeInputs) {
  for (int64_t count : {7, 20000}) {
    const std::vector<double> x = ramp(count, -3, 3);
    std::vector<double> expected;
    for (double v : x) expected.push_back(static_cast<float>(v) * static_cast<float>(v));
    const std::string text = "graph g (%x: f32[" + std::to_string(count) +
                             "]) {\n @two: f32[] = [2.0]\n %y = Pow(%x, @two)\n return %y\n}";
    expect_values(run_one(text, {{"x", floats({count}, x)}}), expected, 1e-7);
  }
}

// ---- Variadic and PRelu -------------------------------------------------------------------------

TEST(VariadicKernels, MaxMinSumMeanOverThreeBroadcastInputs) {
  const char* text = R"(graph g (%a: f32[2,1], %b: f32[3], %c: f32[]) {
  %max = Max(%a, %b, %c)
  %min = Min(%a, %b, %c)
  %sum = Sum(%a, %b, %c)
  %mean = Mean(%a, %b, %c)
  return %max, %min, %sum, %mean
})";
  auto outputs = run(
      text,
      {{"a", floats({2, 1}, {0, 10})}, {"b", floats({3}, {-1, 5, 20})}, {"c", floats({}, {3})}});
  EXPECT_EQ(outputs[0].shape(), (std::vector<int64_t>{2, 3}));
  expect_values(outputs[0], {3, 5, 20, 10, 10, 20});
  expect_values(outputs[1], {-1, 0, 0, -1, 3, 3});
  expect_values(outputs[2], {2, 8, 23, 12, 18, 33});
  expect_values(outputs[3], {2.0 / 3, 8.0 / 3, 23.0 / 3, 4, 6, 11}, 1e-6);
}

TEST(VariadicKernels, SingleInputIsCopied) {
  const char* text = "graph g (%a: i32[3]) {\n %y = Sum(%a)\n return %y\n}";
  expect_values(run_one(text, {{"a", make_tensor(DataType::kInt32, {3}, {4, -5, 6})}}), {4, -5, 6});
}

TEST(VariadicKernels, MaxAndMinPropagateNaN) {
  const char* text = R"(graph g (%a: f32[3], %b: f32[3]) {
  %max = Max(%a, %b)
  %min = Min(%a, %b)
  return %max, %min
})";
  auto outputs = run(text, {{"a", floats({3}, {kNaN, 1, 2})}, {"b", floats({3}, {1, kNaN, 3})}});
  expect_values(outputs[0], {kNaN, kNaN, 3});
  expect_values(outputs[1], {kNaN, kNaN, 2});
}

TEST(PReluKernel, SlopePerChannel) {
  const char* text = "graph g (%x: f32[1,2,2], %s: f32[2,1]) {\n %y = PRelu(%x, %s)\n return %y\n}";
  Tensor y =
      run_one(text, {{"x", floats({1, 2, 2}, {-1, 2, -3, 4})}, {"s", floats({2, 1}, {0.5, 0.1})}});
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{1, 2, 2}));
  expect_values(y, {-0.5, 2, -0.3, 4}, 1e-7);
}

TEST(PReluKernel, OneDimensionalSlopeIsPerChannelBeforeOpset7) {
  const char* text = R"(graph g [ai.onnx=6] (%x: f32[1,2,2], %s: f32[2]) {
  %y = PRelu(%x, %s)
  return %y
})";
  Tensor y =
      run_one(text, {{"x", floats({1, 2, 2}, {-1, -2, -3, 4})}, {"s", floats({2}, {0.5, 0.1})}});
  expect_values(y, {-0.5, -1, -0.3, 4}, 1e-7);
}

TEST(PReluKernel, SlopeThatDoesNotBroadcastToTheInputIsAnError) {
  const char* text = "graph g (%x: f32[2], %s: f32[2,2]) {\n %y = PRelu(%x, %s)\n return %y\n}";
  const std::string message =
      error_of(text, {{"x", floats({2}, {-1, 1})}, {"s", floats({2, 2}, {1, 2, 3, 4})}});
  EXPECT_NE(message.find("slope"), std::string::npos) << message;
}

// ---- Comparisons, logic, Where ------------------------------------------------------------------

TEST(Comparisons, ProduceBoolWithBroadcasting) {
  const char* text = R"(graph g (%a: f32[2,1], %b: f32[3]) {
  %eq = Equal(%a, %b)
  %gt = Greater(%a, %b)
  %lt = Less(%a, %b)
  %ge = GreaterOrEqual(%a, %b)
  %le = LessOrEqual(%a, %b)
  return %eq, %gt, %lt, %ge, %le
})";
  auto outputs = run(text, {{"a", floats({2, 1}, {1, 2})}, {"b", floats({3}, {0, 1, 2})}});
  for (const Tensor& t : outputs) {
    EXPECT_EQ(t.dtype(), DataType::kBool);
    EXPECT_EQ(t.shape(), (std::vector<int64_t>{2, 3}));
  }
  expect_values(outputs[0], {0, 1, 0, 0, 0, 1});
  expect_values(outputs[1], {1, 0, 0, 1, 1, 0});
  expect_values(outputs[2], {0, 0, 1, 0, 0, 0});
  expect_values(outputs[3], {1, 1, 0, 1, 1, 1});
  expect_values(outputs[4], {0, 1, 1, 0, 0, 1});
}

TEST(Comparisons, EqualOnIntegersAndBools) {
  const char* text = R"(graph g (%a: i64[3], %b: i64[3], %p: bool[2], %q: bool[2]) {
  %x = Equal(%a, %b)
  %y = Equal(%p, %q)
  return %x, %y
})";
  auto outputs = run(text, {{"a", make_tensor(DataType::kInt64, {3}, {1, 2, 3})},
                            {"b", make_tensor(DataType::kInt64, {3}, {1, 0, 3})},
                            {"p", make_tensor(DataType::kBool, {2}, {1, 0})},
                            {"q", make_tensor(DataType::kBool, {2}, {1, 1})}});
  expect_values(outputs[0], {1, 0, 1});
  expect_values(outputs[1], {1, 0});
}

TEST(Comparisons, NaNComparesUnequal) {
  const char* text = "graph g (%a: f32[2], %b: f32[2]) {\n %y = Equal(%a, %b)\n return %y\n}";
  expect_values(run_one(text, {{"a", floats({2}, {kNaN, 1})}, {"b", floats({2}, {kNaN, 1})}}),
                {0, 1});
}

TEST(LogicKernels, AndOrXorBroadcast) {
  const char* text = R"(graph g (%a: bool[2,1], %b: bool[2]) {
  %and = And(%a, %b)
  %or = Or(%a, %b)
  %xor = Xor(%a, %b)
  return %and, %or, %xor
})";
  auto outputs = run(text, {{"a", make_tensor(DataType::kBool, {2, 1}, {0, 1})},
                            {"b", make_tensor(DataType::kBool, {2}, {0, 1})}});
  expect_values(outputs[0], {0, 0, 0, 1});
  expect_values(outputs[1], {0, 1, 1, 1});
  expect_values(outputs[2], {0, 1, 1, 0});
}

TEST(WhereKernel, ThreeWayBroadcast) {
  const char* text =
      "graph g (%c: bool[2,1], %x: f32[1,3], %y: f32[]) {\n %z = Where(%c, %x, %y)\n return %z\n}";
  Tensor z = run_one(text, {{"c", make_tensor(DataType::kBool, {2, 1}, {1, 0})},
                            {"x", floats({1, 3}, {1, 2, 3})},
                            {"y", floats({}, {-1})}});
  EXPECT_EQ(z.shape(), (std::vector<int64_t>{2, 3}));
  expect_values(z, {1, 2, 3, -1, -1, -1});
}

TEST(WhereKernel, SelectsInt64Elementwise) {
  const char* text =
      "graph g (%c: bool[3], %x: i64[3], %y: i64[3]) {\n %z = Where(%c, %x, %y)\n return %z\n}";
  Tensor z = run_one(text, {{"c", make_tensor(DataType::kBool, {3}, {1, 0, 1})},
                            {"x", make_tensor(DataType::kInt64, {3}, {1, 2, 3})},
                            {"y", make_tensor(DataType::kInt64, {3}, {-1, -2, -3})}});
  ASSERT_EQ(z.dtype(), DataType::kInt64);
  expect_values(z, {1, -2, 3});
}

// ---- Cast ---------------------------------------------------------------------------------------

TEST(CastKernel, FloatToIntTruncatesTowardZero) {
  const char* text = "graph g (%x: f32[4]) {\n %y = Cast[to=6](%x)\n return %y\n}";
  Tensor y = run_one(text, {{"x", floats({4}, {2.7, -2.7, 0.2, -0.9})}});
  ASSERT_EQ(y.dtype(), DataType::kInt32);
  expect_values(y, {2, -2, 0, 0});
}

TEST(CastKernel, ToBoolIsNonZero) {
  const char* text = "graph g (%x: f32[4]) {\n %y = Cast[to=9](%x)\n return %y\n}";
  Tensor y = run_one(text, {{"x", floats({4}, {0, -0.5, 3, kNaN})}});
  ASSERT_EQ(y.dtype(), DataType::kBool);
  expect_values(y, {0, 1, 1, 1});
}

TEST(CastKernel, BoolAndInt64RoundTripThroughFloat) {
  const char* text = R"(graph g (%b: bool[2], %i: i64[3]) {
  %bf = Cast[to=1](%b)
  %bb = Cast[to=9](%bf)
  %if = Cast[to=1](%i)
  %ii = Cast[to=7](%if)
  return %bf, %bb, %ii
})";
  auto outputs = run(text, {{"b", make_tensor(DataType::kBool, {2}, {1, 0})},
                            {"i", make_tensor(DataType::kInt64, {3}, {-5, 0, 1 << 20})}});
  expect_values(outputs[0], {1, 0});
  expect_values(outputs[1], {1, 0});
  expect_values(outputs[2], {-5, 0, 1 << 20});
}

TEST(CastKernel, Float16RoundsToNearestEven) {
  const char* text = R"(graph g (%x: f32[6]) {
  %h = Cast[to=10](%x)
  %y = Cast[to=1](%h)
  return %y
})";
  // 1 + 2^-11 is halfway between two halves and rounds to the even one (1); 65520 overflows.
  Tensor y = run_one(text, {{"x", floats({6}, {1.0 / 3, 1 + std::ldexp(1.0, -11), 65504, 65520,
                                               std::ldexp(1.0, -24), -2.5})}});
  expect_values(y, {0.333251953125, 1, 65504, kInfinity, std::ldexp(1.0, -24), -2.5});
}

TEST(CastKernel, BFloat16KeepsEightBitsOfMantissa) {
  const char* text = R"(graph g (%x: f32[3]) {
  %h = Cast[to=16](%x)
  %y = Cast[to=1](%h)
  return %y
})";
  Tensor y = run_one(text, {{"x", floats({3}, {1 + std::ldexp(1.0, -9), 3, kNaN})}});
  expect_values(y, {1, 3, kNaN});
}

TEST(CastKernel, NaNToIntegerIsZero) {
  const char* text = "graph g (%x: f32[1]) {\n %y = Cast[to=7](%x)\n return %y\n}";
  expect_values(run_one(text, {{"x", floats({1}, {kNaN})}}), {0});
}

TEST(CastKernel, SameTypeSharesTheInputBytes) {
  const char* text = R"(graph g (%x: f32[3]) {
  %a = Relu(%x)
  %y = Cast[to=1](%a)
  return %y
})";
  expect_values(run_one(text, {{"x", floats({3}, {-1, 2, 3})}}), {0, 2, 3});
}

TEST(CastKernel, CastLikeTakesTheSecondInputsType) {
  const char* text =
      "graph g [ai.onnx=15] (%x: f32[2], %t: i64[1]) {\n %y = CastLike(%x, %t)\n return %y\n}";
  Tensor y = run_one(
      text, {{"x", floats({2}, {3.9, -1.5})}, {"t", make_tensor(DataType::kInt64, {1}, {0})}});
  ASSERT_EQ(y.dtype(), DataType::kInt64);
  expect_values(y, {3, -1});
}

TEST(CastKernel, StringTargetIsUnsupported) {
  const char* text = "graph g (%x: f32[1]) {\n %y = Cast[to=8](%x)\n return %y\n}";
  EXPECT_THROW(run(text, {{"x", floats({1}, {1})}}), UnsupportedError);
}

// ---- Blocked layouts, kernels prepared by hand -----------------------------------------------

// 20 channels: the blocked layout pads them to 32, which the kernels must keep consistent.
constexpr int64_t kChannels = 20;

TEST(BlockedLayouts, ReluKeepsTheLayoutWhenConsumersAllow) {
  DirectKernel direct("graph g (%x: f32[1,20,5,5]) {\n %y = Relu(%x)\n return %y\n}");
  const std::vector<double> values = ramp(kChannels * 25, -5, 5);
  Tensor plain = floats({1, kChannels, 5, 5}, values);
  Tensor blocked = direct.blocked(plain);
  auto kernel = direct.prepare({&blocked}, {false}, true);
  ASSERT_TRUE(kernel->output_specs()[0].layout.has_value());
  EXPECT_TRUE(*kernel->output_specs()[0].layout == *blocked.layout());
  std::vector<double> expected;
  for (double v : values)
    expected.push_back(std::max(0.0, static_cast<double>(static_cast<float>(v))));
  expect_values(direct.run(*kernel, {&blocked}), expected);
}

TEST(BlockedLayouts, SigmoidOfBlockedInputComesOutPlainWhenConsumersNeedIt) {
  DirectKernel direct("graph g (%x: f32[1,20,5,5]) {\n %y = Sigmoid(%x)\n return %y\n}");
  const std::vector<double> values = ramp(kChannels * 25, -5, 5);
  Tensor plain = floats({1, kChannels, 5, 5}, values);
  Tensor blocked = direct.blocked(plain);
  auto kernel = direct.prepare({&blocked}, {false}, false);
  EXPECT_FALSE(kernel->output_specs()[0].layout.has_value());
  std::vector<double> expected;
  for (double v : values) expected.push_back(sigmoid(static_cast<float>(v)));
  expect_values(direct.run(*kernel, {&blocked}), expected, 1e-6);
}

// Add/Mul/Sub/Div of a blocked tensor with: the same blocked layout, a plain tensor of the
// same shape, a plain per-channel constant, and (Sub) a plain operand first.
struct BlockedBinaryCase {
  std::string op;
  std::vector<int64_t> other_shape;
  bool other_blocked;
  bool other_constant;
  bool blocked_first;
  bool outputs_allowed;
};

void PrintTo(const BlockedBinaryCase& c, std::ostream* out) {
  *out << c.op << " other=[" << c.other_shape.size() << "-d] blocked=" << c.other_blocked
       << " first=" << c.blocked_first << " allowed=" << c.outputs_allowed;
}

class BlockedBinaryTest : public testing::TestWithParam<BlockedBinaryCase> {};

TEST_P(BlockedBinaryTest, MatchesPlainReference) {
  const BlockedBinaryCase& c = GetParam();
  DirectKernel direct("graph g (%a: f32[1,20,5,5], %b: f32[1,20,5,5]) {\n %y = " + c.op +
                      "(%a, %b)\n return %y\n}");
  const std::vector<double> big = ramp(kChannels * 25, -5, 5);
  int64_t other_count = 1;
  for (int64_t d : c.other_shape) other_count *= d;
  const std::vector<double> small = ramp(other_count, 0.5, 3);
  Tensor big_plain = floats({1, kChannels, 5, 5}, big);
  Tensor other_plain = floats(c.other_shape, small);
  Tensor big_blocked = direct.blocked(big_plain);
  Tensor other_blocked = c.other_blocked ? direct.blocked(other_plain) : Tensor();
  const Tensor* big_input = &big_blocked;
  const Tensor* other_input = c.other_blocked ? &other_blocked : &other_plain;
  std::vector<const Tensor*> inputs = {big_input, other_input};
  std::vector<bool> constant = {false, c.other_constant};
  if (!c.blocked_first) {
    std::swap(inputs[0], inputs[1]);
    constant = {c.other_constant, false};
  }
  auto kernel = direct.prepare(inputs, constant, c.outputs_allowed);
  EXPECT_EQ(kernel->output_specs()[0].shape, (std::vector<int64_t>{1, kChannels, 5, 5}));
  if (!c.outputs_allowed) {
    EXPECT_FALSE(kernel->output_specs()[0].layout.has_value());
  }

  std::vector<double> expected;
  for (int64_t i = 0; i < kChannels * 25; ++i) {
    const double a = static_cast<float>(big[i]);
    const int64_t j = other_count == kChannels * 25 ? i : i / 25;
    const double b = static_cast<float>(small[j]);
    const double x = c.blocked_first ? a : b;
    const double y = c.blocked_first ? b : a;
    expected.push_back(c.op == "Add"   ? x + y
                       : c.op == "Sub" ? x - y
                       : c.op == "Mul" ? x * y
                                       : x / y);
  }
  // Twice: the second run must not depend on state the first left behind.
  expect_values(direct.run(*kernel, inputs), expected, 1e-6);
  expect_values(direct.run(*kernel, inputs), expected, 1e-6);
}

// Grouped convolutions leave 8-channel blocks, where oneDNN 2.6 falls back to reference code for
// a per-channel operand; cleave's own loop must compute the same and keep the padding zero.
TEST(BlockedLayouts, PerChannelOperandOnEightChannelBlocks) {
  for (std::string op : {"Mul", "Add", "Div"}) {
    SCOPED_TRACE(op);
    DirectKernel direct("graph g (%a: f32[2,20,3,3], %b: f32[1,20,1,1]) {\n %y = " + op +
                        "(%a, %b)\n return %y\n}");
    const std::vector<double> big = ramp(2 * kChannels * 9, -5, 5);
    const std::vector<double> small = ramp(kChannels, 0.5, 3);
    Tensor big_blocked =
        direct.blocked(floats({2, kChannels, 3, 3}, big), dnnl::memory::format_tag::nChw8c);
    Tensor small_blocked =
        direct.blocked(floats({1, kChannels, 1, 1}, small), dnnl::memory::format_tag::nChw8c);
    auto kernel = direct.prepare({&big_blocked, &small_blocked}, {false, false}, true);
    ASSERT_TRUE(kernel->output_specs()[0].layout.has_value());
    EXPECT_TRUE(*kernel->output_specs()[0].layout == *big_blocked.layout());
    std::vector<double> expected;
    for (int64_t i = 0; i < 2 * kChannels * 9; ++i) {
      const double a = static_cast<float>(big[i]);
      const double b = static_cast<float>(small[(i / 9) % kChannels]);
      expected.push_back(op == "Mul" ? a * b : op == "Add" ? a + b : a / b);
    }
    expect_values(direct.run(*kernel, {&big_blocked, &small_blocked}), expected, 1e-6);

    // Channels 20..23 pad the last 8-block of each sample: they must come out zero.
    Tensor output = direct.run_in_layout(*kernel, {&big_blocked, &small_blocked});
    const auto* raw = static_cast<const float*>(output.raw());
    for (int64_t sample = 0; sample < 2; ++sample) {
      for (int64_t pixel = 0; pixel < 9; ++pixel) {
        for (int64_t lane = 4; lane < 8; ++lane) {
          EXPECT_EQ(raw[((sample * 3 + 2) * 9 + pixel) * 8 + lane], 0.0f);
        }
      }
    }
  }
}

// A squeeze-and-excitation scale on 16-channel blocks, big enough to be split between two
// threads (mid-way through a channel block's pixels): the same values as on one thread.
TEST(BlockedLayouts, PerChannelOperandSplitBetweenTwoThreads) {
  DirectKernel direct(
      "graph g (%a: f32[1,40,40,40], %b: f32[1,40,1,1]) {\n %y = Mul(%a, %b)\n"
      " return %y\n}");
  const std::vector<double> big = ramp(40 * 1600, -5, 5);
  const std::vector<double> small = ramp(40, 0.5, 3);
  Tensor big_blocked = direct.blocked(floats({1, 40, 40, 40}, big));
  Tensor small_blocked = direct.blocked(floats({1, 40, 1, 1}, small));
  std::vector<double> expected;
  for (std::size_t i = 0; i < big.size(); ++i) {
    expected.push_back(static_cast<float>(big[i]) * static_cast<float>(small[i / 1600]));
  }
  for (int threads : {1, 2}) {
    SCOPED_TRACE(threads);
    auto kernel = direct.prepare({&big_blocked, &small_blocked}, {false, false}, true, threads);
    // The loops of the vector code the CPU is capped at (ONEDNN_MAX_CPU_ISA).
    EXPECT_EQ(kernel->implementation(), "cleave:" + vector_isa_name(vector_isa()));
    expect_values(direct.run(*kernel, {&big_blocked, &small_blocked}), expected, 1e-6);
  }
}

const std::vector<int64_t> kFull = {1, kChannels, 5, 5};
const std::vector<int64_t> kPerChannel = {1, kChannels, 1, 1};

INSTANTIATE_TEST_SUITE_P(
    Cases, BlockedBinaryTest,
    testing::Values(BlockedBinaryCase{"Add", kFull, true, false, true, true},
                    BlockedBinaryCase{"Add", kFull, true, false, true, false},
                    BlockedBinaryCase{"Add", kFull, false, false, true, true},
                    BlockedBinaryCase{"Add", kFull, false, false, false, true},
                    BlockedBinaryCase{"Mul", kPerChannel, false, true, true, true},
                    BlockedBinaryCase{"Mul", kPerChannel, false, false, false, true},
                    BlockedBinaryCase{"Mul", kPerChannel, true, false, true, true},
                    BlockedBinaryCase{"Sub", kFull, false, false, false, true},
                    BlockedBinaryCase{"Sub", kPerChannel, false, true, false, true},
                    BlockedBinaryCase{"Div", kPerChannel, false, true, true, false}));

// Through the executor: conv outputs in oneDNN's blocked layout flow through Relu, a residual
// Add, squeeze-excitation gating (GlobalAveragePool, Sigmoid, per-channel Mul) and Clip into
// another conv; the result must equal a plain-layout run.
TEST(BlockedLayouts, ExecutorChainMatchesAPlainRun) {
  const int64_t channels = 64;
  std::string weights;
  for (int64_t i = 0; i < channels * channels * 9; ++i) {
    weights += (i ? "," : "") + std::to_string(((i * 37) % 23 - 11) / 256.0);
  }
  const std::string conv = "Conv[pads=[1,1,1,1]]";
  const std::string text =
      "graph g (%x: f32[1,64,8,8]) {\n"
      "  @w: f32[64,64,3,3] = [" +
      weights +
      "]\n"
      "  @six: f32[] = [6.0]\n"
      "  @zero: f32[] = [0.0]\n"
      "  %c1 = " +
      conv +
      "(%x, @w)\n"
      "  %r = Relu(%c1)\n"
      "  %c2 = " +
      conv +
      "(%r, @w)\n"
      "  %sum = Add(%r, %c2)\n"
      "  %pool = GlobalAveragePool(%sum)\n"
      "  %gate = Sigmoid(%pool)\n"
      "  %scaled = Mul(%sum, %gate)\n"
      "  %clip = Clip(%scaled, @zero, @six)\n"
      "  %y = " +
      conv +
      "(%clip, @w)\n"
      "  return %y\n"
      "}\n";
  std::map<std::string, Tensor> inputs = {
      {"x", floats({1, channels, 8, 8}, ramp(channels * 64, -2, 2))}};
  ExecutorOptions blocked;
  blocked.blocked_layouts = true;
  ExecutorOptions plain;
  plain.blocked_layouts = false;
  const std::vector<double> expected = run_one(text, inputs, plain).to_double_vector();
  expect_values(run_one(text, inputs, blocked), expected, 1e-5);
}

// ---- Transpose of blocked inputs ----------------------------------------------------------

// NCHW -> NHWC of a plain [1, c, h, w] ramp, by definition.
std::vector<double> nchw_to_nhwc(const std::vector<double>& values, int64_t c, int64_t h,
                                 int64_t w) {
  std::vector<double> out;
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x)
      for (int64_t k = 0; k < c; ++k) out.push_back(values[(k * h + y) * w + x]);
  return out;
}

TEST(BlockedLayouts, TransposeUnblocksAndPermutesInOnePass) {
  DirectKernel direct(
      "graph g (%x: f32[1,20,5,5]) {\n %y = Transpose[perm=[0,2,3,1]](%x)\n return %y\n}");
  const std::vector<double> values = ramp(kChannels * 25, -5, 5);
  Tensor plain = floats({1, kChannels, 5, 5}, values);
  Tensor blocked = direct.blocked(plain);
  auto kernel = direct.prepare({&blocked}, {false}, false);
  EXPECT_FALSE(kernel->output_specs()[0].layout.has_value());
  EXPECT_EQ(kernel->output_specs()[0].alias_of, -1);
  Tensor out = direct.run(*kernel, {&blocked});
  EXPECT_EQ(out.shape(), (std::vector<int64_t>{1, 5, 5, kChannels}));
  std::vector<double> expected = nchw_to_nhwc(values, kChannels, 5, 5);
  for (double& v : expected) v = static_cast<float>(v);
  expect_values(out, expected);
}

TEST(BlockedLayouts, TransposeOfAChannelsLastInputToNhwcCopiesNothing) {
  DirectKernel direct(
      "graph g (%x: f32[1,20,5,5]) {\n %y = Transpose[perm=[0,2,3,1]](%x)\n return %y\n}");
  Tensor plain = floats({1, kChannels, 5, 5}, ramp(kChannels * 25, -5, 5));
  Tensor channels_last = direct.blocked(plain, dnnl::memory::format_tag::nhwc);
  auto kernel = direct.prepare({&channels_last}, {false}, false);
  // Its bytes already are the plain NHWC tensor: the output is a view of the input.
  EXPECT_EQ(kernel->output_specs()[0].alias_of, 0);
  EXPECT_FALSE(kernel->output_specs()[0].layout.has_value());
}

TEST(BlockedLayouts, TransposeOfNhwcToNchwIsAChannelsLastViewWhenConsumersReadLayouts) {
  DirectKernel direct(
      "graph g (%x: f32[1,5,5,20]) {\n %y = Transpose[perm=[0,3,1,2]](%x)\n return %y\n}");
  const std::vector<double> values = ramp(kChannels * 25, -5, 5);
  Tensor nhwc = floats({1, 5, 5, kChannels}, values);
  auto kernel = direct.prepare({&nhwc}, {false}, true);
  const OutputSpec spec = kernel->output_specs()[0];
  EXPECT_EQ(spec.alias_of, 0);
  ASSERT_TRUE(spec.layout.has_value());
  EXPECT_TRUE(*spec.layout == dnnl::memory::desc({1, kChannels, 5, 5}, dnnl::memory::data_type::f32,
                                                 dnnl::memory::format_tag::nhwc));
}

TEST(BlockedLayouts, TransposeOfNhwcToNchwCopiesWhenConsumersNeedPlain) {
  DirectKernel direct(
      "graph g (%x: f32[1,5,5,20]) {\n %y = Transpose[perm=[0,3,1,2]](%x)\n return %y\n}");
  Tensor nhwc = floats({1, 5, 5, kChannels}, ramp(kChannels * 25, -5, 5));
  auto kernel = direct.prepare({&nhwc}, {false}, false);
  EXPECT_EQ(kernel->output_specs()[0].alias_of, -1);
  EXPECT_FALSE(kernel->output_specs()[0].layout.has_value());
}

// Runs a graph of input %x: f32[1,16,6,6] with each convolution family and checks its output
// against the run in plain layouts.
void expect_every_family_matches_plain_layouts(const std::string& text) {
  std::map<std::string, Tensor> inputs = {{"x", floats({1, 16, 6, 6}, ramp(16 * 36, -2, 2))}};
  ExecutorOptions plain;
  plain.blocked_layouts = false;
  const std::vector<double> expected = run_one(text, inputs, plain).to_double_vector();
  for (ConvolutionFamily family : {ConvolutionFamily::kBlocked, ConvolutionFamily::kWinograd,
                                   ConvolutionFamily::kChannelsLast}) {
    SCOPED_TRACE(to_string(family));
    ExecutorOptions options;
    options.convolution_family = family;
    expect_values(run_one(text, inputs, options), expected, 1e-6);
  }
}

// Through the executor with each convolution family: a convolution's output moved to NHWC and
// back (ConvNeXt's blocks) equals the plain-layout run.
TEST(BlockedLayouts, TransposesAroundAConvolutionMatchAPlainRunInEveryFamily) {
  const std::string text =
      "graph g (%x: f32[1,16,6,6]) {\n"
      "  @w: f32[16,1,3,3] = [" +
      [] {
        std::string w;
        for (int i = 0; i < 16 * 9; ++i) w += (i ? "," : "") + std::to_string((i % 7 - 3) / 8.0);
        return w;
      }() +
      "]\n"
      "  %c = Conv[group=16, pads=[1,1,1,1]](%x, @w)\n"
      "  %t = Transpose[perm=[0,2,3,1]](%c)\n"
      "  %r = Relu(%t)\n"
      "  %y = Transpose[perm=[0,3,1,2]](%r)\n"
      "  return %y\n"
      "}\n";
  expect_every_family_matches_plain_layouts(text);
}

// The same with ConvNeXt's whole block: after the Transpose back, a layer scale, the residual
// Add and the next depthwise convolution read the channels-last view.
TEST(BlockedLayouts, ConvNeXtBlockOnAChannelsLastViewMatchesAPlainRunInEveryFamily) {
  std::string weights, scale;
  for (int i = 0; i < 16 * 9; ++i) weights += (i ? "," : "") + std::to_string((i % 7 - 3) / 8.0);
  for (int i = 0; i < 16; ++i) scale += (i ? "," : "") + std::to_string(0.25 + i / 16.0);
  const std::string text =
      "graph g (%x: f32[1,16,6,6]) {\n"
      "  @w: f32[16,1,3,3] = [" +
      weights +
      "]\n"
      "  @s: f32[16,1,1] = [" +
      scale +
      "]\n"
      "  %c = Conv[group=16, pads=[1,1,1,1]](%x, @w)\n"
      "  %t = Transpose[perm=[0,2,3,1]](%c)\n"
      "  %r = Relu(%t)\n"
      "  %b = Transpose[perm=[0,3,1,2]](%r)\n"
      "  %m = Mul(@s, %b)\n"
      "  %a = Add(%m, %x)\n"
      "  %y = Conv[group=16, pads=[1,1,1,1]](%a, @w)\n"
      "  return %y\n"
      "}\n";
  expect_every_family_matches_plain_layouts(text);
}

}  // namespace
}  // namespace cleave
