// Times a batch-1 classifier Gemm (1 x K times K x N, plus a bias) in oneDNN's weight layouts,
// with the weights in cache and with them evicted, outside a whole model's run.
//
// Build:
//   g++ -O2 -std=c++20 -fopenmp bench/classifier_gemm.cc -ldnnl -o /tmp/classifier_gemm
// Run:
//   /tmp/classifier_gemm K N T   (MnasNet-1.0 and MobileNet-V2: 1280 1000, T threads)
// Prints, per variant, oneDNN's implementation and the median µs of 40 calls, "hot" (one call
// after another) and "cold" (64 MiB read between calls, so the weights come from memory, as
// in a model's run, where everything before the Gemm has passed through the caches):
//   matmul, weights format_tag::any (what cleave packs them to), ba (ONNX's transB=1 as it is),
//   ab; inner product, weights any and oi.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include <dnnl.hpp>

namespace {

using dnnl::memory;
using Tag = memory::format_tag;
constexpr auto kF32 = memory::data_type::f32;

double seconds_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::vector<char> eviction(64 << 20);

void evict() {
  for (std::size_t i = 0; i < eviction.size(); i += 64) ++eviction[i];
}

double median_us(const std::function<void()>& call, bool cold) {
  std::vector<double> times;
  for (int i = 0; i < 40; ++i) {
    if (cold) evict();
    const double start = seconds_now();
    call();
    times.push_back(seconds_now() - start);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2] * 1e6;
}

void report(const char* variant, const char* implementation, const std::function<void()>& call,
            const std::vector<float>& out) {
  for (int i = 0; i < 5; ++i) call();
  const double hot = median_us(call, false);
  const double cold = median_us(call, true);
  std::printf("%-28s %-22s hot %7.1f us  cold %7.1f us  (out[7] %.4f)\n", variant, implementation,
              hot, cold, out[7]);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s K N THREADS\n", argv[0]);
    return 2;
  }
  const long k = std::atol(argv[1]), n = std::atol(argv[2]);
  const int threads = std::atoi(argv[3]);
  if (k <= 0 || n <= 0 || threads <= 0) {
    std::fprintf(stderr, "K, N and THREADS must be positive\n");
    return 2;
  }
  omp_set_num_threads(threads);
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  std::vector<float> source(k), weights_nk(k * n), bias(n), out(n);
  for (long i = 0; i < k; ++i) source[i] = 0.001f * static_cast<float>(i % 1000);
  for (long i = 0; i < k * n; ++i) weights_nk[i] = 1e-4f * static_cast<float>(i % 977);
  for (long i = 0; i < n; ++i) bias[i] = static_cast<float>(i % 13);
  memory source_memory({{1, k}, kF32, Tag::ab}, engine, source.data());
  memory out_memory({{1, n}, kF32, Tag::ab}, engine, out.data());
  memory bias_row({{1, n}, kF32, Tag::ab}, engine, bias.data());
  memory bias_vector({{n}, kF32, Tag::a}, engine, bias.data());

  // Matmul: weights K x N; ONNX's Gemm with transB=1 holds them N x K, which is "ba".
  memory weights_ba({{k, n}, kF32, Tag::ba}, engine, weights_nk.data());
  for (Tag tag : {Tag::any, Tag::ba, Tag::ab}) {
    dnnl::post_ops ops;
    ops.append_binary(dnnl::algorithm::binary_add, bias_row.get_desc());
    dnnl::primitive_attr attr;
    attr.set_post_ops(ops);
    dnnl::matmul::primitive_desc descriptor(
        dnnl::matmul::desc(source_memory.get_desc(), memory::desc({k, n}, kF32, tag),
                           out_memory.get_desc()),
        attr, engine);
    memory weights(descriptor.weights_desc(), engine);
    dnnl::reorder(weights_ba, weights).execute(stream, weights_ba, weights);
    stream.wait();
    dnnl::matmul matmul(descriptor);
    const char* name = tag == Tag::any  ? "matmul, weights any"
                       : tag == Tag::ba ? "matmul, weights ba"
                                        : "matmul, weights ab";
    report(
        name, descriptor.impl_info_str(),
        [&] {
          matmul.execute(stream, {{DNNL_ARG_SRC, source_memory},
                                  {DNNL_ARG_WEIGHTS, weights},
                                  {DNNL_ARG_DST, out_memory},
                                  {DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, bias_row}});
          stream.wait();
        },
        out);
  }

  // Inner product: weights N x K ("oi").
  memory weights_oi({{n, k}, kF32, Tag::oi}, engine, weights_nk.data());
  memory source_nc({{1, k}, kF32, Tag::nc}, engine, source.data());
  memory out_nc({{1, n}, kF32, Tag::nc}, engine, out.data());
  for (Tag tag : {Tag::any, Tag::oi}) {
    dnnl::inner_product_forward::primitive_desc descriptor(
        dnnl::inner_product_forward::desc(dnnl::prop_kind::forward_inference, source_nc.get_desc(),
                                          memory::desc({n, k}, kF32, tag), bias_vector.get_desc(),
                                          out_nc.get_desc()),
        engine);
    memory weights(descriptor.weights_desc(), engine);
    dnnl::reorder(weights_oi, weights).execute(stream, weights_oi, weights);
    stream.wait();
    dnnl::inner_product_forward product(descriptor);
    report(
        tag == Tag::any ? "inner product, weights any" : "inner product, weights oi",
        descriptor.impl_info_str(),
        [&] {
          product.execute(stream, {{DNNL_ARG_SRC, source_nc},
                                   {DNNL_ARG_WEIGHTS, weights},
                                   {DNNL_ARG_BIAS, bias_vector},
                                   {DNNL_ARG_DST, out_nc}});
          stream.wait();
        },
        out);
  }
  return 0;
}
