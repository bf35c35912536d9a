// The recurrent kernels: RNN, GRU and LSTM steps on one-unit layers, values computed by hand.
#include <gtest/gtest.h>

#include <string>

#include "kernel_test_util.h"

namespace cleave {
namespace {

using kernel_test::expect_values;
using kernel_test::floats;
using kernel_test::run_graph;

TEST(Recurrent, RnnCarriesTheStateThroughTanh) {
  // h1 = tanh(1), h2 = tanh(2 + 0.5·h1).
  const char* text = R"(graph g [ai.onnx=14] (%x: f32[2,1,1], %w: f32[1,1,1], %r: f32[1,1,1]) {
  %y, %h = RNN[hidden_size=1](%x, %w, %r)
  return %y, %h
})";
  std::vector<Tensor> out = run_graph(text, {{"x", floats({2, 1, 1}, {1, 2})},
                                             {"w", floats({1, 1, 1}, {1})},
                                             {"r", floats({1, 1, 1}, {0.5})}});
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{2, 1, 1, 1}));
  expect_values(out[0], {0.7615941559557649, 0.9830411011980433}, 1e-6);
  expect_values(out[1], {0.9830411011980433}, 1e-6);
}

TEST(Recurrent, ReverseDirectionStartsFromTheLastStep) {
  const char* text = R"(graph g [ai.onnx=14] (%x: f32[2,1,1], %w: f32[1,1,1], %r: f32[1,1,1]) {
  %y, %h = RNN[hidden_size=1, direction="reverse"](%x, %w, %r)
  return %y, %h
})";
  std::vector<Tensor> out = run_graph(text, {{"x", floats({2, 1, 1}, {2, 1})},
                                             {"w", floats({1, 1, 1}, {1})},
                                             {"r", floats({1, 1, 1}, {0.5})}});
  expect_values(out[0], {0.9830411011980433, 0.7615941559557649}, 1e-6);
}

TEST(Recurrent, GruResetGateScalesTheStateBeforeTheProduct) {
  // Only the candidate weights are 1: z = r = 1/2, H1 = tanh(1)/2, H2 = tanh(H1/2)/2 + H1/2.
  const char* text = R"(graph g [ai.onnx=14] (%x: f32[2,1,1], %w: f32[1,3,1], %r: f32[1,3,1]) {
  %y, %h = GRU[hidden_size=1](%x, %w, %r)
  return %y, %h
})";
  std::vector<Tensor> out = run_graph(text, {{"x", floats({2, 1, 1}, {1, 0})},
                                             {"w", floats({1, 3, 1}, {0, 0, 1})},
                                             {"r", floats({1, 3, 1}, {0, 0, 1})}});
  expect_values(out[0], {0.3807970779778824, 0.2844638730456015}, 1e-6);
}

TEST(Recurrent, LstmCellAndOutputGate) {
  // i = o = f = 1/2, C = tanh(1)/2, H = tanh(C)/2.
  const char* text = R"(graph g [ai.onnx=14] (%x: f32[1,1,1], %w: f32[1,4,1], %r: f32[1,4,1]) {
  %y, %h, %c = LSTM[hidden_size=1](%x, %w, %r)
  return %y, %h, %c
})";
  std::vector<Tensor> out = run_graph(text, {{"x", floats({1, 1, 1}, {1})},
                                             {"w", floats({1, 4, 1}, {0, 0, 0, 1})},
                                             {"r", floats({1, 4, 1}, {0, 0, 0, 0})}});
  expect_values(out[1], {0.18169974219452625}, 1e-6);
  expect_values(out[2], {0.3807970779778824}, 1e-6);
}

}  // namespace
}  // namespace cleave
