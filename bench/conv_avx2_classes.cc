// Every convolution kernel cleave could run for the convolution classes of resnet34,
// wide_resnet50_2 and resnet101 at the held-out 128x128 input, timed side by side in one
// process: oneDNN's direct kernel on 8-channel blocks (what cleave's blocked family runs) and on
// nhwc, oneDNN's gemm-based convolution (im2col + sgemm) on nchw and nhwc, a 1x1 stride-1
// convolution as a oneDNN matmul on nhwc, and cleave's own Winograd F(2x2, 3x3). Each with a
// bias and a fused ReLU, weights packed once, warm caches.
//
// Build against the release library (as bench/winograd.cc), then run capped to AVX2:
//   cd build
//   LIBS=$(sed -n '/^build cleave:/,/LINK_LIBRARIES/s/.*LINK_LIBRARIES = //p' build.ninja)
//   SRC=../bench/conv_avx2_classes.cc
//   g++ -O2 -std=c++20 -fopenmp -DFMT_SHARED -I../src $SRC $LIBS -o /tmp/conv_avx2_classes
//   ONEDNN_MAX_CPU_ISA=AVX2 /tmp/conv_avx2_classes THREADS [ROUNDS] [MODEL|all] [warm|cold]
// Prints one line per class and alternative: the median over ROUNDS (default 15) interleaved
// rounds of one sample each (a sample: as many runs as fill about 2 ms, averaged) and its ratio
// to the blocked direct kernel's, the fastest sample and its ratio (steadier on a loaded host),
// and the largest difference from the blocked output.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dnnl_bench.h"
#include "runtime/kernels/nn/winograd.h"

using namespace dnnl_bench;
using cleave::conv_detail::OwnWinograd;
using cleave::conv_detail::WinogradEpilogue;
using cleave::conv_detail::WinogradProblem;

namespace {

struct ConvClass {
  const char* model;
  int64_t kernel, stride, in, out, size;  // size: the input's height and width.
};

// bench/ort/conv_classes.py's classes of the three models (ONNX shape inference, 128x128).
const ConvClass kClasses[] = {
    {"resnet34", 3, 1, 64, 64, 32},           {"resnet34", 3, 1, 128, 128, 16},
    {"resnet34", 3, 1, 256, 256, 8},          {"resnet34", 3, 1, 512, 512, 4},
    {"resnet34", 3, 2, 64, 128, 32},          {"resnet34", 3, 2, 128, 256, 16},
    {"resnet34", 3, 2, 256, 512, 8},          {"resnet34", 1, 2, 64, 128, 32},
    {"resnet34", 1, 2, 128, 256, 16},         {"resnet34", 1, 2, 256, 512, 8},
    {"wide_resnet50_2", 1, 1, 64, 128, 32},   {"wide_resnet50_2", 1, 1, 64, 256, 32},
    {"wide_resnet50_2", 1, 1, 128, 256, 32},  {"wide_resnet50_2", 1, 1, 256, 128, 32},
    {"wide_resnet50_2", 1, 1, 256, 256, 32},  {"wide_resnet50_2", 1, 1, 256, 512, 16},
    {"wide_resnet50_2", 1, 1, 512, 256, 16},  {"wide_resnet50_2", 1, 1, 512, 512, 16},
    {"wide_resnet50_2", 1, 1, 512, 1024, 8},  {"wide_resnet50_2", 1, 1, 1024, 512, 8},
    {"wide_resnet50_2", 1, 1, 1024, 1024, 8}, {"wide_resnet50_2", 1, 1, 1024, 2048, 4},
    {"wide_resnet50_2", 1, 1, 2048, 1024, 4}, {"wide_resnet50_2", 1, 2, 256, 512, 32},
    {"wide_resnet50_2", 1, 2, 512, 1024, 16}, {"wide_resnet50_2", 1, 2, 1024, 2048, 8},
    {"wide_resnet50_2", 3, 1, 128, 128, 32},  {"wide_resnet50_2", 3, 1, 256, 256, 16},
    {"wide_resnet50_2", 3, 1, 512, 512, 8},   {"wide_resnet50_2", 3, 1, 1024, 1024, 4},
    {"wide_resnet50_2", 3, 2, 256, 256, 32},  {"wide_resnet50_2", 3, 2, 512, 512, 16},
    {"wide_resnet50_2", 3, 2, 1024, 1024, 8}, {"resnet101", 1, 1, 256, 1024, 8},
    {"resnet101", 1, 1, 1024, 256, 8},        {"resnet101", 3, 1, 256, 256, 8},
};

// Copies of the weights each alternative cycles through, one per run: 1 leaves them warm in
// the caches between runs; "cold" (main's 4th argument) makes enough copies to hold at least
// kColdBytes, as in a model whose other layers' weights pass through the caches in between.
int g_copies = 1;
constexpr double kColdBytes = 128.0 * (1 << 20);
constexpr int kMaxCopies = 256;

// One way of computing a class: a run, and its output as plain nchw floats.
struct Alternative {
  std::string name;
  std::function<void()> run;
  std::function<std::vector<float>()> output;
  std::vector<double> samples;
};

std::vector<float> to_plain(const memory& from, const memory::desc& plain,
                            const dnnl::engine& engine) {
  memory to(plain, engine);
  dnnl::stream stream(engine);
  dnnl::reorder(from, to).execute(stream, const_cast<memory&>(from), to);
  stream.wait();
  const auto* values = static_cast<const float*>(to.get_data_handle());
  return std::vector<float>(values, values + plain.get_size() / sizeof(float));
}

memory from_plain(const std::vector<float>& values, const memory::desc& plain,
                  const memory::desc& target, const dnnl::engine& engine) {
  memory source(plain, engine, const_cast<float*>(values.data()));
  memory to(target, engine);
  dnnl::stream stream(engine);
  dnnl::reorder(source, to).execute(stream, source, to);
  stream.wait();
  return to;
}

dnnl::primitive_attr relu_attr() {
  dnnl::post_ops ops;
  ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
  dnnl::primitive_attr attr;
  attr.set_post_ops(ops);
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

// The convolution on `tag` input and output, the implementation whose name starts with
// `prefix` in its name (empty: oneDNN's first choice), or none.
std::unique_ptr<Alternative> convolution(const ConvClass& c, Tag tag, const std::string& prefix,
                                         const std::vector<float>& input,
                                         const std::vector<float>& weights,
                                         const std::vector<float>& bias,
                                         const dnnl::engine& engine) {
  const int64_t out_size = (c.size + 2 * (c.kernel / 2) - c.kernel) / c.stride + 1;
  const memory::dims source_dims = {1, c.in, c.size, c.size};
  const memory::dims destination_dims = {1, c.out, out_size, out_size};
  const int64_t pad = c.kernel / 2;
  dnnl::convolution_forward::desc desc(
      dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
      float_desc(source_dims, tag), float_desc({c.out, c.in, c.kernel, c.kernel}, Tag::any),
      float_desc({c.out}, Tag::x), float_desc(destination_dims, tag), {c.stride, c.stride},
      {pad, pad}, {pad, pad});
  dnnl::convolution_forward::primitive_desc pd(desc, relu_attr(), engine);
  while (!prefix.empty() && std::string(pd.impl_info_str()).find(prefix) == std::string::npos) {
    if (!pd.next_impl()) return nullptr;
  }
  auto alternative = std::make_unique<Alternative>();
  const char* layout = tag == Tag::nChw8c ? "nChw8c" : tag == Tag::nhwc ? "nhwc" : "nchw";
  alternative->name = std::string(pd.impl_info_str()) + " " + layout;
  auto step = std::make_shared<std::unordered_map<int, memory>>();
  (*step)[DNNL_ARG_SRC] =
      from_plain(input, float_desc(source_dims, Tag::nchw), pd.src_desc(), engine);
  auto packed = std::make_shared<std::vector<memory>>();
  for (int i = 0; i < g_copies; ++i) {
    packed->push_back(from_plain(weights, float_desc({c.out, c.in, c.kernel, c.kernel}, Tag::oihw),
                                 pd.weights_desc(), engine));
  }
  (*step)[DNNL_ARG_BIAS] = from_plain(bias, float_desc({c.out}, Tag::x), pd.bias_desc(), engine);
  (*step)[DNNL_ARG_DST] = memory(pd.dst_desc(), engine);
  (*step)[DNNL_ARG_SCRATCHPAD] = memory(pd.scratchpad_desc(), engine);
  auto primitive = std::make_shared<dnnl::convolution_forward>(pd);
  auto stream = std::make_shared<dnnl::stream>(engine);
  auto next = std::make_shared<std::size_t>(0);
  alternative->run = [=] {
    (*step)[DNNL_ARG_WEIGHTS] = (*packed)[(*next)++ % packed->size()];
    primitive->execute(*stream, *step);
    stream->wait();
  };
  const memory::desc plain = float_desc(destination_dims, Tag::nchw);
  alternative->output = [=, &engine] { return to_plain(step->at(DNNL_ARG_DST), plain, engine); };
  return alternative;
}

// A 1x1 stride-1 convolution on nhwc as the matmul [pixels x in] x [in x out].
std::unique_ptr<Alternative> matmul(const ConvClass& c, const std::vector<float>& input,
                                    const std::vector<float>& weights,
                                    const std::vector<float>& bias, const dnnl::engine& engine) {
  const int64_t pixels = c.size * c.size;
  dnnl::matmul::desc desc(float_desc({pixels, c.in}, Tag::ab), float_desc({c.in, c.out}, Tag::any),
                          float_desc({1, c.out}, Tag::ab), float_desc({pixels, c.out}, Tag::ab));
  dnnl::matmul::primitive_desc pd(desc, relu_attr(), engine);
  auto alternative = std::make_unique<Alternative>();
  alternative->name = std::string(pd.impl_info_str()) + " matmul nhwc";
  auto step = std::make_shared<std::unordered_map<int, memory>>();
  // nhwc is nchw's [pixels][in] transposed: reorder via the 4-D descriptors.
  memory nhwc = from_plain(input, float_desc({1, c.in, c.size, c.size}, Tag::nchw),
                           float_desc({1, c.in, c.size, c.size}, Tag::nhwc), engine);
  (*step)[DNNL_ARG_SRC] = memory(pd.src_desc(), engine, nhwc.get_data_handle());
  auto keep = std::make_shared<memory>(nhwc);
  // oihw's [out][in] is the weights' [in][out] in the ba layout.
  auto packed = std::make_shared<std::vector<memory>>();
  for (int i = 0; i < g_copies; ++i) {
    packed->push_back(
        from_plain(weights, float_desc({c.in, c.out}, Tag::ba), pd.weights_desc(), engine));
  }
  (*step)[DNNL_ARG_BIAS] =
      from_plain(bias, float_desc({1, c.out}, Tag::ab), pd.bias_desc(), engine);
  (*step)[DNNL_ARG_DST] = memory(pd.dst_desc(), engine);
  (*step)[DNNL_ARG_SCRATCHPAD] = memory(pd.scratchpad_desc(), engine);
  auto primitive = std::make_shared<dnnl::matmul>(pd);
  auto stream = std::make_shared<dnnl::stream>(engine);
  auto next = std::make_shared<std::size_t>(0);
  alternative->run = [=] {
    (void)keep;
    (*step)[DNNL_ARG_WEIGHTS] = (*packed)[(*next)++ % packed->size()];
    primitive->execute(*stream, *step);
    stream->wait();
  };
  alternative->output = [=, &engine] {
    memory result(float_desc({1, c.out, c.size, c.size}, Tag::nhwc), engine,
                  step->at(DNNL_ARG_DST).get_data_handle());
    return to_plain(result, float_desc({1, c.out, c.size, c.size}, Tag::nchw), engine);
  };
  return alternative;
}

std::unique_ptr<Alternative> winograd(const ConvClass& c, int threads,
                                      const std::vector<float>& input,
                                      const std::vector<float>& weights,
                                      const std::vector<float>& bias, const dnnl::engine& engine) {
  WinogradProblem problem;
  problem.channels_in = c.in;
  problem.channels_out = c.out;
  problem.height = problem.width = problem.out_height = problem.out_width = c.size;
  problem.pad_top = problem.pad_left = 1;
  WinogradEpilogue relu;
  relu.low = 0.0f;
  auto kernels = std::make_shared<std::vector<OwnWinograd>>();
  for (int i = 0; i < g_copies; ++i) kernels->emplace_back(problem, weights.data(), relu);
  const OwnWinograd* kernel = &kernels->front();
  auto source = std::make_shared<memory>(from_plain(
      input, float_desc({1, c.in, c.size, c.size}, Tag::nchw), kernel->source(), engine));
  auto destination = std::make_shared<memory>(kernel->destination(), engine);
  auto alternative = std::make_unique<Alternative>();
  alternative->name = OwnWinograd::kImplementation;
  auto next = std::make_shared<std::size_t>(0);
  alternative->run = [=, &bias] {
    (*kernels)[(*next)++ % kernels->size()].run(
        static_cast<const float*>(source->get_data_handle()), bias.data(),
        static_cast<float*>(destination->get_data_handle()), threads, nullptr);
  };
  alternative->output = [=, &engine] {
    return to_plain(*destination, float_desc({1, c.out, c.size, c.size}, Tag::nchw), engine);
  };
  return alternative;
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 15;
  const std::string only = argc > 3 ? argv[3] : "";
  const bool cold = argc > 4 && std::string(argv[4]) == "cold";
  omp_set_num_threads(threads);
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  for (const ConvClass& c : kClasses) {
    if (!only.empty() && only != "all" && only != c.model) continue;
    std::vector<float> input(static_cast<std::size_t>(c.in * c.size * c.size));
    std::vector<float> weights(static_cast<std::size_t>(c.out * c.in * c.kernel * c.kernel));
    std::vector<float> bias(static_cast<std::size_t>(c.out));
    for (std::size_t i = 0; i < input.size(); ++i)
      input[i] = static_cast<float>((i * 31) % 17) * 0.05f - 0.3f;
    for (std::size_t i = 0; i < weights.size(); ++i)
      weights[i] = static_cast<float>((i * 7919) % 23) * 0.01f - 0.1f;
    for (std::size_t i = 0; i < bias.size(); ++i) bias[i] = static_cast<float>(i % 5) * 0.1f;
    const double weight_bytes = static_cast<double>(weights.size() * sizeof(float));
    g_copies =
        cold ? std::clamp(static_cast<int>(std::ceil(kColdBytes / weight_bytes)), 1, kMaxCopies)
             : 1;
    std::vector<std::unique_ptr<Alternative>> alternatives;
    auto add = [&](std::unique_ptr<Alternative> alternative) {
      if (alternative) alternatives.push_back(std::move(alternative));
    };
    add(convolution(c, Tag::nChw8c, "", input, weights, bias, engine));
    add(convolution(c, Tag::nhwc, "", input, weights, bias, engine));
    add(convolution(c, Tag::nhwc, "gemm", input, weights, bias, engine));
    add(convolution(c, Tag::nchw, "gemm", input, weights, bias, engine));
    if (c.kernel == 1 && c.stride == 1) add(matmul(c, input, weights, bias, engine));
    if (c.kernel == 3 && c.stride == 1 && cleave::conv_detail::own_winograd_available()) {
      add(winograd(c, threads, input, weights, bias, engine));
    }
    // Runs per sample: about 2 ms of the first alternative.
    for (int i = 0; i < 3; ++i) {
      for (auto& alternative : alternatives) alternative->run();
    }
    const double start = seconds_now();
    alternatives[0]->run();
    const int repeat = std::max(1, static_cast<int>(2e-3 / std::max(seconds_now() - start, 1e-6)));
    for (int round = 0; round < rounds; ++round) {
      for (std::size_t k = 0; k < alternatives.size(); ++k) {
        // The order rotates each round, so no alternative always follows the same one.
        Alternative& alternative = *alternatives[(k + round) % alternatives.size()];
        const double begin = seconds_now();
        for (int r = 0; r < repeat; ++r) alternative.run();
        alternative.samples.push_back((seconds_now() - begin) / repeat * 1e3);
      }
    }
    const std::vector<float> reference = alternatives[0]->output();
    const double base = median(alternatives[0]->samples);
    const double base_min =
        *std::min_element(alternatives[0]->samples.begin(), alternatives[0]->samples.end());
    for (auto& alternative : alternatives) {
      const std::vector<float> values = alternative->output();
      double difference = 0;
      for (std::size_t i = 0; i < values.size(); ++i) {
        difference = std::max(difference, static_cast<double>(std::fabs(values[i] - reference[i])));
      }
      const double ms = median(alternative->samples);
      const double fastest =
          *std::min_element(alternative->samples.begin(), alternative->samples.end());
      std::printf(
          "%s k%ld s%ld %ld->%ld @%ld T%d | %-32s | %8.4f ms | %.3f | min %8.4f ms | %.3f | "
          "diff %.1e | copies %d\n",
          c.model, static_cast<long>(c.kernel), static_cast<long>(c.stride),
          static_cast<long>(c.in), static_cast<long>(c.out), static_cast<long>(c.size), threads,
          alternative->name.c_str(), ms, ms / base, fastest, fastest / base_min, difference,
          g_copies);
    }
    std::fflush(stdout);
  }
}
