// The compiled half of cleave.InferenceSession: a pipeline Session run from NumPy arrays.
#pragma once

#include <pybind11/pybind11.h>

namespace cleave::python {

/// Adds `_cleave.Session` (the core that python/cleave/_session.py wraps in ONNX Runtime's
/// interface) to the module.
void bind_session(pybind11::module_& module);

}  // namespace cleave::python
