// Times four ways to run an inference BatchNormalization + Relu, y = relu(x * a[c] + b[c]), on
// nChw16c at one thread, interleaved (each repetition runs the four in a rotating order):
// oneDNN's batch normalization (global statistics, fuse_norm_relu: what cleave ran before),
// cleave's scale-and-shift loop (runtime/kernels/nn/batch_norm_scale_shift.cc's 16-lane body,
// copied), oneDNN's binary mul with a binary-add and a relu post-op, and oneDNN's depthwise 1x1
// convolution with a bias and a relu post-op (how ONNX Runtime runs it). Shapes are DenseNet's
// pre-activation BatchNormalizations at a 128x128 input (densenet169, held-out corpus).
//
// Build and run:
//   g++ -O3 -std=c++20 -ffp-contract=off -fno-trapping-math bench/batch_norm_forms.cc -ldnnl
//       -o /tmp/batch_norm_forms
//   OMP_NUM_THREADS=1 /tmp/batch_norm_forms
// Prints per shape the median microseconds of 200 runs of each, and oneDNN's implementations.
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

using namespace dnnl;
using tag = memory::format_tag;
using dt = memory::data_type;

__attribute__((target("avx512f,avx512vl,avx512dq,avx2,fma"))) void loop16(
    const float* __restrict__ x, float* __restrict__ out, const float* __restrict__ scale,
    const float* __restrict__ shift, long rows, long groups, long pixels) {
  for (long row = 0; row < rows; ++row) {
    const long g = row % groups;
    float a[16], b[16];
    for (int l = 0; l < 16; ++l) a[l] = scale[g * 16 + l], b[l] = shift[g * 16 + l];
    const float* in = x + row * pixels * 16;
    float* to = out + row * pixels * 16;
    for (long p = 0; p < pixels; ++p)
      for (int l = 0; l < 16; ++l) {
        float v = in[p * 16 + l] * a[l] + b[l];
        to[p * 16 + l] = v < 0.0f ? 0.0f : v;
      }
  }
}

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int main() {
  engine eng(engine::kind::cpu, 0);
  stream s(eng);
  struct Shape {
    long c, h;
  };
  const Shape shapes[] = {{128, 32}, {256, 32}, {384, 16}, {768, 8}, {1280, 4}};
  std::printf("shape,bnorm_us,loop_us,binary_us,dwconv_us,impl_bnorm,impl_binary,impl_dw\n");
  for (const Shape& sh : shapes) {
    const long C = sh.c, H = sh.h;
    memory::dims dims = {1, C, H, H};
    memory::desc data(dims, dt::f32, tag::nChw16c);
    memory src(data, eng), dst(data, eng);
    float* x = static_cast<float*>(src.get_data_handle());
    for (size_t i = 0; i < data.get_size() / 4; ++i) x[i] = std::sin(0.37 * i);
    std::vector<float> gamma(C), beta(C), mean(C), var(C), a(C), b(C);
    for (long c = 0; c < C; ++c) {
      gamma[c] = 0.5f + 0.01f * c;
      beta[c] = 0.1f;
      mean[c] = 0.05f;
      var[c] = 1.0f + 0.001f * c;
      a[c] = gamma[c] / std::sqrt(var[c] + 1e-5f);
      b[c] = beta[c] - mean[c] * a[c];
    }
    memory::desc vec({C}, dt::f32, tag::a);
    memory mg(vec, eng, gamma.data()), mb(vec, eng, beta.data()), mm(vec, eng, mean.data()),
        mv(vec, eng, var.data());
    batch_normalization_forward::primitive_desc bn_pd(
        batch_normalization_forward::desc(
            prop_kind::forward_inference, data, 1e-5f,
            normalization_flags::use_global_stats | normalization_flags::use_scale |
                normalization_flags::use_shift | normalization_flags::fuse_norm_relu),
        eng);
    batch_normalization_forward bn(bn_pd);
    // Binary: src1 per channel [1, C, 1, 1], post-ops add [1, C, 1, 1] and relu.
    memory::desc per_c({1, C, 1, 1}, dt::f32, tag::nchw);
    memory ma(per_c, eng, a.data()), mbb(per_c, eng, b.data());
    post_ops ops;
    ops.append_binary(algorithm::binary_add, per_c);
    ops.append_eltwise(1.0f, algorithm::eltwise_relu, 0, 0);
    primitive_attr battr;
    battr.set_post_ops(ops);
    binary::primitive_desc bin_pd(binary::desc(algorithm::binary_mul, data, per_c, data), battr,
                                  eng);
    binary bin(bin_pd);
    // Depthwise 1x1: weights [C, 1, 1, 1, 1] (groups), bias, relu post-op.
    memory::desc w_any({C, 1, 1, 1, 1}, dt::f32, tag::any);
    memory::desc bias_d({C}, dt::f32, tag::a);
    post_ops cops;
    cops.append_eltwise(1.0f, algorithm::eltwise_relu, 0, 0);
    primitive_attr cattr;
    cattr.set_post_ops(cops);
    convolution_forward::primitive_desc dw_pd(
        convolution_forward::desc(prop_kind::forward_inference, algorithm::convolution_direct, data,
                                  w_any, bias_d, data, {1, 1}, {0, 0}, {0, 0}),
        cattr, eng);
    memory w_plain({{C, 1, 1, 1, 1}, dt::f32, tag::goihw}, eng, a.data());
    memory w(dw_pd.weights_desc(), eng);
    reorder(w_plain, w).execute(s, w_plain, w);
    memory mbias(bias_d, eng, b.data());
    convolution_forward dw(dw_pd);
    std::vector<float> scale16(((C + 15) / 16) * 16, 0), shift16(scale16.size(), 0);
    std::copy(a.begin(), a.end(), scale16.begin());
    std::copy(b.begin(), b.end(), shift16.begin());
    auto run = [&](int k) {
      switch (k) {
        case 0:
          bn.execute(s, {{DNNL_ARG_SRC, src},
                         {DNNL_ARG_DST, dst},
                         {DNNL_ARG_SCALE, mg},
                         {DNNL_ARG_SHIFT, mb},
                         {DNNL_ARG_MEAN, mm},
                         {DNNL_ARG_VARIANCE, mv}});
          break;
        case 1:
          loop16(x, static_cast<float*>(dst.get_data_handle()), scale16.data(), shift16.data(),
                 (C + 15) / 16, (C + 15) / 16, H * H);
          break;
        case 2:
          bin.execute(s, {{DNNL_ARG_SRC_0, src},
                          {DNNL_ARG_SRC_1, ma},
                          {DNNL_ARG_DST, dst},
                          {DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, mbb}});
          break;
        case 3:
          dw.execute(s, {{DNNL_ARG_SRC, src},
                         {DNNL_ARG_WEIGHTS, w},
                         {DNNL_ARG_BIAS, mbias},
                         {DNNL_ARG_DST, dst}});
          break;
      }
      s.wait();
    };
    std::vector<std::vector<double>> times(4);
    for (int k = 0; k < 4; ++k) run(k);
    for (int rep = 0; rep < 200; ++rep) {
      for (int j = 0; j < 4; ++j) {
        const int k = (rep + j) % 4;
        const double t0 = now();
        run(k);
        times[k].push_back((now() - t0) * 1e6);
      }
    }
    std::printf("%ldx%ldx%ld", C, H, H);
    for (auto& t : times) {
      std::sort(t.begin(), t.end());
      std::printf(",%.2f", t[t.size() / 2]);
    }
    auto name = [](const primitive_desc_base& pd) { return std::string(pd.impl_info_str()); };
    std::printf(",%s,%s,%s\n", name(bn_pd).c_str(), name(bin_pd).c_str(), name(dw_pd).c_str());
  }
}
