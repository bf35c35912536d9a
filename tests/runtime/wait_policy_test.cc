// Tests of the cleave command's default OpenMP wait policy: it follows the host's load and
// never overrides the user's.
#include "runtime/wait_policy.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace cleave {
namespace {

std::vector<EnvironmentSetting> policy_for(const std::map<std::string, std::string>& environment,
                                           HostLoad load = {0, 2}) {
  return default_wait_policy(
      [&](const char* name) -> const char* {
        auto found = environment.find(name);
        return found == environment.end() ? nullptr : found->second.c_str();
      },
      load);
}

TEST(WaitPolicy, KeepsLibgompsSpinWhileEveryThreadCanHaveACore) {
  // Two cores, up to two other busy threads: a team's thread is preempted only briefly.
  for (int others : {0, 1, 2}) {
    std::vector<EnvironmentSetting> settings = policy_for({{"OMP_NUM_THREADS", "2"}}, {others, 2});
    ASSERT_EQ(settings.size(), 1u);
    EXPECT_EQ(settings[0].name, "GOMP_SPINCOUNT");
    EXPECT_EQ(settings[0].value, "300000") << others << " other runnable threads";
  }
}

TEST(WaitPolicy, SleepsAtOnceWhenOtherThreadsOutnumberTheCores) {
  for (int others : {3, 20}) {
    std::vector<EnvironmentSetting> settings = policy_for({}, {others, 2});
    ASSERT_EQ(settings.size(), 1u);
    EXPECT_EQ(settings[0].value, "0") << others << " other runnable threads";
  }
  EXPECT_EQ(policy_for({}, {16, 16})[0].value, "300000");
  EXPECT_EQ(policy_for({}, {17, 16})[0].value, "0");
}

// Under a CPU quota a spinning thread spends the time the computing ones need: sleep at once,
// even on an idle host.
TEST(WaitPolicy, SleepsAtOnceUnderACpuQuota) {
  const std::vector<EnvironmentSetting> quota = policy_for({}, {0, 1, /*quota_limited=*/true});
  ASSERT_EQ(quota.size(), 2u);
  EXPECT_EQ(quota[1].name, "GOMP_SPINCOUNT");
  EXPECT_EQ(quota[1].value, "0");
  EXPECT_EQ(policy_for({}, {0, 1, /*quota_limited=*/false})[0].value, "300000");
}

// libgomp sizes its teams to the affinity mask; under a quota, to the cores the quota gives.
TEST(WaitPolicy, SizesOpenMPTeamsToACpuQuota) {
  const std::vector<EnvironmentSetting> quota = policy_for({}, {0, 3, /*quota_limited=*/true});
  ASSERT_FALSE(quota.empty());
  EXPECT_EQ(quota[0].name, "OMP_NUM_THREADS");
  EXPECT_EQ(quota[0].value, "3");
  // The user's own count stays, and so does their wait policy.
  const std::vector<EnvironmentSetting> users =
      policy_for({{"OMP_NUM_THREADS", "8"}, {"OMP_WAIT_POLICY", "active"}}, {0, 3, true});
  EXPECT_TRUE(users.empty());
}

TEST(WaitPolicy, LeavesAUsersWaitPolicyAlone) {
  EXPECT_TRUE(policy_for({{"OMP_WAIT_POLICY", "active"}}, {20, 2}).empty());
  EXPECT_TRUE(policy_for({{"OMP_WAIT_POLICY", "passive"}}).empty());
}

TEST(WaitPolicy, LeavesAUsersSpinCountAlone) {
  EXPECT_TRUE(policy_for({{"GOMP_SPINCOUNT", "infinite"}}, {20, 2}).empty());
}

TEST(WaitPolicy, CountsAnEmptyValueAsTheUsersChoice) {
  EXPECT_TRUE(policy_for({{"GOMP_SPINCOUNT", ""}}).empty());
  EXPECT_TRUE(policy_for({{"OMP_WAIT_POLICY", ""}}).empty());
}

TEST(ClaimThreadsFor, OnlyWhenOtherThreadsHoldEveryCore) {
  EXPECT_EQ(claim_threads_for(2, {0, 2}), 0);
  EXPECT_EQ(claim_threads_for(2, {1, 2}), 0);  // A core is free: one thread of its own.
  EXPECT_EQ(claim_threads_for(2, {2, 2}), 2);
  EXPECT_EQ(claim_threads_for(4, {9, 2}), 2);  // No more than the cores.
  EXPECT_EQ(claim_threads_for(4, {16, 16}), 4);
  EXPECT_EQ(claim_threads_for(2, {9, 1}), 0);  // One core: nothing to share it with.
  EXPECT_EQ(claim_threads_for(1, {9, 2}), 0);  // One thread asked: nothing to share.
}

TEST(ThreadsFor, KeepsTheAskedCountOnAnIdleHost) {
  EXPECT_EQ(threads_for(2, {0, 2}), 2);
  EXPECT_EQ(threads_for(4, {0, 16}), 4);
  EXPECT_EQ(threads_for(1, {0, 2}), 1);
}

TEST(ThreadsFor, TakesOnlyTheCoresOtherProcessesLeaveFree) {
  EXPECT_EQ(threads_for(2, {1, 2}), 1);
  EXPECT_EQ(threads_for(8, {10, 16}), 6);
  EXPECT_EQ(threads_for(4, {12, 16}), 4);
}

TEST(ThreadsFor, NeverFewerThanOne) {
  EXPECT_EQ(threads_for(2, {2, 2}), 1);
  EXPECT_EQ(threads_for(2, {20, 2}), 1);
}

TEST(PlanThreadsFor, KeepsThePlansCountsWhileTheFreeCoresHoldThem) {
  const PlanThreads fit = plan_threads_for(2, 1, {0, 2});
  EXPECT_EQ(fit.threads, 2);
  EXPECT_EQ(fit.threads_per_worker, 1);
  EXPECT_EQ(plan_threads_for(2, 4, {6, 16}).threads_per_worker, 4);
}

TEST(PlanThreadsFor, TakesIntraOpThreadsAwayBeforeWorkers) {
  const PlanThreads one_worker = plan_threads_for(1, 2, {1, 2});
  EXPECT_EQ(one_worker.threads, 1);
  EXPECT_EQ(one_worker.threads_per_worker, 1);
  const PlanThreads two_workers = plan_threads_for(2, 4, {9, 16});
  EXPECT_EQ(two_workers.threads, 2);
  EXPECT_EQ(two_workers.threads_per_worker, 3);
}

TEST(PlanThreadsFor, FoldsWorkersOntoTheFreeCoresWithOneThreadEach) {
  const PlanThreads fit = plan_threads_for(4, 2, {13, 16});
  EXPECT_EQ(fit.threads, 3);
  EXPECT_EQ(fit.threads_per_worker, 1);
  const PlanThreads none_free = plan_threads_for(2, 1, {5, 2});
  EXPECT_EQ(none_free.threads, 1);
  EXPECT_EQ(none_free.threads_per_worker, 1);
}

TEST(RankThreadsFor, KeepsTheAskedCountWhileTheRanksFitTheFreeCores) {
  EXPECT_EQ(rank_threads_for(2, 1, {0, 2}), 2);
  EXPECT_EQ(rank_threads_for(2, 2, {0, 4}), 2);
}

TEST(RankThreadsFor, TheHostsOtherRanksAreNotOtherProcesses) {
  // One rank still loading when the other samples: an idle 4-core host for 2 ranks of 2.
  EXPECT_EQ(rank_threads_for(2, 2, {1, 4}), 2);
}

TEST(RankThreadsFor, RanksShareTheCoresOtherProcessesLeaveFree) {
  EXPECT_EQ(rank_threads_for(2, 1, {1, 2}), 1);
  // 3 runnable on 8 cores: the other rank and 2 other processes; 6 free, 3 for each rank.
  EXPECT_EQ(rank_threads_for(4, 2, {3, 8}), 3);
  // More ranks than cores: one thread each.
  EXPECT_EQ(rank_threads_for(2, 3, {2, 2}), 1);
}

TEST(RankThreadsFor, NeverFewerThanOne) {
  EXPECT_EQ(rank_threads_for(1, 2, {8, 2}), 1);
  EXPECT_EQ(rank_threads_for(0, 0, {0, 1}), 1);
}

TEST(WaitPolicy, SamplesThisHostsCoresAndLoad) {
  HostLoad load = sample_host_load();
  EXPECT_GE(load.cores, 1);
  EXPECT_GE(load.other_runnable, 0);
}

TEST(LastingHostLoad, AnIdleFirstSampleIsTakenWithoutWaiting) {
  int waits = 0;
  HostLoad load = lasting_host_load([] { return HostLoad{0, 2}; }, [&] { ++waits; });
  EXPECT_EQ(load.other_runnable, 0);
  EXPECT_EQ(waits, 0);
}

TEST(LastingHostLoad, AThreadGoneBeforeTheSecondSampleDoesNotCount) {
  std::vector<HostLoad> samples = {{1, 2}, {0, 2}};
  std::size_t next = 0;
  int waits = 0;
  HostLoad load = lasting_host_load([&] { return samples.at(next++); }, [&] { ++waits; });
  EXPECT_EQ(load.other_runnable, 0);
  EXPECT_EQ(waits, 1);
}

TEST(LastingHostLoad, LoadSeenTwiceCountsAtItsLower) {
  std::vector<HostLoad> samples = {{3, 2}, {2, 2}};
  std::size_t next = 0;
  HostLoad load = lasting_host_load([&] { return samples.at(next++); }, [] {});
  EXPECT_EQ(load.other_runnable, 2);
  EXPECT_EQ(load.cores, 2);
}

}  // namespace
}  // namespace cleave
