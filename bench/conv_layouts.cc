// Measures oneDNN convolution latency per memory layout choice, to pick the runtime's defaults.
//
// Build and run (1 thread):
//   g++ -O2 -std=c++20 -fopenmp bench/conv_layouts.cc -ldnnl -o /tmp/conv_layouts
//   OMP_NUM_THREADS=1 /tmp/conv_layouts
#include <omp.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

namespace {

using dnnl::memory;
using Tag = memory::format_tag;

struct ConvShape {
  const char* name;
  int64_t channels_in, channels_out, size, kernel, stride, groups;
};

struct Layouts {
  const char* name;
  Tag source, destination;
  bool reorder_in;   // Feed a plain nchw tensor, reordered into the chosen layout first.
  bool reorder_out;  // Deliver a plain nchw tensor, reordered out of the chosen layout.
};

// Minimum and median: on a shared machine the minimum is the steadier of the two.
std::pair<double, double> min_and_median_ms(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  return {samples.front(), samples[samples.size() / 2]};
}

const char* implementation(const dnnl::primitive_desc_base& descriptor) {
  const char* name = nullptr;
  dnnl_primitive_desc_query(descriptor.get(), dnnl_query_impl_info_str, 0, &name);
  return name ? name : "?";
}

void measure(dnnl::engine& engine, dnnl::stream& stream, const ConvShape& shape,
             const Layouts& layouts) {
  int64_t pad = shape.kernel / 2;
  int64_t out = (shape.size + 2 * pad - shape.kernel) / shape.stride + 1;
  memory::dims src_dims = {1, shape.channels_in, shape.size, shape.size};
  memory::dims dst_dims = {1, shape.channels_out, out, out};
  memory::dims weight_dims =
      shape.groups == 1
          ? memory::dims{shape.channels_out, shape.channels_in, shape.kernel, shape.kernel}
          : memory::dims{shape.groups, shape.channels_out / shape.groups,
                         shape.channels_in / shape.groups, shape.kernel, shape.kernel};
  auto f32 = memory::data_type::f32;
  dnnl::convolution_forward::desc conv_desc(
      dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
      memory::desc(src_dims, f32, layouts.source), memory::desc(weight_dims, f32, Tag::any),
      memory::desc({shape.channels_out}, f32, Tag::x),
      memory::desc(dst_dims, f32, layouts.destination), {shape.stride, shape.stride}, {pad, pad},
      {pad, pad});
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  dnnl::convolution_forward::primitive_desc pd(conv_desc, attr, engine);
  if (std::string(implementation(pd)).starts_with("ref")) {
    std::printf("%-24s %-30s (reference implementation only, not timed)\n", shape.name,
                layouts.name);
    return;
  }
  dnnl::memory src(pd.src_desc(), engine), weights(pd.weights_desc(), engine),
      bias(pd.bias_desc(), engine), dst(pd.dst_desc(), engine),
      scratch(pd.scratchpad_desc(), engine);
  dnnl::memory plain_src(memory::desc(src_dims, f32, Tag::nchw), engine);
  dnnl::memory plain_dst(memory::desc(dst_dims, f32, Tag::nchw), engine);
  std::fill_n(static_cast<float*>(plain_src.get_data_handle()),
              1 * shape.channels_in * shape.size * shape.size, 0.5f);
  dnnl::convolution_forward conv(pd);
  dnnl::reorder to_src(plain_src, src), from_dst(dst, plain_dst);
  auto once = [&] {
    if (layouts.reorder_in) to_src.execute(stream, plain_src, src);
    conv.execute(stream, {{DNNL_ARG_SRC, src},
                          {DNNL_ARG_WEIGHTS, weights},
                          {DNNL_ARG_BIAS, bias},
                          {DNNL_ARG_DST, dst},
                          {DNNL_ARG_SCRATCHPAD, scratch}});
    if (layouts.reorder_out) from_dst.execute(stream, dst, plain_dst);
    stream.wait();
  };
  for (int i = 0; i < 10; ++i) once();
  std::vector<double> samples;
  for (int i = 0; i < 100; ++i) {
    auto start = std::chrono::steady_clock::now();
    once();
    samples.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
  }
  auto [fastest, median] = min_and_median_ms(samples);
  std::printf("%-24s %-30s min %7.3f ms  median %7.3f ms  %s\n", shape.name, layouts.name, fastest,
              median, implementation(pd));
}

}  // namespace

int main() {
  omp_set_num_threads(1);
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  const ConvShape shapes[] = {
      {"3x3 64->64 56x56", 64, 64, 56, 3, 1, 1},
      {"1x1 256->64 56x56", 256, 64, 56, 1, 1, 1},
      {"3x3 dw 96 112x112 s2", 96, 96, 112, 3, 2, 96},
      {"3x3 3->32 224x224 s2", 3, 32, 224, 3, 2, 1},
  };
  const Layouts layouts[] = {
      {"nchw -> nchw", Tag::nchw, Tag::nchw, false, false},
      {"any -> any (no reorders)", Tag::any, Tag::any, false, false},
      {"nchw -> reorder any -> nchw", Tag::any, Tag::any, true, true},
      {"nchw -> any", Tag::nchw, Tag::any, false, false},
      {"any -> any -> reorder nchw", Tag::any, Tag::any, false, true},
      {"any -> nchw", Tag::any, Tag::nchw, false, false},
      {"nhwc -> nhwc", Tag::nhwc, Tag::nhwc, false, false},
      {"nChw16c -> nChw16c", Tag::nChw16c, Tag::nChw16c, false, false},
  };
  for (const ConvShape& shape : shapes) {
    for (const Layouts& l : layouts) measure(engine, stream, shape, l);
  }
}
