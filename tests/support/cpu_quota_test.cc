// The cgroup CPU quota reader on made-up cgroup trees (v1 and v2), and the budget it gives.
#include "support/cpu_quota.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace cleave {
namespace {

namespace fs = std::filesystem;

class CpuQuota : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("cleave_cpu_quota_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  void write(const fs::path& relative, const std::string& text) {
    fs::create_directories((root_ / relative).parent_path());
    std::ofstream(root_ / relative) << text;
  }
  std::optional<double> quota(std::string* source = nullptr) {
    return cgroup_cpu_quota(root_ / "proc_self_cgroup", root_ / "sys", source);
  }

  fs::path root_;
};

TEST_F(CpuQuota, V1QuotaOverPeriodInCores) {
  write("proc_self_cgroup", "12:memory:/job\n4:cpu,cpuacct:/job\n");
  write("sys/cpu/job/cpu.cfs_quota_us", "150000\n");
  write("sys/cpu/job/cpu.cfs_period_us", "100000\n");
  std::string source;
  ASSERT_EQ(quota(&source), 1.5);
  EXPECT_EQ(source, (root_ / "sys/cpu/job/cpu.cfs_quota_us").string());
}

TEST_F(CpuQuota, V1MinusOneIsNoQuota) {
  write("proc_self_cgroup", "4:cpu,cpuacct:/job\n");
  write("sys/cpu/job/cpu.cfs_quota_us", "-1\n");
  write("sys/cpu/job/cpu.cfs_period_us", "100000\n");
  EXPECT_FALSE(quota().has_value());
}

// The tightest limit on the way up to the root applies: a parent's quota bounds its children.
TEST_F(CpuQuota, AnAncestorsTighterQuotaWins) {
  write("proc_self_cgroup", "4:cpu:/pod/container\n");
  write("sys/cpu/pod/cpu.cfs_quota_us", "50000\n");
  write("sys/cpu/pod/cpu.cfs_period_us", "100000\n");
  write("sys/cpu/pod/container/cpu.cfs_quota_us", "200000\n");
  write("sys/cpu/pod/container/cpu.cfs_period_us", "100000\n");
  EXPECT_EQ(quota(), 0.5);
}

// Inside a container the mount is the container's own cgroup while /proc/self/cgroup names the
// host's path to it, which does not exist there: the walk up reaches the mount.
TEST_F(CpuQuota, AContainersMountedCgroupIsRead) {
  write("proc_self_cgroup", "4:cpu,cpuacct:/docker/0123abcd\n");
  write("sys/cpu,cpuacct/cpu.cfs_quota_us", "200000\n");
  write("sys/cpu,cpuacct/cpu.cfs_period_us", "100000\n");
  EXPECT_EQ(quota(), 2.0);
}

TEST_F(CpuQuota, V2CpuMax) {
  write("proc_self_cgroup", "0::/user.slice/job.scope\n");
  write("sys/user.slice/job.scope/cpu.max", "50000 100000\n");
  EXPECT_EQ(quota(), 0.5);
}

TEST_F(CpuQuota, V2MaxIsNoQuota) {
  write("proc_self_cgroup", "0::/job\n");
  write("sys/job/cpu.max", "max 100000\n");
  EXPECT_FALSE(quota().has_value());
}

// A file that is not numbers, or no cgroup file at all, is no quota rather than an error: the
// process then uses its affinity mask as before.
TEST_F(CpuQuota, UnreadableOrMalformedFilesAreNoQuota) {
  EXPECT_FALSE(quota().has_value());  // No /proc/self/cgroup.
  write("proc_self_cgroup", "garbage without colons\n4:cpu:/job\n0::/other\n");
  write("sys/cpu/job/cpu.cfs_quota_us", "lots\n");
  write("sys/cpu/job/cpu.cfs_period_us", "100000\n");
  write("sys/other/cpu.max", "0 0\n");
  EXPECT_FALSE(quota().has_value());
}

TEST(CpuBudget, UsableCoresAreWithinTheAffinityMask) {
  const CpuBudget& budget = cpu_budget();
  EXPECT_GE(budget.usable, 1);
  EXPECT_LE(budget.usable, budget.affinity);
  EXPECT_EQ(usable_cores(), budget.usable);
  if (budget.quota_cores) {
    EXPECT_FALSE(budget.quota_source.empty());
  }
}

}  // namespace
}  // namespace cleave
