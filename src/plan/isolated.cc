// fork, a pipe for the result, a deadline, and what the child's end says about how it died.
#include "plan/isolated.h"

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

std::string describe_end(int status) {
  if (WIFSIGNALED(status)) {
    const int signal_number = WTERMSIG(status);
    return fmt::format("the solver process died of signal {} ({})", signal_number,
                       ::strsignal(signal_number));
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
    return fmt::format("the solver process exited with status {}", WEXITSTATUS(status));
  }
  return "the solver process ended without a result";
}

}  // namespace

std::optional<std::vector<char>> run_isolated(const std::function<std::vector<char>()>& work,
                                              double timeout_seconds, std::string* failure) {
  int fds[2];
  if (::pipe(fds) != 0) return work();
  // Whatever the parent buffered would be written twice: once by each process.
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t child = ::fork();
  if (child < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return work();
  }
  if (child == 0) {
    ::close(fds[0]);
    // Nothing may leave this block: an exception would carry the child on through the
    // parent's code.
    int code = 0;
    try {
      const std::vector<char> bytes = work();
      code = write_all(fds[1], bytes.data(), bytes.size()) ? 0 : 3;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s\n", e.what());
      code = 4;
    } catch (...) {
      code = 4;
    }
    std::fflush(stderr);
    ::_exit(code);
  }
  ::close(fds[1]);
  std::vector<char> bytes;
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration<double>(std::max(0.0, timeout_seconds));
  bool timed_out = false;
  while (true) {
    const double left =
        std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd watch{fds[0], POLLIN, 0};
    const int ready = ::poll(&watch, 1, static_cast<int>(std::min(left, 1.0) * 1000) + 1);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    char buffer[65536];
    const ssize_t got = ::read(fds[0], buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;  // the child closed its end
    bytes.insert(bytes.end(), buffer, buffer + got);
  }
  ::close(fds[0]);
  if (timed_out) ::kill(child, SIGKILL);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    if (failure)
      *failure = fmt::format("the solver ran past {:.1f} s and was stopped", timeout_seconds);
    return std::nullopt;
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || bytes.empty()) {
    if (failure) *failure = describe_end(status);
    return std::nullopt;
  }
  return bytes;
}

}  // namespace cleave
