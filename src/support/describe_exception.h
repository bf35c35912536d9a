// The words a user sees for any exception that reaches the command line's last catch.
#pragma once

#include <exception>
#include <string>

namespace cleave {

/// A message for `error` that names what went wrong in words: cleave::Error's own message,
/// "out of memory ..." for allocation failures, "PATH: reason" for file-system errors, the
/// JSON parser's reason without its codes; never "std::", "internal error" or "bad_alloc".
std::string describe_exception(const std::exception& error);

}  // namespace cleave
