// `cleave optimize`: the written model passes onnx::checker and computes the original's outputs.
#include <gtest/gtest.h>
#include <onnx/checker.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "ir/text.h"
#include "onnx/onnx_export.h"
#include "onnx/onnx_import.h"
#include "runtime/executor.h"
#include "test_paths.h"

namespace cleave {
namespace {

namespace fs = std::filesystem;

// Conv→BN→Relu→Identity→Conv→BN→Clip→Reshape by a Shape chain, plus a dead branch. The
// initializers without data get random values.
const char* kModel = R"(graph main [ai.onnx=13] (%x: f32[1,3,8,8]) {
  @w1: f32[4,3,3,3]
  @b1: f32[4]
  @scale1: f32[4]
  @shift1: f32[4]
  @mean1: f32[4]
  @var1: f32[4]
  @w2: f32[4,4,1,1]
  @scale2: f32[4]
  @shift2: f32[4]
  @mean2: f32[4]
  @var2: f32[4]
  @low: f32[] = [0.0]
  @high: f32[] = [0.5]
  @zero: i64[] = [0]
  @axes: i64[1] = [0]
  @minus_one: i64[1] = [-1]
  %c1: f32[1,4,8,8] = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%x, @w1, @b1)
  %n1: f32[1,4,8,8] = BatchNormalization(%c1, @scale1, @shift1, @mean1, @var1)
  %r1: f32[1,4,8,8] = Relu(%n1)
  %i1: f32[1,4,8,8] = Identity(%r1)
  %c2: f32[1,4,8,8] = Conv[kernel_shape=[1,1]](%i1, @w2)
  %n2: f32[1,4,8,8] = BatchNormalization(%c2, @scale2, @shift2, @mean2, @var2)
  %k2: f32[1,4,8,8] = Clip(%n2, @low, @high)
  %s = Shape(%k2)
  %g = Gather[axis=0](%s, @zero)
  %u = Unsqueeze(%g, @axes)
  %shape = Concat[axis=0](%u, @minus_one)
  %flat: f32[1,256] = Reshape(%k2, %shape)
  %unused = Neg(%x)
  return %flat
}
)";

Graph random_model() {
  Graph graph = parse_graph(kModel);
  std::mt19937 random(3);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (ValueId id : graph.initializers()) {
    TensorData& data = *graph.value(id).initializer;
    if (data.has_data()) continue;
    std::vector<float> values(static_cast<std::size_t>(data.element_count()));
    bool positive = graph.value(id).name.starts_with("var");
    for (float& v : values) v = positive ? 0.5f + std::abs(uniform(random)) : uniform(random);
    data = TensorData::from(DataType::kFloat, data.dims, values);
  }
  return graph;
}

std::vector<float> run(const Graph& graph) {
  std::mt19937 random(5);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  Tensor x = Tensor::allocate(DataType::kFloat, {1, 3, 8, 8});
  for (int64_t i = 0; i < x.element_count(); ++i) x.data<float>()[i] = uniform(random);
  Executor executor(graph);
  std::vector<Tensor> outputs = executor.run({{"x", x}});
  auto values = outputs.at(0).values<float>();
  return {values.begin(), values.end()};
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

class OptimizeCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = fs::temp_directory_path() /
              ("cleave_optimize_test_" + std::to_string(::getpid()) + "_" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(folder_);
    fs::create_directories(folder_);
    model_ = path("model.onnx");
    export_onnx(random_model(), model_);
  }
  void TearDown() override { fs::remove_all(folder_); }

  std::string path(const std::string& name) const { return (folder_ / name).string(); }

  CommandResult cleave(const std::string& arguments) const {
    std::string command = std::string(CLEAVE_BINARY) + " " + arguments + " >" + path("stdout") +
                          " 2>" + path("stderr");
    int status = std::system(command.c_str());
    CommandResult result;
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    result.out = read_text(path("stdout"));
    result.err = read_text(path("stderr"));
    return result;
  }

  fs::path folder_;
  std::string model_;
};

TEST_F(OptimizeCommand, WritesACheckedModelWithTheSameOutputs) {
  CommandResult result = cleave("optimize --json " + model_ + " " + path("out.onnx"));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  nlohmann::json json = nlohmann::json::parse(result.out);
  EXPECT_EQ(json["nodes_before"], 13);
  // Conv, Relu, Conv, Clip, Reshape: activations stay separate nodes in ONNX.
  EXPECT_EQ(json["nodes_after"], 5);
  EXPECT_EQ(json["onnx_check"], "passed");
  EXPECT_NO_THROW(onnx::checker::check_model(path("out.onnx")));

  std::vector<float> expected = run(import_onnx(model_));
  std::vector<float> actual = run(import_onnx(path("out.onnx")));
  ASSERT_EQ(actual.size(), expected.size());
  int nonzero = 0;
  for (std::size_t i = 0; i < actual.size(); ++i) {
    EXPECT_NEAR(actual[i], expected[i], 1e-4 * std::abs(expected[i]) + 1e-6) << "at " << i;
    nonzero += expected[i] != 0.0f;
  }
  EXPECT_GT(nonzero, 0);
}

TEST_F(OptimizeCommand, VerbosePrintsEveryStep) {
  CommandResult result = cleave("optimize --verbose " + model_ + " " + path("out.onnx"));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(
      result.err.find("constant folding: 1 Shape nodes folded from static shapes, 3 nodes folded"),
      std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("Conv+BatchNormalization fusion: 2 BatchNormalization nodes fused"),
            std::string::npos)
      << result.err;
  EXPECT_NE(result.out.find("13 -> 5 nodes"), std::string::npos) << result.out;
}

TEST_F(OptimizeCommand, NoFoldAndNoFuseLeaveShapesAndBatchNorms) {
  CommandResult result =
      cleave("optimize --json --no-fold --no-fuse " + model_ + " " + path("out.onnx"));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  nlohmann::json json = nlohmann::json::parse(result.out);
  // Only the dead Neg and the Identity go.
  EXPECT_EQ(json["nodes_after"], 11);
}

TEST_F(OptimizeCommand, UnreadableInputFailsNamingItAndWritesNothing) {
  std::string missing = path("missing.onnx");
  CommandResult result = cleave("optimize " + missing + " " + path("out.onnx"));
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.err.find(missing), std::string::npos) << result.err;
  EXPECT_FALSE(fs::exists(path("out.onnx")));
}

// A pass test as a text file: the graph after each named pass, in the text form.
TEST_F(OptimizeCommand, PrintsTheTextFormAfterEachNamedPass) {
  {
    std::ofstream text(path("g.txt"));
    text << "graph g [ai.onnx=13] (%x: f32[2]) {\n"
            "  %i: f32[2] = Identity(%x)\n"
            "  %r: f32[2] = Relu(%i)\n"
            "  %dead: f32[2] = Neg(%x)\n"
            "  return %r\n"
            "}\n";
  }
  CommandResult result = cleave("optimize " + path("g.txt") +
                                " --passes remove-identities,dead-code --print-after-each");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::size_t first = result.out.find("// after Identity/Dropout removal");
  const std::size_t second = result.out.find("// after dead-code elimination");
  ASSERT_NE(first, std::string::npos) << result.out;
  ASSERT_NE(second, std::string::npos) << result.out;
  const std::string after_first = result.out.substr(first, second - first);
  const std::string after_second = result.out.substr(second);
  EXPECT_EQ(after_first.find("Identity("), std::string::npos) << after_first;
  EXPECT_NE(after_first.find("Neg("), std::string::npos) << after_first;
  EXPECT_EQ(after_second.find("Neg("), std::string::npos) << after_second;
  EXPECT_NE(after_second.find("Relu(%x)"), std::string::npos) << after_second;
}

TEST_F(OptimizeCommand, UnknownPassFailsNamingItAndWritesNothing) {
  CommandResult result =
      cleave("optimize " + model_ + " " + path("out.onnx") + " --passes dead-code,fold-all");
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.err.find("unknown pass 'fold-all'"), std::string::npos) << result.err;
  EXPECT_FALSE(fs::exists(path("out.onnx")));
}

}  // namespace
}  // namespace cleave
