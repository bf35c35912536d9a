// Times ResNet-50's convolutions in sequence three ways, for a host where other processes take
// cores: 1-thread primitives, 2-thread primitives, and each convolution cut into P parts along
// its output channel blocks, 1-thread primitives claimed one at a time by 2 threads.
//
// Build:
//   g++ -O2 -std=c++20 -fopenmp bench/conv_parts.cc -ldnnl -o /tmp/conv_parts
// Run (bench/load/conv_parts.sh runs it beside 0, 1 and 2 busy processes):
//   GOMP_SPINCOUNT=0 /tmp/conv_parts P [PASSES]
// A pass runs each convolution once; the three variants alternate pass by pass; the median pass
// of each is printed in ms. With every core taken, a 2-thread primitive's threads meet at
// barriers while one of them waits for a core; parts claimed from a shared counter let the
// thread that runs take the work of the one that does not.
#include <omp.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <vector>

#include "dnnl_bench.h"

namespace {

using namespace dnnl_bench;

struct Shape {
  int64_t channels_in, channels_out, size, kernel, stride;
};

// ResNet-50's convolutions with the number of times each shape occurs.
const std::vector<std::pair<Shape, int>> kResNet50 = {
    {{64, 64, 56, 1, 1}, 1},    {{64, 64, 56, 3, 1}, 3},     {{64, 256, 56, 1, 1}, 4},
    {{256, 64, 56, 1, 1}, 2},   {{256, 128, 56, 1, 1}, 1},   {{128, 128, 56, 3, 2}, 1},
    {{128, 512, 28, 1, 1}, 4},  {{256, 512, 56, 1, 2}, 1},   {{512, 128, 28, 1, 1}, 3},
    {{128, 128, 28, 3, 1}, 3},  {{512, 256, 28, 1, 1}, 1},   {{256, 256, 28, 3, 2}, 1},
    {{256, 1024, 14, 1, 1}, 6}, {{512, 1024, 28, 1, 2}, 1},  {{1024, 256, 14, 1, 1}, 5},
    {{256, 256, 14, 3, 1}, 5},  {{1024, 512, 14, 1, 1}, 1},  {{512, 512, 14, 3, 2}, 1},
    {{512, 2048, 7, 1, 1}, 3},  {{1024, 2048, 14, 1, 2}, 1}, {{2048, 512, 7, 1, 1}, 2},
    {{512, 512, 7, 3, 1}, 2},
};

struct Layer {
  std::unique_ptr<ConvStep> one, two;
  std::vector<std::unique_ptr<ConvStep>> parts;
};

Layer make_layer(const dnnl::engine& engine, const Shape& s, int part_count, Tag tag,
                 int64_t block) {
  const int64_t out = (s.size + 2 * (s.kernel / 2) - s.kernel) / s.stride + 1;
  memory source = filled(float_desc({1, s.channels_in, s.size, s.size}, tag), engine);
  const memory::desc dst = float_desc({1, s.channels_out, out, out}, tag);
  memory destination(dst, engine);
  Layer layer;
  omp_set_num_threads(1);
  layer.one = std::make_unique<ConvStep>(relu_convolution(engine, source.get_desc(), s.channels_in,
                                                          s.channels_out, s.kernel, s.stride, dst),
                                         engine, source, destination);
  const int64_t blocks = s.channels_out / block;
  const int64_t count = std::min<int64_t>(part_count, blocks);
  auto* base = static_cast<float*>(destination.get_data_handle());
  for (int64_t part = 0; part < count; ++part) {
    const int64_t first = part * blocks / count * block, end = (part + 1) * blocks / count * block;
    const memory::desc part_dst = float_desc({1, end - first, out, out}, tag);
    layer.parts.push_back(std::make_unique<ConvStep>(
        relu_convolution(engine, source.get_desc(), s.channels_in, end - first, s.kernel, s.stride,
                         part_dst),
        engine, source, memory(part_dst, engine, base + first * out * out)));
  }
  omp_set_num_threads(2);
  layer.two = std::make_unique<ConvStep>(relu_convolution(engine, source.get_desc(), s.channels_in,
                                                          s.channels_out, s.kernel, s.stride, dst),
                                         engine, source, destination);
  return layer;
}

void run_parts(Layer& layer) {
  std::atomic<std::size_t> next{0};
#pragma omp parallel num_threads(2)
  {
    for (std::size_t i = next++; i < layer.parts.size(); i = next++) layer.parts[i]->run();
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s PARTS [PASSES]\n", argv[0]);
    return 2;
  }
  const int part_count = std::atoi(argv[1]);
  const int passes = argc > 2 ? std::atoi(argv[2]) : 15;
  const int64_t block = channel_block();
  const Tag tag = block == 16 ? Tag::nChw16c : Tag::nChw8c;
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  std::vector<Layer> layers;
  std::vector<int> repeats;
  for (const auto& [shape, count] : kResNet50) {
    layers.push_back(make_layer(engine, shape, part_count, tag, block));
    repeats.push_back(count);
  }
  auto pass = [&](int variant) {
    const double start = seconds_now();
    for (std::size_t l = 0; l < layers.size(); ++l) {
      for (int r = 0; r < repeats[l]; ++r) {
        if (variant == 0) layers[l].one->run();
        if (variant == 1) layers[l].two->run();
        if (variant == 2) run_parts(layers[l]);
      }
    }
    return (seconds_now() - start) * 1e3;
  };
  for (int variant = 0; variant < 3; ++variant) pass(variant);
  std::vector<double> times[3];
  for (int p = 0; p < passes; ++p) {
    for (int k = 0; k < 3; ++k) {
      const int variant = (k + p) % 3;
      times[variant].push_back(pass(variant));
    }
  }
  std::printf("1 thread %.1f ms | 2 threads %.1f ms | %d parts on 2 threads %.1f ms\n",
              median(times[0]), median(times[1]), part_count, median(times[2]));
  return 0;
}
