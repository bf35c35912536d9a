// Generated programs of several samples, on ranks and on worker threads: each rank or worker
// loops over its samples in the plan's order, values handed over per sample in buffers used in
// turn (messages tagged per sample); and the plans refused.
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
#include "codegen/sample_stream_emitter.h"
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

// The calls and steps of a generated rank or worker source, one a line, comments left out.
std::vector<std::string> calls(const std::string& source) {
  std::vector<std::string> lines;
  std::istringstream in(source);
  std::string line;
  bool in_body = false;
  while (std::getline(in, line)) {
    if (line.rfind("void rank_", 0) == 0 || line.rfind("void worker_", 0) == 0) in_body = true;
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

// A receive or send as the loop form writes it: buffer and sample are C++ expressions.
std::string receive(int c, const std::string& slot, int from, const std::string& sample,
                    int channels) {
  const std::string buffer = std::to_string(c) + ", " + slot;
  return "p.check(MPI_Irecv(p.message(" + buffer + "), p.capacity(" + std::to_string(c) +
         "), MPI_BYTE, /*from=*/" + std::to_string(from) + ", /*tag=*/" + sample + " * " +
         std::to_string(channels) + " + " + std::to_string(c) + ", comm, p.request(" + buffer +
         ")), " + std::to_string(c) + ", \"MPI_Irecv\");";
}

std::string send(int c, const std::string& slot, int to, int channels) {
  const std::string buffer = std::to_string(c) + ", " + slot;
  return "p.check(MPI_Isend(p.message(" + buffer + "), p.pack(" + buffer +
         ", s), MPI_BYTE, /*to=*/" + std::to_string(to) + ", /*tag=*/s * " +
         std::to_string(channels) + " + " + std::to_string(c) + ", comm, p.request(" + buffer +
         ")), " + std::to_string(c) + ", \"MPI_Isend\");";
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
  std::vector<std::vector<std::string>> emit(const Graph& graph, const ModelPlan& plan,
                                             const std::string& name = "gen") const {
    CppCodegenOptions options;
    options.blocked_layouts = false;
    options.cleave_root = options.cleave_build = "/nowhere";
    AtomicFolder out((folder_ / name).string());
    emit_rank_cpp(graph, worker_program(graph, plan), options, out);
    out.commit();
    return {calls(read(folder_ / name / "rank_0.cc")), calls(read(folder_ / name / "rank_1.cc"))};
  }

  // Writes `plan`'s worker-thread program into gen/ and returns each worker's calls.
  std::vector<std::vector<std::string>> emit_threads(const Graph& graph,
                                                     const ModelPlan& plan) const {
    CppCodegenOptions options;
    options.blocked_layouts = false;
    options.cleave_root = options.cleave_build = "/nowhere";
    AtomicFolder out((folder_ / "gen").string());
    emit_sample_stream_cpp(graph, worker_program(graph, plan), options, out);
    out.commit();
    return {calls(read(folder_ / "gen" / "worker_0.cc")),
            calls(read(folder_ / "gen" / "worker_1.cc"))};
  }

  fs::path folder_;
};

// Channel 0 carries b from rank 0 to rank 1 (two buffers, used in turn), channel 1 the output
// y back (a buffer per sample); sample s's message on channel c has tag s * 2 + c. Each rank
// loops over the samples, its steps once in the loop's body.
TEST_F(RankStreamEmitter, TwoStagesOfThreeSamplesLoopWithBuffersAndTagsPerSample) {
  const Graph graph = chain();
  const auto ranks = emit(graph, stages(graph, 3));
  const std::vector<std::string> rank0 = {"MPI_Comm comm = p.comm();",
                                          "for (int j = 0; j < 3; ++j) {",
                                          "  const int s = j;",
                                          "  " + receive(1, "j", 1, "s", 2),
                                          "}",
                                          "for (int k = 0; k < 3; ++k) {",
                                          "  const int s = k;",
                                          "  p.use_inputs(s);",
                                          "  p.step(0);",
                                          "  p.step(1);",
                                          "  if (k >= 2) p.wait_send(0, k % 2);",
                                          "  " + send(0, "k % 2", 1, 2),
                                          "}",
                                          "for (int j = 0; j < 3; ++j) {",
                                          "  const int s = j;",
                                          "  p.wait_receive(1, j, s);",
                                          "  p.take_output(0, s);",
                                          "}",
                                          "for (int j = 0; j < 2; ++j) p.wait_send(0, j);"};
  EXPECT_EQ(ranks[0], rank0);
  const std::vector<std::string> rank1 = {"MPI_Comm comm = p.comm();",
                                          "for (int j = 0; j < 2; ++j) {",
                                          "  const int s = j;",
                                          "  " + receive(0, "j", 0, "s", 2),
                                          "}",
                                          "for (int k = 0; k < 3; ++k) {",
                                          "  const int s = k;",
                                          "  p.wait_receive(0, k % 2, s);",
                                          "  p.step(2);",
                                          "  p.step(3);",
                                          "  " + send(1, "k", 0, 2),
                                          "  if (k + 2 < 3) {",
                                          "    const int later = s + 2;",
                                          "    " + receive(0, "k % 2", 0, "later", 2),
                                          "  }",
                                          "}",
                                          "for (int j = 0; j < 3; ++j) p.wait_send(1, j);"};
  EXPECT_EQ(ranks[1], rank1);
  const std::string tables = read(folder_ / "gen" / "tables.cc");
  EXPECT_NE(tables.find("kChannels, 2, kRankFunctions, 3}"), std::string::npos) << tables;
  EXPECT_NE(read(folder_ / "gen" / "model.h").find("#define MODEL_SAMPLE_COUNT 3"),
            std::string::npos);
}

// The loop's bounds change with the samples, not the source's length.
TEST_F(RankStreamEmitter, TheSourcesDoNotGrowWithTheSamples) {
  const Graph graph = chain();
  const auto few = emit(graph, stages(graph, 3));
  const auto many = emit(graph, stages(graph, 32), "many");
  ASSERT_EQ(many.size(), 2u);
  EXPECT_EQ(few[0].size(), many[0].size());
  EXPECT_EQ(few[1].size(), many[1].size());
  EXPECT_NE(std::find(many[1].begin(), many[1].end(), "for (int k = 0; k < 32; ++k) {"),
            many[1].end())
      << ::testing::PrintToString(many[1]);
}

// Data-parallel: rank 0 runs samples 0 and 2, rank 1 samples 1 and 3 as sample 0 runs on rank 0;
// rank 0 hands out rank 1's inputs when the run starts and gathers its outputs at the end.
TEST_F(RankStreamEmitter, DataParallelRanksLoopOverTheirOwnSamples) {
  const Graph graph = chain();
  const ModelPlan plan =
      plan_data_parallel(graph, static_costs(graph), two_ranks(), 4, ModelValues::kFromRank0);
  const auto ranks = emit(graph, plan);
  const std::vector<std::string> rank0 = {"MPI_Comm comm = p.comm();",
                                          "for (int j = 0; j < 2; ++j) {",
                                          "  const int s = 1 + 2 * j;",
                                          "  " + receive(1, "j", 1, "s", 2),
                                          "}",
                                          "for (int j = 0; j < 2; ++j) {",
                                          "  const int s = 1 + 2 * j;",
                                          "  " + send(0, "j", 1, 2),
                                          "}",
                                          "for (int k = 0; k < 2; ++k) {",
                                          "  const int s = 2 * k;",
                                          "  p.use_inputs(s);",
                                          "  p.step(0);",
                                          "  p.step(1);",
                                          "  p.step(2);",
                                          "  p.step(3);",
                                          "  p.take_output(0, s);",
                                          "}",
                                          "for (int j = 0; j < 2; ++j) {",
                                          "  const int s = 1 + 2 * j;",
                                          "  p.wait_receive(1, j, s);",
                                          "  p.take_output(0, s);",
                                          "}",
                                          "for (int j = 0; j < 2; ++j) p.wait_send(0, j);"};
  EXPECT_EQ(ranks[0], rank0);
  const std::vector<std::string> rank1 = {"MPI_Comm comm = p.comm();",
                                          "for (int j = 0; j < 2; ++j) {",
                                          "  const int s = 1 + 2 * j;",
                                          "  " + receive(0, "j", 0, "s", 2),
                                          "}",
                                          "for (int k = 0; k < 2; ++k) {",
                                          "  const int s = 1 + 2 * k;",
                                          "  p.wait_receive(0, k, s);",
                                          "  p.step(0);",
                                          "  p.step(1);",
                                          "  p.step(2);",
                                          "  p.step(3);",
                                          "  " + send(1, "k", 0, 2),
                                          "}",
                                          "for (int j = 0; j < 2; ++j) p.wait_send(1, j);"};
  EXPECT_EQ(ranks[1], rank1);
}

// Worker threads: stage 0 sends b of sample s into buffer s % 2, stage 1 receives it and
// writes the sample's output; each worker reads its own samples' inputs.
TEST_F(RankStreamEmitter, WorkerThreadStagesLoopOverSamplesWithTwoBuffersBetweenThem) {
  const Graph graph = chain();
  const auto workers = emit_threads(graph, stages(graph, 3));
  const std::vector<std::string> worker0 = {"for (int k = 0; k < 3; ++k) {",
                                            "  const int s = k;",
                                            "  p.use_inputs(s);",
                                            "  p.step(0);",
                                            "  p.step(1);",
                                            "  p.send(0, k % 2, s);",
                                            "}"};
  EXPECT_EQ(workers[0], worker0);
  const std::vector<std::string> worker1 = {"for (int k = 0; k < 3; ++k) {",
                                            "  const int s = k;",
                                            "  p.receive(0, k % 2, s);",
                                            "  p.step(2);",
                                            "  p.step(3);",
                                            "  p.take_output(0, s);",
                                            "}"};
  EXPECT_EQ(workers[1], worker1);
  const std::string tables = read(folder_ / "gen" / "tables.cc");
  EXPECT_NE(tables.find("kStream = {&kTables, kChannels, 1, kStreamWorkers, 3}"), std::string::npos)
      << tables;
  EXPECT_NE(read(folder_ / "gen" / "model.h").find("#define MODEL_SAMPLE_COUNT 3"),
            std::string::npos);
  EXPECT_NE(read(folder_ / "gen" / "main.cc").find("sample_stream_main"), std::string::npos);
}

// Data-parallel worker threads: no value crosses; worker 1 runs samples 1 and 3 with sample 0's
// steps.
TEST_F(RankStreamEmitter, DataParallelWorkerThreadsLoopOverTheirOwnSamples) {
  const Graph graph = chain();
  const ModelPlan plan =
      plan_data_parallel(graph, static_costs(graph), two_ranks(), 4, ModelValues::kFromRank0);
  const auto workers = emit_threads(graph, plan);
  for (int w = 0; w < 2; ++w) {
    const std::vector<std::string> expected = {
        "for (int k = 0; k < 2; ++k) {",
        w == 0 ? "  const int s = 2 * k;" : "  const int s = 1 + 2 * k;",
        "  p.use_inputs(s);",
        "  p.step(0);",
        "  p.step(1);",
        "  p.step(2);",
        "  p.step(3);",
        "  p.take_output(0, s);",
        "}"};
    EXPECT_EQ(workers[w], expected) << w;
  }
  EXPECT_NE(read(folder_ / "gen" / "tables.cc").find("kChannels, 0, kStreamWorkers, 4}"),
            std::string::npos);
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
