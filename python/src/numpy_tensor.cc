// NumPy arrays to cleave Tensors and back, without a copy where dtype and strides allow.
#include "numpy_tensor.h"

#include <fmt/core.h>

#include <cstring>
#include <memory>
#include <vector>

namespace cleave::python {

namespace {

// NumPy's dtype name per element type; empty where NumPy has none.
const char* numpy_name(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat:
      return "float32";
    case DataType::kUInt8:
      return "uint8";
    case DataType::kInt8:
      return "int8";
    case DataType::kUInt16:
      return "uint16";
    case DataType::kInt16:
      return "int16";
    case DataType::kInt32:
      return "int32";
    case DataType::kInt64:
      return "int64";
    case DataType::kBool:
      return "bool";
    case DataType::kFloat16:
      return "float16";
    case DataType::kDouble:
      return "float64";
    case DataType::kUInt32:
      return "uint32";
    case DataType::kUInt64:
      return "uint64";
    case DataType::kComplex64:
      return "complex64";
    case DataType::kComplex128:
      return "complex128";
    default:
      return "";
  }
}

// Never destroyed: a static Python object would be released after the interpreter is gone.
const py::module_& numpy() {
  static const py::module_* module = new py::module_(py::module_::import("numpy"));
  return *module;
}

}  // namespace

std::string ort_type_name(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat:
      return "tensor(float)";
    case DataType::kDouble:
      return "tensor(double)";
    case DataType::kString:
      return "tensor(string)";
    case DataType::kBFloat16:
      return "tensor(bfloat16)";
    case DataType::kUndefined:
      return "tensor(undefined)";
    default:
      return fmt::format("tensor({})", numpy_name(dtype));
  }
}

py::dtype numpy_dtype(DataType dtype) {
  const char* name = numpy_name(dtype);
  if (*name == '\0') {
    throw py::type_error(
        fmt::format("cleave: NumPy has no element type for {}", ort_type_name(dtype)));
  }
  return py::dtype(name);
}

py::array contiguous_array(const py::handle& value, DataType dtype, const std::string& input) {
  const py::dtype wanted = numpy_dtype(dtype);
  py::array array;
  if (py::isinstance<py::array>(value)) {
    array = py::reinterpret_borrow<py::array>(value);
  } else {
    try {
      array = numpy().attr("asarray")(value);
    } catch (py::error_already_set&) {
      throw py::type_error(fmt::format("input '{}': expected a NumPy array, got a {}", input,
                                       Py_TYPE(value.ptr())->tp_name));
    }
  }
  const py::dtype given = array.dtype();
  if (given.kind() == 'O' || given.kind() == 'U' || given.kind() == 'S' || given.kind() == 'V' ||
      !numpy().attr("can_cast")(given, wanted, "same_kind").cast<bool>()) {
    throw py::type_error(fmt::format("input '{}': expected an array of {} ({}), got one of {}",
                                     input, numpy_name(dtype), ort_type_name(dtype),
                                     py::str(py::handle(given)).cast<std::string>()));
  }
  // asarray returns the array itself when it already is C-contiguous, in native byte order
  // and of the wanted type (ascontiguousarray would make a 0-d array 1-d).
  return numpy().attr("asarray")(array, wanted, "C");
}

Tensor borrow_array(const py::array& array, DataType dtype) {
  std::vector<int64_t> shape(array.shape(), array.shape() + array.ndim());
  return Tensor::borrow(dtype, std::move(shape), array.data());
}

py::array array_of(const Tensor& tensor) {
  const py::dtype dtype = numpy_dtype(tensor.dtype());
  std::vector<py::ssize_t> shape(tensor.shape().begin(), tensor.shape().end());
  if (!tensor.storage()) {
    py::array copy(dtype, shape);
    if (tensor.byte_size() > 0) std::memcpy(copy.mutable_data(), tensor.raw(), tensor.byte_size());
    return copy;
  }
  // The capsule owns a reference to the storage: the array stays valid after the session and
  // its executor are gone.
  auto* owner = new std::shared_ptr<Buffer>(tensor.storage());
  py::capsule base(owner, [](void* p) { delete static_cast<std::shared_ptr<Buffer>*>(p); });
  return py::array(dtype, shape, {}, tensor.raw(), base);
}

}  // namespace cleave::python
