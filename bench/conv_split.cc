// Times a dense convolution as one 2-thread oneDNN primitive against two 1-thread primitives on
// the two halves of its output channel blocks (each reads the whole input), run side by side.
//
// Build:
//   g++ -O2 -std=c++20 -fopenmp bench/conv_split.cc -ldnnl -o /tmp/conv_split
// Run:
//   /tmp/conv_split CIN COUT H K S [COLD]
// CIN -> COUT channels, H x H input, K x K kernel, stride S, padding K/2, ReLU, the ISA's
// channel blocks (8 on AVX2, 16 on AVX-512), user scratchpad as in cleave's kernels. With
// COLD=1 a 64 MiB buffer is written between runs (outside the timing), so that weights and
// input come from memory as in a whole model's run rather than from a warm cache. Median of 21
// blocks of 10 runs, the two variants alternating block by block. The shapes measured
// (docs/results/ort_speed_avx2.md): ResNet-50's convolutions, e.g. 64 64 56 3 1, 256 64 56 1 1,
// 128 128 28 3 1, 256 256 14 3 1, 1024 256 14 1 1, 512 512 7 3 1, 2048 512 7 1 1.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <vector>

#include "dnnl_bench.h"

namespace {

using namespace dnnl_bench;

}  // namespace

int main(int argc, char** argv) {
  if (argc < 6) {
    std::fprintf(stderr, "usage: %s CIN COUT H K S [COLD]\n", argv[0]);
    return 2;
  }
  const int64_t channels_in = std::atoi(argv[1]), channels_out = std::atoi(argv[2]);
  const int64_t size = std::atoi(argv[3]), kernel = std::atoi(argv[4]), stride = std::atoi(argv[5]);
  const bool cold = argc > 6 && std::atoi(argv[6]) != 0;
  const int64_t block = channel_block();
  if (channels_out % block != 0 || channels_out / block < 2) {
    std::fprintf(stderr, "COUT must be a multiple of %lld blocks, at least 2\n",
                 static_cast<long long>(block));
    return 2;
  }
  const Tag tag = block == 16 ? Tag::nChw16c : Tag::nChw8c;
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  const int64_t out_size = (size + 2 * (kernel / 2) - kernel) / stride + 1;
  memory source = filled(float_desc({1, channels_in, size, size}, tag), engine);
  const memory::desc whole_desc = float_desc({1, channels_out, out_size, out_size}, tag);
  memory destination(whole_desc, engine);

  omp_set_num_threads(2);  // oneDNN fixes a primitive's team when it is created.
  ConvStep whole(relu_convolution(engine, source.get_desc(), channels_in, channels_out, kernel,
                                  stride, whole_desc),
                 engine, source, destination);
  omp_set_num_threads(1);
  const int64_t first = (channels_out / block + 1) / 2 * block;
  auto* base = static_cast<float*>(destination.get_data_handle());
  const memory::desc first_desc = float_desc({1, first, out_size, out_size}, tag);
  const memory::desc second_desc = float_desc({1, channels_out - first, out_size, out_size}, tag);
  ConvStep first_half(
      relu_convolution(engine, source.get_desc(), channels_in, first, kernel, stride, first_desc),
      engine, source, memory(first_desc, engine, base));
  ConvStep second_half(relu_convolution(engine, source.get_desc(), channels_in,
                                        channels_out - first, kernel, stride, second_desc),
                       engine, source,
                       memory(second_desc, engine, base + first * out_size * out_size));
  omp_set_num_threads(2);

  std::vector<char> flush(cold ? std::size_t{64} << 20 : 0);
  auto evict = [&] {
    for (std::size_t i = 0; i < flush.size(); i += 64) ++flush[i];
  };
  auto run_split = [&] {
#pragma omp parallel num_threads(2)
    {
      if (omp_get_thread_num() == 0) {
        first_half.run();
      } else {
        second_half.run();
      }
    }
  };
  for (int i = 0; i < 5; ++i) {
    whole.run();
    run_split();
  }
  std::vector<double> whole_times, split_times;
  for (int round = 0; round < 21; ++round) {
    double sum = 0;
    for (int i = 0; i < 10; ++i) {
      evict();
      const double start = seconds_now();
      whole.run();
      sum += seconds_now() - start;
    }
    whole_times.push_back(sum / 10);
    sum = 0;
    for (int i = 0; i < 10; ++i) {
      evict();
      const double start = seconds_now();
      run_split();
      sum += seconds_now() - start;
    }
    split_times.push_back(sum / 10);
  }
  std::printf(
      "%lld->%lld %lldx%lld k%lld s%lld %s: one 2-thread primitive %.1f us [%s], "
      "split in two %.1f us, ratio %.3f\n",
      static_cast<long long>(channels_in), static_cast<long long>(channels_out),
      static_cast<long long>(size), static_cast<long long>(size), static_cast<long long>(kernel),
      static_cast<long long>(stride), cold ? "cold" : "warm", median(whole_times) * 1e6,
      whole.name.c_str(), median(split_times) * 1e6, median(split_times) / median(whole_times));
  return 0;
}
