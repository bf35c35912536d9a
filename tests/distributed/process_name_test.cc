// After the wait-policy re-exec (runtime/wait_policy.h) cleave keeps its name: ps, top and
// pgrep showed it, and every MPI rank, as "exe".
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "../busy_processes.h"
#include "../cli/command_fixture.h"
#include "ir/text.h"
#include "onnx/onnx_export.h"
#include "test_paths.h"

namespace cleave {
namespace {

class ProcessName : public CommandFixture {};

TEST_F(ProcessName, CleaveKeepsItsNameWhenItExecutesItselfAgain) {
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  if (cores > 8)
    GTEST_SKIP() << "fills every core with a busy process: wants at most 8, has " << cores;
  export_onnx(parse_graph(R"(graph g [ai.onnx=17] (%x: f32[1,4]) {
  %y = Relu(%x)
  return %y
}
)"),
              path("m.onnx"));
  const std::string model = path("m.onnx");
  // cleave executes itself again (with GOMP_SPINCOUNT set) when other processes hold every core.
  BusyProcesses busy(cores + 1);
  const pid_t pid = fork();
  if (pid == 0) {
    unsetenv("GOMP_SPINCOUNT");
    unsetenv("OMP_WAIT_POLICY");
    freopen("/dev/null", "w", stdout);
    freopen("/dev/null", "w", stderr);
    execl(CLEAVE_BINARY, CLEAVE_BINARY, "run", model.c_str(), "--repeat", "1000000",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  ASSERT_GT(pid, 0);
  const std::string proc = "/proc/" + std::to_string(pid);
  // The environment block of the new image holds GOMP_SPINCOUNT; the first image's does not.
  bool executed_again = false;
  std::string name;
  for (int i = 0; i < 1000 && !executed_again; ++i) {
    executed_again = read_text(proc + "/environ").find("GOMP_SPINCOUNT=") != std::string::npos;
    if (executed_again) {
      name = read_text(proc + "/comm");
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  ASSERT_TRUE(executed_again) << "cleave did not execute itself again on a busy host";
  EXPECT_EQ(name, "cleave\n");
}

}  // namespace
}  // namespace cleave
