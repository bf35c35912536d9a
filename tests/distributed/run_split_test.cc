// `mpirun -np 2 cleave run-split DIR` on a hand-written split of Neg(Relu(x)) along H (its
// partitioned graph, plan and manifest): the outputs equal the whole model's, and bad folders
// are refused on every rank.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "../busy_processes.h"
#include "../cli/command_fixture.h"
#include "ir/text.h"
#include "onnx/onnx_export.h"
#include "runtime/npy.h"
#include "runtime/random_inputs.h"
#include "spatial/manifest.h"
#include "spatial/submodel_export.h"
#include "test_paths.h"

namespace cleave {
namespace {

class RunSplitTest : public CommandFixture {
 protected:
  void SetUp() override {
    CommandFixture::SetUp();
    std::filesystem::create_directories(path("split"));
    export_onnx(parse_graph(R"(graph whole [ai.onnx=17] (%x: f32[1,1,4,4]) {
  %r = Relu(%x)
  %y = Neg(%r)
  return %y
}
)"),
                path("whole.onnx"));
    // Machine 0: Relu of all rows, sends rows 2-3 to machine 1, negates rows 0-1 itself.
    export_onnx(parse_graph(R"(graph m0s0 [ai.onnx=17] (%x: f32[1,1,4,4]) {
  %t0 = Relu(%x)
  return %t0
}
)"),
                path("split/m0_s0.onnx"));
    export_onnx(
        parse_graph(R"(graph m0s1 [ai.onnx=17] (%t0: f32[1,1,4,4], %lower_neg: f32[1,1,2,4]) {
  @starts: i64[1] = [0]
  @ends: i64[1] = [2]
  @axes: i64[1] = [2]
  %top = Slice(%t0, @starts, @ends, @axes)
  %top_neg = Neg(%top)
  %y = Concat[axis=2](%top_neg, %lower_neg)
  return %y
}
)"),
        path("split/m0_s1.onnx"));
    export_onnx(parse_graph(R"(graph m1s0 [ai.onnx=17] (%lower: f32[1,1,2,4]) {
  %lower_neg = Neg(%lower)
  return %lower_neg
}
)"),
                path("split/m1_s0.onnx"));
    write_partitioned();
    manifest_ = nlohmann::json::parse(R"({
  "format": "cleave-split", "version": 1, "model": "whole.onnx", "fingerprint": "", "machines": 2,
  "inputs": [{"name": "x", "dtype": "float32", "shape": [1, 1, 4, 4]}],
  "outputs": [{"name": "y", "dtype": "float32", "shape": [1, 1, 4, 4], "machine": 0}],
  "steps": [
    [
      {"op": "run", "model": "m0_s0.onnx", "inputs": ["x"], "outputs": ["t0"]},
      {"op": "send", "to": 1, "tensor": "t0", "region": [[0, 1], [0, 1], [2, 4], [0, 4]],
       "name": "lower", "dtype": "float32", "shape": [1, 1, 2, 4], "bytes": 32, "tag": 0},
      {"op": "recv", "from": 1, "name": "lower_neg", "dtype": "float32", "shape": [1, 1, 2, 4],
       "bytes": 32, "tag": 1},
      {"op": "run", "model": "m0_s1.onnx", "inputs": ["t0", "lower_neg"], "outputs": ["y"]}
    ],
    [
      {"op": "recv", "from": 0, "name": "lower", "dtype": "float32", "shape": [1, 1, 2, 4],
       "bytes": 32, "tag": 0},
      {"op": "run", "model": "m1_s0.onnx", "inputs": ["lower"], "outputs": ["lower_neg"]},
      {"op": "send", "to": 0, "tensor": "lower_neg", "region": [[0, 1], [0, 1], [0, 2], [0, 4]],
       "name": "lower_neg", "dtype": "float32", "shape": [1, 1, 2, 4], "bytes": 32, "tag": 1}
    ]
  ]
})");
    manifest_["fingerprint"] = file_fingerprint(path("whole.onnx"));
    write_manifest();
    Value x;
    x.name = "x";
    x.dtype = DataType::kFloat;
    x.shape = Shape::of({1, 1, 4, 4});
    write_npy(path("x.npy"), random_tensor(x, 9));
  }

  void write_manifest() { std::ofstream(path("split/manifest.json")) << manifest_.dump(1); }

  // The split as it runs, as `cleave split` writes it: the partitioned graph, its third node
  // (`lower_neg`, made from the rows machine 0 sends) on machine 1 and the rest on machine 0,
  // ending in `tail`, and its plan.
  void write_partitioned(
      const std::string& lower_neg = "%lower_neg = Neg(%lower)",
      const std::string& tail = "%y = Concat[axis=2](%top_neg, %lower_neg)") const {
    PartitionedGraph split;
    split.graph = parse_graph(R"(graph partitioned [ai.onnx=17] (%x: f32[1,1,4,4]) {
  @lower_starts: i64[1] = [2]
  @lower_ends: i64[1] = [4]
  @top_starts: i64[1] = [0]
  @top_ends: i64[1] = [2]
  @axes: i64[1] = [2]
  %t0 = Relu(%x)
  %lower = Slice(%t0, @lower_starts, @lower_ends, @axes)
  )" + lower_neg + R"(
  %top = Slice(%t0, @top_starts, @top_ends, @axes)
  %top_neg = Neg(%top)
  )" + tail + R"(
  return %y
}
)");
    split.machines = 2;
    split.machine.assign(split.graph.node_capacity(), 0);
    split.machine[2] = 1;
    write_partitioned_graph(split, path("split/partitioned.onnx"), path("split/plan.json"));
  }

  nlohmann::json manifest_;
};

TEST_F(RunSplitTest, TwoRanksEqualTheWholeModel) {
  ASSERT_EQ(cleave("run " + path("whole.onnx") + " --input x=" + path("x.npy") + " --output-dir " +
                   path("whole"))
                .exit_code,
            0);
  CommandResult result =
      mpirun(2, "run-split " + path("split") + " --model " + path("whole.onnx") + " --input x=" +
                    path("x.npy") + " --warmup 1 --repeat 3 --json --output-dir " + path("ranks"));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  nlohmann::json report = nlohmann::json::parse(result.out);
  // Per run (the figures are the last run's); message buffers are reused from run to run.
  EXPECT_EQ(report["per_rank"][1]["messages_sent"], 1);
  EXPECT_EQ(report["layouts"], "blocked");
  Tensor expected = read_npy(path("whole/y.npy"));
  Tensor got = read_npy(path("ranks/y.npy"));
  ASSERT_EQ(got.describe(), expected.describe());
  EXPECT_EQ(got.to_double_vector(), expected.to_double_vector());
  // Half the rows were negated on rank 1, so both halves are non-trivially equal.
  EXPECT_NE(expected.to_double_vector(), std::vector<double>(16, 0.0));
}

// --trace: rank 0 writes the last run's tasks of every rank, each rank a process row (what the
// split's breakdown per rank in docs/results/distributed.md is read from); a trace file in a
// folder that does not exist is refused before any rank runs.
TEST_F(RunSplitTest, TheTraceHoldsEveryRanksTasks) {
  CommandResult result = mpirun(2, "run-split " + path("split") + " --input x=" + path("x.npy") +
                                       " --repeat 2 --json --trace " + path("trace.json"));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const nlohmann::json trace = nlohmann::json::parse(read_text(path("trace.json")));
  std::set<int> ranks;
  std::set<std::string> tasks;
  for (const nlohmann::json& event : trace["traceEvents"]) {
    if (event["ph"] != "X") continue;
    ranks.insert(event["pid"].get<int>());
    tasks.insert(event["name"].get<std::string>());
    EXPECT_GE(event["dur"].get<double>(), 0) << event.dump();
  }
  EXPECT_EQ(ranks, (std::set<int>{0, 1}));
  EXPECT_EQ(tasks.size(),
            nlohmann::json::parse(read_text(path("split/plan.json")))["tasks"].size());
  CommandResult missing =
      mpirun(2, "run-split " + path("split") + " --trace " + path("no_such_folder/trace.json"));
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.err.find("no_such_folder"), std::string::npos) << missing.err;
}

// A stream of samples through the split: every sample's message crosses the ranks in one
// call, the report gives the stream's throughput, and the first sample's outputs are still
// the whole model's.
TEST_F(RunSplitTest, SamplesStreamThroughTheRanks) {
  ASSERT_EQ(
      cleave("run " + path("whole.onnx") + " --seed 4 --output-dir " + path("whole")).exit_code, 0);
  CommandResult result =
      mpirun(2, "run-split " + path("split") +
                    " --seed 4 --samples 3 --repeat 2 --json --output-dir " + path("ranks"));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  nlohmann::json report = nlohmann::json::parse(result.out);
  EXPECT_EQ(report["samples"], 3);
  EXPECT_GT(report["throughput_samples_per_s"].get<double>(), 0);
  EXPECT_EQ(report["sample_latency_ms"]["per_sample"].size(), 3u);
  // Rank 1 sends its rows back once per sample.
  EXPECT_EQ(report["per_rank"][1]["messages_sent"], 3);
  EXPECT_EQ(read_npy(path("ranks/y.npy")).to_double_vector(),
            read_npy(path("whole/y.npy")).to_double_vector());
  CommandResult text = mpirun(2, "run-split " + path("split") + " --samples 2");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("stream     2 sample(s): "), std::string::npos) << text.out;
}

TEST_F(RunSplitTest, SamplesOutsideOneTo4096AreRefused) {
  for (const char* value : {"0", "-2", "4097", "1e30", "two"}) {
    CommandResult result = cleave("run-split " + path("split") + " --samples=" + value);
    EXPECT_NE(result.exit_code, 0) << value;
    EXPECT_NE(result.err.find("--samples"), std::string::npos) << value << ": " << result.err;
    EXPECT_NE(result.err.find("expected an integer"), std::string::npos)
        << value << ": " << result.err;
  }
}

TEST_F(RunSplitTest, TheLayoutsOptionReachesEveryRank) {
  CommandResult result =
      mpirun(2, "run-split " + path("split") +
                    " --layouts channels-last --input x=" + path("x.npy") + " --json");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(nlohmann::json::parse(result.out)["layouts"], "channels-last");
  CommandResult unknown = mpirun(2, "run-split " + path("split") + " --layouts fastest");
  EXPECT_NE(unknown.exit_code, 0);
  EXPECT_NE(unknown.err.find("--layouts"), std::string::npos) << unknown.err;
}

// With every core held by another process, the ranks run one thread each; --fixed-threads
// keeps the two asked for.
TEST_F(RunSplitTest, RanksShareTheCoresOtherProcessesLeaveFree) {
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  if (cores > 8)
    GTEST_SKIP() << "fills every core with a busy process: wants at most 8, has " << cores;
  unsetenv("CLEAVE_FIXED_THREADS");
  const std::string run =
      "run-split " + path("split") + " --input x=" + path("x.npy") + " --threads 2 --json";
  BusyProcesses busy(cores + 1);
  CommandResult adapted = mpirun(2, run);
  ASSERT_EQ(adapted.exit_code, 0) << adapted.err;
  nlohmann::json report = nlohmann::json::parse(adapted.out);
  EXPECT_EQ(report["threads_per_rank"], 1) << adapted.out;
  EXPECT_EQ(report["threads_requested"], 2);
  for (const auto& rank : report["per_rank"]) EXPECT_EQ(rank["threads"], 1) << rank;
  CommandResult fixed = mpirun(2, run + " --fixed-threads");
  ASSERT_EQ(fixed.exit_code, 0) << fixed.err;
  report = nlohmann::json::parse(fixed.out);
  EXPECT_EQ(report["threads_per_rank"], 2);
  for (const auto& rank : report["per_rank"]) EXPECT_EQ(rank["threads"], 2) << rank;
}

TEST_F(RunSplitTest, SubModelOutsideTheFolderIsRefusedOnEveryRank) {
  manifest_["steps"][1][1]["model"] = "../whole.onnx";
  write_manifest();
  CommandResult result = mpirun(2, "run-split " + path("split") + " --output-dir " + path("out"));
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.err.find("steps[1][1].model: expected a file name inside the split folder, "
                            "got \"../whole.onnx\""),
            std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("so rank 1 stops too"), std::string::npos) << result.err;
  EXPECT_FALSE(std::filesystem::exists(path("out")));
}

TEST_F(RunSplitTest, SplitOfAnotherModelIsRefused) {
  export_onnx(parse_graph(R"(graph other [ai.onnx=17] (%x: f32[1,1,4,4]) {
  %y = Relu(%x)
  return %y
}
)"),
              path("other.onnx"));
  CommandResult result = mpirun(2, "run-split " + path("split") + " --model " + path("other.onnx") +
                                       " --output-dir " + path("out"));
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.err.find("made from another model"), std::string::npos) << result.err;
  EXPECT_FALSE(std::filesystem::exists(path("out")));
}

TEST_F(RunSplitTest, MachineCountOtherThanRanksIsRefused) {
  CommandResult result = mpirun(3, "run-split " + path("split"));
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.err.find("the split is for 2 machines, but 3 ranks were started"),
            std::string::npos)
      << result.err;
}

TEST(SplitManifestTest, SendWithoutRecvIsRefusedByTag) {
  auto folder =
      std::filesystem::temp_directory_path() / ("cleave_manifest_" + std::to_string(::getpid()));
  std::filesystem::create_directories(folder);
  std::ofstream(folder / "manifest.json") << R"({"format": "cleave-split", "version": 1,
    "model": "m.onnx", "fingerprint": "", "machines": 2, "inputs": [], "outputs": [{"name": "t", "dtype": "float32", "shape": [2]}],
    "steps": [[
      {"op": "send", "to": 1, "tensor": "t", "region": [[0, 2]], "name": "u", "dtype": "float32",
       "shape": [2], "bytes": 8, "tag": 5}], []]})";
  try {
    read_manifest((folder / "manifest.json").string());
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "manifest.json: steps: the send with tag 5 (machine 0 to 1) has no matching"),
              std::string::npos)
        << e.what();
  }
  std::filesystem::remove_all(folder);
}

// A partitioned graph that moves another type than the manifest says is not the split the
// manifest (and so --model) vouches for; it is refused on every rank before the first run.
TEST_F(RunSplitTest, PartitionedGraphSendingAnotherTypeIsRefused) {
  write_partitioned("%lower_neg = Cast[to=11](%lower)",
                    "%back = Cast[to=1](%lower_neg)\n  %y = Concat[axis=2](%top_neg, %back)");
  CommandResult result = mpirun(2, "run-split " + path("split") + " --output-dir " + path("out"));
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.err.find("partitioned.onnx: 'lower_neg' is f64[1,1,2,4], but the manifest "
                            "sends it (tag 1) as float32 region [0:1,0:1,0:2,0:4]"),
            std::string::npos)
      << result.err;
  EXPECT_FALSE(std::filesystem::exists(path("out")));
}

TEST_F(RunSplitTest, PartitionedGraphOutputOfAnotherTypeIsRefused) {
  write_partitioned("%lower_neg = Neg(%lower)",
                    "%joined = Concat[axis=2](%top_neg, %lower_neg)\n  %y = Cast[to=6](%joined)");
  CommandResult result = mpirun(2, "run-split " + path("split") + " --output-dir " + path("out"));
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.err.find("partitioned.onnx: output 'y' is i32[1,1,4,4], but the manifest's "
                            "outputs say float32[1,1,4,4]"),
            std::string::npos)
      << result.err;
  EXPECT_FALSE(std::filesystem::exists(path("out")));
}

// A split runs from its partitioned graph and plan: a folder without them (made by hand, or
// with only the sub-models) is refused on every rank, saying how to make one.
TEST_F(RunSplitTest, FolderWithoutThePlanIsRefused) {
  std::filesystem::remove(path("split/plan.json"));
  CommandResult result = mpirun(2, "run-split " + path("split") + " --output-dir " + path("out"));
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.err.find(path("split") +
                            ": not a split folder (no plan.json; write one with `cleave split`)"),
            std::string::npos)
      << result.err;
  EXPECT_FALSE(std::filesystem::exists(path("out")));
}

TEST_F(RunSplitTest, RankTimeoutMustBeFiniteAndAtMostAWeek) {
  for (const char* value : {"1e300", "nan", "0", "604801"}) {
    CommandResult result = cleave("run-split " + path("split") + " --rank-timeout " + value);
    EXPECT_NE(result.exit_code, 0) << value;
    EXPECT_NE(result.err.find("--rank-timeout: expected seconds from 0.001 to 604800 (one week)"),
              std::string::npos)
        << result.err;
  }
  CommandResult run = cleave("run " + path("whole.onnx") + " --rank-timeout 1e10");
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.err.find("--rank-timeout: expected seconds from 0.001 to 604800 (one week), got "
                         "10000000000"),
            std::string::npos)
      << run.err;
}

// The manifest reader's errors name the file and the field path, never the JSON library.
class ManifestFieldTest : public RunSplitTest {
 protected:
  std::string refusal() {
    write_manifest();
    try {
      read_manifest(file());
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_EQ(message.find("json.exception"), std::string::npos) << message;
      return message;
    }
    ADD_FAILURE() << "accepted";
    return "";
  }
  std::string file() const { return path("split/manifest.json"); }
};

TEST_F(ManifestFieldTest, MissingStepsAreNamed) {
  manifest_.erase("steps");
  EXPECT_EQ(refusal(), file() + ": steps: missing, expected a field \"steps\"");
}

TEST_F(ManifestFieldTest, WrongTypeIsNamedWithItsPath) {
  manifest_["steps"][0][1]["region"][2] = "rows";
  EXPECT_EQ(refusal(), file() + ": steps[0][1].region[2]: expected an array, got \"rows\"");
}

TEST_F(ManifestFieldTest, NoOutputsAreRefused) {
  manifest_["outputs"] = nlohmann::json::array();
  EXPECT_EQ(refusal(), file() + ": outputs: expected at least one output, got []");
}

TEST_F(ManifestFieldTest, HugeMachineCountSaysTheBound) {
  manifest_["machines"] = 1e30;
  EXPECT_EQ(refusal(), file() + ": machines: expected an integer from 1 to 1024, got 1e+30");
  manifest_["machines"] = 0;
  EXPECT_EQ(refusal(), file() + ": machines: expected an integer from 1 to 1024, got 0");
}

TEST_F(ManifestFieldTest, TransferOfTwoTypesIsRefused) {
  manifest_["steps"][1][0]["dtype"] = "int32";
  EXPECT_NE(refusal().find(": steps: the send with tag 0 (machine 0 to 1) and its recv (machine 1 "
                           "from 0) disagree"),
            std::string::npos);
}

}  // namespace
}  // namespace cleave
