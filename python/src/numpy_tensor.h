// NumPy arrays to cleave Tensors and back, without a copy where dtype and strides allow.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string>

#include "ir/graph.h"
#include "runtime/tensor.h"

namespace cleave::python {

namespace py = pybind11;

/// ONNX Runtime's name of a tensor type: "tensor(float)", "tensor(int64)", ...
std::string ort_type_name(DataType dtype);

/// The NumPy dtype of a cleave element type; TypeError for types NumPy has no dtype for.
py::dtype numpy_dtype(DataType dtype);

/// The array `value` as a C-contiguous array of `dtype`: `value` itself when it already is one
/// (no copy), else a converted copy. TypeError naming `input` when `value` is not an array of
/// numbers or cannot be cast to `dtype` without changing kind (float to int, ...).
py::array contiguous_array(const py::handle& value, DataType dtype, const std::string& input);

/// A Tensor reading `array`'s bytes in place (the caller keeps `array` alive while it is used).
Tensor borrow_array(const py::array& array, DataType dtype);

/// A NumPy array of the tensor's values that keeps its storage alive (its `.base` holds it);
/// a copy only for a tensor that borrows bytes it does not own.
py::array array_of(const Tensor& tensor);

}  // namespace cleave::python
