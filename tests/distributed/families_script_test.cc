// bench/distributed/families.sh and its tables: bad arguments refused before anything is made,
// the family picks and auto's pick from a candidate table, and a run that cleans up after itself
// (also when interrupted).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "../cli/command_fixture.h"
#include "test_paths.h"

namespace cleave {
namespace {

class FamiliesScript : public CommandFixture {
 protected:
  std::string script() const {
    return std::string(CLEAVE_SOURCE_DIR) + "/bench/distributed/families.sh";
  }
  std::string cluster() const {
    return std::string(CLEAVE_SOURCE_DIR) + "/bench/distributed/emulated_cluster.sh";
  }
  std::string table_tool() const {
    return std::string("/usr/bin/python3 ") + CLEAVE_SOURCE_DIR +
           "/bench/distributed/families_table.py";
  }
  CommandResult families(const std::string& arguments,
                         const std::string& binary = CLEAVE_BINARY) const {
    return run_shell("timeout 300 " + script() + " " + binary + " " + path("out.md") + " " +
                     arguments);
  }
  // A cleave that logs each command line it is given (to calls.log), with the emulated speeds
  // it was given, and runs the real one.
  std::string logging_cleave() const {
    const std::string wrapper = path("cleave");
    std::ofstream(wrapper)
        << "#!/bin/sh\necho \"$* ${CLEAVE_EMULATED_SPEEDS:+speeds=$CLEAVE_EMULATED_SPEEDS}\" >> "
        << path("calls.log") << "\nexec " << CLEAVE_BINARY << " \"$@\"\n";
    std::filesystem::permissions(wrapper, std::filesystem::perms::owner_all);
    return wrapper;
  }
  // The logged command lines of `command` (plan, split, run, ...).
  std::vector<std::string> calls(const std::string& command) const {
    std::vector<std::string> lines;
    std::ifstream in(path("calls.log"));
    for (std::string line; std::getline(in, line);)
      if (line.rfind(command + " ", 0) == 0) lines.push_back(line);
    return lines;
  }
  void write(const std::string& name, const std::string& text) const {
    std::ofstream(path(name)) << text;
  }
  // Root, cgroup v1 cpu, tc and mpicc: what the emulated cluster needs.
  static bool cluster_available() {
    return ::geteuid() == 0 && std::filesystem::exists("/sys/fs/cgroup/cpu/cgroup.procs") &&
           std::system("command -v mpicc >/dev/null && command -v tc >/dev/null") == 0;
  }
  // The entries of `folder` whose name starts with `prefix` (network namespaces, cgroups).
  static std::set<std::string> entries(const std::string& folder, const std::string& prefix) {
    std::set<std::string> names;
    if (!std::filesystem::exists(folder)) return names;
    for (const auto& entry : std::filesystem::directory_iterator(folder)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind(prefix, 0) == 0) names.insert(name);
    }
    return names;
  }
  // The emulated cluster's namespaces and cgroups whose emulated_cluster.sh (the pid in their
  // name, cleave_cluster_PID[_rK]) is gone: left behind. Those of clusters running now (other
  // tests side by side) are not.
  static std::set<std::string> cluster_leftovers() {
    std::set<std::string> names = entries("/run/netns", "cleave_cluster_");
    for (const std::string& group : entries("/sys/fs/cgroup/cpu", "cleave_cluster_"))
      names.insert(group);
    std::set<std::string> left;
    const std::regex owner("cleave_cluster_([0-9]+).*");
    std::smatch match;
    for (const std::string& name : names) {
      if (std::regex_match(name, match, owner) &&
          !std::filesystem::exists("/proc/" + match[1].str()))
        left.insert(name);
    }
    return left;
  }
  void SetUp() override {
    CommandFixture::SetUp();
    // Measurements (the split's peak rates) go to this test's folder.
    setenv("CLEAVE_CACHE_DIR", path("cache").c_str(), 1);
  }
  void TearDown() override {
    unsetenv("CLEAVE_CACHE_DIR");
    CommandFixture::TearDown();
  }
  // The work folder the script announces on stderr.
  static std::string work_folder(const std::string& err) {
    std::smatch match;
    const std::regex announced("work folder (\\S+)");
    return std::regex_search(err, match, announced) ? match[1].str() : "";
  }
};

TEST_F(FamiliesScript, UnknownOptionIsRefusedByName) {
  const CommandResult result = families("--bogus 1");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("unknown option --bogus"), std::string::npos) << result.err;
  EXPECT_FALSE(std::filesystem::exists(path("out.md")));
}

TEST_F(FamiliesScript, OptionWithoutValueIsRefused) {
  const CommandResult result = families("--rounds");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("--rounds needs a value"), std::string::npos) << result.err;
}

TEST_F(FamiliesScript, OneRankIsRefused) {
  const CommandResult result = families("--ranks 1");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("--ranks: expected counts 2..8, got '1'"), std::string::npos)
      << result.err;
}

TEST_F(FamiliesScript, BadLinkRateIsRefused) {
  const CommandResult result = families("--links fast");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("--links: expected none or a tc rate"), std::string::npos)
      << result.err;
}

TEST_F(FamiliesScript, BadSpeedIsRefused) {
  const CommandResult result = families("--speeds quarter");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("--speeds: expected full or half, got 'quarter'"), std::string::npos)
      << result.err;
}

TEST_F(FamiliesScript, SamplesOutOfRangeAreRefused) {
  for (const char* samples : {"0", "65", "two"}) {
    const CommandResult result = families(std::string("--samples ") + samples);
    EXPECT_EQ(result.exit_code, 2) << samples;
    EXPECT_NE(result.err.find(std::string("--samples: expected 1..64, got '") + samples + "'"),
              std::string::npos)
        << result.err;
    EXPECT_FALSE(std::filesystem::exists(path("out.md")));
  }
}

TEST_F(FamiliesScript, MissingModelIsRefusedByPath) {
  const CommandResult result = families("--models " + path("absent.onnx"));
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("no model file " + path("absent.onnx")), std::string::npos)
      << result.err;
}

TEST_F(FamiliesScript, MissingBinaryIsRefused) {
  const CommandResult result = run_shell(script() + " " + path("no-cleave") + " " + path("out.md"));
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("is not an executable file"), std::string::npos) << result.err;
}

// Below 10 ms the kernel delivers less CPU than the quota (66% over 2 ms gave a busy loop 35%):
// such a period would emulate a slower rank than the machine file says.
TEST_F(FamiliesScript, QuotaPeriodUnderTenMillisecondsIsRefused) {
  const CommandResult result = families("--period-us 2000");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("--period-us: expected 10000..1000000"), std::string::npos)
      << result.err;
  EXPECT_FALSE(std::filesystem::exists(path("out.md")));
}

TEST_F(FamiliesScript, ClusterRefusesAQuotaPeriodUnderTenMilliseconds) {
  const CommandResult result = run_shell(cluster() + " --quota 50 --period-us 5000 -np 1 -- true");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("--period-us: expected 10000..1000000 microseconds"), std::string::npos)
      << result.err;
}

// A host without cgroup v1's cpu (or memory) hierarchy, faked by an empty folder for the cgroup
// root: the option that needs it is named, exit 2, and no namespace or group was made first.
TEST_F(FamiliesScript, ClusterWithoutCgroupV1HierarchyStopsBeforeMakingAnything) {
  std::filesystem::create_directories(path("no_cgroups"));
  // An `ip` first on the PATH that logs its calls: a namespace made would show there.
  std::filesystem::create_directories(path("bin"));
  std::ofstream(path("bin/ip")) << "#!/bin/sh\necho \"ip $*\" >> " << path("ip.log")
                                << "\nexit 1\n";
  std::filesystem::permissions(path("bin/ip"), std::filesystem::perms::owner_all);
  const std::string fake =
      "PATH=" + path("bin") + ":$PATH CLEAVE_CGROUP_ROOT=" + path("no_cgroups") + " ";
  const CommandResult quota =
      run_shell(fake + cluster() + " --quota 50,- --period-us 10000 -np 2 -- echo ran");
  EXPECT_EQ(quota.exit_code, 2);
  EXPECT_NE(quota.err.find("--quota needs cgroup v1's cpu hierarchy, and " + path("no_cgroups") +
                           "/cpu is not one"),
            std::string::npos)
      << quota.err;
  EXPECT_EQ(quota.out.find("ran"), std::string::npos) << quota.out;
  const CommandResult memory = run_shell(fake + cluster() + " --memory 100M -np 1 -- echo ran");
  EXPECT_EQ(memory.exit_code, 2);
  EXPECT_NE(memory.err.find("--memory needs cgroup v1's memory hierarchy"), std::string::npos)
      << memory.err;
  EXPECT_EQ(memory.out.find("ran"), std::string::npos) << memory.out;
  // Nothing made: no group under the fake root, `ip` never called (no namespace, no qdisc).
  EXPECT_TRUE(std::filesystem::is_empty(path("no_cgroups")));
  EXPECT_FALSE(std::filesystem::exists(path("ip.log"))) << read_text(path("ip.log"));
}

// families.sh on such a host: the cluster's error, a non-zero exit, its work folder removed.
TEST_F(FamiliesScript, FamiliesWithoutCgroupV1HierarchyStopsWithTheClustersError) {
  if (!cluster_available()) GTEST_SKIP() << "needs root, cgroup v1 cpu, tc and mpicc";
  std::filesystem::create_directories(path("no_cgroups"));
  ASSERT_EQ(cleave("gen inception --blocks 2 --channels 8 -o " + path("m.onnx")).exit_code, 0);
  const CommandResult result =
      run_shell("CLEAVE_CGROUP_ROOT=" + path("no_cgroups") + " timeout 120 " + script() + " " +
                CLEAVE_BINARY + " " + path("out.md") + " --models " + path("m.onnx") +
                " --ranks 2 --links none --speeds full --rounds 1 --repeat 1 --costs static");
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.err.find("--quota needs cgroup v1's cpu hierarchy"), std::string::npos)
      << result.err;
  const std::string work = work_folder(result.err);
  ASSERT_FALSE(work.empty()) << result.err;
  EXPECT_FALSE(std::filesystem::exists(work));
  EXPECT_TRUE(std::filesystem::is_empty(path("no_cgroups")));
  EXPECT_EQ(cluster_leftovers(), std::set<std::string>{});
}

TEST_F(FamiliesScript, UnknownEmulationIsRefused) {
  const CommandResult result = families("--emulate throttle");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("--emulate: expected quota or pace, got 'throttle'"), std::string::npos)
      << result.err;
  EXPECT_FALSE(std::filesystem::exists(path("out.md")));
}

TEST_F(FamiliesScript, ClusterRefusesASpeedCountOtherThanTheRanks) {
  const CommandResult result = run_shell(cluster() + " --speed 1,0.5,0.5 -np 2 -- true");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("--speed: expected one speed per rank (2), got '1,0.5,0.5'"),
            std::string::npos)
      << result.err;
}

// --speed reaches every rank as CLEAVE_EMULATED_SPEEDS, which each reads its own entry of.
TEST_F(FamiliesScript, ClusterHandsTheSpeedsToEveryRank) {
  if (!cluster_available()) GTEST_SKIP() << "needs root, cgroup v1 cpu, tc and mpicc";
  const CommandResult result =
      run_shell(cluster() + " --speed 1,0.5 -np 2 -- sh -c 'echo rank $OMPI_COMM_WORLD_RANK " +
                "$CLEAVE_EMULATED_SPEEDS'");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("rank 0 1,0.5"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("rank 1 1,0.5"), std::string::npos) << result.out;
  EXPECT_EQ(cluster_leftovers(), std::set<std::string>{});
}

// Each rank in a cgroup of its own, an uncapped one too, at 100 times the default cpu.shares:
// the host's other processes must not take the share its quota emulates.
TEST_F(FamiliesScript, ClusterGivesEveryRankItsQuotaAndAFirstClaimOnTheCores) {
  if (!cluster_available()) GTEST_SKIP() << "needs root, cgroup v1 cpu, tc and mpicc";
  // Inside the namespace /sys is remounted: the rank reads its group (cleave_cluster_PID_rR)
  // through the mounts of the script that made it (PID).
  const std::string report =
      R"(bash -c 'g=$(awk -F: "\$2 ~ /(^|,)cpu(,|\$)/ {print \$3}" /proc/self/cgroup); )"
      R"(p=${g#/cleave_cluster_}; )"
      R"(echo rank $OMPI_COMM_WORLD_RANK $(nsenter --mount=/proc/${p%_r*}/ns/mnt cat )"
      R"(/sys/fs/cgroup/cpu$g/cpu.cfs_quota_us /sys/fs/cgroup/cpu$g/cpu.shares)')";
  const CommandResult result =
      run_shell(cluster() + " --quota -,50 --period-us 10000 -np 2 -- " + report);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("rank 0 -1 102400"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("rank 1 5000 102400"), std::string::npos) << result.out;
  EXPECT_EQ(cluster_leftovers(), std::set<std::string>{});
}

// A capped rank reads its own quota where cleave looks for it, as a container's process does, so
// that it waits as cleave waits under a quota (sleeping, not spinning on its quota); an
// uncapped rank reads none. The host's mounts stay as they were.
TEST_F(FamiliesScript, ClusterRanksSeeTheirOwnQuota) {
  if (!cluster_available()) GTEST_SKIP() << "needs root, cgroup v1 cpu, tc and mpicc";
  const std::string mounts = "grep ' cgroup' /proc/self/mounts";
  const CommandResult before = run_shell(mounts);
  const CommandResult result =
      run_shell(cluster() + " --quota -,50 --period-us 10000 -np 2 -- sh -c 'echo rank " +
                "$OMPI_COMM_WORLD_RANK $(" + CLEAVE_BINARY + " info --json | tr -d \"\\n \")'");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::regex capped(
      R"(rank 1 \{.*"cpu_quota":\{"cores":0\.5,"file":"/sys/fs/cgroup/cpu/cleave_cluster_[0-9]+_r1/cpu\.cfs_quota_us"\}.*"openmp_spin_count":0,)");
  EXPECT_TRUE(std::regex_search(result.out, capped)) << result.out;
  EXPECT_NE(result.out.find(R"("cpu_quota":null)"), std::string::npos) << result.out;
  EXPECT_EQ(run_shell(mounts).out, before.out);
  EXPECT_EQ(cluster_leftovers(), std::set<std::string>{});
}

// Per family the fastest prediction that can run; over-memory rows and rows never predicted are
// no family's best.
TEST_F(FamiliesScript, PicksEachFamilysFastestRunnableRow) {
  write("table.json", R"json({"candidates": [
    {"family": "sequential", "strategy": "sequential", "configuration": "all on device 0",
     "predicted_ms": 10.0, "rejected": "not faster than lc, 2 devices (8.000 ms)"},
    {"family": "task", "strategy": "lc", "configuration": "lc, 2 devices",
     "predicted_ms": 8.0, "rejected": "", "chosen": true},
    {"family": "task", "strategy": "clone", "configuration": "clone, 2 devices",
     "predicted_ms": 7.0, "rejected": "over memory: device 1 'rank1' would hold 9 MiB"},
    {"family": "heterogeneous", "strategy": "milp-split", "configuration": "milp-split",
     "predicted_ms": null, "rejected": "no solution in its budget"},
    {"family": "heterogeneous", "strategy": "heft", "configuration": "heft, 2 devices",
     "predicted_ms": 9.0, "rejected": "not faster than lc, 2 devices (8.000 ms)"}]})json");
  const CommandResult result = run_shell(table_tool() + " pick " + path("table.json"));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out,
            "sequential\tsequential\tall on device 0\t10.0000\tnot faster than lc, 2 devices "
            "(8.000 ms)\n"
            "task\tlc\tlc, 2 devices\t8.0000\t\n"
            "heterogeneous\theft\theft, 2 devices\t9.0000\tnot faster than lc, 2 devices "
            "(8.000 ms)\n"
            "auto\ttask\tlc, 2 devices\t8.0000\t\n");
}

// A split predicted faster than the chosen plan is what `run --plan auto --machine` runs.
TEST_F(FamiliesScript, AutoPicksTheSplitWherePredictedFaster) {
  write("table.json", R"json({"candidates": [
    {"family": "sequential", "strategy": "sequential", "configuration": "all on device 0",
     "predicted_ms": 10.0, "rejected": "", "chosen": true},
    {"family": "spatial", "strategy": "split", "configuration": "split over 2 devices along h",
     "predicted_ms": 6.0, "rejected": "a split is not a plan file: `cleave run --plan auto`"}]})json");
  const CommandResult result = run_shell(table_tool() + " pick " + path("table.json"));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("auto\tspatial\tsplit over 2 devices along h\t6.0000\t\n"),
            std::string::npos)
      << result.out;
}

TEST_F(FamiliesScript, TableWithoutCandidatesIsRefused) {
  write("table.json", R"json({"strategy": "lc"})json");
  const CommandResult result = run_shell(table_tool() + " pick " + path("table.json"));
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.err.find("no candidates"), std::string::npos) << result.err;
}

// Medians over rounds, their ratio to the prediction, and auto against the best measured.
TEST_F(FamiliesScript, ReportComparesAutoWithTheBestMeasured) {
  write("results.tsv",
        "m, 2 ranks\ttask\tlc, 2 devices\t8.0\t10.0\t1\t\n"
        "m, 2 ranks\ttask\tlc, 2 devices\t8.0\t12.0\t1\t\n"
        "m, 2 ranks\ttask\tlc, 2 devices\t8.0\t11.0\t1\t\n"
        "m, 2 ranks\tsequential\tall on device 0\t10.0\t10.0\t0\t\n"
        "m, 2 ranks\tpipeline\tstages\t5.0\t\t0\truns with `cleave stream --stages`\n");
  const CommandResult result = run_shell(table_tool() + " report " + path("results.tsv"));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(
      result.out.find("| m, 2 ranks | task | lc, 2 devices | 8.00 | 11.00 | 1.38 | **auto** |"),
      std::string::npos)
      << result.out;
  EXPECT_NE(
      result.out.find("| m, 2 ranks | sequential | all on device 0 | 10.00 | 10.00 | 1.00 |  |"),
      std::string::npos)
      << result.out;
  EXPECT_NE(result.out.find("not run: runs with `cleave stream --stages`"), std::string::npos)
      << result.out;
  // The task row's three rounds: 10, 12 and 11 ms lie 20% apart; one round says nothing.
  EXPECT_NE(result.out.find("| 1.38 | **auto** | 20.0% |"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("| 1.00 |  |  |"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("Rounds' medians of one row apart: median 20.0%, largest 20.0%, over "
                            "5% on 1 of 1 rows."),
            std::string::npos)
      << result.out;
  EXPECT_NE(result.out.find("| m, 2 ranks | task: lc, 2 devices | 11.00 | sequential: all on "
                            "device 0 | 10.00 | 1.100 |"),
            std::string::npos)
      << result.out;
}

// trace_vs_plan.py: per rank the plan's compute, sends (bytes / endpoint_bandwidth per other
// rank reading a task's output), waits and last end beside the traces' medians. Here a (rank 0,
// 2 ms and 1 ms sending 1000 B at 1 MB/s) -> b (rank 1) -> c (rank 0); two traces whose medians
// are the middle of each pair.
TEST_F(FamiliesScript, TraceVsPlanSplitsEachRanksTime) {
  write("plan.json", R"json({"makespan": 0.008, "workers": ["rank0", "rank1"],
    "order": [["a", "c"], ["b"]],
    "tasks": [{"task": "a", "worker": "rank0", "start": 0, "finish": 0.003},
              {"task": "b", "worker": "rank1", "start": 0.004, "finish": 0.006},
              {"task": "c", "worker": "rank0", "start": 0.007, "finish": 0.008}],
    "task_graph": {"endpoint_bandwidth": 1e6, "edges": [["a", "b"], ["b", "c"]],
      "tasks": [{"name": "a", "output_bytes": 1000}, {"name": "b", "output_bytes": [1000]},
                {"name": "c", "output_bytes": 4}]}})json");
  const auto trace = [&](const std::string& name, double shift) {
    write(name,
          "{\"traceEvents\": [{\"ph\": \"M\", \"pid\": 0, \"name\": \"process_name\"},"
          "{\"ph\": \"X\", \"pid\": 0, \"name\": \"a\", \"ts\": 100, \"dur\": 2000, "
          "\"args\": {\"wait_us\": 0}},"
          "{\"ph\": \"X\", \"pid\": 1, \"name\": \"b\", \"ts\": 5000, \"dur\": 1000, "
          "\"args\": {\"wait_us\": 4800}},"
          "{\"ph\": \"X\", \"pid\": 0, \"name\": \"c\", \"ts\": " +
              std::to_string(7500 + shift) +
              ", \"dur\": 1000, \"args\": {\"wait_us\": " + std::to_string(4000 + shift) + "}}]}");
  };
  trace("t1.json", -200);
  trace("t2.json", 200);
  const std::string tool =
      std::string("/usr/bin/python3 ") + CLEAVE_SOURCE_DIR + "/bench/distributed/trace_vs_plan.py ";
  const CommandResult result =
      run_shell(tool + path("plan.json") + " " + path("t1.json") + " " + path("t2.json"));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("| 0 | 2 | 3.00, 3.00 | 1.00, 1.40 | 4.00, 4.10 | 8.00, 8.50 |"),
            std::string::npos)
      << result.out;
  EXPECT_NE(result.out.find("| 1 | 1 | 1.00, 1.00 | 1.00, 0.00 | 4.00, 5.00 | 6.00, 6.00 |"),
            std::string::npos)
      << result.out;
  // A trace of another plan: the task it lacks is named, nothing printed as a row.
  write("other.json",
        R"json({"traceEvents": [{"ph": "X", "pid": 0, "name": "a", "ts": 0, "dur": 1}]})json");
  const CommandResult other = run_shell(tool + path("plan.json") + " " + path("other.json"));
  EXPECT_NE(other.exit_code, 0);
  EXPECT_NE(other.err.find("no event for task 'b' of the plan"), std::string::npos) << other.err;
  EXPECT_EQ(other.out.find("| 0 |"), std::string::npos) << other.out;
}

// The link model's latency is what a message costs a rank that sleeps between its polls: the
// waiting receiver's round trip less the spinning one way (300 - 40 / 2 us).
TEST_F(FamiliesScript, LinkLatencyIsAWaitingRanksMessage) {
  write("pingpong.txt",
        "bytes 8 round_trip_us 40.0 bandwidth_Bps 2.0e5\n"
        "bytes 1048576 round_trip_us 1000.0 bandwidth_Bps 2.1e9\n"
        "bytes 4194304 round_trip_us 3000.0 bandwidth_Bps 2.8e9\n"
        "waiting_receiver bytes 8 round_trip_us 300.0\n");
  const std::string tool =
      std::string("/usr/bin/python3 ") + CLEAVE_SOURCE_DIR + "/bench/distributed/link_machine.py ";
  const CommandResult result = run_shell(tool + path("pingpong.txt") + " " + path("m.json") +
                                         " --speeds 1,0.5 --shaping none");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "| none | 40.0 | 1000.0 | 3000.0 | 300.0 | 280.0, 3.146 |\n");
  EXPECT_EQ(
      read_text(path("m.json")),
      R"json({"devices": [{"name": "rank0", "speed": 1.0}, {"name": "rank1", "speed": 0.5}], )json"
      R"json("bandwidth": [[0, 3145728000.0], [3145728000.0, 0]], "latency": [[0, 0.00028], )json"
      R"json([0.00028, 0]], "endpoint_bandwidth": 3145728000.0})json");
}

// A shaped link's machine takes its ends' copies from an unshaped ping-pong: tc slows the
// wire, not the ranks' copies (2 and 4 MiB one way: 1 ms apart, 3 MiB over it).
TEST_F(FamiliesScript, EndpointBandwidthComesFromTheUnshapedPingPong) {
  write("shaped.txt",
        "bytes 8 round_trip_us 40.0 bandwidth_Bps 2.0e5\n"
        "bytes 1048576 round_trip_us 16000.0 bandwidth_Bps 1.3e8\n"
        "bytes 4194304 round_trip_us 64000.0 bandwidth_Bps 1.3e8\n");
  write("unshaped.txt",
        "bytes 8 round_trip_us 40.0 bandwidth_Bps 2.0e5\n"
        "bytes 1048576 round_trip_us 1000.0 bandwidth_Bps 2.1e9\n"
        "bytes 4194304 round_trip_us 3000.0 bandwidth_Bps 2.8e9\n");
  const std::string tool =
      std::string("/usr/bin/python3 ") + CLEAVE_SOURCE_DIR + "/bench/distributed/link_machine.py ";
  CommandResult result = run_shell(tool + path("shaped.txt") + " " + path("m.json") +
                                   " --speeds 1,1 --endpoint-from " + path("unshaped.txt"));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::string machine = read_text(path("m.json"));
  EXPECT_NE(machine.find(R"("bandwidth": [[0, 131072000.0], [131072000.0, 0]])"), std::string::npos)
      << machine;
  EXPECT_NE(machine.find(R"("endpoint_bandwidth": 3145728000.0)"), std::string::npos) << machine;
  result = run_shell(tool + path("shaped.txt") + " " + path("m.json") +
                     " --speeds 1,1 --endpoint-from " + path("missing.txt"));
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.err.find("missing.txt: cannot read the ping-pong output"), std::string::npos)
      << result.err;
}

// A wait's CPU per poll (wake_seconds) is the median of the unshaped ping-pong's runs (three
// runs, one slow): the ranks' wake-ups, not the wire's, whatever the shaping.
TEST_F(FamiliesScript, WakeSecondsComeFromTheUnshapedPingPongsMedian) {
  const std::string lines =
      "bytes 8 round_trip_us 40.0 bandwidth_Bps 2.0e5\n"
      "bytes 1048576 round_trip_us 1000.0 bandwidth_Bps 2.1e9\n"
      "bytes 4194304 round_trip_us 3000.0 bandwidth_Bps 2.8e9\n";
  write("shaped.txt", lines + "wake_cpu_us 99.0\n");
  write("unshaped.txt",
        lines + "wake_cpu_us 15.0\n" + lines + "wake_cpu_us 41.5\n" + lines + "wake_cpu_us 14.0\n");
  write("old.txt", lines);
  const std::string tool =
      std::string("/usr/bin/python3 ") + CLEAVE_SOURCE_DIR + "/bench/distributed/link_machine.py ";
  CommandResult result = run_shell(tool + path("shaped.txt") + " " + path("m.json") +
                                   " --speeds 1,0.5 --endpoint-from " + path("unshaped.txt"));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(read_text(path("m.json")).find(R"("wake_seconds": 1.5e-05)"), std::string::npos)
      << read_text(path("m.json"));
  // A ping-pong from before the line: the field is left out (not priced).
  result = run_shell(tool + path("old.txt") + " " + path("m.json") + " --speeds 1,0.5");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(read_text(path("m.json")).find("wake_seconds"), std::string::npos);
}

// cleave's cost per message sent (send_seconds) is the median of `cleave info --send-cost`'s
// lines appended to the unshaped ping-pong (three runs, one slow); absent there, not priced.
TEST_F(FamiliesScript, SendSecondsComeFromTheUnshapedProbesMedian) {
  const std::string lines =
      "bytes 8 round_trip_us 40.0 bandwidth_Bps 2.0e5\n"
      "bytes 1048576 round_trip_us 1000.0 bandwidth_Bps 2.1e9\n"
      "bytes 4194304 round_trip_us 3000.0 bandwidth_Bps 2.8e9\n";
  write("shaped.txt", lines + "send_us 99.0\n");
  write("unshaped.txt", lines + lines + lines + "send_us 12.5\nsend_us 80.0\nsend_us 11.0\n");
  const std::string tool =
      std::string("/usr/bin/python3 ") + CLEAVE_SOURCE_DIR + "/bench/distributed/link_machine.py ";
  CommandResult result = run_shell(tool + path("shaped.txt") + " " + path("m.json") +
                                   " --speeds 1,1 --endpoint-from " + path("unshaped.txt"));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(read_text(path("m.json")).find(R"("send_seconds": 1.25e-05)"), std::string::npos)
      << read_text(path("m.json"));
  write("old.txt", lines);
  result = run_shell(tool + path("old.txt") + " " + path("m.json") + " --speeds 1,1");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(read_text(path("m.json")).find("send_seconds"), std::string::npos);
}

// A shaped link is one bucket for every rank and direction: --shared-link says so in the
// machine file, which is otherwise the same.
TEST_F(FamiliesScript, ASharedLinkIsWrittenWhereAsked) {
  write("pingpong.txt",
        "bytes 8 round_trip_us 40.0 bandwidth_Bps 2.0e5\n"
        "bytes 1048576 round_trip_us 16000.0 bandwidth_Bps 1.3e8\n"
        "bytes 4194304 round_trip_us 64000.0 bandwidth_Bps 1.3e8\n");
  const std::string tool = std::string("/usr/bin/python3 ") + CLEAVE_SOURCE_DIR +
                           "/bench/distributed/link_machine.py " + path("pingpong.txt") + " ";
  ASSERT_EQ(run_shell(tool + path("own.json") + " --speeds 1,1,1").exit_code, 0);
  const CommandResult result =
      run_shell(tool + path("shared.json") + " --speeds 1,1,1 --shared-link");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::string own = read_text(path("own.json")), shared = read_text(path("shared.json"));
  EXPECT_EQ(own.find("shared_link"), std::string::npos) << own;
  EXPECT_EQ(shared, own.substr(0, own.size() - 1) + R"(, "shared_link": true})") << shared;
  ASSERT_EQ(run_shell(tool + path("bucket.json") +
                      " --speeds 1,1 --shared-link --link-burst-bytes 125000")
                .exit_code,
            0);
  EXPECT_NE(read_text(path("bucket.json")).find(R"("link_burst_bytes": 125000.0)"),
            std::string::npos)
      << read_text(path("bucket.json"));
  const CommandResult alone =
      run_shell(tool + path("bad.json") + " --speeds 1,1 --link-burst-bytes 125000");
  EXPECT_NE(alone.exit_code, 0);
  EXPECT_NE(alone.err.find("--link-burst-bytes: expected a non-negative number of bytes with "
                           "--shared-link"),
            std::string::npos)
      << alone.err;
}

// Without the waiting receiver's line (an older pingpong), half the spinning round trip.
TEST_F(FamiliesScript, LinkLatencyWithoutAWaitingReceiverIsHalfTheRoundTrip) {
  write("pingpong.txt",
        "bytes 8 round_trip_us 40.0 bandwidth_Bps 2.0e5\n"
        "bytes 1048576 round_trip_us 1000.0 bandwidth_Bps 2.1e9\n"
        "bytes 4194304 round_trip_us 3000.0 bandwidth_Bps 2.8e9\n");
  const std::string tool =
      std::string("/usr/bin/python3 ") + CLEAVE_SOURCE_DIR + "/bench/distributed/link_machine.py ";
  const CommandResult result =
      run_shell(tool + path("pingpong.txt") + " " + path("m.json") + " --speeds 1,1");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(read_text(path("m.json")).find(R"("latency": [[0, 2e-05], [2e-05, 0]])"),
            std::string::npos)
      << read_text(path("m.json"));
}

// Several runs in one file (families.sh runs three): each figure is the median over the runs,
// so one run's 2 ms waiting round trip does not set the latency.
TEST_F(FamiliesScript, LinkModelIsTheMedianOfSeveralRuns) {
  std::string runs;
  for (const char* waiting : {"2200.0", "100.0", "140.0"}) {
    runs += std::string("bytes 8 round_trip_us 40.0 bandwidth_Bps 2.0e5\n") +
            "bytes 1048576 round_trip_us 1000.0 bandwidth_Bps 2.1e9\n" +
            "bytes 4194304 round_trip_us 3000.0 bandwidth_Bps 2.8e9\n" +
            "waiting_receiver bytes 8 round_trip_us " + waiting + "\n";
  }
  write("pingpong.txt", runs);
  const CommandResult result = run_shell(
      std::string("/usr/bin/python3 ") + CLEAVE_SOURCE_DIR + "/bench/distributed/link_machine.py " +
      path("pingpong.txt") + " " + path("m.json") + " --speeds 1,1 --shaping none");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "| none | 40.0 | 1000.0 | 3000.0 | 140.0 | 120.0, 3.146 |\n");
}

TEST_F(FamiliesScript, PingPongOutputWithoutItsSizesIsRefused) {
  write("pingpong.txt", "bytes 8 round_trip_us 40.0 bandwidth_Bps 2.0e5\n");
  const CommandResult result = run_shell(
      std::string("/usr/bin/python3 ") + CLEAVE_SOURCE_DIR + "/bench/distributed/link_machine.py " +
      path("pingpong.txt") + " " + path("m.json") + " --speeds 1,1");
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.err.find("no 1048576-byte line"), std::string::npos) << result.err;
}

// A small model on 2 unshaped ranks: every family's row measured, auto marked, nothing left;
// the split searched on the script's --costs, as the table's spatial row is.
TEST_F(FamiliesScript, RunsEveryFamilyAndCleansUp) {
  if (!cluster_available()) GTEST_SKIP() << "needs root, cgroup v1 cpu, tc and mpicc";
  ASSERT_EQ(cleave("gen inception --blocks 2 --channels 8 -o " + path("m.onnx")).exit_code, 0);
  const CommandResult result = families("--models " + path("m.onnx") +
                                            " --ranks 2 --links none --speeds half --rounds 1 "
                                            "--repeat 1 --costs static",
                                        logging_cleave());
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::string table = read_text(path("out.md"));
  EXPECT_NE(table.find("| sequential | all on device 0 'rank0' |"), std::string::npos) << table;
  // The family's fastest prediction: HEFT or MILP-SPLIT (the half-speed rank makes the devices
  // differ), whichever places the model's input and output where rank 0 moves them least.
  EXPECT_TRUE(
      std::regex_search(table, std::regex(R"(\| heterogeneous \| (heft|milp-split), 2 devices)")))
      << table;
  EXPECT_NE(table.find("**auto**"), std::string::npos) << table;
  EXPECT_NE(table.find("| shape | auto's pick | auto ms |"), std::string::npos) << table;
  // `--plan auto` timed on the ranks: its own row, which candidate it kept, and the count.
  EXPECT_TRUE(std::regex_search(
      table, std::regex(R"(\| auto \(timed on ranks\) \| auto \(timed on ranks\): kept [^|]+ \| )"
                        R"([0-9.]+ \| [0-9.]+ \|)")))
      << table;
  EXPECT_TRUE(std::regex_search(
      table,
      std::regex(R"(Within 5% of the best measured family: auto's predicted pick on [01] of )"
                 R"(1 shapes; auto timed on the ranks on [01] of 1 shapes)")))
      << table;
  std::size_t timed_autos = 0;
  for (const std::string& run : calls("run"))
    timed_autos += run.find("--plan auto --machine ") != std::string::npos &&
                   run.find("--costs static") != std::string::npos;
  EXPECT_EQ(timed_autos, 2u) << "one line per rank of the one round";
  const std::vector<std::string> splits = calls("split");
  ASSERT_EQ(splits.size(), 1u);
  EXPECT_NE(splits.front().find("--objective seconds --costs static"), std::string::npos)
      << splits.front();
  const std::string work = work_folder(result.err);
  ASSERT_FALSE(work.empty()) << result.err;
  EXPECT_FALSE(std::filesystem::exists(work));
  EXPECT_EQ(cluster_leftovers(), std::set<std::string>{});
}

// The spatial row's prediction is that of the split run (`cleave split --machine --json`'s
// machine_prediction), not the table's own split's, which can be another.
TEST_F(FamiliesScript, TheSpatialRowIsPredictedByTheSplitItRuns) {
  if (!cluster_available()) GTEST_SKIP() << "needs root, cgroup v1 cpu, tc and mpicc";
  ASSERT_EQ(cleave("gen inception --blocks 2 --channels 8 -o " + path("m.onnx")).exit_code, 0);
  // A cleave that keeps what each `split` printed.
  const std::string wrapper = path("cleave");
  std::ofstream(wrapper) << "#!/bin/sh\nif [ \"$1\" = split ]; then\n  " << CLEAVE_BINARY
                         << " \"$@\" > " << path("split.out") << "\n  rc=$?\n  cat "
                         << path("split.out") << "\n  exit $rc\nfi\nexec " << CLEAVE_BINARY
                         << " \"$@\"\n";
  std::filesystem::permissions(wrapper, std::filesystem::perms::owner_all);
  const CommandResult result = families("--models " + path("m.onnx") +
                                            " --ranks 2 --links none --speeds full --rounds 1 "
                                            "--repeat 1 --costs static",
                                        wrapper);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const nlohmann::json split = nlohmann::json::parse(read_text(path("split.out")));
  const double predicted = split.at("machine_prediction").at("predicted_ms").get<double>();
  const std::string table = read_text(path("out.md"));
  std::smatch row;
  ASSERT_TRUE(std::regex_search(
      table, row, std::regex(R"(\| spatial \| split over 2 devices along h \| ([0-9.]+) \|)")))
      << table;
  // The table prints it to 0.01 ms.
  EXPECT_NEAR(std::stod(row[1].str()), predicted, 0.0051) << table;
}

// The planning commands run in a cgroup with the ranks' claim on the cores (cpu.shares 102400,
// as emulated_cluster.sh gives each rank), named as the cluster's groups are and gone after;
// a model's first plan profiles (or checks the cache) at the default, every later command
// reuses that profile unchecked. The report says how far each row's rounds lie apart.
TEST_F(FamiliesScript, PlansWithTheRanksClaimAndOneProfilePerModel) {
  if (!cluster_available()) GTEST_SKIP() << "needs root, cgroup v1 cpu, tc and mpicc";
  ASSERT_EQ(cleave("gen inception --blocks 2 --channels 8 -o " + path("m.onnx")).exit_code, 0);
  // A cleave that logs, for each plan command, the profile reuse it was given and its cgroup's
  // cpu.shares.
  const std::string wrapper = path("cleave");
  std::ofstream(wrapper)
      << "#!/bin/sh\nif [ \"$1\" = plan ]; then\n"
      << "  g=$(awk -F: '$2 ~ /(^|,)cpu(,|$)/ {print $3}' /proc/self/cgroup)\n"
      << "  echo \"plan reuse=${CLEAVE_PROFILE_REUSE:-unset} group=$g shares=$(cat "
         "/sys/fs/cgroup/cpu$g/cpu.shares)\" >> "
      << path("calls.log") << "\nfi\nexec " << CLEAVE_BINARY << " \"$@\"\n";
  std::filesystem::permissions(wrapper, std::filesystem::perms::owner_all);
  unsetenv("CLEAVE_PROFILE_REUSE");
  const CommandResult result = families("--models " + path("m.onnx") +
                                            " --ranks 2 --links none --speeds 'full half' "
                                            "--rounds 2 --repeat 1 --costs static",
                                        wrapper);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::vector<std::string> plans = calls("plan");
  ASSERT_GE(plans.size(), 2u);
  const std::regex planner_group(R"(group=/cleave_cluster_[0-9]+_planner shares=102400$)");
  for (std::size_t i = 0; i < plans.size(); ++i) {
    EXPECT_TRUE(std::regex_search(plans[i], planner_group)) << plans[i];
    EXPECT_NE(plans[i].find(i == 0 ? "reuse=unset" : "reuse=always"), std::string::npos)
        << i << ": " << plans[i];
  }
  const std::string table = read_text(path("out.md"));
  EXPECT_NE(table.find("| auto | rounds apart |"), std::string::npos) << table;
  EXPECT_TRUE(std::regex_search(
      table, std::regex(R"(\| sequential \| all on device 0 'rank0' \| [0-9.]+ \| [0-9.]+ \| )"
                        R"([0-9.]+ \| [^|]* \| [0-9.]+% \|)")))
      << table;
  EXPECT_TRUE(std::regex_search(
      table, std::regex(R"(Rounds' medians of one row apart: median [0-9.]+%, largest [0-9.]+%)")))
      << table;
  EXPECT_EQ(cluster_leftovers(), std::set<std::string>{});
}

// With --samples 2 every family runs its 2 samples on the ranks: data-parallel's own plan, the
// pipelined stages (a plan of a stage per rank) and the split (`run-split --samples 2`); here
// with the half-speed rank emulated by pauses (--emulate pace).
TEST_F(FamiliesScript, RunsEveryFamilyOnRanksForSeveralSamples) {
  if (!cluster_available()) GTEST_SKIP() << "needs root, cgroup v1 cpu, tc and mpicc";
  ASSERT_EQ(cleave("gen inception --blocks 2 --channels 8 -o " + path("m.onnx")).exit_code, 0);
  const CommandResult result = families("--models " + path("m.onnx") +
                                            " --ranks 2 --links none --speeds half --rounds 1 "
                                            "--repeat 1 --costs static --samples 2 --emulate pace",
                                        logging_cleave());
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::string table = read_text(path("out.md"));
  for (const char* family : {"data-parallel", "pipeline", "spatial"}) {
    EXPECT_TRUE(
        std::regex_search(table, std::regex(std::string(R"(\| )") + family +
                                            R"( \| [^|]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \|)")))
        << family << "\n"
        << table;
  }
  EXPECT_EQ(table.find("not run:"), std::string::npos) << table;
  std::size_t pipeline_plans = 0;
  for (const std::string& plan : calls("plan")) {
    EXPECT_NE(plan.find("--samples 2"), std::string::npos) << plan;
    pipeline_plans += plan.find("--strategy pipeline") != std::string::npos;
  }
  EXPECT_EQ(pipeline_plans, 1u);
  const std::vector<std::string> runs = calls("run");
  ASSERT_FALSE(runs.empty());
  for (const std::string& run : runs) {
    EXPECT_NE(run.find("--samples 2"), std::string::npos) << run;
    // --emulate pace: no quota, the half-speed rank as pauses.
    EXPECT_NE(run.find("speeds=1,0.5"), std::string::npos) << run;
  }
  // One line per rank of the run.
  const std::vector<std::string> split_runs = calls("run-split");
  ASSERT_FALSE(split_runs.empty());
  for (const std::string& run : split_runs)
    EXPECT_NE(run.find("--samples 2"), std::string::npos) << run;
}

// Ctrl-C (SIGINT to the script's process group) in the middle of a run on the ranks: exit 130,
// the work folder, namespace and cgroups gone.
TEST_F(FamiliesScript, InterruptedRunCleansUp) {
  if (!cluster_available()) GTEST_SKIP() << "needs root, cgroup v1 cpu, tc and mpicc";
  ASSERT_EQ(cleave("gen inception --blocks 2 --channels 8 -o " + path("m.onnx")).exit_code, 0);
  const std::string script_path = script(), model = path("m.onnx"), out = path("out.md");
  std::vector<std::string> arguments = {
      script_path, CLEAVE_BINARY, out,    "--models", model,   "--ranks",
      "2",         "--links",     "none", "--speeds", "half",  "--rounds",
      "20",        "--repeat",    "50",   "--costs",  "static"};
  std::vector<char*> argv;
  for (std::string& argument : arguments) argv.push_back(argument.data());
  argv.push_back(nullptr);
  // A group of its own, which the signal reaches whole as Ctrl-C's does, and SIGINT at its
  // default (a shell's background job would start with it ignored, which no trap undoes).
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t interrupt;
  sigemptyset(&interrupt);
  sigaddset(&interrupt, SIGINT);
  posix_spawnattr_setsigdefault(&attributes, &interrupt);
  posix_spawnattr_setpgroup(&attributes, 0);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_addopen(&files, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&files, 2, path("err").c_str(), O_WRONLY | O_CREAT, 0644);
  pid_t pid = 0;
  ASSERT_EQ(posix_spawn(&pid, argv[0], &files, &attributes, argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&files);
  posix_spawnattr_destroy(&attributes);
  // Until a run on the ranks has started (the first round's line), for at most 60 s.
  std::string err;
  for (int i = 0; i < 600 && err.find(": round 1: ") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    err = read_text(path("err"));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  ASSERT_EQ(::kill(-pid, SIGINT), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  err = read_text(path("err"));
  ASSERT_TRUE(WIFEXITED(status)) << err;
  EXPECT_EQ(WEXITSTATUS(status), 130) << err;
  const std::string work = work_folder(err);
  ASSERT_FALSE(work.empty());
  EXPECT_FALSE(std::filesystem::exists(work));
  EXPECT_EQ(cluster_leftovers(), std::set<std::string>{});
}

}  // namespace
}  // namespace cleave
