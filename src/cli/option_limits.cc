// Option validators: parse the text, then ask support/limits.h whether the number is meaningful.
#include "cli/option_limits.h"

#include <fmt/core.h>

#include <cerrno>
#include <cstdlib>
#include <string>

#include "support/limits.h"

namespace cleave {
namespace {

bool parse_integer(const std::string& text, int64_t& value) {
  errno = 0;
  char* end = nullptr;
  const long long parsed = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE) return false;
  value = parsed;
  return true;
}

bool parse_number(const std::string& text, double& value) {
  char* end = nullptr;
  value = std::strtod(text.c_str(), &end);
  return !text.empty() && *end == '\0';
}

}  // namespace

CLI::Validator integer_in(int64_t minimum, int64_t maximum) {
  return CLI::Validator(
      [minimum, maximum](std::string& text) -> std::string {
        int64_t value = 0;
        if (!parse_integer(text, value)) return fmt::format("expected an integer, got '{}'", text);
        return integer_problem(value, minimum, maximum);
      },
      maximum == std::numeric_limits<int64_t>::max()
          ? fmt::format("INT >= {}", minimum)
          : fmt::format("INT in [{}, {}]", minimum, maximum));
}

CLI::Validator thread_count() {
  return integer_in(1, kMaxThreads);
}

CLI::Validator positive_seconds() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double value = 0;
        if (!parse_number(text, value)) return fmt::format("expected seconds, got '{}'", text);
        return positive_seconds_problem(value);
      },
      "SECONDS > 0");
}

CLI::Validator timeout_seconds() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double value = 0;
        if (!parse_number(text, value)) return fmt::format("expected seconds, got '{}'", text);
        return timeout_seconds_problem(value);
      },
      fmt::format("SECONDS in [{}, {}]", kMinTimeoutSeconds, kMaxTimeoutSeconds));
}

CLI::Validator finite_in(double minimum, double maximum) {
  return CLI::Validator(
      [minimum, maximum](std::string& text) -> std::string {
        double value = 0;
        if (!parse_number(text, value)) return fmt::format("expected a number, got '{}'", text);
        return number_problem(value, minimum, maximum);
      },
      fmt::format("NUMBER in [{}, {}]", minimum, maximum));
}

CLI::Validator path_given() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        return text.empty() ? "expected a path, got an empty one ('')" : "";
      },
      "PATH");
}

}  // namespace cleave
