// A dilated convolution left to gemm, computed tap by tap as 1x1 convolutions on jit kernels.
#include "runtime/kernels/nn/dilated_taps.h"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <cstring>

namespace cleave::conv_detail {

namespace {

using dnnl::memory;

int64_t floor_div(int64_t a, int64_t b) {
  return a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
}

// The outputs along one axis where one tap reads the input, and the input run they read.
struct TapRange {
  int64_t first_output = 0, outputs = 0;  // outputs == 0: the tap reads only padding.
  int64_t first_input = 0, inputs = 0;
};

TapRange tap_range(int64_t input, int64_t output, int64_t stride, int64_t dilation,
                   int64_t pad_begin, int64_t tap) {
  const int64_t shift = tap * dilation - pad_begin;  // input index = o * stride + shift
  const int64_t first = std::max<int64_t>(0, -floor_div(shift, stride));
  const int64_t last = std::min(output - 1, floor_div(input - 1 - shift, stride));
  TapRange r;
  if (first > last) return r;
  r.first_output = first;
  r.outputs = last - first + 1;
  r.first_input = first * stride + shift;
  r.inputs = (r.outputs - 1) * stride + 1;
  return r;
}

constexpr int64_t kMaxTaps = 64;

struct Tap {
  int64_t row = 0, column = 0;
  std::array<TapRange, 2> ranges;  // Height, width.
  bool covers(const ConvProblem& p) const {
    return ranges[0].outputs == p.output_shape[2] && ranges[1].outputs == p.output_shape[3];
  }
};

memory::desc rectangle(const memory::desc& like, int64_t batch, int64_t channels, int64_t height,
                       int64_t width) {
  const std::vector<int64_t> shape = {batch, channels, height, width};
  return same_layout_for(like, shape).value_or(any_desc(shape));
}

dnnl::convolution_forward::primitive_desc pointwise(const memory::desc& source,
                                                    const memory::desc& destination,
                                                    int64_t stride_h, int64_t stride_w,
                                                    bool with_bias, const dnnl::post_ops& post_ops,
                                                    const dnnl::engine& engine) {
  const memory::dims o_dims = destination.dims(), i_dims = source.dims();
  const memory::desc weights({o_dims[1], i_dims[1], 1, 1}, memory::data_type::f32,
                             memory::format_tag::any);
  // A 1x1 window over a run of (n - 1) * stride + 1 inputs makes n outputs with no padding.
  const memory::dims strides = {stride_h, stride_w}, zero = {0, 0};
  dnnl::primitive_attr attr = kernel_attr();
  attr.set_post_ops(post_ops);
  const auto prop = dnnl::prop_kind::forward_inference;
  const auto algorithm = dnnl::algorithm::convolution_direct;
  if (with_bias) {
    const memory::desc bias({o_dims[1]}, memory::data_type::f32, memory::format_tag::x);
    return {
        {prop, algorithm, source, weights, bias, destination, strides, zero, zero}, attr, engine};
  }
  return {{prop, algorithm, source, weights, destination, strides, zero, zero}, attr, engine};
}

// The weights of one tap as a plain (O, C, 1, 1) tensor.
std::vector<float> tap_weights(const float* weights, const ConvProblem& p, const Tap& tap) {
  const int64_t taps = p.kernel[0] * p.kernel[1];
  const int64_t offset = tap.row * p.kernel[1] + tap.column;
  std::vector<float> out(static_cast<std::size_t>(p.channels_out * p.channels_in));
  for (int64_t i = 0; i < p.channels_out * p.channels_in; ++i) {
    out[static_cast<std::size_t>(i)] = weights[i * taps + offset];
  }
  return out;
}

// The taps that read the input for some output, the last one covering every output (the one
// nearest the kernel's centre that usually reads the input where it is, with no gathering);
// empty when no tap covers every output.
std::vector<Tap> live_taps(const ConvProblem& p, const memory::dims& input) {
  std::vector<Tap> taps;
  for (int64_t row = 0; row < p.kernel[0]; ++row) {
    for (int64_t column = 0; column < p.kernel[1]; ++column) {
      Tap tap{row, column, {}};
      for (int axis = 0; axis < 2; ++axis) {
        tap.ranges[axis] =
            tap_range(input[axis + 2], p.output_shape[axis + 2], p.strides[axis], p.dilations[axis],
                      p.pads_begin[axis], axis == 0 ? row : column);
      }
      if (tap.ranges[0].outputs > 0 && tap.ranges[1].outputs > 0) taps.push_back(tap);
    }
  }
  auto reads_whole = [&](const Tap& tap) {
    return tap.covers(p) && tap.ranges[0].first_input == 0 && tap.ranges[1].first_input == 0;
  };
  auto last = std::find_if(taps.begin(), taps.end(), reads_whole);
  if (last == taps.end()) {
    last = std::find_if(taps.begin(), taps.end(), [&](const Tap& t) { return t.covers(p); });
  }
  if (last == taps.end()) return {};
  std::rotate(last, last + 1, taps.end());
  return taps;
}

// The last tap's post-ops: the sum of the other taps' outputs, then `post_ops`; nullopt when
// one of those is not an eltwise.
std::optional<dnnl::post_ops> last_tap_ops(const dnnl::post_ops& post_ops, std::size_t taps) {
  dnnl::post_ops last_ops;
  if (taps > 1) last_ops.append_sum(1.0f);
  for (int i = 0; i < post_ops.len(); ++i) {
    if (post_ops.kind(i) != dnnl::primitive::kind::eltwise) return std::nullopt;
    float scale = 0, alpha = 0, beta = 0;
    dnnl::algorithm algorithm{};
    post_ops.get_params_eltwise(i, scale, algorithm, alpha, beta);
    last_ops.append_eltwise(scale, algorithm, alpha, beta);
  }
  return last_ops;
}

// What every step of one split shares.
struct StepSetting {
  const dnnl::engine& engine;
  const ConvProblem& p;
  const float* weights;
  bool has_bias;
  bool reads_source;  // The last tap's 1x1 convolution reads the whole source as it is.
  const memory::desc& source;
  const memory::desc& destination;
};

// Builds `step` for `tap` (the last one runs `descriptor`), growing the gather and compute
// buffer sizes it needs; false when its convolution would not run on a jit kernel.
bool build_tap_step(const StepSetting& setting, const Tap& tap, bool last,
                    const dnnl::convolution_forward::primitive_desc& descriptor, TapStep& step,
                    std::size_t& gathered, std::size_t& computed) {
  const dnnl::engine& engine = setting.engine;
  const ConvProblem& p = setting.p;
  const int64_t n = p.batch, c = p.channels_in, o = p.channels_out;
  const TapRange &rows = tap.ranges[0], &columns = tap.ranges[1];
  dnnl::convolution_forward::primitive_desc convolution;
  try {
    if (last) {
      convolution = descriptor;
    } else {
      convolution = pointwise(rectangle(setting.source, n, c, rows.inputs, columns.inputs),
                              rectangle(setting.destination, n, o, rows.outputs, columns.outputs),
                              p.strides[0], p.strides[1], false, {}, engine);
    }
    if (is_slow(implementation_name(convolution))) return false;
    step.reads_source = last && setting.reads_source;
    if (!step.reads_source) {
      const memory::desc part = setting.source.submemory_desc(
          {n, c, rows.inputs, columns.inputs}, {0, 0, rows.first_input, columns.first_input});
      step.gather = LayoutReorder(part, convolution.src_desc(), engine);
      gathered = std::max(gathered, convolution.src_desc().get_size());
    }
    if (!last) {
      const memory::desc part = setting.destination.submemory_desc(
          {n, o, rows.outputs, columns.outputs}, {0, 0, rows.first_output, columns.first_output});
      dnnl::primitive_attr adding = kernel_attr();
      dnnl::post_ops sum;
      sum.append_sum(1.0f);
      adding.set_post_ops(sum);
      dnnl::reorder::primitive_desc scatter(engine, convolution.dst_desc(), engine, part, adding);
      step.scatter = DnnlStep(dnnl::reorder(scatter), scatter, engine);
      step.scatter.declare(DNNL_ARG_FROM, convolution.dst_desc());
      step.scatter.declare(DNNL_ARG_TO, part);
      computed = std::max(computed, convolution.dst_desc().get_size());
    }
  } catch (const dnnl::error&) {
    return false;
  }
  step.convolution = DnnlStep(dnnl::convolution_forward(convolution), convolution, engine);
  step.convolution.declare(DNNL_ARG_SRC, convolution.src_desc());
  step.convolution.declare(DNNL_ARG_WEIGHTS, convolution.weights_desc());
  if (last && setting.has_bias) step.convolution.declare(DNNL_ARG_BIAS, convolution.bias_desc());
  step.convolution.declare(DNNL_ARG_DST, convolution.dst_desc());
  const std::vector<float> plain = tap_weights(setting.weights, p, tap);
  step.packed_weights = pack_constant(plain.data(), plain_desc(std::vector<int64_t>{o, c, 1, 1}),
                                      convolution.weights_desc(), engine);
  return true;
}

}  // namespace

std::string TapSplit::implementation() const {
  return fmt::format("{} in {} dilated taps", taps_.back().convolution.implementation(),
                     taps_.size());
}

void TapSplit::run(const void* source, const float* bias, void* destination, dnnl::stream& stream) {
  // Every tap but the last adds into its rectangle; the last adds everything else to its own
  // output through a sum post-op, before the activation.
  if (taps_.size() > 1) std::memset(destination, 0, destination_.get_size());
  for (std::size_t i = 0; i < taps_.size(); ++i) {
    TapStep& tap = taps_[i];
    const bool last = i + 1 == taps_.size();
    const void* input = source;
    if (!tap.reads_source) {
      tap.gather.run(source, gathered_->data(), stream);
      input = gathered_->data();
    }
    void* output = last ? destination : computed_->data();
    tap.convolution.set(DNNL_ARG_SRC, input);
    tap.convolution.set(DNNL_ARG_WEIGHTS, tap.packed_weights->data());
    if (last && bias) tap.convolution.set(DNNL_ARG_BIAS, bias);
    tap.convolution.set(DNNL_ARG_DST, output);
    tap.convolution.execute(stream);
    if (!last) {
      tap.scatter.set(DNNL_ARG_FROM, output);
      tap.scatter.set(DNNL_ARG_TO, destination);
      tap.scatter.execute(stream);
    }
  }
}

std::optional<TapSplit> split_dilated_taps(const dnnl::engine& engine, const ConvProblem& p,
                                           const memory::desc& given, const float* weights,
                                           bool has_bias, const dnnl::post_ops& post_ops) {
  if (p.transposed || p.groups != 1 || p.kernel.size() != 2 || p.output_shape.size() != 4 ||
      std::all_of(p.dilations.begin(), p.dilations.end(), [](int64_t d) { return d == 1; })) {
    return std::nullopt;
  }
  // Every tap is a primitive of its own: a big dilated kernel (above 8x8) stays on gemm.
  if (p.kernel[0] * p.kernel[1] > kMaxTaps) return std::nullopt;
  const memory::dims input = given.dims();
  const int64_t n = p.batch, c = p.channels_in;
  const std::vector<Tap> taps = live_taps(p, input);
  if (taps.empty()) return std::nullopt;
  const std::optional<dnnl::post_ops> last_ops = last_tap_ops(post_ops, taps.size());
  if (!last_ops) return std::nullopt;
  const Tap& whole = taps.back();
  const std::vector<int64_t> input_shape(input.begin(), input.end());
  // Whether the last tap's 1x1 convolution over the whole source makes exactly the output.
  const bool reads_source = whole.ranges[0].first_input == 0 && whole.ranges[1].first_input == 0 &&
                            floor_div(input[2] - 1, p.strides[0]) + 1 == p.output_shape[2] &&
                            floor_div(input[3] - 1, p.strides[1]) + 1 == p.output_shape[3];
  // The source as it comes when the last tap's jit kernel reads it so, else the layout it picks.
  for (const memory::desc& offered : {given, any_desc(input_shape)}) {
    TapSplit split;
    split.taps_.resize(taps.size());
    std::optional<dnnl::convolution_forward::primitive_desc> descriptor;
    try {
      const memory::desc source =
          reads_source ? offered
                       : rectangle(offered, n, c, whole.ranges[0].inputs, whole.ranges[1].inputs);
      descriptor = pointwise(source, any_desc(p.output_shape), p.strides[0], p.strides[1], has_bias,
                             *last_ops, engine);
    } catch (const dnnl::error&) {
      continue;
    }
    if (is_slow(implementation_name(*descriptor))) continue;
    split.destination_ = descriptor->dst_desc();
    split.source_ =
        reads_source
            ? descriptor->src_desc()
            : same_layout_for(descriptor->src_desc(), input_shape).value_or(memory::desc());
    if (split.source_.data.format_kind != dnnl_blocked) continue;
    const StepSetting setting{
        engine, p, weights, has_bias, reads_source, split.source_, split.destination_};
    bool fast = true;
    std::size_t gathered = 0, computed = 0;
    for (std::size_t i = 0; i < taps.size() && fast; ++i) {
      fast = build_tap_step(setting, taps[i], i + 1 == taps.size(), *descriptor, split.taps_[i],
                            gathered, computed);
    }
    if (!fast) continue;
    if (gathered > 0) split.gathered_ = std::make_shared<Buffer>(gathered);
    if (computed > 0) split.computed_ = std::make_shared<Buffer>(computed);
    return split;
  }
  return std::nullopt;
}

}  // namespace cleave::conv_detail
