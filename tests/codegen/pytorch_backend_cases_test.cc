// `cleave codegen --lang pytorch` of ONNX backend cases once refused (an integer graph input:
// LSTM's sequence_lens): the generated module gives the case's expected outputs within the
// backend tests' tolerance, and run.py checks an input's element type.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "codegen_fixture.h"
#include "onnx/onnx_import.h"

namespace cleave {
namespace {

namespace fs = std::filesystem;

const std::string kNode = "/usr/share/libonnx-testdata/data/node/";

class PytorchBackendCases : public CodegenFixture {
 protected:
  // Test data file `file` of case `name` (input_0.pb, ...), decoded.
  static std::pair<std::string, Tensor> read_case_tensor(const std::string& name,
                                                         const std::string& file) {
    onnx::TensorProto proto;
    std::ifstream in(kNode + name + "/test_data_set_0/" + file, std::ios::binary);
    EXPECT_TRUE(in && proto.ParseFromIstream(&in)) << name << "/" << file;
    return {proto.name(), Tensor::from_data(tensor_from_onnx(proto, file))};
  }

  // Generates case `name` as PyTorch and runs it on the case's inputs; returns the largest
  // difference beyond the backend tests' tolerance (1e-3 relative, 1e-5 absolute) over the
  // expected outputs (0 when within it), INFINITY when a step fails.
  double excess_over_tolerance(const std::string& name, int inputs, int outputs) {
    fs::copy_file(kNode + name + "/model.onnx", path("m.onnx"));
    CommandOutput generated = cleave("codegen m.onnx --lang pytorch -o py");
    EXPECT_EQ(generated.exit_code, 0) << generated.text;
    if (generated.exit_code != 0) return INFINITY;
    std::string options;
    for (int i = 0; i < inputs; ++i) {
      const auto [input, tensor] = read_case_tensor(name, "input_" + std::to_string(i) + ".pb");
      write_npy(path("in_" + std::to_string(i) + ".npy"), tensor);
      options += " --input " + input + "=in_" + std::to_string(i) + ".npy";
    }
    CommandOutput run =
        shell("/usr/bin/python3 py/run.py" + options + " --output-dir out --sequential");
    EXPECT_EQ(run.exit_code, 0) << run.text;
    if (run.exit_code != 0) return INFINITY;
    double worst = 0;
    for (int i = 0; i < outputs; ++i) {
      const auto [output, expected] = read_case_tensor(name, "output_" + std::to_string(i) + ".pb");
      const Tensor actual = read_npy(path("out/" + output + ".npy"));
      EXPECT_EQ(actual.shape(), expected.shape()) << output;
      if (actual.shape() != expected.shape()) return INFINITY;
      const auto e = expected.to_double_vector(), a = actual.to_double_vector();
      for (std::size_t k = 0; k < a.size(); ++k)
        worst = std::max(worst, std::abs(a[k] - e[k]) - (1e-5 + 1e-3 * std::abs(e[k])));
    }
    return worst;
  }
};

TEST_F(PytorchBackendCases, LstmWithPeepholesGivesTheExpectedOutput) {
  if (!fs::exists(kNode)) GTEST_SKIP() << "libonnx-testdata is not installed";
  EXPECT_LE(excess_over_tolerance("test_lstm_with_peepholes", 8, 1), 0.0);
}

TEST_F(PytorchBackendCases, AnInputOfAnotherElementTypeIsRefusedByRunPy) {
  write_model(R"(graph main [ai.onnx=13] (%x: f32[2], %k: i64[2]) {
  %c = Cast[to=1](%k)
  %y = Add(%x, %c)
  return %y
})",
              path("m.onnx"));
  ASSERT_EQ(cleave("codegen m.onnx --lang pytorch -o py").exit_code, 0);
  write_npy(path("k.npy"),
            Tensor::from_data(TensorData::from(DataType::kInt32, {2}, std::vector<int32_t>{1, 2})));
  CommandOutput run = shell("/usr/bin/python3 py/run.py --input k=k.npy --sequential");
  EXPECT_EQ(run.exit_code, 2) << run.text;
  EXPECT_NE(run.text.find("input 'k': expected int64[2], got int32[2]"), std::string::npos)
      << run.text;
}

TEST_F(PytorchBackendCases, AnInputTorchCannotHoldIsRefusedNamingIt) {
  write_model(R"(graph main [ai.onnx=13] (%k: u32[2]) {
  %y = Cast[to=1](%k)
  return %y
})",
              path("m.onnx"));
  CommandOutput generated = cleave("codegen m.onnx --lang pytorch -o py");
  EXPECT_EQ(generated.exit_code, 1) << generated.text;
  EXPECT_NE(generated.text.find("input 'k' is u32"), std::string::npos) << generated.text;
  EXPECT_FALSE(fs::exists(path("py/model.py")));
}

}  // namespace
}  // namespace cleave
