// cleave's own Winograd F(2x2, 3x3) (runtime/kernels/nn/winograd.h) against oneDNN's blocked
// direct convolution on the same 8-channel-block input, per convolution shape, warm caches.
//
// Build against the release library, then run at 1 and 2 threads:
//   cd build && g++ -O2 -std=c++20 -fopenmp -DFMT_SHARED -I../src ../bench/winograd.cc \
//     $(sed -n '/^build cleave:/,/LINK_LIBRARIES/s/.*LINK_LIBRARIES = //p' build.ninja) \
//     -o /tmp/winograd_bench
//   /tmp/winograd_bench 1; /tmp/winograd_bench 2
// Prints, per shape, both medians of 21 runs in ms, their ratio and the largest difference
// between the two outputs.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "dnnl_bench.h"
#include "runtime/kernels/nn/winograd.h"

using namespace dnnl_bench;
using cleave::conv_detail::OwnWinograd;
using cleave::conv_detail::WinogradEpilogue;
using cleave::conv_detail::WinogradProblem;

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  omp_set_num_threads(threads);
  if (!cleave::conv_detail::own_winograd_available()) {
    std::printf("cleave's Winograd needs the AVX2 vector path (8-channel blocks)\n");
    return 1;
  }
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  struct Shape {
    int64_t in, out, size;
  };
  // ResNet-50's, GoogLeNet's and Inception-v3's 3x3 stride-1 layers, and a small one.
  const Shape shapes[] = {{64, 64, 56},  {128, 128, 28}, {256, 256, 14}, {512, 512, 7},
                          {96, 128, 28}, {64, 192, 56},  {112, 224, 14}, {64, 96, 35},
                          {96, 96, 35},  {384, 384, 8},  {128, 32, 7}};
  for (const Shape& s : shapes) {
    auto source = filled(float_desc({1, s.in, s.size, s.size}, Tag::nChw8c), engine);
    memory destination(float_desc({1, s.out, s.size, s.size}, Tag::nChw8c), engine);
    std::vector<float> weights(static_cast<std::size_t>(s.out * s.in * 9));
    std::vector<float> bias(static_cast<std::size_t>(s.out));
    for (std::size_t i = 0; i < weights.size(); ++i)
      weights[i] = static_cast<float>((i * 7919) % 23) * 0.01f - 0.1f;
    for (std::size_t i = 0; i < bias.size(); ++i) bias[i] = static_cast<float>(i % 5) * 0.1f;
    ConvStep direct(
        relu_convolution(engine, source.get_desc(), s.in, s.out, 3, 1, destination.get_desc()),
        engine, source, destination);
    memory plain_weights(float_desc({s.out, s.in, 3, 3}, Tag::oihw), engine, weights.data());
    dnnl::reorder(plain_weights, direct.arguments[DNNL_ARG_WEIGHTS])
        .execute(direct.stream, plain_weights, direct.arguments[DNNL_ARG_WEIGHTS]);
    direct.arguments[DNNL_ARG_BIAS] = memory(float_desc({s.out}, Tag::x), engine, bias.data());

    WinogradProblem problem;
    problem.channels_in = s.in;
    problem.channels_out = s.out;
    problem.height = problem.width = problem.out_height = problem.out_width = s.size;
    problem.pad_top = problem.pad_left = 1;
    WinogradEpilogue relu;
    relu.low = 0.0f;
    const OwnWinograd winograd(problem, weights.data(), relu);
    std::vector<float> output(destination.get_desc().get_size() / sizeof(float));
    const auto* input = static_cast<const float*>(source.get_data_handle());
    auto run_winograd = [&] { winograd.run(input, bias.data(), output.data(), threads, nullptr); };
    auto time_ms = [](auto&& step) {
      for (int i = 0; i < 3; ++i) step();
      std::vector<double> times;
      for (int i = 0; i < 21; ++i) {
        const double start = seconds_now();
        step();
        times.push_back(seconds_now() - start);
      }
      return median(times) * 1e3;
    };
    const double direct_ms = time_ms([&] { direct.run(); });
    const double winograd_ms = time_ms(run_winograd);
    const auto* expected = static_cast<const float*>(destination.get_data_handle());
    double difference = 0;
    for (std::size_t i = 0; i < output.size(); ++i)
      difference = std::max(difference, static_cast<double>(std::fabs(output[i] - expected[i])));
    std::printf(
        "%4ld->%4ld %3ldx%-3ld %2d thread(s): %s %.3f ms, Winograd %.3f ms, ratio %.2f, "
        "max difference %.1e\n",
        static_cast<long>(s.in), static_cast<long>(s.out), static_cast<long>(s.size),
        static_cast<long>(s.size), threads, direct.name.c_str(), direct_ms, winograd_ms,
        winograd_ms / direct_ms, difference);
  }
}
