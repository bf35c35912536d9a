// `cleave info` and `cleave --version`: the build, oneDNN, the ISA (and its cap) and the cores;
// `cleave run --json` reports the ISA; a bad ONEDNN_MAX_CPU_ISA is refused by name.
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "command_fixture.h"
#include "test_paths.h"

namespace cleave {
namespace {

// Runs each test with ONEDNN_MAX_CPU_ISA as the test sets it, then puts back the caller's.
class InfoCommandTest : public DemoModelFixture {
 protected:
  void SetUp() override {
    DemoModelFixture::SetUp();
    if (const char* value = std::getenv("ONEDNN_MAX_CPU_ISA")) saved_ = value;
    unsetenv("ONEDNN_MAX_CPU_ISA");
  }
  void TearDown() override {
    if (saved_) {
      setenv("ONEDNN_MAX_CPU_ISA", saved_->c_str(), 1);
    } else {
      unsetenv("ONEDNN_MAX_CPU_ISA");
    }
    DemoModelFixture::TearDown();
  }
  nlohmann::json info_json() {
    CommandResult result = cleave("info --json");
    EXPECT_EQ(result.exit_code, 0) << result.err;
    return nlohmann::json::parse(result.out);
  }
  std::optional<std::string> saved_;
};

bool cpu_has_avx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

TEST_F(InfoCommandTest, JsonNamesTheBuildOneDnnIsaAndCores) {
  nlohmann::json info = info_json();
  EXPECT_EQ(info["version"], "0.1");
  EXPECT_EQ(info["onednn"].get<std::string>().substr(0, 2), "2.");
  EXPECT_FALSE(info["compiler"].get<std::string>().empty());
  EXPECT_FALSE(info["isa"]["effective"].get<std::string>().empty());
  EXPECT_FALSE(info["isa"]["capped"].get<bool>()) << "no cap was set";
  EXPECT_TRUE(info["isa"]["cap"].is_null());
  EXPECT_EQ(info["isa"]["effective"], info["isa"]["cpu"]);
  EXPECT_GE(info["cores"].get<int>(), 1);
  EXPECT_GE(info["openmp_threads"].get<int>(), 1);
}

// Under a cgroup v1 CPU quota of half a core (made here, removed after), `cleave info` names
// the quota and its file, counts one usable core, and waiting threads sleep at once.
TEST_F(InfoCommandTest, ACpuQuotaBoundsTheUsableCores) {
  namespace fs = std::filesystem;
  const fs::path group =
      fs::path("/sys/fs/cgroup/cpu") / ("cleave_info_test_" + std::to_string(::getpid()));
  std::error_code error;
  if (!fs::create_directory(group, error) || error) {
    GTEST_SKIP() << "needs root and cgroup v1's cpu controller at /sys/fs/cgroup/cpu";
  }
  struct Remove {
    fs::path group;
    ~Remove() { ::rmdir(group.c_str()); }
  } remove{group};
  std::ofstream(group / "cpu.cfs_period_us") << "100000\n";
  std::ofstream(group / "cpu.cfs_quota_us") << "50000\n";
  // The shell moves itself into the group, then runs cleave there; it leaves with its exit.
  const CommandResult result = run_shell(
      "sh -c 'echo $$ > " + (group / "cgroup.procs").string() + " && env -u " +
      "GOMP_SPINCOUNT -u OMP_WAIT_POLICY -u OMP_NUM_THREADS " + CLEAVE_BINARY + " info --json'");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const nlohmann::json info = nlohmann::json::parse(result.out);
  EXPECT_EQ(info["cores"].get<int>(), 1);
  EXPECT_DOUBLE_EQ(info["cpu_quota"]["cores"].get<double>(), 0.5);
  EXPECT_EQ(info["cpu_quota"]["file"].get<std::string>(), (group / "cpu.cfs_quota_us").string());
  EXPECT_EQ(info["openmp_spin_count"].get<long>(), 0);
  EXPECT_EQ(info["openmp_threads"].get<int>(), 1);
}

// The commit is the one the binary was built from: the build looks it up each time, so a
// commit after configuring is named too.
TEST_F(InfoCommandTest, NamesTheCommitTheBinaryWasBuiltFrom) {
  CommandResult head = run_shell(std::string("git -C ") + CLEAVE_SOURCE_DIR +
                                 " log -1 --format='%h %ct' --abbrev=12 HEAD");
  if (head.exit_code != 0) GTEST_SKIP() << "the sources are not a git checkout";
  const std::string commit = head.out.substr(0, head.out.find(' '));
  const long long committed_at = std::stoll(head.out.substr(head.out.find(' ') + 1));
  const auto built_at = std::filesystem::last_write_time(CLEAVE_BINARY);
  const auto built_seconds = std::chrono::duration_cast<std::chrono::seconds>(
      std::chrono::file_clock::to_sys(built_at).time_since_epoch());
  if (built_seconds.count() < committed_at)
    GTEST_SKIP() << "the binary predates commit " << commit << ": build it again first";
  const nlohmann::json named = info_json()["commit"];
  ASSERT_TRUE(named.is_string()) << named;
  EXPECT_EQ(named.get<std::string>().substr(0, commit.size()), commit);
}

TEST_F(InfoCommandTest, ALowerCaseCapIsAppliedAndReported) {
  if (!cpu_has_avx2()) GTEST_SKIP() << "needs a CPU with AVX2 and FMA";
  setenv("ONEDNN_MAX_CPU_ISA", "avx2", 1);
  nlohmann::json info = info_json();
  EXPECT_EQ(info["isa"]["effective"], "AVX2");
  EXPECT_EQ(info["isa"]["cap"], "AVX2");
  EXPECT_EQ(info["isa"]["vector"], "avx2");
  EXPECT_EQ(info["isa"]["channel_block"], 8);
  // Capped only where the CPU has more than AVX2.
  EXPECT_EQ(info["isa"]["capped"].get<bool>(), info["isa"]["cpu"] != "AVX2");
}

TEST_F(InfoCommandTest, TextSaysWhichIsaAndWhyCapped) {
  if (!cpu_has_avx2()) GTEST_SKIP() << "needs a CPU with AVX2 and FMA";
  setenv("ONEDNN_MAX_CPU_ISA", "AVX2", 1);
  CommandResult result = cleave("info");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("ISA:            AVX2"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("oneDNN:"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("OpenMP threads:"), std::string::npos) << result.out;
}

TEST_F(InfoCommandTest, VersionNamesOneDnnAndTheIsa) {
  CommandResult result = cleave("--version");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out.rfind("cleave 0.1", 0), 0u) << result.out;
  EXPECT_NE(result.out.find("oneDNN 2."), std::string::npos) << result.out;
  EXPECT_NE(result.out.find(", ISA "), std::string::npos) << result.out;
}

TEST_F(InfoCommandTest, AnUnknownCapIsRefusedByName) {
  setenv("ONEDNN_MAX_CPU_ISA", "avx9", 1);
  CommandResult result = cleave("run " + model_ + " --layouts blocked --repeat 1");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("cleave: error: ONEDNN_MAX_CPU_ISA=avx9: expected one of"),
            std::string::npos)
      << result.err;
  EXPECT_TRUE(result.out.empty()) << result.out;
}

TEST_F(InfoCommandTest, RunJsonReportsTheEffectiveIsa) {
  if (!cpu_has_avx2()) GTEST_SKIP() << "needs a CPU with AVX2 and FMA";
  setenv("ONEDNN_MAX_CPU_ISA", "AVX2", 1);
  CommandResult result = cleave("run " + model_ + " --layouts blocked --repeat 1 --json");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  nlohmann::json report = nlohmann::json::parse(result.out);
  EXPECT_EQ(report["isa"]["effective"], "AVX2");
  EXPECT_EQ(report["isa"]["channel_block"], 8);
}

// The spin count the command runs with: the user's when set (passive meaning none), else one of
// the two the host's load chooses between (runtime/wait_policy.h).
TEST_F(InfoCommandTest, ReportsTheOpenMpSpinCountItRunsWith) {
  const char* saved_spin = std::getenv("GOMP_SPINCOUNT");
  const char* saved_policy = std::getenv("OMP_WAIT_POLICY");
  std::optional<std::string> spin =
      saved_spin ? std::optional<std::string>(saved_spin) : std::nullopt;
  std::optional<std::string> policy =
      saved_policy ? std::optional<std::string>(saved_policy) : std::nullopt;
  unsetenv("OMP_WAIT_POLICY");
  setenv("GOMP_SPINCOUNT", "1234", 1);
  EXPECT_EQ(info_json()["openmp_spin_count"], 1234);
  unsetenv("GOMP_SPINCOUNT");
  setenv("OMP_WAIT_POLICY", "passive", 1);
  EXPECT_EQ(info_json()["openmp_spin_count"], 0);
  unsetenv("OMP_WAIT_POLICY");
  const long chosen = info_json()["openmp_spin_count"].get<long>();
  EXPECT_TRUE(chosen == 300000 || chosen == 0) << chosen;
  CommandResult text = cleave("info");
  EXPECT_NE(text.out.find("OpenMP spin:"), std::string::npos) << text.out;
  if (spin) setenv("GOMP_SPINCOUNT", spin->c_str(), 1);
  if (policy) setenv("OMP_WAIT_POLICY", policy->c_str(), 1);
}

}  // namespace
}  // namespace cleave
