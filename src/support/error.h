// The one exception type cleave reports with: a message that says where and why.
#pragma once

#include <stdexcept>

namespace cleave {

/// Every error cleave reports about a model, plan or input: the message says where and why
/// (the file, the node or field, and what was expected). The command line prints it as
/// `cleave: error: ...` and exits 1.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Valid ONNX that cleave does not implement (an op, opset, type or attribute value): the
/// kernels and the ONNX schema check throw it, and conformance counts it as unsupported.
class UnsupportedError : public Error {
 public:
  using Error::Error;
};

}  // namespace cleave
