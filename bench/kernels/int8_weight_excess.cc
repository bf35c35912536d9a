// The sparse correction of the weight split w = clamp(w, -64, 64) + rest, timed alone on one
// resnet18_int8 3x3 convolution's real weights (issue 44 item 5; docs/results/heldout-speed.md,
// 2026-11-30 10:39-11:40 UTC): Σ rest·x over the nonzero rests, channels-last (per input channel
// and tap, the list of (output channel, rest)) and plain (an axpy of an input row per nonzero),
// checked against a dense reference. Square planes, 3x3, stride 1, pad 1, channels in = out.
// Build: g++ -O3 -mavx2 -mfma -std=c++20 bench/kernels/int8_weight_excess.cc -o /tmp/excess
// Weights (OIHW int8, raw): /usr/bin/python3 -c "import onnx,os;from onnx import numpy_helper as
//   h;m=onnx.load(os.path.expanduser('~/.cache/cleave/heldout/resnet18_int8.onnx'));g=m.graph;
//   i={t.name:h.to_array(t) for t in g.initializer};p={o:n for n in g.node for o in n.output};
//   c=[n for n in g.node if n.name=='/layer1/layer1.0/conv2/Conv'][0];
//   i[p[c.input[1]].input[0]].tofile('/tmp/layer1.w')"
// Run: /tmp/excess /tmp/layer1.w 64 32 0.0   (weights, channels, plane side, share of zero data)
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>
int main(int argc, char** argv) {
  const char* file = argv[1];
  const int C = atoi(argv[2]),
            H = atoi(argv[3]);  // in = out channels, square plane, 3x3 pad 1 stride 1
  const double zeros = atof(argv[4]);
  const int K = 3, P = 1, W_ = H, OC = C, IC = C;
  std::vector<int8_t> w(OC * IC * 9);
  FILE* f = fopen(file, "rb");
  if (fread(w.data(), 1, w.size(), f) != w.size()) return 1;
  fclose(f);
  std::vector<int32_t> w2(w.size());
  long nnz = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    int v = w[i];
    int c = std::clamp(v, -64, 64);
    w2[i] = v - c;
    nnz += w2[i] != 0;
  }
  std::mt19937 rng(1);
  std::uniform_int_distribution<int> d(0, 255);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<uint8_t> xnchw(IC * H * W_), xnhwc(IC * H * W_);
  for (int c = 0; c < IC; ++c)
    for (int y = 0; y < H; ++y)
      for (int x = 0; x < W_; ++x) {
        uint8_t v = u(rng) < zeros ? 0 : d(rng);
        xnchw[(c * H + y) * W_ + x] = v;
        xnhwc[(y * W_ + x) * IC + c] = v;
      }
  // nhwc: per (kh,kw,ic) the list of (oc, w2)
  std::vector<std::vector<std::pair<int, int>>> rows(9 * IC);
  for (int o = 0; o < OC; ++o)
    for (int c = 0; c < IC; ++c)
      for (int k = 0; k < 9; ++k) {
        int v = w2[(o * IC + c) * 9 + k];
        if (v) rows[k * IC + c].push_back({o, v});
      }
  // nchw: entries
  struct E {
    int o, c, kh, kw, v;
  };
  std::vector<E> es;
  for (int o = 0; o < OC; ++o)
    for (int c = 0; c < IC; ++c)
      for (int k = 0; k < 9; ++k) {
        int v = w2[(o * IC + c) * 9 + k];
        if (v) es.push_back({o, c, k / 3, k % 3, v});
      }
  std::vector<int32_t> a(OC * H * W_), b(OC * H * W_), ref(OC * H * W_);
  auto nhwc = [&] {
    std::fill(a.begin(), a.end(), 0);
    for (int y = 0; y < H; ++y)
      for (int x = 0; x < W_; ++x) {
        int32_t* out = &a[(y * W_ + x) * OC];
        for (int kh = 0; kh < K; ++kh) {
          int iy = y - P + kh;
          if (iy < 0 || iy >= H) continue;
          for (int kw = 0; kw < K; ++kw) {
            int ix = x - P + kw;
            if (ix < 0 || ix >= W_) continue;
            const uint8_t* in = &xnhwc[(iy * W_ + ix) * IC];
            for (int c = 0; c < IC; ++c) {
              int v = in[c];
              if (!v) continue;
              for (auto [o, q] : rows[(kh * 3 + kw) * IC + c]) out[o] += q * v;
            }
          }
        }
      }
  };
  auto nchw = [&] {
    std::fill(b.begin(), b.end(), 0);
    for (const E& e : es) {
      int32_t* out = &b[e.o * H * W_];
      const uint8_t* in = &xnchw[e.c * H * W_];
      for (int y = 0; y < H; ++y) {
        int iy = y - P + e.kh;
        if (iy < 0 || iy >= H) continue;
        int x0 = std::max(0, P - e.kw), x1 = std::min(W_, W_ + P - e.kw);
        int32_t* o = out + y * W_;
        const uint8_t* i = in + iy * W_ - P + e.kw;
        for (int x = x0; x < x1; ++x) o[x] += e.v * i[x];
      }
    }
  };
  for (int o = 0; o < OC; ++o)
    for (int y = 0; y < H; ++y)
      for (int x = 0; x < W_; ++x) {
        long s = 0;
        for (int c = 0; c < IC; ++c)
          for (int kh = 0; kh < 3; ++kh)
            for (int kw = 0; kw < 3; ++kw) {
              int iy = y - 1 + kh, ix = x - 1 + kw;
              if (iy < 0 || iy >= H || ix < 0 || ix >= W_) continue;
              s += w2[(o * IC + c) * 9 + kh * 3 + kw] * xnchw[(c * H + iy) * W_ + ix];
            }
        ref[(o * H + y) * W_ + x] = s;
      }
  auto time = [&](auto fn) {
    std::vector<double> t;
    for (int r = 0; r < 31; ++r) {
      auto s = std::chrono::steady_clock::now();
      fn();
      t.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - s).count());
    }
    std::sort(t.begin(), t.end());
    return t[15];
  };
  double ta = time(nhwc), tb = time(nchw);
  bool ok = true;
  for (int o = 0; o < OC; ++o)
    for (int p = 0; p < H * W_; ++p)
      ok &= a[p * OC + o] == ref[o * H * W_ + p] && b[o * H * W_ + p] == ref[o * H * W_ + p];
  double macs = double(OC) * IC * 9 * H * W_;
  printf(
      "%s C=%d %dx%d zeros=%.2f density=%.4f sparse MACs %.2fM (of %.2fM): nhwc lists %.3f ms, "
      "nchw axpy %.3f ms  %s\n",
      file, C, H, W_, zeros, double(nnz) / w.size(), macs * nnz / w.size() / 1e6, macs / 1e6, ta,
      tb, ok ? "exact" : "MISMATCH");
}
