// The profile's level check: the sequential plan timed now, the table scaled to it.
#include "cost/profile_level.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cost/cost_table.h"
#include "ir/graph.h"
#include "runtime/executor.h"
#include "runtime/random_inputs.h"
#include "runtime/timed_rounds.h"
#include "support/error.h"
#include "support/timing.h"

namespace cleave {

namespace {

bool usable_time(double seconds) {
  return std::isfinite(seconds) && seconds > 0;
}

}  // namespace

LevelCheck default_level_check() {
  const char* text = std::getenv("CLEAVE_PROFILE_LEVEL");
  if (!text) return LevelCheck::kReused;
  const std::string value = text;
  if (value == "check") return LevelCheck::kReused;
  if (value == "always") return LevelCheck::kAlways;
  if (value == "off") return LevelCheck::kOff;
  throw Error(
      fmt::format("CLEAVE_PROFILE_LEVEL: expected check, always or off, got \"{}\"", value));
}

void scale_cost_table(CostTable& table, double factor) {
  for (NodeCost& node : table.nodes) {
    for (double& seconds : node.seconds) seconds *= factor;
    if (node.busy_seconds) *node.busy_seconds *= factor;
  }
  for (double& seconds : table.run_seconds) seconds *= factor;
  table.busy_run_seconds *= factor;
}

ProfileLevel check_profile_level(CostTable& table, const LevelCheckOptions& options,
                                 const std::function<void(const std::string&)>& warn) {
  ProfileLevel level;
  level.threads = static_cast<int>(table.run_seconds.size());
  if (table.run_seconds.empty() || !usable_time(table.run_seconds.back())) {
    level.reason = "the table has no whole-run time to check against";
  } else {
    level.predicted_seconds = table.run_seconds.back();
    // A round costs its untimed runs (TimedRounds::untimed_runs_per_round, two) and the timed
    // one: three times the timed run is what it spent.
    double spent = 0;
    while (static_cast<int>(level.rounds_seconds.size()) < options.max_rounds &&
           (static_cast<int>(level.rounds_seconds.size()) < options.min_rounds ||
            spent < options.max_seconds)) {
      const double seconds = options.time_round();
      level.rounds_seconds.push_back(seconds);
      // A bad round stops the check: more of them would not make the median trustworthy.
      if (!usable_time(seconds)) break;
      spent += 3 * seconds;
    }
    bool all_usable = !level.rounds_seconds.empty();
    for (double seconds : level.rounds_seconds) all_usable = all_usable && usable_time(seconds);
    if (!all_usable) {
      level.reason = fmt::format("a timed run of the sequential plan took {} s: not a time",
                                 level.rounds_seconds.empty() ? 0.0 : level.rounds_seconds.back());
    } else {
      level.measured_seconds = median_of(level.rounds_seconds);
      const double factor = level.measured_seconds / level.predicted_seconds;
      if (factor > options.max_factor || factor < 1 / options.max_factor) {
        level.reason = fmt::format(
            "measured {:.2f}x the profile's prediction, past {:.2f}x either way: the host "
            "differs too much from when the profile was made (CLEAVE_PROFILE_REUSE=never "
            "profiles it again)",
            factor, options.max_factor);
      } else {
        level.factor = factor;
        level.applied = true;
      }
    }
  }
  if (level.applied) {
    scale_cost_table(table, level.factor);
  } else if (warn) {
    warn(fmt::format("warning: profile level not applied, table left as profiled: {}",
                     level.reason));
  }
  table.level = level;
  return level;
}

ProfileLevel check_profile_level(const Graph& graph, const ExecutorOptions& executor,
                                 CostTable& table, LevelCheckOptions options,
                                 const std::function<void(const std::string&)>& progress) {
  std::unique_ptr<Executor> sequential;
  SampleInputs inputs;
  if (!options.time_round) {
    sequential = std::make_unique<Executor>(graph, executor);
    inputs = random_inputs(graph, 0);
    bool first = true;
    // As `bench` and auto's timed check time every variant; the first round's untimed run
    // before it prepares the kernels.
    options.time_round = [&] {
      const TimedRounds round{first ? 1 : 0, 1, 1};
      first = false;
      const std::vector<std::vector<double>> ms =
          time_in_rounds({sequential.get()}, round, [&](std::size_t) {
            const auto start = std::chrono::steady_clock::now();
            sequential->run(inputs);
            return seconds_since(start) * 1e3;
          });
      return ms.front().front() * 1e-3;
    };
  }
  const auto warn = [&](const std::string& line) {
    if (progress) {
      progress("profile: " + line);
    } else {
      fmt::print(stderr, "cleave: {}\n", line);
    }
  };
  const ProfileLevel level = check_profile_level(table, options, warn);
  if (level.applied && progress) progress("profile: level: " + level_text(level));
  return level;
}

std::string level_text(const ProfileLevel& level) {
  if (!level.applied) return fmt::format("not applied ({})", level.reason);
  return fmt::format(
      "sequential plan at {} thread(s) measured {:.3f} ms (median of {} rounds) against the "
      "profile's {:.3f} ms: every time x{:.3f}",
      level.threads, level.measured_seconds * 1e3, level.rounds_seconds.size(),
      level.predicted_seconds * 1e3, level.factor);
}

nlohmann::json level_to_json(const ProfileLevel& level) {
  nlohmann::json json = {{"threads", level.threads},
                         {"predicted_ms", level.predicted_seconds * 1e3},
                         {"measured_ms", level.measured_seconds * 1e3},
                         {"rounds", level.rounds_seconds.size()},
                         {"factor", level.factor},
                         {"applied", level.applied}};
  // JSON has no infinity or NaN: a bad round is written as null.
  nlohmann::json rounds = nlohmann::json::array();
  for (double seconds : level.rounds_seconds)
    rounds.push_back(std::isfinite(seconds) ? nlohmann::json(seconds * 1e3) : nlohmann::json());
  json["rounds_ms"] = rounds;
  if (!level.reason.empty()) json["reason"] = level.reason;
  return json;
}

}  // namespace cleave
