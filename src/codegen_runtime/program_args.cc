// The argv walker shared by every generated program's command line.
#include "codegen_runtime/program_args.h"

#include <fmt/core.h>

#include <exception>

#include "support/error.h"

namespace cleave {

bool ProgramArgs::next() {
  if (index_ + 1 >= argc_) return false;
  option_ = argv_[++index_];
  return true;
}

std::string ProgramArgs::value() {
  if (index_ + 1 >= argc_) throw Error(fmt::format("{} needs a value", option_));
  return argv_[++index_];
}

int64_t ProgramArgs::integer(int64_t minimum) {
  const std::string text = value();
  std::size_t used = 0;
  int64_t parsed = 0;
  try {
    parsed = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (text.empty() || used != text.size() || parsed < minimum) {
    throw Error(fmt::format("{} '{}': expected an integer of at least {}", option_, text, minimum));
  }
  return parsed;
}

double ProgramArgs::seconds() {
  const std::string text = value();
  std::size_t used = 0;
  double parsed = 0;
  try {
    parsed = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (text.empty() || used != text.size() || !(parsed > 0)) {
    throw Error(fmt::format("{} '{}': expected a positive number of seconds", option_, text));
  }
  return parsed;
}

void ProgramArgs::unknown() const {
  throw Error(fmt::format("unknown option '{}' (see --help)", option_));
}

}  // namespace cleave
