// The argv walker shared by every generated program's command line (static, rank and stream).
#pragma once

#include <cstdint>
#include <string>

namespace cleave {

/// Walks argv option by option. Each value is taken and checked here, so every generated program
/// words a missing or bad value the same way (naming the option and what it expected).
class ProgramArgs {
 public:
  ProgramArgs(int argc, char** argv) : argc_(argc), argv_(argv) {}

  /// Moves to the next option; false when argv is used up.
  bool next();
  /// The current option, as written.
  const std::string& option() const { return option_; }
  /// True for --help and -h.
  bool is_help() const { return option_ == "--help" || option_ == "-h"; }
  /// The option's value (the next argument). Throws Error "--x needs a value" at the end of argv.
  std::string value();
  /// The value as an integer of at least `minimum`. Throws Error naming the option otherwise.
  int64_t integer(int64_t minimum);
  /// The value as a positive number of seconds. Throws Error naming the option otherwise.
  double seconds();
  /// Throws Error "unknown option '--x' (see --help)".
  [[noreturn]] void unknown() const;

 private:
  int argc_;
  char** argv_;
  int index_ = 0;
  std::string option_;
};

}  // namespace cleave
