// Times a 1x1 convolution and the depthwise convolution after it (MobileNet/MnasNet blocks),
// each primitive on its own, as they run one after the other on the same buffers: what a
// depthwise convolution costs outside a whole model's run.
//
// Build and run (C input channels expanded to E, H x H pixels, K x K depthwise, T threads):
//   g++ -O2 -std=c++20 -fopenmp bench/depthwise_chain.cc -ldnnl -o /tmp/depthwise_chain
//   /tmp/depthwise_chain 80 480 14 5 2
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
    std::fprintf(stderr, "usage: %s C E H K T\n", argv[0]);
    return 2;
  }
  int IC = atoi(argv[1]), C = atoi(argv[2]), H = atoi(argv[3]), K = atoi(argv[4]),
      T = atoi(argv[5]);
  omp_set_num_threads(T);
  engine eng(engine::kind::cpu, 0);
  stream st(eng);
  int P = K / 2;
  auto md = [](memory::dims d, tag t) { return memory::desc(d, dt::f32, t); };
  post_ops po;
  po.append_eltwise(1.f, algorithm::eltwise_relu, 0.f, 0.f);
  primitive_attr a;
  a.set_post_ops(po);
  convolution_forward::desc c1(prop_kind::forward_inference, algorithm::convolution_direct,
                               md({1, IC, H, H}, tag::nChw16c), md({C, IC, 1, 1}, tag::any),
                               md({C}, tag::x), md({1, C, H, H}, tag::any), {1, 1}, {0, 0}, {0, 0});
  convolution_forward::primitive_desc p1(c1, a, eng);
  convolution_forward::desc c2(prop_kind::forward_inference, algorithm::convolution_direct,
                               p1.dst_desc(), md({C, 1, 1, K, K}, tag::any), md({C}, tag::x),
                               p1.dst_desc(), {1, 1}, {P, P}, {P, P});
  convolution_forward::primitive_desc p2(c2, a, eng);
  auto alloc = [&](const memory::desc& d) {
    memory m(d, eng);
    float* p = (float*)m.get_data_handle();
    for (size_t i = 0; i < d.get_size() / 4; ++i) p[i] = (i % 13) * 0.01f;
    return m;
  };
  memory s = alloc(p1.src_desc()), w1 = alloc(p1.weights_desc()), b1 = alloc(p1.bias_desc()),
         mid = alloc(p1.dst_desc());
  memory w2 = alloc(p2.weights_desc()), b2 = alloc(p2.bias_desc()), o = alloc(p2.dst_desc());
  convolution_forward k1(p1), k2(p2);
  std::vector<double> t1, t2;
  for (int i = 0; i < 600; ++i) {
    double a0 = now();
    k1.execute(
        st, {{DNNL_ARG_SRC, s}, {DNNL_ARG_WEIGHTS, w1}, {DNNL_ARG_BIAS, b1}, {DNNL_ARG_DST, mid}});
    st.wait();
    double a1 = now();
    k2.execute(
        st, {{DNNL_ARG_SRC, mid}, {DNNL_ARG_WEIGHTS, w2}, {DNNL_ARG_BIAS, b2}, {DNNL_ARG_DST, o}});
    st.wait();
    double a2 = now();
    if (i >= 100) {
      t1.push_back(a1 - a0);
      t2.push_back(a2 - a1);
    }
  }
  std::sort(t1.begin(), t1.end());
  std::sort(t2.begin(), t2.end());
  printf("IC=%d C=%d H=%d K=%d T=%d  1x1 %.1f us  dw %.1f us  [%s | %s]\n", IC, C, H, K, T,
         t1[t1.size() / 2] * 1e6, t2[t2.size() / 2] * 1e6, p1.impl_info_str(), p2.impl_info_str());
}
