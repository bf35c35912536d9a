// `cleave split`: a whole folder of checked sub-models that recombine, or nothing and the reason.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "../cli/command_fixture.h"
#include "ir/text.h"
#include "onnx/onnx_export.h"
#include "onnx/onnx_import.h"
#include "runtime/executor.h"
#include "runtime/parallel_executor.h"
#include "runtime/random_inputs.h"
#include "spatial/split_bench.h"
#include "test_paths.h"

namespace cleave {
namespace {

class SplitCommand : public CommandFixture {
 protected:
  std::string demo() const {
    return std::string(CLEAVE_SOURCE_DIR) + "/models/inception_demo.onnx";
  }

  // Largest difference between the model's outputs and the split folder's: its partitioned
  // graph and plan on the thread executor, one unpinned worker per machine (as bench --split
  // runs it; more machines than this host has cores are fine unpinned).
  double recombined_error(const std::string& model, const std::string& dir) const {
    Graph g = import_onnx(model);
    auto inputs = random_inputs(g, 5);
    Executor whole(g);
    auto expected = whole.run(inputs);
    const BenchedSplit split = load_benched_split(dir, model, {}, /*cores_on_this_host=*/false);
    ParallelOptions options;
    options.pin_threads = false;
    ParallelExecutor executor(split.graph, split.plan.tasks, split.plan.plan, options);
    return max_abs_difference(expected, executor.run(inputs));
  }
};

TEST_F(SplitCommand, WritesCheckedSubModelsThatRecombine) {
  for (const char* dim : {"h", "hw", "c"}) {
    const std::string dir = path(std::string("split_") + dim);
    CommandResult r = cleave("split " + demo() + " --nodes 3 --dim " + dim + " -o " + dir);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("bytes transferred: naive"), std::string::npos) << r.out;
    EXPECT_LT(recombined_error(demo(), dir), 1e-3) << dim;
    const std::string check =
        "/usr/bin/python3 -c \"import onnx,glob,sys; [onnx.checker.check_model(onnx.load(f)) "
        "for f in glob.glob(sys.argv[1] + '/*.onnx')]\" " +
        dir;
    EXPECT_EQ(std::system(check.c_str()), 0) << dim;
  }
}

TEST_F(SplitCommand, AutoPicksADirectionAndReportsJson) {
  for (int nodes : {2, 3, 4}) {
    const std::string dir = path("auto" + std::to_string(nodes));
    CommandResult r = cleave("split " + demo() + " --nodes " + std::to_string(nodes) +
                             " --dim auto --json -o " + dir);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto json = nlohmann::json::parse(r.out);
    EXPECT_EQ(json["candidates"].size(), 4u);
    double fastest = 1e300;
    for (const auto& c : json["candidates"])
      fastest = std::min(fastest, c["predicted_seconds"].get<double>());
    EXPECT_DOUBLE_EQ(json["optimized"]["predicted_seconds"].get<double>(), fastest) << nodes;
    EXPECT_LE(json["optimized"]["transfer_bytes"].get<int64_t>(),
              json["naive"]["transfer_bytes"].get<int64_t>());
    EXPECT_LT(recombined_error(demo(), dir), 1e-3) << nodes;
  }
}

TEST_F(SplitCommand, DrawsThePartitionedGraphAsDotAndSvg) {
  CommandResult r = cleave("split " + demo() + " --nodes 2 --dot " + path("g.dot") + " --svg " +
                           path("g.svg") + " -o " + path("drawn"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream dot(path("g.dot")), svg(path("g.svg"));
  const std::string dot_text((std::istreambuf_iterator<char>(dot)), {});
  const std::string svg_text((std::istreambuf_iterator<char>(svg)), {});
  EXPECT_NE(dot_text.find("digraph"), std::string::npos);
  // The partitioned graph: slices per machine and the Slice nodes that cut halos out.
  EXPECT_NE(dot_text.find("@1"), std::string::npos);
  EXPECT_NE(dot_text.find("Slice"), std::string::npos);
  EXPECT_NE(svg_text.find("<svg"), std::string::npos);
}

TEST_F(SplitCommand, SearchInSecondsRecombines) {
  CommandResult r =
      cleave("split " + demo() + " --nodes 3 --search --objective seconds --costs static -o " +
             path("seconds"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_LT(recombined_error(demo(), path("seconds")), 1e-3);
}

// The seconds search splits its chain optimum and the terms optimum and keeps whichever the
// split's own prediction says is faster: never worse than terms on the same machines.
TEST_F(SplitCommand, SecondsSearchIsNeverPredictedSlowerThanTerms) {
  CommandResult r = cleave("split " + demo() +
                           " --nodes 3 --speeds 1,2,1 --search --objective seconds --costs "
                           "flops --json -o " +
                           path("kept"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto json = nlohmann::json::parse(r.out);
  ASSERT_EQ(json["seconds_search"].size(), 1u);
  const auto& s = json["seconds_search"][0];
  const double chain = s["chain_predicted_seconds"].get<double>();
  const double terms = s["terms_predicted_seconds"].get<double>();
  EXPECT_DOUBLE_EQ(json["optimized"]["predicted_seconds"].get<double>(), std::min(chain, terms));
  EXPECT_EQ(s["kept"].get<std::string>(), terms < chain ? "terms" : "chain");
}

// The costs `cleave plan --machine M --costs profile` plans with (timed here, cached in the
// test's folder), so that the split written is the one the candidate table's spatial row
// predicts.
TEST_F(SplitCommand, SearchInSecondsOnProfiledCostsRecombines) {
  std::ofstream(path("m.json")) << R"({"devices": [{"name": "rank0"}, {"name": "rank1"}],
      "bandwidth": [[0, 1e9], [1e9, 0]], "latency": [[0, 1e-4], [1e-4, 0]]})";
  setenv("CLEAVE_CACHE_DIR", path("cache").c_str(), 1);
  CommandResult r =
      cleave("split " + demo() + " --nodes 2 --machine " + path("m.json") +
             " --search --objective seconds --costs profile --json -o " + path("profiled"));
  unsetenv("CLEAVE_CACHE_DIR");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["seconds_search"].size(), 1u) << r.out;
  EXPECT_LT(recombined_error(demo(), path("profiled")), 1e-3);
}

TEST_F(SplitCommand, RefusesUnknownCostsAndWritesNothing) {
  CommandResult r =
      cleave("split " + demo() + " --nodes 2 --search --objective seconds --costs guessed -o " +
             path("out"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--costs: expected analytical, profile, static or flops, got \"guessed\""),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(path("out")));
}

TEST_F(SplitCommand, RefusesAnUnknownObjectiveAndWritesNothing) {
  CommandResult r =
      cleave("split " + demo() + " --nodes 2 --search --objective fastest -o " + path("out"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--objective: expected terms or seconds"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(path("out")));
}

TEST_F(SplitCommand, BenchTimesTheSplitBesideIntraOpThreads) {
  ASSERT_EQ(cleave("split " + demo() + " --nodes 2 -o " + path("bench")).exit_code, 0);
  CommandResult r = cleave("bench " + demo() + " --costs static --warmup 0 --repeat 2 --json " +
                           "--split " + path("bench"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto json = nlohmann::json::parse(r.out);
  EXPECT_EQ(json["split"]["machines"].get<int>(), 2);
  EXPECT_GT(json["split"]["ms"].get<double>(), 0);
  EXPECT_LT(json["split"]["max_abs_error"].get<double>(), 1e-3);
}

TEST_F(SplitCommand, BenchRefusesASplitOfAnotherModel) {
  Graph g = parse_graph(R"(graph main [ai.onnx=17] (%x: f32[1,2,8,8]) {
  %y: f32[1,2,8,8] = Relu(%x)
  return %y
})");
  export_onnx(g, path("relu.onnx"));
  ASSERT_EQ(cleave("split " + path("relu.onnx") + " --nodes 2 -o " + path("relu")).exit_code, 0);
  CommandResult r = cleave("bench " + demo() + " --costs static --split " + path("relu"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("fingerprints differ"), std::string::npos) << r.err;
  r = cleave("bench " + demo() + " --costs static --split " + path("no_such_folder"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("not a split folder"), std::string::npos) << r.err;
}

// The split is searched and planned on the graph every other family plans (Conv+Relu fused):
// its tasks are the fused nodes, its files standard ONNX all the same, and its outputs the
// model's.
TEST_F(SplitCommand, SplitsTheFusedGraphAndItsTasksAreTheFusedNodes) {
  export_onnx(parse_graph(R"(graph main [ai.onnx=17] (%x: f32[1,2,8,8]) {
  @w1: f32[4,2,3,3] = [0.1, -0.2, 0.3, 0.05, 0.2, -0.1, 0.4, 0.1, -0.3, 0.2, 0.1, -0.1, 0.3, -0.2, 0.1, 0.05, 0.2, -0.3, 0.1, 0.2, -0.1, 0.3, 0.1, -0.2, 0.05, 0.1, 0.2, -0.1, 0.3, 0.2, -0.2, 0.1, 0.1, 0.05, -0.1, 0.2, 0.3, -0.2, 0.1, 0.2, -0.1, 0.1, 0.05, 0.2, -0.3, 0.1, 0.2, -0.1, 0.3, 0.1, -0.2, 0.05, 0.1, 0.2, -0.1, 0.3, 0.2, -0.2, 0.1, 0.1, 0.05, -0.1, 0.2, 0.3, -0.2, 0.1, 0.2, -0.1, 0.1, 0.05, 0.2, -0.3]
  @w2: f32[2,4,1,1] = [0.5, -0.25, 0.125, 0.75, -0.5, 0.25, 0.375, -0.125]
  %c1 = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%x, @w1)
  %r1 = Relu(%c1)
  %c2 = Conv[kernel_shape=[1,1]](%r1, @w2)
  %y = Relu(%c2)
  return %y
})"),
              path("conv_relu.onnx"));
  const std::string dir = path("fused");
  CommandResult r =
      cleave("split " + path("conv_relu.onnx") + " --nodes 2 --dim h --json -o " + dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const BenchedSplit split =
      load_benched_split(dir, path("conv_relu.onnx"), {}, /*cores_on_this_host=*/false);
  int fused_convs = 0;
  for (const Task& task : split.plan.tasks.tasks) {
    const Node& node = split.graph.node(task.node);
    EXPECT_NE(node.op_type, "Relu") << node.name << ": a Relu the split should have fused";
    const Attribute* activation = node.attribute("activation");
    fused_convs += node.op_type == "Conv" && activation && activation->s == "Relu";
  }
  // Each of the two Conv+Relu pairs on each of the two machines.
  EXPECT_EQ(fused_convs, 4);
  EXPECT_LT(recombined_error(path("conv_relu.onnx"), dir), 1e-4);
  const std::string check =
      "/usr/bin/python3 -c \"import onnx,glob,sys; [onnx.checker.check_model(onnx.load(f)) "
      "for f in glob.glob(sys.argv[1] + '/*.onnx')]\" " +
      dir;
  EXPECT_EQ(std::system(check.c_str()), 0);
}

// Two Conv+Relu pairs (fused where loaded with the runtime fusions) as an ONNX file.
std::string write_conv_relu(const std::string& file) {
  export_onnx(parse_graph(R"(graph main [ai.onnx=17] (%x: f32[1,2,8,8]) {
  @w1: f32[4,2,3,3] = [0.1, -0.2, 0.3, 0.05, 0.2, -0.1, 0.4, 0.1, -0.3, 0.2, 0.1, -0.1, 0.3, -0.2, 0.1, 0.05, 0.2, -0.3, 0.1, 0.2, -0.1, 0.3, 0.1, -0.2, 0.05, 0.1, 0.2, -0.1, 0.3, 0.2, -0.2, 0.1, 0.1, 0.05, -0.1, 0.2, 0.3, -0.2, 0.1, 0.2, -0.1, 0.1, 0.05, 0.2, -0.3, 0.1, 0.2, -0.1, 0.3, 0.1, -0.2, 0.05, 0.1, 0.2, -0.1, 0.3, 0.2, -0.2, 0.1, 0.1, 0.05, -0.1, 0.2, 0.3, -0.2, 0.1, 0.2, -0.1, 0.1, 0.05, 0.2, -0.3]
  @w2: f32[2,4,1,1] = [0.5, -0.25, 0.125, 0.75, -0.5, 0.25, 0.375, -0.125]
  %c1 = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%x, @w1)
  %r1 = Relu(%c1)
  %c2 = Conv[kernel_shape=[1,1]](%r1, @w2)
  %y = Relu(%c2)
  return %y
})"),
              file);
  return file;
}

// The split's plan is for partitioned.onnx with the runtime fusions put back: `run
// --no-optimize --plan` loads it so (the plan notes it), as run-split and bench --split do.
TEST_F(SplitCommand, RunsThePartitionedGraphWithItsPlanWithoutOptimizing) {
  const std::string model = write_conv_relu(path("conv_relu.onnx"));
  const std::string dir = path("run_fused");
  CommandResult r = cleave("split " + model + " --nodes 2 --dim h -o " + dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = cleave("run " + dir + "/partitioned.onnx --no-optimize --plan " + dir +
             "/plan.json --repeat 1 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json report = nlohmann::json::parse(r.out);
  EXPECT_EQ(report["plan"]["strategy"], "spatial-split") << r.out;
  EXPECT_EQ(report["plan"]["workers"], 2) << r.out;
}

// Loaded with the graph passes the partitioned graph is another graph: the error names the
// plan, both fingerprints and the commands that run a split.
TEST_F(SplitCommand, RunningTheSplitsPlanOnTheOptimizedGraphSaysHowToRunIt) {
  const std::string model = write_conv_relu(path("conv_relu.onnx"));
  const std::string dir = path("run_optimized");
  CommandResult r = cleave("split " + model + " --nodes 2 --dim h -o " + dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = cleave("run " + dir + "/partitioned.onnx --plan " + dir + "/plan.json --repeat 1");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find(dir + "/plan.json: the plan was made for another model"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("in the plan; it is a `cleave split` folder's plan"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("--no-optimize --plan DIR/plan.json"), std::string::npos) << r.err;
}

TEST_F(SplitCommand, RefusesAnUnsplittableRequestAndWritesNothing) {
  Graph g = parse_graph(R"(graph main [ai.onnx=17] (%x: f32[1,10]) {
  %y: f32[1,10] = Softmax[axis=1](%x)
  return %y
})");
  export_onnx(g, path("softmax.onnx"));
  CommandResult r = cleave("split " + path("softmax.onnx") + " --nodes 2 -o " + path("out"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("never split along its own axis"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(path("out")));
}

TEST_F(SplitCommand, RefusesABadConfigByLayerNameAndWritesNothing) {
  std::ofstream(path("layers.json")) << R"({"layers": {"no_such_layer": {"dim": "w"}}})";
  CommandResult r = cleave("split " + demo() + " --nodes 2 --config " + path("layers.json") +
                           " -o " + path("out"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no_such_layer"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(path("out")));
}

TEST_F(SplitCommand, RefusesAModelThatIsNotOnnxAndWritesNothing) {
  std::ofstream(path("bad.onnx")) << "not a model";
  CommandResult r = cleave("split " + path("bad.onnx") + " --nodes 2 -o " + path("out"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("bad.onnx"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(path("out")));
}

}  // namespace
}  // namespace cleave
