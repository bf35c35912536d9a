// `cleave codegen --lang pytorch` of int8 models: a QDQ CNN from scripts/quantize_model.py and
// a QOperator model; the generated module matches `cleave run` within one quantum.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "codegen_fixture.h"
#include "int8_models.h"

namespace cleave {
namespace {

class CodegenPytorchInt8 : public CodegenFixture {
 protected:
  // Runs cleave and the generated module (sequential) on the seeded inputs of `model`, whose
  // graph text is `text`; leaves their outputs in ref/ and out/.
  void run_both(const std::string& model, const std::string& text) {
    std::string inputs;
    for (const auto& [name, tensor] : random_inputs(parse_graph(text), 0)) {
      write_npy(path(name + ".npy"), tensor);
      inputs += " --input " + name + "=" + name + ".npy";
    }
    CommandOutput generated = cleave("codegen " + model + " --lang pytorch -o py");
    ASSERT_EQ(generated.exit_code, 0) << generated.text;
    ASSERT_EQ(cleave("run " + model + inputs + " --output-dir ref").exit_code, 0);
    CommandOutput run = shell("/usr/bin/python3 py/run.py --sequential --output-dir out" + inputs);
    ASSERT_EQ(run.exit_code, 0) << run.text;
  }
  // How many elements of output `name` differ from cleave's by more than `quantum`.
  int beyond_one_quantum(const std::string& name, double quantum) const {
    const auto expected = read_npy(path("ref/" + name + ".npy")).to_double_vector();
    const auto actual = read_npy(path("out/" + name + ".npy")).to_double_vector();
    EXPECT_EQ(actual.size(), expected.size());
    int count = 0;
    for (std::size_t i = 0; i < actual.size() && i < expected.size(); ++i)
      count += std::abs(actual[i] - expected[i]) > quantum * (1 + 1e-5);
    return count;
  }
};

TEST_F(CodegenPytorchInt8, QdqCnnMatchesCleaveRunWithinOneQuantum) {
  if (shell("/usr/bin/python3 -c 'import onnx, numpy'").exit_code != 0)
    GTEST_SKIP() << "/usr/bin/python3 has no onnx module (scripts/install-deps.sh installs it)";
  write_model(kFloatCnn, path("float.onnx"));
  CommandOutput quantized =
      shell("/usr/bin/python3 " + std::string(CLEAVE_SOURCE_DIR) +
            "/scripts/quantize_model.py float.onnx int8.onnx --cleave " + CLEAVE_BINARY);
  ASSERT_EQ(quantized.exit_code, 0) << quantized.text;
  run_both("int8.onnx", kFloatCnn);
  const std::string model = read_text_file(path("py/model.py"));
  EXPECT_NE(model.find("(QLinearConv)"), std::string::npos) << model;
  EXPECT_NE(model.find("(QGemm)"), std::string::npos) << model;
  const double quantum = output_quantum(path("int8.onnx"), "logits");
  ASSERT_GT(quantum, 0);
  EXPECT_EQ(beyond_one_quantum("logits", quantum), 0);
}

TEST_F(CodegenPytorchInt8, QoperatorModelMatchesCleaveRun) {
  const std::string text = qoperator_model();
  write_model(text, path("q.onnx"));
  run_both("q.onnx", text);
  const std::string model = read_text_file(path("py/model.py"));
  for (const char* op : {"(QLinearMatMul)", "(MatMulInteger)", "(ConvInteger)",
                         "(DynamicQuantizeLinear)", "(QuantizeLinear)", "(DequantizeLinear)"})
    EXPECT_NE(model.find(op), std::string::npos) << op;
  EXPECT_EQ(beyond_one_quantum("y", 0.02), 0);
  // The integer products are exact on both sides; only their float scaling can round.
  EXPECT_EQ(beyond_one_quantum("dyn", 1e-6), 0);
  EXPECT_EQ(beyond_one_quantum("conv", 1e-6), 0);
}

}  // namespace
}  // namespace cleave
