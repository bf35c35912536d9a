// cleave's planners, schedulers, stream scheduler and code generator as Python calls.
#pragma once

#include <pybind11/pybind11.h>

namespace cleave::python {

/// Adds `_cleave.Plan`, `plan`, `inspect`, `schedule`, `stream_schedule` and `codegen`.
void bind_tools(pybind11::module_& module);

}  // namespace cleave::python
