// `cleave inspect`: the JSON report of a generated model, and DOT output Graphviz accepts.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include "test_paths.h"

namespace {

namespace fs = std::filesystem;

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout only; stderr is appended when `with_errors`
};

CommandResult run(const std::string& command, bool with_errors = true) {
  CommandResult result;
  FILE* pipe = popen((command + (with_errors ? " 2>&1" : "")).c_str(), "r");
  if (!pipe) return result;
  std::array<char, 4096> buffer;
  while (std::fgets(buffer.data(), buffer.size(), pipe)) result.output += buffer.data();
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

std::string cleave(const std::string& arguments) {
  return std::string(CLEAVE_BINARY) + " " + arguments;
}

class InspectCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = fs::temp_directory_path() /
              ("cleave_inspect_test_" + std::to_string(::getpid()) + "_" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(folder_);
    fs::create_directories(folder_);
    model_ = (folder_ / "model.onnx").string();
    ASSERT_EQ(
        run(cleave("gen inception --blocks 2 --channels 8 --size 8x8 -o " + model_)).exit_code, 0);
  }
  void TearDown() override { fs::remove_all(folder_); }

  fs::path folder_;
  std::string model_;
};

TEST_F(InspectCommand, JsonParsesAndCountsTheGeneratedNodes) {
  CommandResult result = run(cleave("inspect --json " + model_), false);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  nlohmann::json json = nlohmann::json::parse(result.output);
  EXPECT_EQ(json["node_count"], 2 + 2 * 14 + 3);
  EXPECT_EQ(json["nodes"].size(), 2u + 2 * 14 + 3);
  EXPECT_EQ(json["nodes_with_unknown_flops"], 0);
  EXPECT_GT(json["static_cost"]["parallelism"].get<double>(), 1.0);
}

TEST_F(InspectCommand, HumanReportNamesTheCriticalPath) {
  CommandResult result = run(cleave("inspect " + model_));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("critical path:\n  stem "), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("block2_b3_5x5"), std::string::npos) << result.output;
}

TEST_F(InspectCommand, DotOutputIsAcceptedByGraphviz) {
  const std::string dot = (folder_ / "model.dot").string();
  ASSERT_EQ(run(cleave("inspect --dot " + dot + " " + model_)).exit_code, 0);
  CommandResult svg = run("dot -Tsvg " + dot, false);
  EXPECT_EQ(svg.exit_code, 0);
  EXPECT_NE(svg.output.find("<svg"), std::string::npos);
}

TEST_F(InspectCommand, SvgIsRenderedDirectly) {
  const std::string svg = (folder_ / "model.svg").string();
  ASSERT_EQ(run(cleave("inspect --svg " + svg + " " + model_)).exit_code, 0);
  std::ifstream in(svg);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("<svg"), std::string::npos);
}

TEST_F(InspectCommand, MissingModelIsAnError) {
  CommandResult result = run(cleave("inspect " + (folder_ / "nope.onnx").string()));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.output.find("nope.onnx"), std::string::npos) << result.output;
}

// A MatMul by a 4 GiB weight in a sparse external data file: inspect counts the weight by its
// dims and never reads it, so it reports the model within a 2 GiB address-space limit (reading
// the weight, it could not allocate it).
TEST_F(InspectCommand, WeightsAreCountedWithoutBeingRead) {
  constexpr int64_t kRows = 1024, kColumns = 1 << 20;  // 4 GiB of floats.
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  onnx::GraphProto* graph = model.mutable_graph();
  graph->set_name("large");
  const auto declare = [](onnx::ValueInfoProto* info, const char* name, int64_t columns) {
    info->set_name(name);
    auto* tensor = info->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(onnx::TensorProto::FLOAT);
    tensor->mutable_shape()->add_dim()->set_dim_value(1);
    tensor->mutable_shape()->add_dim()->set_dim_value(columns);
  };
  declare(graph->add_input(), "x", kRows);
  declare(graph->add_output(), "y", kColumns);
  onnx::TensorProto* weight = graph->add_initializer();
  weight->set_name("w");
  weight->set_data_type(onnx::TensorProto::FLOAT);
  weight->add_dims(kRows);
  weight->add_dims(kColumns);
  weight->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* location = weight->add_external_data();
  location->set_key("location");
  location->set_value("w.bin");
  onnx::NodeProto* node = graph->add_node();
  node->set_op_type("MatMul");
  node->set_name("project");
  node->add_input("x");
  node->add_input("w");
  node->add_output("y");
  const fs::path path = folder_ / "large.onnx";
  {
    std::ofstream out(path, std::ios::binary);
    ASSERT_TRUE(model.SerializeToOstream(&out));
  }
  std::ofstream(folder_ / "w.bin").close();
  fs::resize_file(folder_ / "w.bin", static_cast<std::uintmax_t>(kRows * kColumns * 4));

  CommandResult result =
      run("ulimit -v 2097152 && " + cleave("inspect --json " + path.string()), false);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  nlohmann::json json = nlohmann::json::parse(result.output);
  EXPECT_EQ(json["parameter_bytes"].get<int64_t>(), kRows * kColumns * 4);
  EXPECT_EQ(json["initializer_count"].get<int64_t>(), 1);
}

TEST_F(InspectCommand, ExternalWeightShorterThanItsDimsIsAnError) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  onnx::GraphProto* graph = model.mutable_graph();
  onnx::ValueInfoProto* input = graph->add_input();
  input->set_name("x");
  auto* tensor = input->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(onnx::TensorProto::FLOAT);
  tensor->mutable_shape()->add_dim()->set_dim_value(2048);
  graph->add_output()->CopyFrom(*input);
  graph->mutable_output(0)->set_name("y");
  onnx::TensorProto* weight = graph->add_initializer();
  weight->set_name("w");
  weight->set_data_type(onnx::TensorProto::FLOAT);
  weight->add_dims(2048);
  weight->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* location = weight->add_external_data();
  location->set_key("location");
  location->set_value("w.bin");
  onnx::NodeProto* node = graph->add_node();
  node->set_op_type("Add");
  node->add_input("x");
  node->add_input("w");
  node->add_output("y");
  const fs::path path = folder_ / "short.onnx";
  {
    std::ofstream out(path, std::ios::binary);
    ASSERT_TRUE(model.SerializeToOstream(&out));
  }
  std::ofstream(folder_ / "w.bin", std::ios::binary) << std::string(4096, '\0');  // Of 8 KiB.

  CommandResult result = run(cleave("inspect " + path.string()));
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_NE(result.output.find("'w'"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("w.bin"), std::string::npos) << result.output;
}

}  // namespace
