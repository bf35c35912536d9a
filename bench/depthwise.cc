// Times a 1x1 convolution and the 3x3/5x5 depthwise convolution after it (MobileNet and MnasNet
// blocks) as oneDNN primitives on their own, outside a whole model's run.
//
// Build:
//   g++ -O2 -std=c++20 -fopenmp bench/depthwise.cc -ldnnl -o /tmp/depthwise
// Modes (C input channels expanded to E, H x H pixels, T threads, blocked layouts):
//   /tmp/depthwise chain C E H K T   each primitive's median time, the two run one after the
//                                    other on the same buffers, K x K depthwise, stride 1
//   /tmp/depthwise fused C E H S T   the two primitives against oneDNN's fused depthwise
//                                    post-op (append_dw_k3s1p1 / k3s2p1: 3x3, stride S), ReLU6
//                                    after each; median of 30 blocks of 10 runs
//   /tmp/depthwise split E H K S      a K x K depthwise convolution (stride S) on E channels
//                                    as one 2-thread primitive against two 1-thread ones on
//                                    the two halves of its channel blocks, run side by side
//                                    in an OpenMP region; median of 30 blocks of 20 runs
// The shapes measured (docs/results/parallel.md, kernel_ab.md), as the modes' arguments less T:
//   chain  24 72 56 3, 24 80 56 3 (MnasNet's blocks 8.1 and 8.2)
//   fused  16 96 112 2, 24 144 56 1, 24 144 56 2, 32 192 28 1, 32 192 28 2, 64 384 14 1,
//          96 576 14 1, 96 576 14 2, 160 960 7 1 (MobileNet-V2's blocks)
//   split  72 56 3 1, 72 56 5 2, 144 56 3 1, 96 112 3 2, 120 28 5 1, 240 28 3 1, 480 14 5 1,
//          56 56 3 1, 64 56 3 1, 144 56 3 2, 192 28 3 1, 240 28 5 2, 576 14 3 1, 960 7 3 1,
//          1152 7 3 1, 32 112 3 1, 48 112 3 2, 40 56 3 1 (which chose when cleave splits)
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "dnnl_bench.h"

namespace {

using namespace dnnl_bench;

dnnl::primitive_attr with_post_ops(dnnl::post_ops ops) {
  dnnl::primitive_attr attr;
  attr.set_post_ops(ops);
  return attr;
}

dnnl::post_ops relu6() {
  dnnl::post_ops ops;
  ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_clip, 0.0f, 6.0f);
  return ops;
}

dnnl::convolution_forward::primitive_desc convolution(const dnnl::engine& engine,
                                                      const memory::desc& source,
                                                      memory::dims weights, int64_t channels_out,
                                                      const memory::desc& destination,
                                                      int64_t stride, int64_t padding,
                                                      const dnnl::primitive_attr& attr) {
  dnnl::convolution_forward::desc desc(
      dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, source,
      float_desc(weights, Tag::any), float_desc({channels_out}, Tag::x), destination,
      {stride, stride}, {padding, padding}, {padding, padding});
  return dnnl::convolution_forward::primitive_desc(desc, attr, engine);
}

// Runs one primitive with its arguments' memory made from its descriptor.
struct Step {
  Step(const dnnl::convolution_forward::primitive_desc& desc, const dnnl::engine& engine,
       memory source)
      : primitive(desc) {
    arguments = {{DNNL_ARG_SRC, source},
                 {DNNL_ARG_WEIGHTS, filled(desc.weights_desc(), engine)},
                 {DNNL_ARG_BIAS, filled(desc.bias_desc(), engine)},
                 {DNNL_ARG_DST, filled(desc.dst_desc(), engine)}};
  }
  void submit(dnnl::stream& stream) { primitive.execute(stream, arguments); }
  void run(dnnl::stream& stream) {
    submit(stream);
    stream.wait();
  }
  dnnl::convolution_forward primitive;
  std::unordered_map<int, memory> arguments;
};

Tag blocked_tag() {
  return channel_block() == 16 ? Tag::nChw16c : Tag::nChw8c;
}

// The depthwise convolution on `channels` (the ISA's channel blocks, ReLU, user scratchpad as in
// cleave's kernels) for `threads` OpenMP threads.
dnnl::convolution_forward::primitive_desc depthwise_for(const dnnl::engine& engine,
                                                        int64_t channels, int64_t size,
                                                        int64_t kernel, int64_t stride,
                                                        int threads) {
  omp_set_num_threads(threads);  // oneDNN fixes the team size when a primitive is created.
  dnnl::post_ops relu;
  relu.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
  dnnl::primitive_attr attr = with_post_ops(relu);
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  const int64_t out_size = (size + 2 * (kernel / 2) - kernel) / stride + 1;
  return convolution(engine, float_desc({1, channels, size, size}, blocked_tag()),
                     {channels, 1, 1, kernel, kernel}, channels,
                     float_desc({1, channels, out_size, out_size}, blocked_tag()), stride,
                     kernel / 2, attr);
}

// Arguments of `desc` over caller-owned source and destination bytes.
std::unordered_map<int, memory> depthwise_arguments(
    const dnnl::convolution_forward::primitive_desc& desc, const dnnl::engine& engine,
    float* source, float* destination) {
  return {{DNNL_ARG_SRC, memory(desc.src_desc(), engine, source)},
          {DNNL_ARG_WEIGHTS, filled(desc.weights_desc(), engine)},
          {DNNL_ARG_BIAS, filled(desc.bias_desc(), engine)},
          {DNNL_ARG_DST, memory(desc.dst_desc(), engine, destination)},
          {DNNL_ARG_SCRATCHPAD, memory(desc.scratchpad_desc(), engine)}};
}

int split_mode(int64_t channels, int64_t size, int64_t kernel, int64_t stride) {
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  const int64_t block = channel_block();
  const int64_t blocks = (channels + block - 1) / block;
  const int64_t first_channels = (blocks + 1) / 2 * block;
  auto whole = depthwise_for(engine, channels, size, kernel, stride, 2);
  auto first = depthwise_for(engine, first_channels, size, kernel, stride, 1);
  auto second = depthwise_for(engine, channels - first_channels, size, kernel, stride, 1);
  omp_set_num_threads(2);
  const int64_t out_size = whole.dst_desc().dims()[2];
  std::vector<float> source(whole.src_desc().get_size() / sizeof(float), 0.5f);
  std::vector<float> destination(whole.dst_desc().get_size() / sizeof(float));
  // In channel blocks a block range is one contiguous stretch of the tensor.
  const int64_t source_offset = first_channels * size * size;
  const int64_t destination_offset = first_channels * out_size * out_size;
  auto whole_arguments = depthwise_arguments(whole, engine, source.data(), destination.data());
  std::vector<std::unordered_map<int, memory>> part_arguments = {
      depthwise_arguments(first, engine, source.data(), destination.data()),
      depthwise_arguments(second, engine, source.data() + source_offset,
                          destination.data() + destination_offset)};
  dnnl::convolution_forward whole_primitive(whole);
  std::vector<dnnl::convolution_forward> parts = {dnnl::convolution_forward(first),
                                                  dnnl::convolution_forward(second)};
  auto run_whole = [&] { whole_primitive.execute(stream, whole_arguments); };
  auto run_split = [&] {
#pragma omp parallel num_threads(2)
    {
      const int part = omp_get_thread_num();
      parts[part].execute(stream, part_arguments[part]);
    }
  };
  for (int i = 0; i < 100; ++i) {
    run_whole();
    run_split();
  }
  std::vector<double> whole_times, split_times;
  for (int block = 0; block < 30; ++block) {
    const double start = seconds_now();
    for (int i = 0; i < 20; ++i) run_whole();
    const double middle = seconds_now();
    for (int i = 0; i < 20; ++i) run_split();
    whole_times.push_back((middle - start) / 20);
    split_times.push_back((seconds_now() - middle) / 20);
  }
  std::printf("one 2-thread primitive %.1f us [%s], split %lld + %lld channels %.1f us\n",
              median(whole_times) * 1e6, whole.impl_info_str(),
              static_cast<long long>(first_channels),
              static_cast<long long>(channels - first_channels), median(split_times) * 1e6);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc >= 2 ? argv[1] : "";
  if (mode == "split" && argc == 6) {
    return split_mode(std::atoi(argv[2]), std::atoi(argv[3]), std::atoi(argv[4]),
                      std::atoi(argv[5]));
  }
  if ((mode != "chain" && mode != "fused") || argc != 7) {
    std::fprintf(stderr, "usage: %s chain C E H K T | fused C E H S T | split E H K S\n", argv[0]);
    return 2;
  }
  const int64_t channels_in = std::atoi(argv[2]), expanded = std::atoi(argv[3]),
                size = std::atoi(argv[4]), kernel_or_stride = std::atoi(argv[5]);
  omp_set_num_threads(std::atoi(argv[6]));
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  const memory::desc input = float_desc({1, channels_in, size, size}, blocked_tag());
  auto pointwise =
      convolution(engine, input, {expanded, channels_in, 1, 1}, expanded,
                  float_desc({1, expanded, size, size}, Tag::any), 1, 0, with_post_ops(relu6()));
  const int64_t kernel = mode == "chain" ? kernel_or_stride : 3;
  const int64_t stride = mode == "chain" ? 1 : kernel_or_stride;
  const int64_t out_size = (size + 2 * (kernel / 2) - kernel) / stride + 1;
  // The depthwise destination keeps the blocked layout: left free, oneDNN 2.6 picks its
  // reference kernel.
  auto depthwise =
      convolution(engine, pointwise.dst_desc(), {expanded, 1, 1, kernel, kernel}, expanded,
                  float_desc({1, expanded, out_size, out_size}, blocked_tag()), stride, kernel / 2,
                  with_post_ops(relu6()));
  Step first(pointwise, engine, filled(input, engine));
  Step second(depthwise, engine, first.arguments.at(DNNL_ARG_DST));

  if (mode == "chain") {
    std::vector<double> pointwise_times, depthwise_times;
    for (int i = 0; i < 600; ++i) {
      const double start = seconds_now();
      first.run(stream);
      const double middle = seconds_now();
      second.run(stream);
      if (i >= 100) {  // Warm-up.
        pointwise_times.push_back(middle - start);
        depthwise_times.push_back(seconds_now() - middle);
      }
    }
    std::printf("1x1 %.1f us [%s], depthwise %.1f us [%s]\n", median(pointwise_times) * 1e6,
                pointwise.impl_info_str(), median(depthwise_times) * 1e6,
                depthwise.impl_info_str());
    return 0;
  }

  dnnl::post_ops fused_ops = relu6();
  if (stride == 1) {
    fused_ops.append_dw_k3s1p1(memory::data_type::f32, memory::data_type::f32,
                               memory::data_type::f32, 0, {});
  } else {
    fused_ops.append_dw_k3s2p1(memory::data_type::f32, memory::data_type::f32,
                               memory::data_type::f32, 0, {});
  }
  fused_ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_clip, 0.0f, 6.0f);
  auto fused_desc =
      convolution(engine, input, {expanded, channels_in, 1, 1}, expanded,
                  float_desc({1, expanded, size, size}, Tag::any), 1, 0, with_post_ops(fused_ops));
  Step fused(fused_desc, engine, first.arguments.at(DNNL_ARG_SRC));
  for (int argument : {DNNL_ARG_WEIGHTS, DNNL_ARG_BIAS}) {
    const int post_op_argument = DNNL_ARG_ATTR_POST_OP_DW | argument;
    fused.arguments[post_op_argument] =
        filled(fused_desc.query_md(dnnl::query::exec_arg_md, post_op_argument), engine);
  }
  const std::function<void()> separate = [&] {
    first.submit(stream);
    second.run(stream);
  };
  std::vector<double> separate_times, fused_times;
  for (int i = 0; i < 20; ++i) {
    separate();
    fused.run(stream);
  }
  for (int block = 0; block < 30; ++block) {
    const double start = seconds_now();
    for (int i = 0; i < 10; ++i) separate();
    const double middle = seconds_now();
    for (int i = 0; i < 10; ++i) fused.run(stream);
    separate_times.push_back((middle - start) / 10);
    fused_times.push_back((seconds_now() - middle) / 10);
  }
  std::printf("separate %.4f ms [%s | %s], fused %.4f ms [%s], fused / separate %.3f\n",
              median(separate_times) * 1e3, pointwise.impl_info_str(), depthwise.impl_info_str(),
              median(fused_times) * 1e3, fused_desc.impl_info_str(),
              median(fused_times) / median(separate_times));
  return 0;
}
