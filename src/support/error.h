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

}  // namespace cleave
