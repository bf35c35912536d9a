// A slower device emulated on a rank: after each task, a pause as long as the slower device's extra
// time.
#pragma once

#include <functional>
#include <string>

namespace cleave {

/// Read from CLEAVE_EMULATED_SPEEDS="1,0.5,...", one speed from 0.01 to 1 per rank (the emulated
/// cluster's slower ranks; bench/distributed/emulated_cluster.sh --speed). A rank at speed s
/// pauses (1/s - 1) times each task's compute time before handing its outputs off, so every
/// task takes what it would on a device s times as fast, and the core is free for other ranks
/// meanwhile. Unlike a CPU quota, which stalls a rank in whole periods whatever it runs, the
/// slowdown is uniform per task. Pauses shorter than the sleep's own resolution are carried
/// over to the next task; what a sleep overshoots is counted off the next pause.
class EmulatedSpeed {
 public:
  /// Sleeps about `seconds`; returns the seconds it really slept.
  using Sleep = std::function<double(double seconds)>;

  /// Full speed: no pauses.
  EmulatedSpeed() = default;
  EmulatedSpeed(double speed, Sleep sleep);

  /// This rank's entry of CLEAVE_EMULATED_SPEEDS; full speed when it is unset or empty. A
  /// malformed variable, a speed outside [0.01, 1] or a count other than `ranks` is an Error.
  static EmulatedSpeed from_environment(int rank, int ranks);

  double speed() const { return speed_; }
  /// Seconds paused so far.
  double paused_seconds() const { return paused_; }

  /// After a task whose kernel took `seconds`: owes its extra time, and pays what is owed once
  /// it is long enough to sleep.
  void after_compute(double seconds);
  /// At the end of a run: pays whatever is still owed, so the run ends when it would.
  void settle();

 private:
  void pay();

  double speed_ = 1.0;
  double owed_ = 0.0;
  double paused_ = 0.0;
  Sleep sleep_;
};

}  // namespace cleave
