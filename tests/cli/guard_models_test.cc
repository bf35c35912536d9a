// The guard models (tests/guard, made by bench/ort/guard_models.py): a detector ending in NMS,
// a decoder with symbolic dims and a QDQ int8 CNN still give ONNX Runtime's committed outputs.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "command_fixture.h"
#include "runtime/npy.h"

namespace cleave {
namespace {

namespace fs = std::filesystem;

class GuardModels : public CommandFixture {
 protected:
  // Runs tests/guard/NAME.onnx on its committed inputs (named in the model's order) and
  // compares each output with ONNX Runtime's as bench/ort/compare.mjs does:
  // |cleave - ort| <= 1e-3 |ort| + 1e-4 max|ort|.
  void expect_ort_outputs(const std::string& name, const std::vector<std::string>& inputs,
                          const std::vector<std::string>& outputs,
                          const std::string& options = "") {
    const std::string guard = std::string(CLEAVE_SOURCE_DIR) + "/tests/guard/";
    std::string arguments = "run " + guard + name + ".onnx --output-dir " + path("out");
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      arguments +=
          " --input " + inputs[k] + "=" + guard + name + ".input_" + std::to_string(k) + ".npy";
    }
    CommandResult result = cleave(arguments + " " + options);
    ASSERT_EQ(result.exit_code, 0) << result.err;
    for (std::size_t k = 0; k < outputs.size(); ++k) {
      Tensor ours = read_npy(path("out") + "/" + outputs[k] + ".npy");
      Tensor theirs = read_npy(guard + name + ".ort_output_" + std::to_string(k) + ".npy");
      ASSERT_EQ(ours.shape(), theirs.shape()) << outputs[k];
      std::vector<double> a = ours.to_double_vector(), b = theirs.to_double_vector();
      double largest = 0;
      for (double v : b) largest = std::max(largest, std::abs(v));
      for (std::size_t i = 0; i < a.size(); ++i) {
        ASSERT_LE(std::abs(a[i] - b[i]), 1e-3 * std::abs(b[i]) + 1e-4 * largest)
            << outputs[k] << " element " << i;
      }
    }
  }
};

TEST_F(GuardModels, DetectorWithNmsKeepsOnnxRuntimesBoxes) {
  expect_ort_outputs("detector_nms", {"image"}, {"boxes", "scores"});
}

TEST_F(GuardModels, DetectorWithNmsOnATaskParallelPlan) {
  // The static branches around the data-dependent region are planned on two workers.
  CommandResult plan = cleave("plan " + std::string(CLEAVE_SOURCE_DIR) +
                              "/tests/guard/detector_nms.onnx --strategy lc --costs static "
                              "--workers 2 -o " +
                              path("plan.json"));
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  ASSERT_NE(plan.out.find("worker 1"), std::string::npos) << plan.out;
  expect_ort_outputs("detector_nms", {"image"}, {"boxes", "scores"}, "--plan " + path("plan.json"));
}

TEST_F(GuardModels, DecoderWithSymbolicDimsRunsOnTheGivenShapes) {
  expect_ort_outputs("decoder_dynamic", {"target", "memory"}, {"decoded"});
}

TEST_F(GuardModels, QdqCnnMatchesOnnxRuntimesInt8Run) {
  expect_ort_outputs("cnn_qdq", {"pixels"}, {"logits"});
}

}  // namespace
}  // namespace cleave
