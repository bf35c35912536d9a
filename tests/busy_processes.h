// A test helper: processes that keep the host's cores busy while a test runs.
#pragma once

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <vector>

namespace cleave {

/// `count` processes that keep a core busy each (unpinned), stopped when it goes.
///
/// Each is a forked child spinning in user space: always runnable, whatever /dev/null is
/// (`yes > /dev/null` blocked in writeback, uncounted as runnable, when something had turned
/// /dev/null into a regular file), and killed with the test process if that dies first.
class BusyProcesses {
 public:
  explicit BusyProcesses(long count) {
    for (long i = 0; i < count; ++i) {
      pid_t pid = fork();
      if (pid == 0) {
        // Only async-signal-safe calls after fork in a threaded process.
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        volatile unsigned long spin = 0;
        for (;;) spin = spin + 1;
      }
      if (pid > 0) pids_.push_back(pid);
    }
  }
  ~BusyProcesses() {
    for (pid_t pid : pids_) kill(pid, SIGKILL);
    for (pid_t pid : pids_) waitpid(pid, nullptr, 0);
  }
  BusyProcesses(const BusyProcesses&) = delete;
  BusyProcesses& operator=(const BusyProcesses&) = delete;

 private:
  std::vector<pid_t> pids_;
};

}  // namespace cleave
