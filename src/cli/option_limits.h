// CLI11 validators built on support/limits.h, so options and file fields share one set of bounds.
#pragma once

#include <CLI/CLI.hpp>

#include "support/limits.h"

#include <cstdint>
#include <limits>

namespace cleave {

/// An integer in [minimum, maximum] ("expected an integer from 1 to 1024, got 0").
CLI::Validator integer_in(int64_t minimum, int64_t maximum = std::numeric_limits<int64_t>::max());
/// A thread count in [1, kMaxThreads].
CLI::Validator thread_count();
/// Seconds: finite and > 0.
CLI::Validator positive_seconds();
/// A timeout in seconds: finite, in [kMinTimeoutSeconds, kMaxTimeoutSeconds].
CLI::Validator timeout_seconds();
/// A finite number in [minimum, maximum].
CLI::Validator finite_in(double minimum, double maximum);

/// A file or folder path that is not empty: `-o ''` is a slip (an unset variable), not a wish to
/// write nothing, and would otherwise be read as "not given".
CLI::Validator path_given();

}  // namespace cleave
