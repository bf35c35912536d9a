// The compiled `cleave._cleave` module: the session core, the tools, and cleave.Error.
#include <pybind11/pybind11.h>

#include <exception>
#include <new>

#include "session_binding.h"
#include "support/cpu_quota.h"
#include "support/describe_exception.h"
#include "support/error.h"
#include "tools_binding.h"

namespace py = pybind11;

PYBIND11_MODULE(_cleave, module) {
  module.doc() = "cleave's engine, planners and code generator (see the cleave package)";
  // cleave.Error carries cleave's message (the file, node or input, and what was expected).
  // Never destroyed: a static Python object would be released after the interpreter is gone.
  static auto* error = new py::exception<cleave::Error>(module, "Error", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr thrown) {
    try {
      if (thrown) std::rethrow_exception(thrown);
    } catch (const cleave::Error& e) {
      (*error)(e.what());
    } catch (const std::bad_alloc& e) {
      PyErr_SetString(PyExc_MemoryError, cleave::describe_exception(e).c_str());
    } catch (const py::builtin_exception&) {
      throw;  // pybind11's own (TypeError, ValueError, ...) keep their types.
    } catch (const py::error_already_set&) {
      throw;
    } catch (const std::exception& e) {
      // Anything else that reaches Python is cleave failing on a model or a file: the same
      // words the command line prints.
      (*error)(cleave::describe_exception(e).c_str());
    }
  });
  module.def("usable_cores", &cleave::usable_cores,
             "The cores this process may use: its affinity mask, bounded by its cgroup CPU "
             "quota (a container's CPU limit).");
  cleave::python::bind_session(module);
  cleave::python::bind_tools(module);
}
