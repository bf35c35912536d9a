// fork, a pipe for the result, a deadline, and what the child's end says about how it died.
#include "support/isolated.h"

#include <fcntl.h>
#include <fmt/core.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <exception>

namespace cleave {
namespace {

bool write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t written = ::write(fd, data, size);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) return false;
    data += written;
    size -= static_cast<std::size_t>(written);
  }
  return true;
}

std::string describe_end(int status, const std::string& process) {
  if (WIFSIGNALED(status)) {
    const int signal_number = WTERMSIG(status);
    return fmt::format("the {} process died of signal {} ({})", process, signal_number,
                       ::strsignal(signal_number));
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
    return fmt::format("the {} process exited with status {}", process, WEXITSTATUS(status));
  }
  return fmt::format("the {} process ended without a result", process);
}

// The child's side: run the work, send its bytes, and end without returning.
[[noreturn]] void run_child(const std::function<std::vector<char>()>& work, int fd) {
  // Die quietly on a crash: the parent notices, and no crash handler of the parent's
  // (sanitizers, fuzzers) should treat the child's death as its own.
  for (int signal_number : {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL}) {
    ::signal(signal_number, SIG_DFL);
  }
  // Nothing may leave this function: an exception would carry the child on through the
  // parent's code.
  int code = 0;
  try {
    const std::vector<char> bytes = work();
    code = write_all(fd, bytes.data(), bytes.size()) ? 0 : 3;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    code = 4;
  } catch (...) {
    code = 4;
  }
  std::fflush(stderr);
  ::_exit(code);
}

}  // namespace

std::vector<ChildOutcome> run_in_children(
    const std::vector<std::function<std::vector<char>()>>& works, double timeout_seconds,
    const std::string& process) {
  const std::size_t count = works.size();
  std::vector<ChildOutcome> outcomes(count);
  struct Child {
    pid_t pid = -1;
    int fd = -1;  // read end, -1 once closed
  };
  std::vector<Child> children(count);
  // Whatever the parent buffered would be written twice: once by each process.
  std::fflush(stdout);
  std::fflush(stderr);
  for (std::size_t i = 0; i < count; ++i) {
    int fds[2];
    // Close-on-exec, so that a program another thread starts meanwhile does not hold the
    // write end open (the read would then never see the end).
    if (::pipe2(fds, O_CLOEXEC) != 0) {
      outcomes[i].bytes = works[i]();
      continue;
    }
    const pid_t pid = ::fork();
    if (pid < 0) {
      ::close(fds[0]);
      ::close(fds[1]);
      outcomes[i].bytes = works[i]();
      continue;
    }
    if (pid == 0) {
      ::close(fds[0]);
      // The read ends of the siblings started before this one are not this child's business.
      for (std::size_t j = 0; j < i; ++j) {
        if (children[j].fd >= 0) ::close(children[j].fd);
      }
      run_child(works[i], fds[1]);
    }
    ::close(fds[1]);
    children[i].pid = pid;
    children[i].fd = fds[0];
  }
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration<double>(std::max(0.0, timeout_seconds));
  bool timed_out = false;
  while (true) {
    std::vector<pollfd> watch;
    std::vector<std::size_t> owner;
    for (std::size_t i = 0; i < count; ++i) {
      if (children[i].fd < 0) continue;
      watch.push_back({children[i].fd, POLLIN, 0});
      owner.push_back(i);
    }
    if (watch.empty()) break;
    const double left =
        std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    const int ready =
        ::poll(watch.data(), watch.size(), static_cast<int>(std::min(left, 1.0) * 1000) + 1);
    if (ready <= 0) continue;  // a signal or the once-a-second wake-up
    for (std::size_t k = 0; k < watch.size(); ++k) {
      if (watch[k].revents == 0) continue;
      Child& child = children[owner[k]];
      std::vector<char>& received = outcomes[owner[k]].received;
      char buffer[65536];
      const ssize_t got = ::read(child.fd, buffer, sizeof buffer);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {  // the child closed its end
        ::close(child.fd);
        child.fd = -1;
        continue;
      }
      received.insert(received.end(), buffer, buffer + got);
    }
  }
  for (std::size_t i = 0; i < count; ++i) {
    Child& child = children[i];
    ChildOutcome& outcome = outcomes[i];
    if (child.pid < 0) continue;
    const bool late = child.fd >= 0;
    if (late) {
      ::close(child.fd);
      ::kill(child.pid, SIGKILL);
    }
    int status = 0;
    while (::waitpid(child.pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFSIGNALED(status)) outcome.signal = WTERMSIG(status);
    if (WIFEXITED(status)) outcome.exit_status = WEXITSTATUS(status);
    if (late && timed_out) {
      outcome.timed_out = true;
      outcome.failure =
          fmt::format("the {} ran past {:.1f} s and was stopped", process, timeout_seconds);
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || outcome.received.empty()) {
      outcome.failure = describe_end(status, process);
    } else {
      outcome.bytes = std::move(outcome.received);
      outcome.received.clear();
    }
  }
  return outcomes;
}

std::vector<std::optional<std::vector<char>>> run_isolated_all(
    const std::vector<std::function<std::vector<char>()>>& works, double timeout_seconds,
    std::vector<std::string>* failures) {
  std::vector<ChildOutcome> outcomes = run_in_children(works, timeout_seconds);
  std::vector<std::optional<std::vector<char>>> results;
  if (failures) failures->clear();
  for (ChildOutcome& outcome : outcomes) {
    results.push_back(std::move(outcome.bytes));
    if (failures) failures->push_back(std::move(outcome.failure));
  }
  return results;
}

std::optional<std::vector<char>> run_isolated(const std::function<std::vector<char>()>& work,
                                              double timeout_seconds, std::string* failure) {
  std::vector<std::string> failures;
  std::vector<std::optional<std::vector<char>>> results =
      run_isolated_all({work}, timeout_seconds, &failures);
  if (failure) *failure = failures[0];
  return std::move(results[0]);
}

}  // namespace cleave
