// Linear algebra beyond products: Det, by LU decomposition with partial pivoting.
#include <fmt/core.h>

#include <cmath>
#include <utility>

#include "runtime/kernels/registration.h"
#include "runtime/kernels/tensor/common.h"

namespace cleave {

namespace {

// Determinant of the n×n row-major matrix `a` (overwritten), accumulated in double.
double determinant(std::vector<double>& a, int64_t n) {
  double result = 1.0;
  for (int64_t column = 0; column < n; ++column) {
    int64_t pivot = column;
    for (int64_t row = column + 1; row < n; ++row) {
      if (std::abs(a[row * n + column]) > std::abs(a[pivot * n + column])) pivot = row;
    }
    if (a[pivot * n + column] == 0.0) return 0.0;
    if (pivot != column) {
      for (int64_t k = 0; k < n; ++k) std::swap(a[pivot * n + k], a[column * n + k]);
      result = -result;
    }
    double diagonal = a[column * n + column];
    result *= diagonal;
    for (int64_t row = column + 1; row < n; ++row) {
      double factor = a[row * n + column] / diagonal;
      for (int64_t k = column; k < n; ++k) a[row * n + k] -= factor * a[column * n + k];
    }
  }
  return result;
}

std::unique_ptr<Kernel> create_det(const KernelContext& context) {
  const Tensor& x = context.input(0);
  if (x.rank() < 2 || x.dim(x.rank() - 1) != x.dim(x.rank() - 2)) {
    throw Error(
        fmt::format("{}: the input should be [..., M, M], is {}", context.where(), x.describe()));
  }
  std::vector<int64_t> shape(x.shape().begin(), x.shape().end() - 2);
  int64_t n = x.dim(x.rank() - 1);
  int64_t count = shape::product(shape);
  DataType type = x.dtype();
  return shape::make_kernel(
      context, {OutputSpec{type, shape, std::nullopt, -1}},
      [=](const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) {
        std::vector<double> values = inputs[0]->to_double_vector();
        for (int64_t m = 0; m < count; ++m) {
          std::vector<double> matrix(values.begin() + m * n * n, values.begin() + (m + 1) * n * n);
          double result = determinant(matrix, n);
          if (type == DataType::kDouble) {
            outputs[0]->data<double>()[m] = result;
          } else {
            outputs[0]->data<float>()[m] = static_cast<float>(result);
          }
        }
      });
}

}  // namespace

void register_linalg_kernels(KernelRegistry& registry) {
  shape::add_kernel(registry, "Det", create_det, {DataType::kFloat, DataType::kDouble});
}

}  // namespace cleave
