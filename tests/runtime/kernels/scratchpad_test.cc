// oneDNN primitives share one scratchpad per executing thread, of the largest size any asked.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <string>
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

// The process's resident bytes now (not the high-water mark): what a test that allocates
// after the peak would not see move.
std::size_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::size_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

TEST(Scratchpad, PagesAPrimitiveDoesNotTouchAreNeverMadeResident) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer's allocator and shadow memory make the scratchpad resident";
#endif
  // oneDNN's AVX-512 Winograd F(4x4, 3x3) books a buffer for 6x6-transformed weights in the
  // scratchpad that forward inference never touches (it reads the packed ones): 36 MiB here,
  // 144 MiB in fcn_resnet50's 2048->512 head, which zeroing the scratchpad made resident.
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  const memory::desc any_src({1, 512, 16, 16}, memory::data_type::f32, memory::format_tag::any);
  const memory::desc any_wei({512, 512, 3, 3}, memory::data_type::f32, memory::format_tag::any);
  dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference,
                                       dnnl::algorithm::convolution_winograd, any_src, any_wei,
                                       any_src, {1, 1}, {1, 1}, {1, 1});
  std::optional<dnnl::convolution_forward::primitive_desc> pd;
  try {
    pd.emplace(desc, kernel_attr(), engine);
  } catch (const dnnl::error&) {
    GTEST_SKIP() << "no Winograd convolution on this ISA";
  }
  const std::size_t scratchpad = pd->scratchpad_desc().get_size();
  if (implementation_name(*pd).find("wino_4x3") == std::string::npos ||
      scratchpad < (std::size_t{32} << 20)) {
    GTEST_SKIP() << implementation_name(*pd) << " books " << scratchpad << " scratchpad bytes";
  }
  DnnlStep step(dnnl::convolution_forward(*pd), *pd, engine);
  std::vector<float> source(pd->src_desc().get_size() / sizeof(float), 1.0f);
  // The packed weights, as the convolution kernel makes them: a reorder from plain.
  std::vector<float> plain_weights(512 * 512 * 9, 0.5f);
  std::vector<float> weights(pd->weights_desc().get_size() / sizeof(float));
  {
    dnnl::memory from({{512, 512, 3, 3}, memory::data_type::f32, memory::format_tag::oihw}, engine,
                      plain_weights.data());
    dnnl::memory to(pd->weights_desc(), engine, weights.data());
    dnnl::stream stream(engine);
    dnnl::reorder(from, to).execute(stream, from, to);
    stream.wait();
  }
  std::vector<float> destination(pd->dst_desc().get_size() / sizeof(float), 0.0f);
  step.declare(DNNL_ARG_SRC, pd->src_desc());
  step.declare(DNNL_ARG_WEIGHTS, pd->weights_desc());
  step.declare(DNNL_ARG_DST, pd->dst_desc());
  step.set(DNNL_ARG_SRC, source.data());
  step.set(DNNL_ARG_WEIGHTS, weights.data());
  step.set(DNNL_ARG_DST, destination.data());
  std::size_t grown = 0, taken = 0;
  // A thread of its own: its scratchpad is new, whatever the tests before grew on this one.
  std::thread([&] {
    dnnl::stream stream(engine);
    const std::size_t before = resident_bytes();
    step.execute(stream);
    stream.wait();
    grown = resident_bytes() - std::min(before, resident_bytes());
    taken = thread_scratchpad_bytes();
  }).join();
  EXPECT_EQ(taken, scratchpad);
  EXPECT_LT(grown, scratchpad / 2) << "of a " << scratchpad << "-byte scratchpad";
  // An output inside the border, in whatever layout: 512 channels x 9 taps x 0.5.
  EXPECT_NEAR(*std::max_element(destination.begin(), destination.end()), 2304.0f, 0.05f);
}

}  // namespace
}  // namespace cleave
