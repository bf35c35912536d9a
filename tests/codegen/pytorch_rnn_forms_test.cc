// `cleave codegen --lang pytorch` of the recurrent forms once refused (RNN; ONNX's other gate
// activations with their alpha and beta; LSTM's input_forget): each matches `cleave run`.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "codegen_fixture.h"

namespace cleave {
namespace {

class PytorchRnnForms : public PytorchRunFixture {};

// 5 steps of a batch of 2, input 3, hidden 4, with bias and initial state; `attributes` follow
// hidden_size. An LSTM also returns its cell state.
std::string recurrent(const std::string& op, const std::string& attributes, int directions) {
  const bool lstm = op == "LSTM";
  const int gates = lstm ? 4 : op == "GRU" ? 3 : 1;
  const std::string d = std::to_string(directions), g = std::to_string(4 * gates);
  std::string text = "graph main [ai.onnx=17] (%x: f32[5,2,3]) {\n  @w: f32[" + d + "," + g +
                     ",3]\n  @r: f32[" + d + "," + g + ",4]\n  @b: f32[" + d + "," +
                     std::to_string(8 * gates) + "]\n  @h0: f32[" + d + ",2,4]\n";
  text += std::string(lstm ? "  %y, %yh, %yc = " : "  %y, %yh = ") + op + "[hidden_size=4" +
          attributes + "](%x, @w, @r, @b, _, @h0)\n";
  text += lstm ? "  return %y, %yh, %yc\n}" : "  return %y, %yh\n}";
  return text;
}

Tensor floats(const std::vector<int64_t>& dims, const std::vector<float>& values) {
  return Tensor::from_data(TensorData::from(DataType::kFloat, dims, values));
}

std::size_t occurrences(const std::string& text, const std::string& part) {
  std::size_t count = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1))
    ++count;
  return count;
}

TEST_F(PytorchRnnForms, GruWithHardSigmoidAndReluMatchesCleaveRun) {
  EXPECT_LT(largest_difference(recurrent("GRU",
                                         R"(, activations=["HardSigmoid", "Relu"], )"
                                         R"(activation_alpha=[0.3], activation_beta=[0.4])",
                                         1),
                               {"y", "yh"}),
            1e-5);
  EXPECT_NE(model_.find(R"(rnn_activation(_g[:, :4] + _q[:, :4], "HardSigmoid", 0.300000012, )"
                        R"(0.400000006))"),
            std::string::npos)
      << model_;
}

TEST_F(PytorchRnnForms, LstmWithInputForgetMatchesCleaveRun) {
  EXPECT_LT(largest_difference(recurrent("LSTM", ", input_forget=1", 1), {"y", "yh", "yc"}), 1e-5);
  EXPECT_NE(model_.find("_f = 1 - _i"), std::string::npos) << model_;
}

// Both directions use the helper; it is defined once. Alpha and beta go to the functions that
// take them, in order: HardSigmoid (0.25, 0.45), ScaledTanh (0.9, 1.2), Elu (0.5).
TEST_F(PytorchRnnForms, BidirectionalLstmWithOtherActivationsMatchesCleaveRun) {
  EXPECT_LT(largest_difference(
                recurrent("LSTM",
                          R"(, direction="bidirectional", activations=["HardSigmoid", )"
                          R"("Softsign", "ScaledTanh", "Sigmoid", "Elu", "Softplus"], )"
                          R"(activation_alpha=[0.25, 0.9, 0.5], activation_beta=[0.45, 1.2])",
                          2),
                {"y", "yh", "yc"}),
            1e-5);
  EXPECT_EQ(occurrences(model_, "def rnn_activation("), 1u) << model_;
  EXPECT_NE(model_.find(R"("Elu", 0.5, )"), std::string::npos) << model_;
}

TEST_F(PytorchRnnForms, BidirectionalRnnWithReluAndLeakyReluMatchesCleaveRun) {
  EXPECT_LT(largest_difference(recurrent("RNN",
                                         R"(, direction="bidirectional", )"
                                         R"(activations=["Relu", "LeakyRelu"], )"
                                         R"(activation_alpha=[0.2])",
                                         2),
                               {"y", "yh"}),
            1e-5);
  EXPECT_NE(model_.find(R"("LeakyRelu", 0.200000003, )"), std::string::npos) << model_;
}

TEST_F(PytorchRnnForms, DefaultActivationsDefineNoHelper) {
  EXPECT_LT(largest_difference(recurrent("GRU", "", 1), {"y", "yh"}), 1e-5);
  EXPECT_EQ(model_.find("rnn_activation"), std::string::npos) << model_;
}

// Independent of both loops: with W = 1, R = 0 and no bias, an RNN of Affine(2, 1) gives
// 2x + 1 at every step.
TEST_F(PytorchRnnForms, CleaveRunOfAnAffineRnnIsItsClosedForm) {
  write_model(R"(graph main [ai.onnx=17] (%x: f32[4,1,1]) {
  @w: f32[1,1,1] = [1]
  @r: f32[1,1,1] = [0]
  %y, %yh = RNN[hidden_size=1, activations=["Affine"], activation_alpha=[2.0], activation_beta=[1.0]](%x, @w, @r)
  return %y, %yh
})",
              path("m.onnx"));
  write_npy(path("x.npy"), floats({4, 1, 1}, {-1.5f, 0.0f, 0.25f, 3.0f}));
  CommandOutput run = cleave("run m.onnx --input x=x.npy --output-dir ref");
  ASSERT_EQ(run.exit_code, 0) << run.text;
  const std::vector<double> y = read_npy(path("ref/y.npy")).to_double_vector();
  EXPECT_EQ(y, (std::vector<double>{-2.0, 1.0, 1.5, 7.0}));
}

// An LSTM with input_forget and input gate i keeps (1 - i) of its cell: with W = R = 0 and
// biases i = 0 (sigmoid 0.5), c~ = 1 (g = Tanh), the cell goes 0.5 c + 0.5 tanh(1).
TEST_F(PytorchRnnForms, CleaveRunOfAnInputForgetLstmCouplesTheGates) {
  write_model(R"(graph main [ai.onnx=17] (%x: f32[2,1,1]) {
  @w: f32[1,4,1] = [0, 0, 0, 0]
  @r: f32[1,4,1] = [0, 0, 0, 0]
  @b: f32[1,8] = [0, 0, 5, 1, 0, 0, 0, 0]
  %y, %yh, %yc = LSTM[hidden_size=1, input_forget=1](%x, @w, @r, @b)
  return %y, %yh, %yc
})",
              path("m.onnx"));
  write_npy(path("x.npy"), floats({2, 1, 1}, {0.0f, 0.0f}));
  CommandOutput run = cleave("run m.onnx --input x=x.npy --output-dir ref");
  ASSERT_EQ(run.exit_code, 0) << run.text;
  const double c1 = 0.5 * std::tanh(1.0), c2 = 0.5 * c1 + 0.5 * std::tanh(1.0);
  EXPECT_NEAR(read_npy(path("ref/yc.npy")).to_double_vector().at(0), c2, 1e-6);
}

TEST_F(PytorchRnnForms, AnActivationOutsideOnnxsListIsNamed) {
  write_model(recurrent("GRU", R"(, activations=["Swish", "Tanh"])", 1), path("m.onnx"));
  CommandOutput generated = cleave("codegen m.onnx --lang pytorch -o py");
  EXPECT_EQ(generated.exit_code, 1);
  EXPECT_NE(generated.text.find("activation 'Swish'"), std::string::npos) << generated.text;
  EXPECT_FALSE(std::filesystem::exists(path("py")));
}

}  // namespace
}  // namespace cleave
