// oneDNN primitives share one scratchpad per executing thread, of the largest size any asked.
#include <gtest/gtest.h>

#include <algorithm>
#include <thread>
#include <vector>

#include "runtime/kernels/dnnl_util.h"

namespace cleave {
namespace {

using dnnl::memory;

// A 3x3 convolution on plain NCHW tensors: oneDNN's im2col + gemm on every ISA, whose column
// buffer lives in the scratchpad.
struct PlainConvolution {
  DnnlStep step;
  std::size_t scratchpad = 0;
  std::vector<float> source, weights, destination;

  PlainConvolution(const dnnl::engine& engine, int64_t channels, int64_t size) {
    const memory::desc src({1, channels, size, size}, memory::data_type::f32,
                           memory::format_tag::nchw);
    const memory::desc wei({channels, channels, 3, 3}, memory::data_type::f32,
                           memory::format_tag::oihw);
    const memory::desc dst = src;
    dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference,
                                         dnnl::algorithm::convolution_direct, src, wei, dst, {1, 1},
                                         {1, 1}, {1, 1});
    dnnl::convolution_forward::primitive_desc pd(desc, kernel_attr(), engine);
    scratchpad = pd.scratchpad_desc().get_size();
    step = DnnlStep(dnnl::convolution_forward(pd), pd, engine);
    step.declare(DNNL_ARG_SRC, src);
    step.declare(DNNL_ARG_WEIGHTS, wei);
    step.declare(DNNL_ARG_DST, dst);
    source.assign(static_cast<std::size_t>(channels * size * size), 1.0f);
    weights.assign(static_cast<std::size_t>(channels * channels * 9), 0.5f);
    destination.assign(source.size(), 0.0f);
  }

  void run(dnnl::stream& stream) {
    step.set(DNNL_ARG_SRC, source.data());
    step.set(DNNL_ARG_WEIGHTS, weights.data());
    step.set(DNNL_ARG_DST, destination.data());
    step.execute(stream);
    stream.wait();
  }
};

TEST(Scratchpad, OneBufferPerThreadOfTheLargestSizeAsked) {
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  PlainConvolution small(engine, 8, 16), large(engine, 16, 40);
  if (small.scratchpad == 0 || large.scratchpad == 0) {
    GTEST_SKIP() << "oneDNN chose kernels without a scratchpad: " << small.step.implementation()
                 << ", " << large.step.implementation();
  }
  ASSERT_LT(small.scratchpad, large.scratchpad);
  const std::size_t before = thread_scratchpad_bytes();
  large.run(stream);
  small.run(stream);
  large.run(stream);
  // Not the sum: the two primitives ran from the same buffer.
  EXPECT_EQ(thread_scratchpad_bytes(), std::max(before, large.scratchpad));
  // 8 input channels x 9 taps x 0.5 per output inside the border.
  EXPECT_EQ(small.destination[16 * 8 + 8], 36.0f);
  EXPECT_EQ(large.destination[40 * 20 + 20], 72.0f);

  std::size_t other = 0;
  std::thread([&] {
    dnnl::stream own(engine);
    small.run(own);
    other = thread_scratchpad_bytes();
  }).join();
  EXPECT_EQ(other, small.scratchpad);  // Another thread has its own, sized for what it ran.
  EXPECT_EQ(thread_scratchpad_bytes(), std::max(before, large.scratchpad));
}

}  // namespace
}  // namespace cleave
