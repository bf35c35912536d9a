// `cleave codegen --lang cpp` of int8 models (a QDQ CNN from scripts/quantize_model.py, a
// QOperator model): the generated program builds and computes `cleave run`'s bits.
#include <gtest/gtest.h>

#include <string>

#include "codegen_fixture.h"
#include "int8_models.h"

namespace cleave {
namespace {

class CodegenInt8Cpp : public CodegenFixture {
 protected:
  // Generates, builds and runs `model` (graph text `text`) on cleave run's seeded inputs, and
  // expects each of `outputs` bit for bit as cleave run computes it with the same plan.
  void expect_same_bits(const std::string& model, const std::string& text,
                        const std::vector<std::string>& outputs) {
    std::string inputs;
    for (const auto& [name, tensor] : random_inputs(parse_graph(text), 0)) {
      write_npy(path(name + ".npy"), tensor);
      inputs += " --input " + name + "=" + name + ".npy";
    }
    CommandOutput generated = cleave("codegen " + model + " --lang cpp -o gen");
    ASSERT_EQ(generated.exit_code, 0) << generated.text;
    CommandOutput build = build_generated();
    ASSERT_EQ(build.exit_code, 0) << build.text;
    CommandOutput run = shell("gen/build/model_run --output-dir out" + inputs);
    ASSERT_EQ(run.exit_code, 0) << run.text;
    CommandOutput reference =
        cleave("run " + model + " --plan gen/plan.json" + inputs + " --output-dir ref");
    ASSERT_EQ(reference.exit_code, 0) << reference.text;
    for (const std::string& name : outputs) {
      EXPECT_TRUE(
          same_bits(read_npy(path("out/" + name + ".npy")), read_npy(path("ref/" + name + ".npy"))))
          << name;
    }
  }
};

TEST_F(CodegenInt8Cpp, QdqCnnBuildsAndMatchesCleaveRunBitForBit) {
  if (shell("/usr/bin/python3 -c 'import onnx, numpy'").exit_code != 0)
    GTEST_SKIP() << "/usr/bin/python3 has no onnx module (scripts/install-deps.sh installs it)";
  write_model(kFloatCnn, path("float.onnx"));
  CommandOutput quantized =
      shell("/usr/bin/python3 " + std::string(CLEAVE_SOURCE_DIR) +
            "/scripts/quantize_model.py float.onnx int8.onnx --cleave " + CLEAVE_BINARY);
  ASSERT_EQ(quantized.exit_code, 0) << quantized.text;
  expect_same_bits("int8.onnx", kFloatCnn, {"logits"});
}

TEST_F(CodegenInt8Cpp, QoperatorModelBuildsAndMatchesCleaveRunBitForBit) {
  const std::string text = qoperator_model();
  write_model(text, path("q.onnx"));
  expect_same_bits("q.onnx", text, {"y", "dyn", "conv"});
}

}  // namespace
}  // namespace cleave
