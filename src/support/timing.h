// Timing helpers every layer uses: seconds since a moment, the median of measured samples.
#pragma once

#include <chrono>
#include <vector>

namespace cleave {

/// Seconds of steady_clock time from `start` to now.
double seconds_since(std::chrono::steady_clock::time_point start);

/// CPU seconds all of this process's threads have used (CLOCK_PROCESS_CPUTIME_ID). Over a run on
/// one thread: the run's time less whatever other processes took from it.
double process_cpu_seconds();

/// The median (the mean of the middle two for an even count); 0 for no values.
double median_of(std::vector<double> values);

}  // namespace cleave
