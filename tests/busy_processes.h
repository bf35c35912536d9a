// A test helper: processes that keep the host's cores busy while a test runs.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <vector>

namespace cleave {

/// `count` processes that keep a core busy each (`yes`, unpinned), stopped when it goes.
class BusyProcesses {
 public:
  explicit BusyProcesses(long count) {
    for (long i = 0; i < count; ++i) {
      pid_t pid = fork();
      if (pid == 0) {
        freopen("/dev/null", "w", stdout);
        execlp("yes", "yes", static_cast<char*>(nullptr));
        _exit(127);
      }
      if (pid > 0) pids_.push_back(pid);
    }
  }
  ~BusyProcesses() {
    for (pid_t pid : pids_) kill(pid, SIGKILL);
    for (pid_t pid : pids_) waitpid(pid, nullptr, 0);
  }

 private:
  std::vector<pid_t> pids_;
};

}  // namespace cleave
