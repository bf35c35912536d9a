// Bounds on numeric options and file fields, shared by the commands and the file readers.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cleave {

/// The most intra-op threads (per worker, or in total) any option or file may ask for: beyond
/// it OpenMP's pool setup fails or crawls (a plan asking for 100,000 crashed inside libgomp).
inline constexpr int64_t kMaxThreads = 1024;
/// The most workers one plan or option may ask for.
inline constexpr int64_t kMaxWorkers = 1024;
/// The longest time one task, plan entry or timeout may state, in seconds (about 31 years):
/// larger "times" are no measurement, and sums of them overflow to infinity, after which the
/// planners blame the wrong task.
inline constexpr double kMaxSeconds = 1e9;
/// The most bytes one task or edge may state (an exabyte), for the same reason.
inline constexpr double kMaxBytes = 1e18;
/// The most timed or warm-up rounds one option may ask for.
inline constexpr int64_t kMaxRounds = 1000000;
/// The most samples one run may stream or plan for: each holds its inputs and outputs in memory
/// for the whole run.
inline constexpr int64_t kMaxSamples = 4096;
/// The longest timeout any option accepts (one week): a rank that waits longer than this has
/// hung, and larger values (1e300) overflow the deadline arithmetic.
inline constexpr double kMaxTimeoutSeconds = 7 * 24 * 3600;
/// The shortest timeout any option accepts: below it a wait ends before a message can arrive.
inline constexpr double kMinTimeoutSeconds = 0.001;
/// The largest ratio between the largest and the smallest of a list of relative shares or
/// speeds: beyond it the small ones get no work at all and the list is a mistake.
inline constexpr double kMaxShareRatio = 1e6;
/// The largest relative share or speed: sums over 1024 machines stay finite ([1e308, 1e308]
/// added up to infinity and gave every machine nothing).
inline constexpr double kMaxShare = 1e15;
/// The deepest nesting of streams (pipelines, split-joins, includes) a stream program or
/// StreamIt text may have: the readers and every walk over the tree recurse once per level,
/// and 7,000 levels overflowed the stack.
inline constexpr int64_t kMaxStreamDepth = 256;
/// The most items one firing may pop, peek or push, and the largest splitter or joiner weight:
/// a window is held in memory, so a peek of 2^40 items can never fire.
inline constexpr int64_t kMaxStreamRate = int64_t{1} << 20;
/// The most firings one steady-state iteration of a stream program may take: beyond it a run
/// holds more items in flight than memory allows and never finishes its first iteration.
inline constexpr int64_t kMaxIterationFirings = 1000000;
/// The most input items `stream run --items` may feed: each is a tensor held in memory for
/// the whole run (hundreds of bytes of handle alone), and 1e12 ran out of memory.
inline constexpr int64_t kMaxStreamItems = 1000000;
/// The largest `stream run --capacity-factor` (channel capacity per schedule buffer size).
inline constexpr int64_t kMaxCapacityFactor = 1024;
/// The most copies one `--fission` may split a filter into (each a branch of a split-join).
inline constexpr int64_t kMaxFissionCopies = 1024;
/// The largest ratio between the fastest and the slowest device of one machine: beyond it a
/// plan's times overflow or underflow (a speed of 1e-300 made plans that `run` refused).
inline constexpr double kMaxSpeedRatio = 1e6;

/// Cores this process may run on (its affinity mask), at least 1.
int cores_present();
/// Whether core number `core` exists on this host. Not whether this process's affinity mask
/// holds it: a rank that mpirun bound to one core still reads plans naming the others' cores.
bool core_available(int64_t core);

/// Each returns "" when `value` is acceptable and otherwise the expectation and the value
/// ("expected an integer from 1 to 1024, got 0"), for CLI validators and file readers alike.
std::string integer_problem(int64_t value, int64_t minimum, int64_t maximum);
/// A finite number in [minimum, maximum]; `open_minimum` excludes the minimum itself.
std::string number_problem(double value, double minimum, double maximum, bool open_minimum = false);
/// Seconds that must be finite and > 0 (timeouts, time limits).
std::string positive_seconds_problem(double value);
/// Seconds that must be finite and >= 0 (measured or predicted times).
std::string non_negative_seconds_problem(double value);

/// A timeout: finite and in [kMinTimeoutSeconds, kMaxTimeoutSeconds].
std::string timeout_seconds_problem(double value);
/// Relative shares or speeds: at least one, each in (0, kMaxShare], the largest at most
/// kMaxShareRatio times the smallest.
std::string shares_problem(const std::vector<double>& values);

/// Throw Error "<what>: <problem>" when the matching *_problem is not empty.
void require_integer(std::string_view what, int64_t value, int64_t minimum, int64_t maximum);
void require_number(std::string_view what, double value, double minimum, double maximum,
                    bool open_minimum = false);
void require_positive_seconds(std::string_view what, double value);
void require_non_negative_seconds(std::string_view what, double value);
void require_timeout_seconds(std::string_view what, double value);
void require_shares(std::string_view what, const std::vector<double>& values);
/// A thread count in [1, kMaxThreads].
void require_threads(std::string_view what, int64_t value);
/// A core number that exists on this host (see core_available).
void require_core(std::string_view what, int64_t core);

/// `requested` thread counts capped at the cores present unless `force`; `note` receives a
/// sentence saying so when it caps.
int cap_threads_at_cores(int requested, bool force, std::string* note = nullptr);

}  // namespace cleave
