// Bounds on numbers from options and files, with messages a person can read.
#include "support/limits.h"

#include <fmt/core.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>

#include "support/error.h"

namespace cleave {

int cores_present() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  const int count = CPU_COUNT(&set);
  return count > 0 ? count : 1;
}

bool core_available(int64_t core) {
  const long configured = sysconf(_SC_NPROCESSORS_CONF);
  return core >= 0 && core < std::max<long>(configured, cores_present());
}

std::string integer_problem(int64_t value, int64_t minimum, int64_t maximum) {
  if (value >= minimum && value <= maximum) return {};
  if (maximum == INT64_MAX) return fmt::format("expected an integer >= {}, got {}", minimum, value);
  return fmt::format("expected an integer from {} to {}, got {}", minimum, maximum, value);
}

std::string number_problem(double value, double minimum, double maximum, bool open_minimum) {
  const bool low = open_minimum ? !(value > minimum) : !(value >= minimum);
  if (std::isfinite(value) && !low && value <= maximum) return {};
  const char* opening = open_minimum ? "(" : "[";
  if (std::isinf(maximum)) {
    return fmt::format("expected a finite number {} {}, got {}", open_minimum ? ">" : ">=", minimum,
                       value);
  }
  return fmt::format("expected a finite number in {}{}, {}], got {}", opening, minimum, maximum,
                     value);
}

std::string positive_seconds_problem(double value) {
  if (std::isfinite(value) && value > 0) return {};
  return fmt::format("expected a finite number of seconds > 0, got {}", value);
}

std::string non_negative_seconds_problem(double value) {
  if (std::isfinite(value) && value >= 0) return {};
  return fmt::format("expected a finite number of seconds >= 0, got {}", value);
}

std::string timeout_seconds_problem(double value) {
  if (std::isfinite(value) && value >= kMinTimeoutSeconds && value <= kMaxTimeoutSeconds) return {};
  return fmt::format("expected seconds from {} to {} (one week), got {}", kMinTimeoutSeconds,
                     kMaxTimeoutSeconds, value);
}

std::string shares_problem(const std::vector<double>& values) {
  if (values.empty()) return "expected at least one positive number, got none";
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (!(values[i] > 0) || !(values[i] <= kMaxShare)) {
      return fmt::format("expected numbers in (0, {:g}], got {} (item {})", kMaxShare, values[i],
                         i + 1);
    }
  }
  const auto [smallest, largest] = std::minmax_element(values.begin(), values.end());
  if (*largest / *smallest <= kMaxShareRatio) return {};
  return fmt::format(
      "expected the largest at most {:g} times the smallest, got {} and {} (ratio {:g})",
      kMaxShareRatio, *largest, *smallest, *largest / *smallest);
}

namespace {
void raise_if(std::string_view what, const std::string& problem) {
  if (!problem.empty()) throw Error(fmt::format("{}: {}", what, problem));
}
}  // namespace

void require_integer(std::string_view what, int64_t value, int64_t minimum, int64_t maximum) {
  raise_if(what, integer_problem(value, minimum, maximum));
}

void require_number(std::string_view what, double value, double minimum, double maximum,
                    bool open_minimum) {
  raise_if(what, number_problem(value, minimum, maximum, open_minimum));
}

void require_positive_seconds(std::string_view what, double value) {
  raise_if(what, positive_seconds_problem(value));
}

void require_non_negative_seconds(std::string_view what, double value) {
  raise_if(what, non_negative_seconds_problem(value));
}

void require_timeout_seconds(std::string_view what, double value) {
  raise_if(what, timeout_seconds_problem(value));
}

void require_shares(std::string_view what, const std::vector<double>& values) {
  raise_if(what, shares_problem(values));
}

void require_threads(std::string_view what, int64_t value) {
  if (value >= 1 && value <= kMaxThreads) return;
  throw Error(
      fmt::format("{}: expected a thread count from 1 to {}, got {}", what, kMaxThreads, value));
}

void require_core(std::string_view what, int64_t core) {
  if (core_available(core)) return;
  throw Error(fmt::format("{}: core {} does not exist on this host (cores 0 to {})", what, core,
                          std::max<long>(sysconf(_SC_NPROCESSORS_CONF), cores_present()) - 1));
}

int cap_threads_at_cores(int requested, bool force, std::string* note) {
  const int cores = cores_present();
  if (force || requested <= cores) return requested;
  if (note) {
    *note = fmt::format(
        "{} threads requested, but this host has {} cores available; capped at {} "
        "(force larger counts explicitly)",
        requested, cores, cores);
  }
  return cores;
}

}  // namespace cleave
