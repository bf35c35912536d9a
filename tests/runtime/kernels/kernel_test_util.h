// Test helpers shared by the kernel tests: tensors from listed values, graphs in the text form
// run through the executor, and element-wise comparisons that name the element.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "ir/text.h"
#include "runtime/executor.h"
#include "runtime/tensor.h"

namespace cleave::kernel_test {

/// A plain tensor of `dtype` holding `values` (converted as static_cast does).
// `count` integers drawn uniformly from [low, high] (as doubles), the same for one seed.
inline std::vector<double> random_values(std::size_t count, int low, int high, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> value(low, high);
  std::vector<double> values(count);
  for (double& v : values) v = value(rng);
  return values;
}

// Sets (or, given nullptr, unsets) an environment variable for one scope; restores what was there.
class ScopedEnvironment {
 public:
  ScopedEnvironment(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnvironment() {
    if (old_) {
      ::setenv(name_.c_str(), old_->c_str(), 1);
    } else {
      ::unsetenv(name_.c_str());
    }
  }
  ScopedEnvironment(const ScopedEnvironment&) = delete;
  ScopedEnvironment& operator=(const ScopedEnvironment&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

// Integer values as a graph-text list: "[1, -2, 3]".
inline std::string listed(const std::vector<double>& values) {
  std::string text;
  for (double v : values) text += (text.empty() ? "" : ", ") + std::to_string(int(v));
  return "[" + text + "]";
}

inline Tensor make_tensor(DataType dtype, std::vector<int64_t> shape,
                          const std::vector<double>& values) {
  Tensor t = Tensor::allocate(dtype, std::move(shape));
  EXPECT_EQ(static_cast<std::size_t>(t.element_count()), values.size()) << t.describe();
  const std::size_t count = std::min(values.size(), static_cast<std::size_t>(t.element_count()));
  for (std::size_t i = 0; i < count; ++i) {
    const double v = values[i];
    switch (dtype) {
      case DataType::kFloat:
        t.data<float>()[i] = static_cast<float>(v);
        break;
      case DataType::kDouble:
        t.data<double>()[i] = v;
        break;
      case DataType::kInt8:
        t.data<int8_t>()[i] = static_cast<int8_t>(v);
        break;
      case DataType::kInt32:
        t.data<int32_t>()[i] = static_cast<int32_t>(v);
        break;
      case DataType::kInt64:
        t.data<int64_t>()[i] = static_cast<int64_t>(v);
        break;
      case DataType::kUInt8:
      case DataType::kBool:
        t.data<uint8_t>()[i] = static_cast<uint8_t>(v);
        break;
      default:
        ADD_FAILURE() << "make_tensor: unhandled type";
    }
  }
  return t;
}

/// A float tensor of `shape` holding `values`.
inline Tensor floats(std::vector<int64_t> shape, const std::vector<double>& values) {
  return make_tensor(DataType::kFloat, std::move(shape), values);
}

/// Runs a graph in the text form on named inputs and returns its outputs.
inline std::vector<Tensor> run_graph(std::string_view text,
                                     const std::map<std::string, Tensor>& inputs,
                                     ExecutorOptions options = {}) {
  Executor executor(parse_graph(text), options);
  return executor.run(inputs);
}

/// Expects `actual` to hold `expected`: NaN where NaN is expected, exact values where the
/// tolerance is 0 or the value is infinite, else within `tolerance` relative to max(1, |v|).
inline void expect_values(const Tensor& actual, const std::vector<double>& expected,
                          double tolerance = 0) {
  const std::vector<double> got = actual.to_double_vector();
  ASSERT_EQ(got.size(), expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(expected[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "element " << i << ": " << got[i];
    } else if (tolerance == 0 || std::isinf(expected[i])) {
      EXPECT_EQ(got[i], expected[i]) << "element " << i;
    } else {
      EXPECT_NEAR(got[i], expected[i], tolerance * std::max(1.0, std::abs(expected[i])))
          << "element " << i << " of " << actual.describe();
    }
  }
}

}  // namespace cleave::kernel_test
