// Seeing cores held by other work: other processes' runnable threads, and a team's loop.
#include "cost/core_contention.h"

#include <gtest/gtest.h>

#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <thread>
#include <vector>

#include "cost/cost_table.h"
#include "ir/graph.h"

namespace cleave {
namespace {

TEST(ParallelSlowdown, OneThreadIsNeverSlowedDown) {
  EXPECT_EQ(parallel_slowdown(1), 1.0);
}

TEST(CoresFree, OneThreadAlwaysHasItsCore) {
  EXPECT_TRUE(cores_free(1));
}

// Spinning child processes, one pinned to each core, stand in for other work on the host.
class CoreHolders {
 public:
  CoreHolders() {
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    for (unsigned core = 0; core < cores; ++core) {
      const pid_t child = fork();
      if (child == 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(core, &set);
        sched_setaffinity(0, sizeof(set), &set);
        for (;;) {
        }
      }
      if (child > 0) children_.push_back(child);
    }
    // Let each child reach its core.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ~CoreHolders() {
    for (pid_t child : children_) kill(child, SIGKILL);
    for (pid_t child : children_) waitpid(child, nullptr, 0);
  }
  int count() const { return static_cast<int>(children_.size()); }

 private:
  std::vector<pid_t> children_;
};

TEST(OtherRunnableThreads, ThreadsThatHoldTheCoresAreCounted) {
  CoreHolders holders;
  EXPECT_GE(other_runnable_threads(), holders.count());
}

TEST(CoresFree, ATeamIsRefusedCoresThatOtherThreadsHold) {
  CoreHolders holders;
  EXPECT_FALSE(cores_free(2));
}

class CoreWaitVariable : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* value = std::getenv("CLEAVE_CORE_WAIT_SECONDS");
    if (value) saved_ = value;
    had_value_ = value != nullptr;
  }
  void TearDown() override {
    if (had_value_) {
      setenv("CLEAVE_CORE_WAIT_SECONDS", saved_.c_str(), 1);
    } else {
      unsetenv("CLEAVE_CORE_WAIT_SECONDS");
    }
  }
  std::string saved_;
  bool had_value_ = false;
};

TEST_F(CoreWaitVariable, UnsetMeansTenSeconds) {
  unsetenv("CLEAVE_CORE_WAIT_SECONDS");
  EXPECT_EQ(default_core_wait_seconds(), 10.0);
}

TEST_F(CoreWaitVariable, ANumberOfSecondsIsRead) {
  setenv("CLEAVE_CORE_WAIT_SECONDS", "2.5", 1);
  EXPECT_EQ(default_core_wait_seconds(), 2.5);
  EXPECT_EQ(ProfileOptions().quiet_wait_seconds, 2.5);
}

TEST_F(CoreWaitVariable, AnythingElseIsRefusedByName) {
  for (const char* bad : {"", "ten", "5s", "-1", "nan", "inf"}) {
    setenv("CLEAVE_CORE_WAIT_SECONDS", bad, 1);
    try {
      default_core_wait_seconds();
      ADD_FAILURE() << "accepted \"" << bad << "\"";
    } catch (const Error& error) {
      EXPECT_NE(std::string(error.what()).find("CLEAVE_CORE_WAIT_SECONDS"), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace cleave
