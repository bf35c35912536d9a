// oneDNN's fused depthwise post-op (append_dw_k3s1p1 / k3s2p1: a 1x1 convolution and the 3x3
// depthwise one after it as one primitive) against the two primitives run separately, with
// ReLU6 after each, on blocked layouts: median of 30 blocks of 10 runs each.
//
// Build and run (C input channels expanded to E, H x H pixels, depthwise stride S, T threads):
//   g++ -O2 -std=c++20 -fopenmp bench/depthwise_fusion.cc -ldnnl -o /tmp/depthwise_fusion
//   /tmp/depthwise_fusion 24 144 56 1 2
// The nine shapes of MobileNet-V2 timed in docs/results/parallel.md: 16 96 112 2, 24 144 56 1,
// 24 144 56 2, 32 192 28 1, 32 192 28 2, 64 384 14 1, 96 576 14 1, 96 576 14 2, 160 960 7 1.
#include <omp.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <oneapi/dnnl/dnnl.hpp>
#include <vector>
using namespace dnnl;
using tag = memory::format_tag;
using dt = memory::data_type;
static double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: %s C E H S T\n", argv[0]);
    return 2;
  }
  int IC = atoi(argv[1]), OC = atoi(argv[2]), H = atoi(argv[3]), S = atoi(argv[4]),
      T = atoi(argv[5]);
  omp_set_num_threads(T);
  engine eng(engine::kind::cpu, 0);
  stream st(eng);
  int Ho = (H + 2 - 3) / S + 1;
  auto md = [](memory::dims d, tag t) { return memory::desc(d, dt::f32, t); };
  memory::desc src = md({1, IC, H, H}, tag::nChw16c);
  convolution_forward::desc c1(prop_kind::forward_inference, algorithm::convolution_direct, src,
                               md({OC, IC, 1, 1}, tag::any), md({OC}, tag::x),
                               md({1, OC, H, H}, tag::any), {1, 1}, {0, 0}, {0, 0});
  post_ops po1;
  po1.append_eltwise(1.f, algorithm::eltwise_clip, 0.f, 6.f);
  primitive_attr a1;
  a1.set_post_ops(po1);
  convolution_forward::primitive_desc p1(c1, a1, eng);
  convolution_forward::desc c2(prop_kind::forward_inference, algorithm::convolution_direct,
                               p1.dst_desc(), md({OC, 1, 1, 3, 3}, tag::any), md({OC}, tag::x),
                               md({1, OC, Ho, Ho}, tag::nChw16c), {S, S}, {1, 1}, {1, 1});
  convolution_forward::primitive_desc p2(c2, a1, eng);
  post_ops pf;
  pf.append_eltwise(1.f, algorithm::eltwise_clip, 0.f, 6.f);
  if (S == 1)
    pf.append_dw_k3s1p1(dt::f32, dt::f32, dt::f32, 0, {});
  else
    pf.append_dw_k3s2p1(dt::f32, dt::f32, dt::f32, 0, {});
  pf.append_eltwise(1.f, algorithm::eltwise_clip, 0.f, 6.f);
  primitive_attr af;
  af.set_post_ops(pf);
  convolution_forward::primitive_desc pfused;
  try {
    pfused = convolution_forward::primitive_desc(c1, af, eng);
  } catch (dnnl::error& e) {
    printf("fused: %s\n", e.what());
    return 1;
  }
  auto alloc = [&](const memory::desc& d) {
    memory m(d, eng);
    float* p = (float*)m.get_data_handle();
    for (size_t i = 0; i < d.get_size() / 4; ++i) p[i] = (i % 13) * 0.01f;
    return m;
  };
  memory s = alloc(src), w1 = alloc(p1.weights_desc()), b1 = alloc(p1.bias_desc()),
         mid = alloc(p1.dst_desc());
  memory w2 = alloc(p2.weights_desc()), b2 = alloc(p2.bias_desc()), out = alloc(p2.dst_desc());
  memory wf =
      alloc(pfused.query_md(query::exec_arg_md, DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_WEIGHTS));
  memory bf = alloc(pfused.query_md(query::exec_arg_md, DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_BIAS));
  memory outf = alloc(pfused.dst_desc());
  convolution_forward k1(p1), k2(p2), kf(pfused);
  auto sep = [&] {
    k1.execute(
        st, {{DNNL_ARG_SRC, s}, {DNNL_ARG_WEIGHTS, w1}, {DNNL_ARG_BIAS, b1}, {DNNL_ARG_DST, mid}});
    k2.execute(
        st,
        {{DNNL_ARG_SRC, mid}, {DNNL_ARG_WEIGHTS, w2}, {DNNL_ARG_BIAS, b2}, {DNNL_ARG_DST, out}});
    st.wait();
  };
  auto fus = [&] {
    kf.execute(st, {{DNNL_ARG_SRC, s},
                    {DNNL_ARG_WEIGHTS, w1},
                    {DNNL_ARG_BIAS, b1},
                    {DNNL_ARG_DST, outf},
                    {DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_WEIGHTS, wf},
                    {DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_BIAS, bf}});
    st.wait();
  };
  std::vector<double> ts, tf;
  for (int i = 0; i < 20; ++i) {
    sep();
    fus();
  }
  for (int b = 0; b < 30; ++b) {
    double t0 = now();
    for (int i = 0; i < 10; ++i) sep();
    double t1 = now();
    for (int i = 0; i < 10; ++i) fus();
    double t2 = now();
    ts.push_back((t1 - t0) / 10);
    tf.push_back((t2 - t1) / 10);
  }
  std::sort(ts.begin(), ts.end());
  std::sort(tf.begin(), tf.end());
  printf(
      "IC=%d OC=%d H=%d S=%d T=%d  separate %.4f ms  fused %.4f ms  ratio %.3f   [%s | %s | %s] "
      "dst %s\n",
      IC, OC, H, S, T, ts[15] * 1e3, tf[15] * 1e3, tf[15] / ts[15], p1.impl_info_str(),
      p2.impl_info_str(), pfused.impl_info_str(),
      pfused.dst_desc().dims()[2] == Ho ? "ok" : "WRONG");
}
