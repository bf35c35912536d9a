// How a rank waiting for a message backs off between its polls, and how often it wakes.
#pragma once

#include <algorithm>
#include <cmath>

namespace cleave {

/// A sleeping wait's pause grows by this much after each poll that finds nothing...
inline constexpr double kWaitPauseStepSeconds = 10e-6;
/// ...up to this: a rank waiting in a pipeline leaves the core to the ranks that compute, and
/// still notices a message within a fifth of a millisecond.
inline constexpr double kWaitPauseMostSeconds = 200e-6;

/// The pause after the `sleeps`-th poll that found nothing (1, 2, ...).
inline double wait_pause_seconds(int sleeps) {
  return std::min(kWaitPauseMostSeconds, kWaitPauseStepSeconds * sleeps);
}

/// Polls of a wait that sleeps at once and lasts `seconds`: the first, and one after each pause
/// until the pauses cover the wait (each poll after a pause is a wake-up). The pauses' nominal
/// lengths: a sleep lasts longer by the timer's slack, which a calibration of the CPU per poll
/// takes in (Machine::wake_seconds).
inline double sleeping_wait_polls(double seconds) {
  if (!(seconds > 0)) return 1;
  constexpr double ramp_sleeps = kWaitPauseMostSeconds / kWaitPauseStepSeconds;
  constexpr double ramp_seconds = kWaitPauseStepSeconds * ramp_sleeps * (ramp_sleeps + 1) / 2;
  if (seconds <= ramp_seconds) {
    // The least k with step * k (k + 1) / 2 >= seconds.
    const double k = std::ceil((std::sqrt(1 + 8 * seconds / kWaitPauseStepSeconds) - 1) / 2 - 1e-9);
    return 1 + k;
  }
  return 1 + ramp_sleeps + std::ceil((seconds - ramp_seconds) / kWaitPauseMostSeconds - 1e-9);
}

}  // namespace cleave
