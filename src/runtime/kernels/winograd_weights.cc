// oneDNN's Winograd weight layouts written by cleave's own transform, in place of oneDNN's reorder.
#include "runtime/kernels/winograd_weights.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace cleave {
namespace {

constexpr int kTaps = 3;
constexpr int kMaxAlpha = 6;
// oneDNN 2.6's output channel block in these layouts (AVX-512's 16 floats); another block is
// left to its reorder.
constexpr int kBlock = 16;

// The rows of G in U = G g G^T, as oneDNN 2.6 uses them: F(2x2, 3x3) for the 2x3 layouts and a
// scaled F(4x4, 3x3) for OBaaIBOIio. Other values would still be a Winograd transform, but not
// the bits oneDNN's kernels were written against.
constexpr float kG2x3[4][kTaps] = {
    {1.0f, 0.0f, 0.0f}, {0.5f, 0.5f, 0.5f}, {0.5f, -0.5f, 0.5f}, {0.0f, 0.0f, 1.0f}};
constexpr float kG4x3[6][kTaps] = {{1.13777777777778f, 0.f, 0.f},
                                   {-0.688403361344538f, -0.430252100840336f, -0.26890756302521f},
                                   {-0.688403361344538f, 0.430252100840336f, -0.26890756302521f},
                                   {0.119514472455649f, 0.179271708683473f, 0.26890756302521f},
                                   {0.119514472455649f, -0.179271708683473f, 0.26890756302521f},
                                   {0.f, 0.f, 1.f}};

// Where the run of oc_block output channels of block `ob` starts, for tile element (a, b) and
// input channel `ic`: in every layout handled here the output channel within its block is the
// innermost dimension.
class WinogradLayout {
 public:
  explicit WinogradLayout(const dnnl_wino_desc_t& d) : d_(d) {
    nb_oc_ = d.oc / d.oc_block;
    nb_ic_ = d.ic / d.ic_block;
  }

  int64_t offset(int a, int b, int64_t ic, int64_t ob) const {
    const int64_t alpha = d_.alpha, ib = ic / d_.ic_block, i = ic % d_.ic_block;
    switch (d_.wino_format) {
      case dnnl_wino_wei_aaOio:
        return ((((a * alpha + b) * nb_oc_ + ob) * nb_ic_ + ib) * d_.ic_block + i) * d_.oc_block;
      case dnnl_wino_wei_aaOBiOo: {
        const int64_t chunks = nb_oc_ / d_.oc2_block;
        const int64_t chunk = ob / d_.oc2_block, within = ob % d_.oc2_block;
        return (((a * alpha + b) * chunks + chunk) * nb_ic_ + ib) *
                   (int64_t{d_.oc2_block} * d_.ic_block * d_.oc_block) +
               (i * d_.oc2_block + within) * d_.oc_block;
      }
      default: {  // OBaaIBOIio
        const int64_t ic_chunks = nb_ic_ / d_.ic2_block;
        const int64_t occ = ob / d_.oc2_block, obb = ob % d_.oc2_block;
        const int64_t icc = ib / d_.ic2_block, ibb = ib % d_.ic2_block;
        return ((((((occ * alpha + a) * alpha + b) * ic_chunks + icc) * d_.oc2_block + obb) *
                     d_.ic2_block +
                 ibb) *
                    d_.ic_block +
                i) *
               d_.oc_block;
      }
    }
  }

 private:
  dnnl_wino_desc_t d_;
  int64_t nb_oc_ = 0, nb_ic_ = 0;
};

bool supported(const dnnl_wino_desc_t& d, int64_t out, int64_t in, std::size_t bytes) {
  const bool two = d.wino_format == dnnl_wino_wei_aaOio || d.wino_format == dnnl_wino_wei_aaOBiOo;
  const bool four = d.wino_format == dnnl_wino_wei_OBaaIBOIio;
  if (!(two && d.alpha == 4) && !(four && d.alpha == 6)) return false;
  if (d.r != kTaps || d.oc < out || d.ic < in || d.oc_block != kBlock || d.ic_block < 1 ||
      d.oc % d.oc_block != 0 || d.ic % d.ic_block != 0)
    return false;
  if (d.oc2_block < 1 || (d.oc / d.oc_block) % d.oc2_block != 0) return false;
  if (four && (d.ic2_block < 1 || (d.ic / d.ic_block) % d.ic2_block != 0)) return false;
  return bytes >= static_cast<std::size_t>(d.alpha) * d.alpha * d.oc * d.ic * sizeof(float);
}

// Per element, the same sequence of roundings as oneDNN's reorder: each stage's sum starts from
// zero and adds the products in tap order (so -0 products give +0, as there). Vectorised over
// the block's output channels only, which keeps every element's sequence; this file is built
// with -ffp-contract=off so that no multiply and add fuse. The sizes are constants so that the
// compiler unrolls the loops.
template <int Alpha>
void transform_block(const float (&x)[kTaps * kTaps][kBlock], const float* g,
                     float (&u)[kMaxAlpha * kMaxAlpha][kBlock]) {
  constexpr int block = kBlock, alpha = Alpha;
  float w[kTaps][kMaxAlpha][kBlock];
  for (int h = 0; h < kTaps; ++h)
    for (int j = 0; j < alpha; ++j) {
      for (int o = 0; o < block; ++o) w[h][j][o] = 0.f;
      for (int t = 0; t < kTaps; ++t) {
        const float gj = g[j * kTaps + t];
        for (int o = 0; o < block; ++o) w[h][j][o] += x[h * kTaps + t][o] * gj;
      }
    }
  for (int i = 0; i < alpha; ++i)
    for (int j = 0; j < alpha; ++j) {
      float* row = u[i * alpha + j];
      for (int o = 0; o < block; ++o) row[o] = 0.f;
      for (int k = 0; k < kTaps; ++k) {
        const float gi = g[i * kTaps + k];
        for (int o = 0; o < block; ++o) row[o] += gi * w[k][j][o];
      }
    }
}

// Every (input channel, output block) tile of `plain` ([out][in][3][3]) into `result`.
template <int Alpha>
void transform_all(const float* plain, int64_t out, int64_t in, const dnnl_wino_desc_t& d,
                   float* result) {
  const float* g = d.alpha == 4 ? &kG2x3[0][0] : &kG4x3[0][0];
  const WinogradLayout layout(d);
  // Every layout here is linear in the tile element's index a * alpha + b.
  const int64_t tile_stride = layout.offset(0, 1, 0, 0) - layout.offset(0, 0, 0, 0);
  constexpr int block = kBlock;
  float x[kTaps * kTaps][kBlock];
  float u[kMaxAlpha * kMaxAlpha][kBlock];
  for (int64_t ob = 0; ob < d.oc / block; ++ob) {
    for (int64_t ic = 0; ic < d.ic; ++ic) {
      // Read channel ic of the block's kernels, zero beyond the given channels (oneDNN's pad).
      for (int o = 0; o < block; ++o) {
        const int64_t oc = ob * block + o;
        if (oc >= out || ic >= in) {
          for (int t = 0; t < kTaps * kTaps; ++t) x[t][o] = 0.f;
          continue;
        }
        const float* kernel = plain + (oc * in + ic) * kTaps * kTaps;
        for (int t = 0; t < kTaps * kTaps; ++t) x[t][o] = kernel[t];
      }
      transform_block<Alpha>(x, g, u);
      float* first = result + layout.offset(0, 0, ic, ob);
      for (int e = 0; e < Alpha * Alpha; ++e) std::copy_n(u[e], block, first + e * tile_stride);
    }
  }
}

}  // namespace

bool transform_winograd_weights(const float* plain, const dnnl::memory::desc& from,
                                const dnnl::memory::desc& to, void* destination) {
  using tag = dnnl::memory::format_tag;
  const dnnl_memory_desc_t& target = to.data;
  if (target.format_kind != dnnl_format_kind_wino || target.data_type != dnnl_f32) return false;
  const dnnl::memory::dims dims = from.dims();
  const bool grouped = dims.size() == 5 && dims[0] == 1;
  if (dims.size() != 4 && !grouped) return false;
  if (from !=
      dnnl::memory::desc(dims, dnnl::memory::data_type::f32, grouped ? tag::goihw : tag::oihw))
    return false;
  const std::size_t at = grouped ? 1 : 0;
  const int64_t out = dims[at], in = dims[at + 1];
  if (dims[at + 2] != kTaps || dims[at + 3] != kTaps) return false;
  const dnnl_wino_desc_t& d = target.format_desc.wino_desc;
  if (!supported(d, out, in, to.get_size())) return false;

  float* result = static_cast<float*>(destination);
  if (d.alpha == 4)
    transform_all<4>(plain, out, in, d, result);
  else
    transform_all<6>(plain, out, in, d, result);
  return true;
}

}  // namespace cleave
