// Runs work in forked child processes, so that a library that aborts or hangs cannot take
// cleave down with it (CBC 2.10 as Debian ships it keeps its assertions; ONNX's shape
// inference is not hardened against hostile models; a conformance case may crash a kernel).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace cleave {

/// How one child process ended.
struct ChildOutcome {
  /// What the work returned, when the child exited normally with a non-empty result.
  std::optional<std::vector<char>> bytes;
  std::vector<char> received;  ///< Without bytes: whatever the child sent before its end.
  bool timed_out = false;      ///< Still running at the deadline, and killed.
  int signal = 0;              ///< The signal that ended it, else 0.
  int exit_status = 0;         ///< Its exit status when it exited.
  /// Without bytes: why, in words ("the solver process died of signal 6 (Aborted)").
  std::string failure;
};

/// Runs every work in a child process of its own, all at once, and says how each ended; the
/// children still running after `timeout_seconds` are killed. A work that throws ends its
/// child with status 4 (the message on stderr). `process` names the work in failures ("the
/// solver process died ..."). Where the process cannot fork, the work runs here.
std::vector<ChildOutcome> run_in_children(
    const std::vector<std::function<std::vector<char>()>>& works, double timeout_seconds,
    const std::string& process = "solver");

/// Runs `work` in a child process and returns the bytes it produced. nullopt when the child
/// died (a failed assertion, a signal), produced nothing, or ran past `timeout_seconds` (it is
/// then killed); `failure` then says which. When the process cannot fork, `work` runs here.
std::optional<std::vector<char>> run_isolated(const std::function<std::vector<char>()>& work,
                                              double timeout_seconds, std::string* failure);

/// Runs every work in a child process of its own, all at once, and returns what each produced
/// (nullopt and its entry in `failures` as for run_isolated). Children still running after
/// `timeout_seconds` are killed.
std::vector<std::optional<std::vector<char>>> run_isolated_all(
    const std::vector<std::function<std::vector<char>()>>& works, double timeout_seconds,
    std::vector<std::string>* failures);

}  // namespace cleave
