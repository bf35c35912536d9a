// scripts/quantize_model.py: the QDQ int8 version of a generated CNN runs on the int8 kernels
// and stays close to the float model's result.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "command_fixture.h"
#include "runtime/npy.h"

namespace cleave {
namespace {

class QuantizeModelScript : public CommandFixture {
 protected:
  void SetUp() override {
    CommandFixture::SetUp();
    if (run_shell("/usr/bin/python3 -c 'import onnx, numpy'").exit_code != 0) {
      GTEST_SKIP() << "/usr/bin/python3 has no onnx or numpy module (scripts/install-deps.sh "
                      "installs python3-onnx)";
    }
    ASSERT_EQ(cleave("gen squeezenet -o " + path("float.onnx") +
                     " --blocks 4 --channels 8 --stem-channels 16 --size 32")
                  .exit_code,
              0);
    const CommandResult quantized = run_shell(
        "/usr/bin/python3 " + std::string(CLEAVE_SOURCE_DIR) + "/scripts/quantize_model.py " +
        path("float.onnx") + " " + path("int8.onnx") + " --cleave " + CLEAVE_BINARY);
    ASSERT_EQ(quantized.exit_code, 0) << quantized.err;
  }
};

TEST_F(QuantizeModelScript, Int8ResultIsCloseToTheFloatOne) {
  ASSERT_EQ(cleave("run " + path("float.onnx") + " --output-dir " + path("f")).exit_code, 0);
  ASSERT_EQ(cleave("run " + path("int8.onnx") + " --output-dir " + path("q")).exit_code, 0);
  const std::vector<double> expected = read_npy(path("f/logits.npy")).to_double_vector();
  const std::vector<double> actual = read_npy(path("q/logits.npy")).to_double_vector();
  ASSERT_EQ(actual.size(), expected.size());
  double range = 0, worst = 0;
  for (std::size_t i = 0; i < actual.size(); ++i) {
    range = std::max(range, std::abs(expected[i]));
    worst = std::max(worst, std::abs(actual[i] - expected[i]));
  }
  ASSERT_GT(range, 0);
  // Fourteen int8 convolutions in a row: a few percent of the output's range.
  EXPECT_LT(worst, 0.05 * range) << "largest difference " << worst << " of range " << range;
}

TEST_F(QuantizeModelScript, EveryConvRunsAsQLinearConv) {
  const CommandResult run = cleave("run " + path("int8.onnx") + " --stats");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string text = run.out + run.err;
  EXPECT_NE(text.find("\nQLinearConv "), std::string::npos) << text;
  EXPECT_EQ(text.find("\nConv "), std::string::npos) << text;
}

}  // namespace
}  // namespace cleave
