// Helpers shared by the single-file oneDNN benchmarks in bench/ (depthwise.cc, conv_split.cc).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <unordered_map>
#include <vector>

namespace dnnl_bench {

using dnnl::memory;
using Tag = memory::format_tag;

inline double seconds_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

inline memory::desc float_desc(memory::dims dims, Tag tag) {
  return memory::desc(dims, memory::data_type::f32, tag);
}

/// Memory for `desc` filled with small non-zero values.
inline memory filled(const memory::desc& desc, const dnnl::engine& engine) {
  memory storage(desc, engine);
  auto* values = static_cast<float*>(storage.get_data_handle());
  for (std::size_t i = 0; i < desc.get_size() / sizeof(float); ++i) values[i] = (i % 13) * 0.01f;
  return storage;
}

/// oneDNN's own channel block on the effective ISA (ONEDNN_MAX_CPU_ISA=AVX2 caps it): 16 on
/// AVX-512, 8 below, as cleave's kernels use (runtime/cpu_isa.h).
inline int64_t channel_block() {
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  return (isa & (0x8u | 0x20u)) != 0 ? 16 : 8;
}

/// A convolution with padding kernel/2, a bias and a fused ReLU, weights in the layout oneDNN
/// picks and a user scratchpad, as cleave's kernels make them.
inline dnnl::convolution_forward::primitive_desc relu_convolution(
    const dnnl::engine& engine, const memory::desc& source, int64_t channels_in,
    int64_t channels_out, int64_t kernel, int64_t stride, const memory::desc& destination) {
  dnnl::post_ops ops;
  ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
  dnnl::primitive_attr attr;
  attr.set_post_ops(ops);
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  const int64_t padding = kernel / 2;
  dnnl::convolution_forward::desc desc(
      dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, source,
      float_desc({channels_out, channels_in, kernel, kernel}, Tag::any),
      float_desc({channels_out}, Tag::x), destination, {stride, stride}, {padding, padding},
      {padding, padding});
  return dnnl::convolution_forward::primitive_desc(desc, attr, engine);
}

/// A convolution primitive with filled weights and bias, its own scratchpad and stream.
struct ConvStep {
  ConvStep(const dnnl::convolution_forward::primitive_desc& desc, const dnnl::engine& engine,
           const memory& source, const memory& destination)
      : primitive(desc), stream(engine), name(desc.impl_info_str()) {
    arguments = {{DNNL_ARG_SRC, source},
                 {DNNL_ARG_WEIGHTS, filled(desc.weights_desc(), engine)},
                 {DNNL_ARG_BIAS, filled(desc.bias_desc(), engine)},
                 {DNNL_ARG_DST, destination},
                 {DNNL_ARG_SCRATCHPAD, memory(desc.scratchpad_desc(), engine)}};
  }
  void run() {
    primitive.execute(stream, arguments);
    stream.wait();
  }
  dnnl::convolution_forward primitive;
  dnnl::stream stream;
  std::unordered_map<int, memory> arguments;
  std::string name;
};

inline double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace dnnl_bench
