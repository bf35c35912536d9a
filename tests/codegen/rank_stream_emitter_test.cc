// Generated rank programs of several samples: each rank's steps sample after sample in the
// plan's order, messages tagged per sample, buffers reused in turn; and the plans refused.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "codegen/rank_cpp_emitter.h"
#include "codegen/worker_program.h"
#include "frontend/auto_search.h"
#include "frontend/costs.h"
#include "frontend/model_plan.h"
#include "frontend/stage_plan.h"
#include "ir/text.h"
#include "machine/machine.h"
#include "support/atomic_output.h"

namespace cleave {
namespace {

namespace fs = std::filesystem;

// A chain of four convolutions with seeded weights: two stages of two on two ranks.
Graph chain() {
  Graph graph = parse_graph(R"(graph main [ai.onnx=17] (%x: f32[1,4,8,8]) {
  @w1: f32[4,4,3,3]
  @w2: f32[4,4,3,3]
  @w3: f32[4,4,3,3]
  @w4: f32[4,4,3,3]
  %a: f32[1,4,8,8] = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%x, @w1)
  %b: f32[1,4,8,8] = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%a, @w2)
  %c: f32[1,4,8,8] = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%b, @w3)
  %y: f32[1,4,8,8] = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%c, @w4)
  return %y
})");
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> uniform(-0.5f, 0.5f);
  for (ValueId id : graph.initializers()) {
    TensorData& data = *graph.value(id).initializer;
    std::vector<float> values(static_cast<std::size_t>(data.element_count()));
    for (float& v : values) v = uniform(rng);
    data = TensorData::from(DataType::kFloat, data.dims, values);
  }
  return graph;
}

// Two one-thread ranks linked at 1 GB/s, 100 us a message.
Machine two_ranks() {
  Machine machine;
  machine.name = "ranks";
  for (int d = 0; d < 2; ++d) {
    Device device;
    device.name = "rank" + std::to_string(d);
    machine.devices.push_back(device);
  }
  machine.bandwidth = {{0, 1e9}, {1e9, 0}};
  machine.latency = {{0, 1e-4}, {1e-4, 0}};
  return machine;
}

// The MPI calls and steps of a generated rank source, one a line, comments left out.
std::vector<std::string> calls(const std::string& source) {
  std::vector<std::string> lines;
  std::istringstream in(source);
  std::string line;
  bool in_body = false;
  while (std::getline(in, line)) {
    if (line.rfind("void rank_", 0) == 0) in_body = true;
    if (!in_body || line.rfind("  ", 0) != 0 || line.rfind("  //", 0) == 0) continue;
    line = line.substr(2, line.find("  //", 2) == std::string::npos ? std::string::npos
                                                                    : line.find("  //", 2) - 2);
    lines.push_back(line);
  }
  return lines;
}

std::string read(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string receive(int c, int slot, int from, int tag) {
  return "p.check(MPI_Irecv(p.message(" + std::to_string(c) + ", " + std::to_string(slot) +
         "), p.capacity(" + std::to_string(c) + "), MPI_BYTE, /*from=*/" + std::to_string(from) +
         ", /*tag=*/" + std::to_string(tag) + ", comm, p.request(" + std::to_string(c) + ", " +
         std::to_string(slot) + ")), " + std::to_string(c) + ", \"MPI_Irecv\");";
}

std::string send(int c, int slot, int sample, int to, int tag) {
  const std::string buffer = std::to_string(c) + ", " + std::to_string(slot);
  return "p.check(MPI_Isend(p.message(" + buffer + "), p.pack(" + buffer + ", " +
         std::to_string(sample) + "), MPI_BYTE, /*to=*/" + std::to_string(to) + ", /*tag=*/" +
         std::to_string(tag) + ", comm, p.request(" + buffer + ")), " + std::to_string(c) +
         ", \"MPI_Isend\");";
}

class RankStreamEmitter : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = fs::temp_directory_path() /
              ("cleave_rank_stream_" + std::to_string(::getpid()) + "_" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(folder_);
    fs::create_directories(folder_);
  }
  void TearDown() override { fs::remove_all(folder_); }

  // The stages of `graph` for `samples` samples, cut 2 + 2.
  ModelPlan stages(const Graph& graph, int samples) const {
    ModelPlan plan = stage_plan(graph, static_costs(graph), two_ranks(), 2, samples);
    EXPECT_EQ(plan.plan.notes["stage_nodes"], nlohmann::json({2, 2}));
    return plan;
  }

  // Writes `plan`'s rank program into gen/ and returns each rank's calls.
  std::vector<std::vector<std::string>> emit(const Graph& graph, const ModelPlan& plan) const {
    CppCodegenOptions options;
    options.blocked_layouts = false;
    options.cleave_root = options.cleave_build = "/nowhere";
    AtomicFolder out((folder_ / "gen").string());
    emit_rank_cpp(graph, worker_program(graph, plan), options, out);
    out.commit();
    return {calls(read(folder_ / "gen" / "rank_0.cc")), calls(read(folder_ / "gen" / "rank_1.cc"))};
  }

  fs::path folder_;
};

// Channel 0 carries b from rank 0 to rank 1 (a buffer per sample in flight), channel 1 the
// output y back (one buffer per sample); sample s's message on channel c has tag s * 2 + c.
TEST_F(RankStreamEmitter, TwoStagesOfTwoSamplesRunSampleAfterSampleWithTagsPerSample) {
  const Graph graph = chain();
  const auto ranks = emit(graph, stages(graph, 2));
  const std::vector<std::string> rank0 = {"MPI_Comm comm = p.comm();",
                                          receive(1, 0, 1, 1),
                                          receive(1, 1, 1, 3),
                                          "p.use_inputs(0);",
                                          "p.step(0);",
                                          "p.step(1);",
                                          send(0, 0, 0, 1, 0),
                                          "p.use_inputs(1);",
                                          "p.step(0);",
                                          "p.step(1);",
                                          send(0, 1, 1, 1, 2),
                                          "p.wait_receive(1, 0, 0);",
                                          "p.take_output(0, 0);",
                                          "p.wait_receive(1, 1, 1);",
                                          "p.take_output(0, 1);",
                                          "p.wait_send(0, 0);",
                                          "p.wait_send(0, 1);"};
  EXPECT_EQ(ranks[0], rank0);
  const std::vector<std::string> rank1 = {"MPI_Comm comm = p.comm();",
                                          receive(0, 0, 0, 0),
                                          receive(0, 1, 0, 2),
                                          "p.wait_receive(0, 0, 0);",
                                          "p.step(2);",
                                          "p.step(3);",
                                          send(1, 0, 0, 0, 1),
                                          "p.wait_receive(0, 1, 1);",
                                          "p.step(2);",
                                          "p.step(3);",
                                          send(1, 1, 1, 0, 3),
                                          "p.wait_send(1, 0);",
                                          "p.wait_send(1, 1);"};
  EXPECT_EQ(ranks[1], rank1);
  const std::string tables = read(folder_ / "gen" / "tables.cc");
  EXPECT_NE(tables.find("kChannels, 2, kRankFunctions, 2}"), std::string::npos) << tables;
  EXPECT_NE(read(folder_ / "gen" / "model.h").find("#define MODEL_SAMPLE_COUNT 2"),
            std::string::npos);
}

// A third sample reuses b's first buffer: rank 1 posts its receive once sample 0's steps are
// done, rank 0 waits for sample 0's send before packing sample 2 into it.
TEST_F(RankStreamEmitter, AThirdSampleTakesTheFirstSamplesBufferOnceItIsFree) {
  const Graph graph = chain();
  const auto ranks = emit(graph, stages(graph, 3));
  const std::vector<std::string>& rank0 = ranks[0];
  const auto at = [](const std::vector<std::string>& lines, const std::string& line) {
    return std::find(lines.begin(), lines.end(), line) - lines.begin();
  };
  const std::ptrdiff_t waited = at(rank0, "p.wait_send(0, 0);");
  ASSERT_LT(waited, static_cast<std::ptrdiff_t>(rank0.size())) << ::testing::PrintToString(rank0);
  EXPECT_EQ(rank0[static_cast<std::size_t>(waited) + 1], send(0, 0, 2, 1, 4));
  EXPECT_GT(waited, at(rank0, send(0, 1, 1, 1, 2)));
  const std::vector<std::string>& rank1 = ranks[1];
  const std::ptrdiff_t reposted = at(rank1, receive(0, 0, 0, 4));
  ASSERT_LT(reposted, static_cast<std::ptrdiff_t>(rank1.size())) << ::testing::PrintToString(rank1);
  EXPECT_EQ(rank1[static_cast<std::size_t>(reposted) - 1], send(1, 0, 0, 0, 1));
  EXPECT_EQ(rank1[static_cast<std::size_t>(reposted) + 1], "p.wait_receive(0, 1, 1);");
  EXPECT_EQ(std::count(rank1.begin(), rank1.end(), "p.step(2);"), 3);
}

// Data-parallel: sample 1 runs on rank 1 as sample 0 does on rank 0, its input handed out and
// its output gathered by rank 0.
TEST_F(RankStreamEmitter, DataParallelSamplesRunOnTheirOwnRanks) {
  const Graph graph = chain();
  const ModelPlan plan =
      plan_data_parallel(graph, static_costs(graph), two_ranks(), 2, ModelValues::kFromRank0);
  const auto ranks = emit(graph, plan);
  EXPECT_EQ(std::count(ranks[0].begin(), ranks[0].end(), "p.step(0);"), 1);
  EXPECT_EQ(std::count(ranks[1].begin(), ranks[1].end(), "p.step(0);"), 1);
  // x of sample 1 (channel 0, tag 1 * 2 + 0) and y of sample 1 (channel 1, tag 3).
  EXPECT_EQ(ranks[0][1], receive(1, 0, 1, 3));
  EXPECT_EQ(ranks[0][2], send(0, 0, 1, 1, 2));
  EXPECT_EQ(ranks[1][1], receive(0, 0, 0, 2));
  EXPECT_EQ(ranks[1][2], "p.wait_receive(0, 0, 1);");
}

TEST_F(RankStreamEmitter, AHyperclusterInterleavingSamplesOnAWorkerIsRefused) {
  const Graph graph = chain();
  ModelPlanOptions options;
  options.strategy = "hypercluster";
  options.samples = 2;
  const ModelPlan plan = plan_model(graph, static_costs(graph), options);
  try {
    worker_program(graph, plan);
    FAIL() << "interleaved samples were taken";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("one after another"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("@"), std::string::npos) << e.what();
  }
}

TEST_F(RankStreamEmitter, ATaskOfSeveralSamplesIsRefusedByName) {
  const Graph graph = chain();
  ModelPlan plan = stages(graph, 2);
  plan.tasks.tasks[0].batch_end = 2;
  try {
    worker_program(graph, plan);
    FAIL() << "a task of two samples was taken";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(plan.tasks.tasks[0].name), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("samples [0, 2)"), std::string::npos) << e.what();
  }
}

// Sample 1's b moved to rank 1: the samples no longer run alike, so one arena layout would not
// serve them.
TEST_F(RankStreamEmitter, SamplesCutDifferentlyAreRefused) {
  const Graph graph = chain();
  ModelPlan plan = stages(graph, 2);
  int moved = -1;
  for (std::size_t t = 0; t < plan.tasks.tasks.size(); ++t) {
    if (plan.tasks.tasks[t].name.find("@1") != std::string::npos &&
        plan.plan.tasks[t].worker == 0 &&
        plan.tasks.tasks[t].node == graph.value(*graph.find_value("b")).producer)
      moved = static_cast<int>(t);
  }
  ASSERT_GE(moved, 0);
  std::vector<int>& first = plan.plan.order[0];
  first.erase(std::find(first.begin(), first.end(), moved));
  std::vector<int>& second = plan.plan.order[1];
  // Before sample 1's first task on rank 1.
  auto sample1 = std::find_if(second.begin(), second.end(), [&](int t) {
    return plan.tasks.tasks[static_cast<std::size_t>(t)].batch_begin == 1;
  });
  second.insert(sample1, moved);
  plan.plan.tasks[static_cast<std::size_t>(moved)].worker = 1;
  try {
    worker_program(graph, plan);
    FAIL() << "samples cut differently were taken";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("sample 1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("differ only in which workers"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace cleave
