// Issue 24 at the command line: bounded options and plan fields, outputs whole or absent, and
// errors that name the file, the field and the expectation (never "internal error").
#include <gmock/gmock.h>
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "command_fixture.h"
#include "test_paths.h"

namespace cleave {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

// x[rows,4] -> Relu -> logits, x -> Neg -> scores: two outputs, no weights, fast to run and
// plan.
void write_two_output_model(const std::string& path, int64_t rows = 1) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  auto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(17);
  auto* graph = model.mutable_graph();
  graph->set_name("two");
  const auto typed = [rows](onnx::ValueInfoProto* info, const std::string& name) {
    info->set_name(name);
    auto* tensor = info->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(onnx::TensorProto::FLOAT);
    tensor->mutable_shape()->add_dim()->set_dim_value(rows);
    tensor->mutable_shape()->add_dim()->set_dim_value(4);
  };
  typed(graph->add_input(), "x");
  for (const auto& [op, output] : {std::pair{"Relu", "logits"}, std::pair{"Neg", "scores"}}) {
    auto* node = graph->add_node();
    node->set_op_type(op);
    node->set_name(std::string(op) + "_node");
    node->add_input("x");
    node->add_output(output);
    typed(graph->add_output(), output);
  }
  std::ofstream(path, std::ios::binary) << model.SerializeAsString();
}

// shape[2] = {side, side} (an int64 initializer) -> ConstantOfShape "huge" -> y (float).
void write_constant_of_shape_model(const std::string& path, int64_t side) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  auto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(17);
  auto* graph = model.mutable_graph();
  graph->set_name("huge");
  auto* shape = graph->add_initializer();
  shape->set_name("shape");
  shape->set_data_type(onnx::TensorProto::INT64);
  shape->add_dims(2);
  shape->add_int64_data(side);
  shape->add_int64_data(side);
  auto* node = graph->add_node();
  node->set_op_type("ConstantOfShape");
  node->set_name("huge");
  node->add_input("shape");
  node->add_output("y");
  auto* output = graph->add_output();
  output->set_name("y");
  output->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  std::ofstream(path, std::ios::binary) << model.SerializeAsString();
}

// A STRING initializer read by Identity: the runtime has no string kernels.
void write_string_model(const std::string& path) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  auto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(17);
  auto* graph = model.mutable_graph();
  graph->set_name("strings");
  auto* words = graph->add_initializer();
  words->set_name("words");
  words->set_data_type(onnx::TensorProto::STRING);
  words->add_dims(2);
  words->add_string_data("a");
  words->add_string_data("b");
  auto* node = graph->add_node();
  node->set_op_type("Identity");
  node->set_name("copy");
  node->add_input("words");
  node->add_output("y");
  auto* output = graph->add_output();
  output->set_name("y");
  output->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::STRING);
  std::ofstream(path, std::ios::binary) << model.SerializeAsString();
}

// Every path left in the test's folder whose name marks a temporary or partial file.
std::vector<std::string> leftovers(const fs::path& folder) {
  std::vector<std::string> found;
  for (const auto& entry : fs::recursive_directory_iterator(folder)) {
    const std::string name = entry.path().filename().string();
    if (name.find(".partial") != std::string::npos || name.find(".tmp") != std::string::npos) {
      found.push_back(entry.path().string());
    }
  }
  return found;
}

class HardenCommandTest : public CommandFixture {
 protected:
  void SetUp() override {
    CommandFixture::SetUp();
    model_ = path("two.onnx");
    write_two_output_model(model_);
    setenv("CLEAVE_CACHE_DIR", path("cache").c_str(), 1);
  }
  void TearDown() override {
    unsetenv("CLEAVE_CACHE_DIR");
    CommandFixture::TearDown();
  }

  // A plan of the model on two workers, as `cleave plan -o` writes it, parsed.
  nlohmann::json make_plan() {
    CommandResult planned =
        cleave("plan " + model_ + " --strategy lc --costs static --workers 2 -o " + path("p.json"));
    EXPECT_EQ(planned.exit_code, 0) << planned.err;
    return nlohmann::json::parse(read_text(path("p.json")));
  }

  CommandResult run_with_plan(const nlohmann::json& plan) {
    std::ofstream(path("edited.json")) << plan.dump();
    return cleave("run " + model_ + " --layouts blocked --plan " + path("edited.json"));
  }

  std::string model_;
};

// The crash of the issue: 100000 threads per worker died inside libgomp.
TEST_F(HardenCommandTest, APlanAskingForTooManyThreadsIsRefusedByField) {
  nlohmann::json plan = make_plan();
  plan["threads_per_worker"] = 100000;
  CommandResult result = run_with_plan(plan);
  EXPECT_EQ(result.exit_code, 1) << result.err;
  EXPECT_THAT(result.err, AllOf(HasSubstr("edited.json: threads_per_worker: expected an integer "
                                          "from 1 to 1024, got 100000"),
                                Not(HasSubstr("internal error"))));
}

TEST_F(HardenCommandTest, APlanPinningToACoreThisHostLacksIsRefused) {
  nlohmann::json plan = make_plan();
  plan["task_graph"]["devices"][0]["cores"] = {99999};
  CommandResult result = run_with_plan(plan);
  EXPECT_EQ(result.exit_code, 1) << result.err;
  EXPECT_THAT(result.err, HasSubstr("task_graph.devices[0].cores[0]: core 99999 does not exist"));
}

TEST_F(HardenCommandTest, APlanNamingAnUnknownConvolutionFamilyIsRefusedByField) {
  nlohmann::json plan = make_plan();
  plan["convolution_family"] = "fastest";
  CommandResult result = run_with_plan(plan);
  EXPECT_EQ(result.exit_code, 1) << result.err;
  EXPECT_THAT(result.err, AllOf(HasSubstr("edited.json: convolution_family: expected \"blocked\", "
                                          "\"winograd\" or \"channels-last\""),
                                Not(HasSubstr("internal error"))));
}

TEST_F(HardenCommandTest, APlanWithNegativeTimesIsRefused) {
  nlohmann::json plan = make_plan();
  plan["task_graph"]["tasks"][0]["time"][0] = -1.0;
  CommandResult result = run_with_plan(plan);
  EXPECT_EQ(result.exit_code, 1) << result.err;
  EXPECT_THAT(result.err, AllOf(HasSubstr("edited.json"), HasSubstr("time")));
}

TEST_F(HardenCommandTest, APlanFileOfTheWrongShapeNamesTheField) {
  for (const std::string text : {"[]", "null", "{}"}) {
    std::ofstream(path("bad.json")) << text;
    CommandResult result =
        cleave("run " + model_ + " --layouts blocked --plan " + path("bad.json"));
    EXPECT_EQ(result.exit_code, 1) << text << result.err;
    EXPECT_THAT(result.err, AllOf(HasSubstr("bad.json"), Not(HasSubstr("json.exception")),
                                  Not(HasSubstr("internal error"))))
        << text;
  }
  nlohmann::json plan = make_plan();
  plan.erase("task_graph");
  CommandResult result = run_with_plan(plan);
  EXPECT_THAT(result.err, HasSubstr("edited.json: task_graph: missing"));
}

TEST_F(HardenCommandTest, APlanThatIsAFolderIsNamed) {
  fs::create_directory(path("plan_dir"));
  CommandResult result = cleave("run " + model_ + " --layouts blocked --plan " + path("plan_dir"));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.err, AllOf(HasSubstr("plan_dir: is a folder, expected a plan file"),
                                Not(HasSubstr("internal error"))));
}

TEST_F(HardenCommandTest, CountsAndSecondsOutsideTheirRangeAreRefusedReadably) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"run " + model_ + " --repeat 0", "expected an integer from 1 to"},
      {"run " + model_ + " --warmup -1", "expected an integer from 0 to"},
      {"bench " + model_ + " --warmup -5", "expected an integer from 0 to"},
      {"conformance " + path(".") + " --timeout 0", "expected a finite number of seconds > 0"},
      {"conformance " + path(".") + " --timeout -1", "expected a finite number of seconds > 0"},
      {"schedule t.json --gap nan", "expected a finite number in [0, 1], got nan"},
      {"schedule t.json --time-limit nan", "expected a finite number of seconds > 0, got nan"},
      {"plan " + model_ + " --time-limit 0", "expected a finite number of seconds > 0"},
      {"plan " + model_ + " --threads-per-worker 100000", "expected an integer from 1 to 1024"},
  };
  for (const auto& [arguments, expected] : cases) {
    CommandResult result = cleave(arguments);
    EXPECT_NE(result.exit_code, 0) << arguments;
    EXPECT_THAT(result.err + result.out, AllOf(HasSubstr(expected), Not(HasSubstr("e+308"))))
        << arguments;
  }
}

// Two times of 1e308 summed to infinity, and the error blamed another task's memory.
TEST_F(HardenCommandTest, HugeTaskTimesAreRefusedNamingTheirTask) {
  std::ofstream(path("t.json")) << R"({"devices": [{"name": "cpu"}],
    "tasks": [{"name": "a", "time": [1e308]}, {"name": "b", "time": [1e308]},
              {"name": "c", "time": [0.001], "output_bytes": 16}],
    "edges": [["a", "b"], ["b", "c"]]})";
  for (const std::string algo : {"heft", "met", "greedy"}) {
    CommandResult result = cleave("schedule " + path("t.json") + " --algo " + algo);
    EXPECT_EQ(result.exit_code, 1) << algo << result.err;
    EXPECT_THAT(result.err, AllOf(HasSubstr("t.json: task \"a\": time[0] (cpu)"),
                                  HasSubstr("up to 1e+09"), Not(HasSubstr("memory"))))
        << algo;
  }
}

TEST_F(HardenCommandTest, ProfileThreadsAreCappedAtTheCoresUnlessForced) {
  CommandResult result = cleave("profile " + model_ + " --max-threads 1024 --repeat 1 --json");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.err, HasSubstr("--max-threads: 1024 threads requested"));
  const nlohmann::json table = nlohmann::json::parse(result.out);
  EXPECT_LT(table["nodes"][0]["seconds"].size(), 1024u);
}

// An edited cache with negative times predicted 0 ms; it is measured again instead.
TEST_F(HardenCommandTest, AProfileCacheWithNegativeTimesIsMeasuredAgain) {
  ASSERT_EQ(cleave("profile " + model_ + " --max-threads 1 --repeat 1").exit_code, 0);
  int edited = 0;
  for (const auto& entry : fs::recursive_directory_iterator(path("cache/profiles"))) {
    nlohmann::json table = nlohmann::json::parse(read_text(entry.path()));
    for (auto& node : table["nodes"]) node["seconds"][0] = -1.0;
    std::ofstream(entry.path()) << table.dump();
    ++edited;
  }
  ASSERT_EQ(edited, 1);
  CommandResult again = cleave("profile " + model_ + " --max-threads 1 --repeat 1 --json");
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_THAT(again.err,
              AllOf(HasSubstr("measuring again"), HasSubstr("expected a finite number >= 0")));
  for (const auto& node : nlohmann::json::parse(again.out)["nodes"]) {
    EXPECT_GE(node["seconds"][0].get<double>(), 0);
  }
}

// With logits.npy a folder, neither output may be written and nothing temporary may stay.
TEST_F(HardenCommandTest, RunOutputsAreWrittenWholeOrNotAtAll) {
  fs::create_directories(path("out/logits.npy"));
  CommandResult result = cleave("run " + model_ + " --output-dir " + path("out"));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.err, AllOf(HasSubstr("logits.npy: cannot write: it is a folder"),
                                Not(HasSubstr("internal error"))));
  EXPECT_FALSE(fs::exists(path("out/scores.npy")));
  EXPECT_TRUE(leftovers(folder_).empty());

  fs::remove_all(path("out"));
  CommandResult written = cleave("run " + model_ + " --output-dir " + path("out"));
  ASSERT_EQ(written.exit_code, 0) << written.err;
  EXPECT_TRUE(fs::is_regular_file(path("out/logits.npy")));
  EXPECT_TRUE(fs::is_regular_file(path("out/scores.npy")));
  EXPECT_TRUE(leftovers(folder_).empty());
}

TEST_F(HardenCommandTest, AnOutputDirThatIsAFileIsNamed) {
  std::ofstream(path("file")) << "x";
  CommandResult result = cleave("run " + model_ + " --output-dir " + path("file"));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.err, AllOf(HasSubstr("file: cannot write the output folder: it is a file"),
                                Not(HasSubstr("internal error"))));
  EXPECT_TRUE(leftovers(folder_).empty());
}

TEST_F(HardenCommandTest, PlanToAFolderLeavesNothing) {
  fs::create_directory(path("dir"));
  CommandResult result = cleave("plan " + model_ + " --costs static -o " + path("dir"));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.err, HasSubstr("dir: cannot write: it is a folder, expected a file"));
  EXPECT_TRUE(leftovers(folder_).empty());
  EXPECT_TRUE(fs::is_empty(path("dir")));
}

TEST_F(HardenCommandTest, ExpectationsToAFolderLeaveNothing) {
  fs::create_directory(path("dir"));
  CommandResult result =
      cleave("conformance " + path(".") + " --write-expectations " + path("dir"));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.err, HasSubstr("dir: cannot write: it is a folder, expected a file"));
  EXPECT_TRUE(leftovers(folder_).empty());
}

TEST_F(HardenCommandTest, ScheduleAndExportToAFolderLeaveNothing) {
  fs::create_directory(path("dir"));
  const std::string machine =
      " --machine " + std::string(CLEAVE_SOURCE_DIR) + "/machines/this_machine.json";
  CommandResult exported =
      cleave("export-tasks " + model_ + machine + " --costs static -o " + path("dir"));
  EXPECT_EQ(exported.exit_code, 1);
  EXPECT_THAT(exported.err, HasSubstr("dir: cannot write: it is a folder"));
  ASSERT_EQ(
      cleave("export-tasks " + model_ + machine + " --costs static -o " + path("t.json")).exit_code,
      0);
  CommandResult scheduled = cleave("schedule " + path("t.json") + " -o " + path("dir"));
  EXPECT_EQ(scheduled.exit_code, 1);
  EXPECT_THAT(scheduled.err, HasSubstr("dir: cannot write: it is a folder"));
  EXPECT_TRUE(leftovers(folder_).empty());
}

// 2^31 x 2^31 floats are 2^64 bytes: the error names the node and the shape that made them.
TEST_F(HardenCommandTest, AnOverflowingOutputNamesTheNodeAndShape) {
  write_constant_of_shape_model(path("huge.onnx"), int64_t{1} << 31);
  CommandResult result = cleave("run " + path("huge.onnx") + " --no-optimize");
  EXPECT_EQ(result.exit_code, 1) << result.err;
  EXPECT_THAT(result.err,
              AllOf(HasSubstr("huge.onnx: node 'huge' (ConstantOfShape)"),
                    HasSubstr("shape [2147483648,2147483648]"), Not(HasSubstr("internal error"))));
}

// The issue's input declared [0,4] was reported as [1,4]; inspect shows what run computes.
TEST_F(HardenCommandTest, InspectReportsAnEmptyInputAsDeclared) {
  write_two_output_model(path("empty.onnx"), 0);
  CommandResult result = cleave("inspect " + path("empty.onnx") + " --json");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const nlohmann::json report = nlohmann::json::parse(result.out);
  EXPECT_EQ(report["inputs"][0]["type"], "f32[0,4]");
  EXPECT_EQ(report["outputs"][0]["type"], "f32[0,4]");
  EXPECT_EQ(report["activation_bytes"], 0);
}

TEST_F(HardenCommandTest, AStringInitializerIsNamedAsSuch) {
  write_string_model(path("strings.onnx"));
  CommandResult result = cleave("run " + path("strings.onnx") + " --no-optimize");
  EXPECT_NE(result.exit_code, 0);
  EXPECT_THAT(result.err, AllOf(HasSubstr("'words'"), HasSubstr("STRING"),
                                Not(HasSubstr("has no data")), Not(HasSubstr("internal error"))));
}

}  // namespace
}  // namespace cleave
