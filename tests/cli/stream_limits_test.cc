// Issue 42 at the command line for stream programs: bounded options, depths, rates and
// iterations, strict --fission specs, and one item check for `stream run` and `codegen --stream`.
#include <fmt/core.h>
#include <gmock/gmock.h>
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "command_fixture.h"
#include "runtime/npy.h"

namespace cleave {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

// x[1,8] -> Relu -> y[1,8]: a model filter popping and pushing one f32[8] item.
void write_relu_model(const std::string& path) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  auto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(17);
  auto* graph = model.mutable_graph();
  graph->set_name("relu");
  const auto typed = [](onnx::ValueInfoProto* info, const std::string& name) {
    info->set_name(name);
    auto* tensor = info->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(onnx::TensorProto::FLOAT);
    tensor->mutable_shape()->add_dim()->set_dim_value(1);
    tensor->mutable_shape()->add_dim()->set_dim_value(8);
  };
  typed(graph->add_input(), "x");
  typed(graph->add_output(), "y");
  auto* node = graph->add_node();
  node->set_op_type("Relu");
  node->set_name("relu");
  node->add_input("x");
  node->add_output("y");
  std::ofstream(path, std::ios::binary) << model.SerializeAsString();
}

class StreamLimitsCommand : public CommandFixture {
 protected:
  void SetUp() override {
    CommandFixture::SetUp();
    std::ofstream(path("p.json")) << R"({"pipeline": {"name": "p", "streams": [
      {"filter": {"name": "a", "pop": 1, "push": 1, "op": "identity"}}]}})";
    write_npy(path("x.npy"), Tensor::allocate(DataType::kFloat, {4, 8}));
  }
  // `stream run p.json` with `options`.
  CommandResult run(const std::string& options) const {
    return cleave("stream run " + path("p.json") + " --input x=" + path("x.npy") + " " + options);
  }
  static void expect_clean(const CommandResult& r) {
    for (const char* raw : {"json.exception", "internal error", "std::", "bad_alloc"}) {
      EXPECT_THAT(r.err, Not(HasSubstr(raw)));
    }
  }
};

TEST_F(StreamLimitsCommand, WorkerCountsOutsideOneTo1024AreRefused) {
  for (const std::string workers : {"0", "-5", "1025", "100000", "1000000"}) {
    const CommandResult r = run("--workers " + workers);
    EXPECT_NE(r.exit_code, 0) << workers;
    EXPECT_THAT(r.err, HasSubstr("--workers"));
    EXPECT_THAT(r.err, HasSubstr("expected an integer from 1 to 1024, got " + workers));
  }
  EXPECT_EQ(run("--workers 2").exit_code, 0);
}

TEST_F(StreamLimitsCommand, ItemCountsBelowOneOrHugeAreRefused) {
  for (const std::string items : {"0", "-1", "9223372036854775807", "1000001"}) {
    const CommandResult r = run("--items " + items);
    EXPECT_NE(r.exit_code, 0) << items;
    EXPECT_THAT(r.err, HasSubstr("--items"));
    EXPECT_THAT(r.err, HasSubstr("expected an integer from 1 to 1000000, got " + items));
    expect_clean(r);
  }
  const CommandResult fractional = run("--items 1e12");
  EXPECT_NE(fractional.exit_code, 0);
  EXPECT_THAT(fractional.err, HasSubstr("--items"));
  EXPECT_THAT(fractional.err, HasSubstr("expected an integer, got '1e12'"));
  expect_clean(fractional);
}

TEST_F(StreamLimitsCommand, CapacityFactorBelowOneIsRefusedNotADeadlock) {
  const CommandResult r = run("--capacity-factor 0");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("--capacity-factor"));
  EXPECT_THAT(r.err, HasSubstr("expected an integer from 1 to 1024, got 0"));
  EXPECT_THAT(r.err, Not(HasSubstr("deadlocked")));
  EXPECT_EQ(run("--capacity-factor 1").exit_code, 0);
}

TEST_F(StreamLimitsCommand, MalformedFissionSpecsAreRefusedNamingTheSpec) {
  const CommandResult bad = run("--fission lin=2:2:2");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.err, HasSubstr("--fission \"lin=2:2:2\": GRANULARITY must be an integer"));
  const CommandResult huge = run("--fission lin=2:1000000000");
  EXPECT_EQ(huge.exit_code, 1);
  EXPECT_THAT(huge.err, HasSubstr("--fission \"lin=2:1000000000\": GRANULARITY must be an "
                                  "integer from 1 to 1048576"));
  const CommandResult twice = run("--fission a=2:1 --fission a=3:1");
  EXPECT_EQ(twice.exit_code, 1);
  EXPECT_THAT(twice.err, HasSubstr("filter \"a\" is split by an earlier --fission"));
}

TEST_F(StreamLimitsCommand, HugePeekIsRefusedAndNoOutputFolderIsLeft) {
  std::ofstream(path("peek.json")) << R"({"pipeline": {"name": "p", "streams": [
    {"filter": {"name": "w", "pop": 1, "peek": 1099511627776, "push": 1, "op": "slice"}}]}})";
  const CommandResult r = cleave("stream run " + path("peek.json") + " --input x=" + path("x.npy") +
                                 " --output-dir " + path("out"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr(path("peek.json") +
                               ": pipeline.streams[0].filter.peek: expected an integer from 1 to "
                               "1048576, got 1099511627776"));
  EXPECT_FALSE(fs::exists(path("out")));
}

TEST_F(StreamLimitsCommand, DeeplyNestedProgramIsRefusedNotACrash) {
  std::string text;
  for (int i = 0; i < 7000; ++i)
    text += fmt::format(R"({{"pipeline": {{"name": "p{}", "streams": [)", i);
  text += R"({"filter": {"name": "f", "pop": 1, "push": 1, "op": "identity"}})";
  for (int i = 0; i < 7000; ++i) text += "]}}";
  std::ofstream(path("deep.json")) << text;
  for (const std::string& command :
       {"stream schedule " + path("deep.json"),
        "stream run " + path("deep.json") + " --input x=" + path("x.npy")}) {
    const CommandResult r = cleave(command);
    EXPECT_EQ(r.exit_code, 1) << command << r.err;
    EXPECT_THAT(r.err, HasSubstr(path("deep.json") +
                                 ": pipeline \"p255\": streams nest deeper than 256 levels"));
  }
}

TEST_F(StreamLimitsCommand, IncludeOfAFolderNamesIt) {
  fs::create_directories(path("dir"));
  std::ofstream(path("inc.json")) << R"({"pipeline": {"name": "p", "streams": [
    {"include": "dir"}]}})";
  const CommandResult r = cleave("stream schedule " + path("inc.json"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr(path("dir") + ": is a folder, expected a stream program"));
  expect_clean(r);
}

TEST_F(StreamLimitsCommand, IncludesNestedPastTheDepthLimitAreRefused) {
  // Each file includes the next: 300 levels of includes.
  for (int i = 0; i < 300; ++i) {
    std::ofstream(path(fmt::format("i{}.json", i)))
        << fmt::format(R"({{"include": "i{}.json"}})", i + 1);
  }
  std::ofstream(path("i300.json")) << R"({"filter": {"name": "f", "pop": 1, "push": 1,
                                         "op": "identity"}})";
  const CommandResult r = cleave("stream schedule " + path("i0.json"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr(path("i255.json") + ": include: include of \"" + path("i256.json") +
                               "\": streams nest deeper than 256 levels"));
}

TEST_F(StreamLimitsCommand, HugeSteadyStateIsRefusedSayingHowManyItemsItNeeds) {
  // Eight concat filters with prime pops: one iteration needs 9699690 input items.
  std::string streams;
  int index = 0;
  for (int prime : {2, 3, 5, 7, 11, 13, 17, 19}) {
    streams +=
        fmt::format(R"({}{{"filter": {{"name": "c{}", "pop": {}, "push": 1, "op": "concat"}}}})",
                    index ? "," : "", index, prime);
    ++index;
  }
  std::ofstream(path("primes.json"))
      << R"({"pipeline": {"name": "primes", "streams": [)" + streams + "]}}";
  const CommandResult schedule = cleave("stream schedule " + path("primes.json"));
  EXPECT_EQ(schedule.exit_code, 0) << schedule.err;
  EXPECT_THAT(schedule.out, HasSubstr("steady state: 9699690 input items -> 1 output items"));
  const CommandResult r =
      cleave("stream run " + path("primes.json") + " --input x=" + path("x.npy") + " --items 20");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("needs 9699690 input items"));
  EXPECT_THAT(r.err, HasSubstr("at most 1000000 firings per iteration"));
}

TEST_F(StreamLimitsCommand, DeeplyNestedStreamitTextIsRefusedNotACrash) {
  // The filter function and a program function nesting 10000 pipelines, as --lang streamit
  // writes them.
  std::string text =
      "// f: identity\n"
      "stream_t filter_f() {\n"
      "  return filter<tensor_t, tensor_t>(\"f\", /*pop=*/1, /*peek=*/1, /*push=*/1, work);\n"
      "}\n"
      "stream_t stream_top() {\n"
      "  return ";
  for (int i = 0; i < 10000; ++i) {
    text += fmt::format("pipeline<tensor_t, tensor_t>([&](auto p) {{  // p{}\n p->add(", i);
  }
  text += "filter_f()";
  for (int i = 0; i < 10000; ++i) text += ");\n})";
  text += ";\n}\n";
  std::ofstream(path("stream.cc")) << text;
  write_relu_model(path("m.onnx"));
  const CommandResult r = cleave("codegen " + path("m.onnx") + " --stream " + path("stream.cc") +
                                 " --lang cpp -o " + path("gen"));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.out + r.err, HasSubstr("pipeline nests deeper than 256 levels of streams"));
  EXPECT_FALSE(fs::exists(path("gen")));
}

TEST_F(StreamLimitsCommand, JoinOfTwoItemTypesIsRefusedByRunAndCodegenAlike) {
  write_relu_model(path("m.onnx"));
  std::ofstream(path("mix.json")) << R"({"pipeline": {"name": "top", "streams": [
    {"filter": {"name": "net", "pop": 1, "push": 1, "model": "m.onnx"}},
    {"splitjoin": {"name": "both", "split": "duplicate", "streams": [
      {"filter": {"name": "pass", "pop": 1, "push": 1, "op": "identity"}},
      {"filter": {"name": "cat", "pop": 2, "push": 1, "op": "concat"}}],
      "join": {"roundrobin": [2, 1]}}}]}})";
  const std::string message =
      ": splitjoin \"both\": joiner receives f32[8] from one branch and f32[16] from another";
  const CommandResult run =
      cleave("stream run " + path("mix.json") + " --input x=" + path("x.npy"));
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.err, HasSubstr(path("mix.json") + message));
  const CommandResult codegen = cleave("codegen " + path("m.onnx") + " --stream " +
                                       path("mix.json") + " --lang cpp -o " + path("gen"));
  EXPECT_EQ(codegen.exit_code, 1);
  EXPECT_THAT(codegen.out + codegen.err, HasSubstr(path("mix.json") + message));
  EXPECT_FALSE(fs::exists(path("gen")));
}

}  // namespace
}  // namespace cleave
