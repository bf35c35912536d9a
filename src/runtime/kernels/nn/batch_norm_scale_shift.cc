// An inference BatchNormalization as a per-channel scale and shift in cleave's own vector loops.
#include "runtime/kernels/nn/batch_norm_scale_shift.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "runtime/cpu_isa.h"
#include "runtime/kernels/dnnl_util.h"
#include "runtime/kernels/elementwise.h"
#include "runtime/kernels/staging.h"

namespace cleave {

namespace {

template <bool kRelu>
inline float finish(float value) {
  if constexpr (kRelu) return value < 0.0f ? 0.0f : value;
  return value;
}

// Units [begin, end) of `shape.rows * shape.pixels`, each one pixel of `lanes` floats. kLanes
// is the block when it is known here (16, 8, 4: the lane loop becomes one vector, and the
// row's scale and shift stay in registers), 1 for plain rows (one scale for the whole row), 0
// for channels-last (lanes = C, the lane loop vectorised over the channels).
template <int64_t kLanes, bool kRelu>
inline void units_body(const float* __restrict__ x, float* __restrict__ out,
                       const float* __restrict__ scale, const float* __restrict__ shift,
                       const ScaleShiftShape& shape, int64_t begin, int64_t end) {
  const int64_t lanes = kLanes > 0 ? kLanes : shape.lanes;
  for (int64_t unit = begin; unit < end;) {
    const int64_t row = unit / shape.pixels;
    const int64_t count = std::min(end, (row + 1) * shape.pixels) - unit;
    const int64_t group = row % shape.groups;
    const float* in = x + unit * lanes;
    float* to = out + unit * lanes;
    if constexpr (kLanes == 1) {
      const float a = scale[group], b = shift[group];
      for (int64_t i = 0; i < count; ++i) to[i] = finish<kRelu>(in[i] * a + b);
    } else if constexpr (kLanes > 1) {
      float a[kLanes], b[kLanes];
      for (int64_t lane = 0; lane < kLanes; ++lane) {
        a[lane] = scale[group * kLanes + lane];
        b[lane] = shift[group * kLanes + lane];
      }
      for (int64_t pixel = 0; pixel < count; ++pixel) {
        for (int64_t lane = 0; lane < kLanes; ++lane) {
          to[pixel * kLanes + lane] = finish<kRelu>(in[pixel * kLanes + lane] * a[lane] + b[lane]);
        }
      }
    } else {
      const float* a = scale + group * lanes;
      const float* b = shift + group * lanes;
      for (int64_t pixel = 0; pixel < count; ++pixel) {
        const float* pixel_in = in + pixel * lanes;
        float* pixel_out = to + pixel * lanes;
        for (int64_t lane = 0; lane < lanes; ++lane) {
          pixel_out[lane] = finish<kRelu>(pixel_in[lane] * a[lane] + b[lane]);
        }
      }
    }
    unit += count;
  }
}

using UnitsLoop = void (*)(const float*, float*, const float*, const float*, const ScaleShiftShape&,
                           int64_t, int64_t);

// One loop per instruction set (the library itself targets baseline x86-64), as fast_math.cc.
template <int64_t kLanes, bool kRelu>
__attribute__((target("avx512f,avx512vl,avx512dq,avx2,fma"))) void units_avx512(
    const float* x, float* out, const float* scale, const float* shift,
    const ScaleShiftShape& shape, int64_t begin, int64_t end) {
  units_body<kLanes, kRelu>(x, out, scale, shift, shape, begin, end);
}

template <int64_t kLanes, bool kRelu>
__attribute__((target("avx2,fma"))) void units_avx2(const float* x, float* out, const float* scale,
                                                    const float* shift,
                                                    const ScaleShiftShape& shape, int64_t begin,
                                                    int64_t end) {
  units_body<kLanes, kRelu>(x, out, scale, shift, shape, begin, end);
}

template <int64_t kLanes, bool kRelu>
void units_baseline(const float* x, float* out, const float* scale, const float* shift,
                    const ScaleShiftShape& shape, int64_t begin, int64_t end) {
  units_body<kLanes, kRelu>(x, out, scale, shift, shape, begin, end);
}

template <int64_t kLanes, bool kRelu>
UnitsLoop pick() {
  // One switch (ONEDNN_MAX_CPU_ISA) caps these loops and oneDNN's kernels alike.
  switch (vector_isa()) {
    case VectorIsa::kAvx512:
      return units_avx512<kLanes, kRelu>;
    case VectorIsa::kAvx2:
      return units_avx2<kLanes, kRelu>;
    case VectorIsa::kBaseline:
      break;
  }
  return units_baseline<kLanes, kRelu>;
}

template <bool kRelu>
UnitsLoop loop_for(int64_t lanes) {
  static const UnitsLoop sixteen = pick<16, kRelu>(), eight = pick<8, kRelu>(),
                         four = pick<4, kRelu>(), one = pick<1, kRelu>(), any = pick<0, kRelu>();
  // Channels-last of 16, 8, 4 or 1 channels is one group of that many lanes: the same loops.
  switch (lanes) {
    case 16:
      return sixteen;
    case 8:
      return eight;
    case 4:
      return four;
    case 1:
      return one;
    default:
      return any;
  }
}

class ScaleShiftBatchNormKernel final : public Kernel {
 public:
  ScaleShiftBatchNormKernel(const KernelContext& context, ScaleShiftShape shape, bool relu)
      : shape_(shape), relu_(relu), threads_(context.threads) {
    const Tensor& x = context.input(0);
    const int64_t channels = x.dim(1);
    const auto epsilon = static_cast<double>(context.node.float_attribute("epsilon", 1e-5f));
    const float* gamma = context.input(1).data<float>();
    const float* beta = context.input(2).data<float>();
    const float* mean = context.input(3).data<float>();
    const float* variance = context.input(4).data<float>();
    // Channel c is at group c / lanes, lane c % lanes, except channels-last, where it is lane c
    // of the one group: the same index either way. Lanes past C (padding) keep 0.
    scale_.assign(static_cast<std::size_t>(shape_.groups * shape_.lanes), 0.0f);
    shift_.assign(scale_.size(), 0.0f);
    for (int64_t c = 0; c < channels; ++c) {
      const double a = gamma[c] / std::sqrt(static_cast<double>(variance[c]) + epsilon);
      scale_[c] = static_cast<float>(a);
      shift_[c] = static_cast<float>(beta[c] - mean[c] * a);
    }
    spec_.shape = x.shape();
    output_count_ = std::max<std::size_t>(1, context.node.outputs.size());
    channels_ = channels;
    if (x.is_blocked()) {
      if (context.blocked_outputs_allowed) {
        spec_.layout = x.layout();
      } else {
        // Computed in the input's layout, then reordered into the plain output.
        staged_bytes_ = x.layout()->get_size();
        reorder_ = LayoutReorder(*x.layout(), plain_desc(x.shape()), context.engine);
      }
    }
    implementation_ = "cleave_scale_shift:" + vector_isa_name(vector_isa());
  }

  std::string implementation() const override { return implementation_; }
  std::vector<OutputSpec> output_specs() const override {
    // Unread training outputs (running or saved statistics) get buffers nothing writes.
    std::vector<OutputSpec> specs(output_count_, {DataType::kFloat, {channels_}, {}, -1});
    specs[0] = spec_;
    return specs;
  }

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
           dnnl::stream& stream) override {
    float* out = outputs[0]->data<float>();
    if (staged_bytes_ > 0) {
      out = reinterpret_cast<float*>(staging_buffer(StagingSlot::kOutput, staged_bytes_));
    }
    scale_shift_loops(inputs[0]->data<float>(), out, scale_.data(), shift_.data(), shape_, relu_,
                      threads_);
    if (staged_bytes_ > 0) reorder_.run(out, outputs[0]->raw(), stream);
  }

 private:
  ScaleShiftShape shape_;
  bool relu_ = false;
  int threads_ = 1;
  std::vector<float> scale_, shift_;
  OutputSpec spec_;
  std::size_t output_count_ = 1;
  int64_t channels_ = 0;
  std::size_t staged_bytes_ = 0;
  LayoutReorder reorder_;
  std::string implementation_;
};

// How x's floats lie as ScaleShiftShape, or nullopt for a layout the loops do not walk.
std::optional<ScaleShiftShape> shape_of(const Tensor& x) {
  const int64_t batch = x.dim(0), channels = x.dim(1);
  const int64_t spatial = volume(std::span<const int64_t>(x.shape()).subspan(2));
  if (elementwise::is_channels_last(x)) return ScaleShiftShape{batch, 1, spatial, channels};
  std::optional<int64_t> block = elementwise::channel_block_of(x);
  if (!block) return std::nullopt;
  if (*block == 1 && spatial == 1) return ScaleShiftShape{batch, 1, 1, channels};  // [N, C]
  const int64_t groups = (channels + *block - 1) / *block;
  return ScaleShiftShape{batch * groups, groups, spatial, *block};
}

}  // namespace

void scale_shift_loops(const float* x, float* out, const float* scale, const float* shift,
                       const ScaleShiftShape& shape, bool relu, int threads) {
  const UnitsLoop loop = relu ? loop_for<true>(shape.lanes) : loop_for<false>(shape.lanes);
  // Below this many floats a second thread costs more than it saves (the intra-op team has
  // usually decided already: one thread per 256 KiB moved).
  const int64_t min_parallel_units =
      std::max<int64_t>(1, elementwise::kBlockedParallelThreshold / shape.lanes);
  elementwise::parallel_for(
      shape.rows * shape.pixels, threads,
      [&](int64_t begin, int64_t end) { loop(x, out, scale, shift, shape, begin, end); },
      min_parallel_units);
}

std::unique_ptr<Kernel> try_scale_shift_batch_norm(const KernelContext& context) {
  const Node& node = context.node;
  if (node.int_attribute("training_mode", 0) != 0 || node.int_attribute("spatial", 1) != 1) {
    return nullptr;
  }
  bool relu = false;
  if (const Attribute* activation = node.attribute("activation")) {
    if (activation->s != "Relu") return nullptr;
    relu = true;
  }
  for (std::size_t i = 1; i < node.outputs.size(); ++i) {
    if (output_used(context, i)) return nullptr;
  }
  if (context.inputs.size() < 5) return nullptr;
  const Tensor& x = context.input(0);
  if (x.dtype() != DataType::kFloat || x.rank() < 2 || x.element_count() == 0) return nullptr;
  for (std::size_t i = 1; i <= 4; ++i) {
    // Statistics computed at run time keep oneDNN's kernel, which reads them per run.
    if (!context.has_input(i) || i >= context.constant.size() || !context.constant[i])
      return nullptr;
    const Tensor& parameter = context.input(i);
    if (parameter.dtype() != DataType::kFloat || parameter.is_blocked() ||
        parameter.element_count() != x.dim(1)) {
      return nullptr;
    }
  }
  std::optional<ScaleShiftShape> shape = shape_of(x);
  if (!shape) return nullptr;
  return std::make_unique<ScaleShiftBatchNormKernel>(context, *shape, relu);
}

}  // namespace cleave
