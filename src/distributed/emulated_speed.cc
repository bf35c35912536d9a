// CLEAVE_EMULATED_SPEEDS: reading it, and the pauses that make a rank a slower device.
#include "distributed/emulated_speed.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>
#include <vector>

#include "support/error.h"

namespace cleave {

namespace {

// A sleep shorter than this overshoots by about as much as it lasts (a timer slack of 50 µs
// and a wake-up), so shorter pauses wait for the next task's.
constexpr double kShortestSleep = 100e-6;
// A hundredth of a core is already far slower than any device a plan would use.
constexpr double kSlowest = 0.01;
// What an overshoot may be counted off later pauses: one long wake-up, not a whole run.
constexpr double kMostCredit = 1e-3;

double sleep_for(double seconds) {
  const auto start = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double speed_number(const std::string& text, const std::string& entry, int index) {
  char* end = nullptr;
  const double value = entry.empty() ? 0.0 : std::strtod(entry.c_str(), &end);
  if (entry.empty() || end != entry.c_str() + entry.size() || !(value >= kSlowest) || value > 1.0) {
    throw Error(fmt::format(
        "CLEAVE_EMULATED_SPEEDS '{}': rank {}'s speed: expected a number from {} to 1, got '{}'",
        text, index, kSlowest, entry));
  }
  return value;
}

}  // namespace

EmulatedSpeed::EmulatedSpeed(double speed, Sleep sleep) : speed_(speed), sleep_(std::move(sleep)) {
  if (!(speed >= kSlowest) || speed > 1.0)
    throw Error(fmt::format("emulated speed {}: expected from {} to 1", speed, kSlowest));
}

EmulatedSpeed EmulatedSpeed::from_environment(int rank, int ranks) {
  const char* variable = std::getenv("CLEAVE_EMULATED_SPEEDS");
  if (!variable || !*variable) return EmulatedSpeed();
  const std::string text(variable);
  std::vector<std::string> entries;
  std::size_t begin = 0;
  while (true) {
    const std::size_t comma = text.find(',', begin);
    entries.push_back(text.substr(begin, comma == std::string::npos ? comma : comma - begin));
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  if (static_cast<int>(entries.size()) != ranks) {
    throw Error(fmt::format(
        "CLEAVE_EMULATED_SPEEDS '{}': {} speed(s) for {} rank(s): expected one per rank", text,
        entries.size(), ranks));
  }
  std::vector<double> speeds;
  for (std::size_t i = 0; i < entries.size(); ++i)
    speeds.push_back(speed_number(text, entries[i], static_cast<int>(i)));
  const double speed = speeds.at(static_cast<std::size_t>(rank));
  if (speed == 1.0) return EmulatedSpeed();
  return EmulatedSpeed(speed, sleep_for);
}

void EmulatedSpeed::after_compute(double seconds) {
  if (speed_ == 1.0) return;
  owed_ += std::max(0.0, seconds) * (1.0 / speed_ - 1.0);
  if (owed_ >= kShortestSleep) pay();
}

void EmulatedSpeed::settle() {
  if (owed_ > 0.0) pay();
}

void EmulatedSpeed::pay() {
  const double slept = sleep_(owed_);
  paused_ += slept;
  owed_ = std::max(owed_ - slept, -kMostCredit);
}

}  // namespace cleave
