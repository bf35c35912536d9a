// Shared by the int8 codegen tests: a small float CNN for scripts/quantize_model.py, a
// QOperator model, and the quantum of a model's dequantized output.
#pragma once

#include <random>
#include <string>

#include "onnx/onnx_import.h"

namespace cleave {

/// Conv, Relu, MaxPool, Conv, Relu, GlobalAveragePool, Flatten, Gemm: quantize_model.py turns
/// the Convs into QLinearConv and the Gemm into com.microsoft.QGemm (after QDQ fusion), with
/// u8 activations and per-channel i8 weights; the output is the Gemm's dequantized result.
inline const char* kFloatCnn = R"(graph main [ai.onnx=17] (%x: f32[1,3,16,16]) {
  @w1: f32[8,3,3,3]
  @b1: f32[8]
  @w2: f32[16,8,3,3]
  @b2: f32[16]
  @fw: f32[64,16]
  @fb: f32[64]
  %a = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%x, @w1, @b1)
  %ar = Relu(%a)
  %p = MaxPool[kernel_shape=[2,2], strides=[2,2]](%ar)
  %c = Conv[kernel_shape=[3,3], pads=[1,1,1,1], strides=[2,2]](%p, @w2, @b2)
  %cr = Relu(%c)
  %g = GlobalAveragePool(%cr)
  %f = Flatten(%g)
  %logits: f32[1,64] = Gemm[transB=1](%f, @fw, @fb)
  return %logits
})";

/// `count` seeded values in [low, high] as the text form's list.
inline std::string int_list(int count, int low, int high, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> pick(low, high);
  std::string text;
  for (int i = 0; i < count; ++i) text += (i ? "," : "") + std::to_string(pick(rng));
  return text;
}

/// The ops of ONNX Runtime's QOperator form: QLinearMatMul between QuantizeLinear and
/// DequantizeLinear (per-column weight scales, non-zero zero points), DynamicQuantizeLinear
/// feeding MatMulInteger, and ConvInteger, each integer result scaled back to float as ONNX
/// Runtime's dynamic quantization does (Cast, Mul).
inline std::string qoperator_model() {
  return R"(graph main [ai.onnx=13] (%x: f32[4,16], %img: f32[1,2,6,6]) {
  @xs: f32[] = [0.0078125]
  @xz: u8[] = [128]
  @w: i8[16,8] = [)" +
         int_list(128, -127, 127, 1) + R"(]
  @ws: f32[8] = [0.004,0.005,0.006,0.007,0.003,0.0045,0.0055,0.0065]
  @wz: i8[8] = [0,0,0,0,0,0,0,0]
  @ys: f32[] = [0.02]
  @yz: u8[] = [120]
  @w2: u8[16,5] = [)" +
         int_list(80, 0, 255, 2) + R"(]
  @w2z: u8[] = [131]
  @w2s: f32[] = [0.01]
  @is: f32[] = [0.01]
  @iz: u8[] = [100]
  @k: i8[3,2,3,3] = [)" +
         int_list(54, -100, 100, 3) + R"(]
  @kz: i8[] = [2]
  @ks: f32[] = [0.003]
  %q = QuantizeLinear(%x, @xs, @xz)
  %m = QLinearMatMul(%q, @xs, @xz, @w, @ws, @wz, @ys, @yz)
  %y = DequantizeLinear(%m, @ys, @yz)
  %dq, %ds, %dz = DynamicQuantizeLinear(%x)
  %mi = MatMulInteger(%dq, @w2, %dz, @w2z)
  %mf = Cast[to=1](%mi)
  %dscale = Mul(%ds, @w2s)
  %dyn = Mul(%mf, %dscale)
  %iq = QuantizeLinear(%img, @is, @iz)
  %ci = ConvInteger[kernel_shape=[3,3], pads=[1,0,1,0]](%iq, @k, @iz, @kz)
  %cf = Cast[to=1](%ci)
  %cscale = Mul(@is, @ks)
  %conv = Mul(%cf, %cscale)
  return %y, %dyn, %conv
})";
}

/// The scale of the DequantizeLinear computing graph output `output` of an ONNX file (the size
/// of one quantum of that output).
inline double output_quantum(const std::string& model, const std::string& output) {
  const Graph graph = import_onnx(model);
  const Node& node = graph.node(graph.value(*graph.find_value(output)).producer);
  if (node.op_type != "DequantizeLinear") return 0;
  return graph.value(node.inputs.at(1)).initializer->as<float>()[0];
}

}  // namespace cleave
