// `cleave stream`: schedule --json, run of a program file, conversion, and refusals.
#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "../stream/test_models.h"
#include "ir/text.h"
#include "onnx/onnx_export.h"
#include "runtime/npy.h"
#include "test_paths.h"

namespace cleave {
namespace {

using ::testing::HasSubstr;

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

class StreamCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::scratch_dir(::testing::UnitTest::GetInstance()->current_test_info()->name());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  static std::string read_text(const std::string& file) {
    std::ifstream in(file);
    std::stringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
  }
  CommandResult cleave(const std::string& arguments) const {
    const std::string command = std::string(CLEAVE_BINARY) + " " + arguments + " >" +
                                path("stdout") + " 2>" + path("stderr");
    const int status = std::system(command.c_str());
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, read_text(path("stdout")),
            read_text(path("stderr"))};
  }
  std::filesystem::path dir_;
};

TEST_F(StreamCommand, ScheduleJsonHasRepetitionsInitAndBuffers) {
  std::ofstream(path("p.json")) << R"({"pipeline": {"name": "p", "streams": [
    {"filter": {"name": "a", "pop": 1, "push": 2, "model": "a.onnx"}},
    {"filter": {"name": "b", "pop": 3, "peek": 4, "push": 1, "model": "b.onnx"}}]}})";
  const CommandResult r = cleave("stream schedule " + path("p.json") + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // a pushes 2, b pops 3: a 3 times, b twice; b's extra peeked item needs one init firing.
  EXPECT_THAT(r.out, HasSubstr("\"repetitions\": {\n    \"a\": 3,\n    \"b\": 2\n  }"));
  EXPECT_THAT(r.out, HasSubstr("\"init\": {\n    \"a\": 1,\n    \"b\": 0\n  }"));
  EXPECT_THAT(r.out, HasSubstr("\"a->b\": 8"));
}

TEST_F(StreamCommand, InconsistentProgramFailsNamingFileAndSplitJoin) {
  std::ofstream(path("bad.json")) << R"({"splitjoin": {"name": "s", "split": "duplicate",
    "streams": [{"filter": {"name": "a", "pop": 1, "push": 1, "model": "a.onnx"}},
                {"filter": {"name": "b", "pop": 1, "push": 2, "model": "b.onnx"}}],
    "join": {"roundrobin": [1, 1]}}})";
  const CommandResult r = cleave("stream schedule " + path("bad.json"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("cleave: error: " + path("bad.json") + ": splitjoin \"s\""));
  EXPECT_THAT(r.out, ::testing::IsEmpty());
}

TEST_F(StreamCommand, RunWritesTheOutputItems) {
  std::ofstream(path("p.json")) << R"({"filter": {"name": "cat", "pop": 2, "push": 1,
    "op": "concat"}})";
  Tensor items = Tensor::allocate(DataType::kFloat, {4, 3});
  for (int i = 0; i < 12; ++i) items.data<float>()[i] = static_cast<float>(i);
  write_npy(path("in.npy"), items);
  const CommandResult r = cleave("stream run " + path("p.json") + " --input x=" + path("in.npy") +
                                 " --items 8 --workers 2 --output-dir " + path("out") + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\"outputs\": 4"));
  const Tensor out = read_npy(path("out/output.npy"));
  ASSERT_EQ(out.shape(), (std::vector<int64_t>{4, 6}));
  // Items repeat the file's 4 rows: output 2 is rows 0 and 1 again.
  EXPECT_EQ(out.values<float>()[12], 0.0f);
  EXPECT_EQ(out.values<float>()[17], 5.0f);
}

TEST_F(StreamCommand, ConvertsAModelToAStream) {
  export_onnx(parse_graph(R"(graph g (%x: f32[1,4]) {
  %a: f32[1,4] = Relu(%x)
  %b: f32[1,4] = Sigmoid(%a)
  %c: f32[1,4] = Tanh(%a)
  %y: f32[1,4] = Add(%b, %c)
  return %y
})"),
              path("m.onnx"));
  const CommandResult r = cleave("stream " + path("m.onnx") + " --dot " + path("m.dot"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("var4 = Add(var2, var3)"));
  EXPECT_THAT(r.out, HasSubstr("split duplicate;"));
  EXPECT_THAT(r.out, HasSubstr("replicated: 0 filters"));
  EXPECT_THAT(read_text(path("m.dot")), HasSubstr("digraph stream"));
}

TEST_F(StreamCommand, MalformedProgramFailsWithoutOutput) {
  std::ofstream(path("bad.json")) << "{\"filter\": {\"name\": \"f\", ";
  const CommandResult r = cleave("stream run " + path("bad.json") +
                                 " --input x=" + path("none.npy") + " --output-dir " + path("out"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr(path("bad.json") + ": not valid JSON"));
  EXPECT_FALSE(std::filesystem::exists(path("out")));
}

constexpr const char* kTwoInputs = R"(graph g (%x: f32[1,2], %y: f32[1,2]) {
  %s: f32[1,2] = Add(%x, %y)
  %t: f32[1,2] = Mul(%s, %y)
  return %t
})";

Tensor rows(std::vector<float> values) {
  Tensor t = Tensor::allocate(DataType::kFloat, {static_cast<int64_t>(values.size() / 2), 1, 2});
  std::copy(values.begin(), values.end(), t.data<float>());
  return t;
}

TEST_F(StreamCommand, RunReadsEachGraphInputFromTheInputsFolder) {
  export_onnx(parse_graph(kTwoInputs), path("m.onnx"));
  std::filesystem::create_directories(path("in"));
  write_npy(path("in/x.npy"), rows({1, 2, 3, 4}));
  write_npy(path("in/y.npy"), rows({10, 20, 30, 40}));
  const CommandResult r = cleave("stream run " + path("m.onnx") + " --inputs " + path("in") +
                                 " --output-dir " + path("out"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Tensor out = read_npy(path("out/output.npy"));
  // (x + y) * y per item.
  EXPECT_EQ(out.values<float>()[0], 110.0f);
  EXPECT_EQ(out.values<float>()[3], 1760.0f);
}

TEST_F(StreamCommand, InputsFolderWithoutAGraphInputsFileIsRefusedNamingIt) {
  export_onnx(parse_graph(kTwoInputs), path("m.onnx"));
  std::filesystem::create_directories(path("in"));
  write_npy(path("in/x.npy"), rows({1, 2}));
  const CommandResult r = cleave("stream run " + path("m.onnx") + " --inputs " + path("in") +
                                 " --output-dir " + path("out"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("missing y.npy for graph input \"y\""));
  EXPECT_FALSE(std::filesystem::exists(path("out")));
}

TEST_F(StreamCommand, InputsFolderWithAnExtraFileIsRefusedNamingIt) {
  export_onnx(parse_graph(kTwoInputs), path("m.onnx"));
  std::filesystem::create_directories(path("in"));
  for (const char* name : {"x", "y", "z"}) write_npy(path("in/") + name + ".npy", rows({1, 2}));
  const CommandResult r = cleave("stream run " + path("m.onnx") + " --inputs " + path("in"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr(path("in/z.npy") + " names no graph input (inputs: x, y)"));
}

TEST_F(StreamCommand, LoopWithDynamicTripCountIsRefusedNamingTheNode) {
  export_onnx(parse_graph(R"(graph g (%x: f32[1,2], %m: i64[]) {
  %v: f32[1,2] = "loop" Loop[body=graph body (%i: i64[], %c: bool[], %v_in: f32[1,2]) {
    %w: f32[1,2] = Relu(%v_in)
    return %c, %w
  }](%m, _, %x)
  return %v
})"),
              path("m.onnx"));
  const CommandResult r = cleave("stream " + path("m.onnx"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("node 'loop' (Loop): its trip count M is not a constant"));
  EXPECT_THAT(r.out, ::testing::IsEmpty());
}

constexpr const char* kFused = R"(graph g (%x: f32[1,4]) {
  %g: f32[1,4] = Relu(%x)
  %f: f32[1,4] = Tanh(%x)
  %s: f32[1,4] = Add(%g, %f)
  %h: f32[1,4] = Sigmoid(%x)
  %t: f32[1,4] = Add(%g, %h)
  return %s, %t
})";

TEST_F(StreamCommand, NoReplicateReadsTheSharedValueAndComputesTheSameOutputs) {
  export_onnx(parse_graph(kFused), path("m.onnx"));
  Tensor x = Tensor::allocate(DataType::kFloat, {3, 1, 4});
  for (int i = 0; i < 12; ++i) x.data<float>()[i] = 0.5f * static_cast<float>(i - 6);
  write_npy(path("x.npy"), x);
  const CommandResult printed = cleave("stream " + path("m.onnx") + " --no-replicate");
  ASSERT_EQ(printed.exit_code, 0) << printed.err;
  EXPECT_THAT(printed.out, HasSubstr("identity reads &v1;"));
  EXPECT_THAT(printed.out, HasSubstr("by reference: 1 reader filters"));
  for (const char* mode : {"", " --no-replicate"}) {
    const CommandResult r =
        cleave("stream run " + path("m.onnx") + " --input x=" + path("x.npy") + " --workers 2" +
               mode + " --output-dir " + path(mode[0] ? "by_ref" : "replicated"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  const Tensor a = read_npy(path("replicated/output.npy"));
  const Tensor b = read_npy(path("by_ref/output.npy"));
  const auto av = a.values<float>();
  const auto bv = b.values<float>();
  ASSERT_EQ(av.size(), 24u);
  EXPECT_EQ(std::vector<float>(av.begin(), av.end()), std::vector<float>(bv.begin(), bv.end()));
}

TEST_F(StreamCommand, StagesCutAModelIntoThatManyFilters) {
  export_onnx(parse_graph(kTwoInputs), path("m.onnx"));
  const CommandResult r = cleave("stream " + path("m.onnx") + " --stages 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("filter stage0(pop 2, peek 2, push 2)"));
  EXPECT_THAT(r.out, HasSubstr("filter stage1(pop 2, peek 2, push 1)"));
  EXPECT_THAT(r.out, HasSubstr("2 stages: nodes 1 1"));
  const CommandResult bad = cleave("stream " + path("m.onnx") + " --stages 3");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.err, HasSubstr("3 stages for a graph of 2 nodes"));
}

// --json reports each actor's worker and cost, the placement's prediction and the workers'
// CPU evidence; --placement picks the method, --trace writes one event per firing.
TEST_F(StreamCommand, RunJsonReportsPlacementPredictionAndWorkerCpu) {
  std::ofstream(path("p.json")) << R"({"pipeline": {"name": "p", "streams": [
    {"filter": {"name": "a", "pop": 1, "push": 1, "op": "identity"}},
    {"filter": {"name": "b", "pop": 2, "push": 1, "op": "concat"}}]}})";
  write_npy(path("in.npy"), Tensor::allocate(DataType::kFloat, {4, 3}));
  const CommandResult r =
      cleave("stream run " + path("p.json") + " --input x=" + path("in.npy") +
             " --items 8 --workers 2 --placement contiguous --costs flops --trace " +
             path("trace.json") + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["placement"]["method"], "contiguous");
  EXPECT_EQ(j["placement"]["costs"], "flops");
  ASSERT_EQ(j["placement"]["actors"].size(), 2u);
  EXPECT_EQ(j["placement"]["actors"][0]["name"], "a");
  EXPECT_GT(j["predicted_items_per_second"].get<double>(), 0);
  EXPECT_GT(j["bound_items_per_second"].get<double>(), 0);
  EXPECT_EQ(j["worker_cpu_seconds"].size(), 2u);
  EXPECT_EQ(j["worker_preempted"].size(), 2u);
  // a fires 8 times, b 4 times.
  const nlohmann::json trace = nlohmann::json::parse(read_text(path("trace.json")));
  EXPECT_EQ(trace["traceEvents"].size(), 12u);
}

TEST_F(StreamCommand, UnknownPlacementIsRefused) {
  std::ofstream(path("p.json")) << R"({"filter": {"name": "a", "pop": 1, "push": 1,
    "op": "identity"}})";
  write_npy(path("in.npy"), Tensor::allocate(DataType::kFloat, {4, 3}));
  const CommandResult r = cleave("stream run " + path("p.json") + " --input x=" + path("in.npy") +
                                 " --placement spread");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("--placement"));
}

}  // namespace
}  // namespace cleave
