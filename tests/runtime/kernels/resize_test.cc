// Resize's fast paths give the bits of its scalar reference: the vector loops of every
// instruction set this run may use against the baseline loops, and every blocked input layout
// (resized in place or reordered) against the plain input, for every mode.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "run_kernel.h"
#include "runtime/cpu_isa.h"
#include "runtime/kernel.h"
#include "runtime/kernels/dnnl_util.h"
#include "runtime/kernels/tensor/resize_passes.h"
#include "runtime/node_runner.h"
#include "runtime/tensor.h"

namespace cleave {
namespace {

using Shape64 = std::vector<int64_t>;
using shape::AxisTaps;
using shape::ResizeDim;

int64_t count_of(const Shape64& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

uint32_t next_random(uint32_t& state) {
  state = state * 1664525u + 1013904223u;
  return state >> 8;
}

// Values in [-1, 1) with the cases a sum must keep apart: signed zeros and infinities.
std::vector<float> awkward_values(int64_t count, uint32_t seed) {
  std::vector<float> values(static_cast<std::size_t>(count));
  uint32_t state = seed * 2654435761u + 12345u;
  for (float& v : values) v = static_cast<float>(next_random(state)) / (1u << 23) - 1.0f;
  for (std::size_t i = 3; i < values.size(); i += 53) values[i] = -0.0f;
  for (std::size_t i = 29; i < values.size(); i += 211) {
    values[i] = i % 2 ? std::numeric_limits<float>::infinity() : -0.0f;
  }
  return values;
}

// Taps with indices anywhere in the input, zero weights among them and weights outside [0, 1].
AxisTaps random_taps(int64_t in, int64_t out, int count, uint32_t seed) {
  AxisTaps taps;
  taps.taps = count;
  uint32_t state = seed;
  for (int64_t o = 0; o < out; ++o) {
    for (int t = 0; t < count; ++t) {
      taps.index.push_back(static_cast<int64_t>(next_random(state) % in));
      float weight = static_cast<float>(next_random(state)) / (1u << 23) - 0.5f;
      taps.weight.push_back(t == 1 && o % 5 == 0 ? 0.0f : weight);
    }
  }
  taps.outside.assign(static_cast<std::size_t>(out), false);
  shape::add_tap_columns(taps);
  return taps;
}

// The vector loops this run may use (under ONEDNN_MAX_CPU_ISA), widest last.
std::vector<VectorIsa> vector_paths() {
  std::vector<VectorIsa> paths;
  for (VectorIsa isa : {VectorIsa::kAvx2, VectorIsa::kAvx512}) {
    if (static_cast<int>(isa) <= static_cast<int>(vector_isa())) paths.push_back(isa);
  }
  return paths;
}

struct PassCase {
  std::string name;
  Shape64 in, out;
  std::vector<int> taps;  // Per dim: 0 (kept), 2 or 4 taps.
  int like_innermost;     // The dim summed as a plain innermost axis is (-1: none).
  std::vector<std::size_t> order;
};

const PassCase kPassCases[] = {
    {"PlainWidthFirst", {2, 3, 5, 7}, {2, 3, 9, 13}, {0, 0, 2, 2}, 3, {3, 2}},
    {"PlainHeightFirst", {2, 3, 5, 7}, {2, 3, 9, 13}, {0, 0, 2, 2}, 3, {2, 3}},
    {"PlainCubicShrinkAndGrow", {1, 2, 6, 5}, {1, 2, 3, 11}, {0, 0, 4, 4}, 3, {2, 3}},
    {"LongLinesWithTails", {1, 3, 37}, {1, 3, 100}, {0, 0, 2}, 2, {2}},
    {"ChannelBlocks", {1, 2, 5, 7, 16}, {1, 2, 9, 13, 16}, {0, 0, 2, 2, 0}, 3, {3, 2}},
    {"ChannelsLast", {1, 5, 7, 20}, {1, 9, 13, 20}, {0, 2, 2, 0}, 2, {2, 1}},
    {"BatchRows", {3, 4, 5}, {5, 4, 5}, {2, 0, 0}, -1, {0}},
    {"LargeEnoughForTwoThreads", {1, 4, 40, 50}, {1, 4, 96, 120}, {0, 0, 4, 2}, 3, {3, 2}},
};

template <typename T>
std::vector<T> interpolate(const PassCase& c, const std::vector<AxisTaps>& taps,
                           const std::vector<T>& source, int threads, VectorIsa isa) {
  std::vector<ResizeDim> dims;
  for (std::size_t d = 0; d < c.in.size(); ++d) {
    dims.push_back({c.in[d], c.out[d], c.taps[d] ? &taps[d] : nullptr,
                    static_cast<int>(d) == c.like_innermost});
  }
  std::vector<T> target(static_cast<std::size_t>(count_of(c.out)));
  shape::interpolate_dims<T>(dims, c.order, source.data(), target.data(), threads, isa);
  return target;
}

template <typename T>
void expect_same_bits_on_every_path(const PassCase& c) {
  std::vector<AxisTaps> taps;
  for (std::size_t d = 0; d < c.in.size(); ++d) {
    taps.push_back(c.taps[d] ? random_taps(c.in[d], c.out[d], c.taps[d], 17 + d) : AxisTaps{});
  }
  std::vector<float> values = awkward_values(count_of(c.in), 5);
  std::vector<T> source(values.begin(), values.end());
  const std::vector<T> reference = interpolate(c, taps, source, 1, VectorIsa::kBaseline);
  std::vector<std::pair<VectorIsa, int>> runs = {{VectorIsa::kBaseline, 2}};
  for (VectorIsa isa : vector_paths()) {
    runs.push_back({isa, 1});
    runs.push_back({isa, 2});
  }
  for (auto [isa, threads] : runs) {
    std::vector<T> got = interpolate(c, taps, source, threads, isa);
    EXPECT_EQ(std::memcmp(got.data(), reference.data(), got.size() * sizeof(T)), 0)
        << c.name << " on " << vector_isa_name(isa) << " with " << threads << " thread(s)";
  }
}

class ResizePasses : public testing::TestWithParam<PassCase> {};

TEST_P(ResizePasses, FloatHasTheBaselineBitsOnEveryInstructionSet) {
  expect_same_bits_on_every_path<float>(GetParam());
}

TEST_P(ResizePasses, DoubleHasTheBaselineBitsOnEveryInstructionSet) {
  expect_same_bits_on_every_path<double>(GetParam());
}

INSTANTIATE_TEST_SUITE_P(Cases, ResizePasses, testing::ValuesIn(kPassCases),
                         [](const auto& info) { return info.param.name; });

TEST(ResizePasses, TheWidestPathIsTestedWhereTheCpuHasIt) {
  if (vector_isa() != VectorIsa::kAvx512) {
    GTEST_SKIP() << "needs AVX-512 (AVX512F, VL, DQ) without an ONEDNN_MAX_CPU_ISA cap below it";
  }
  EXPECT_EQ(vector_paths().back(), VectorIsa::kAvx512);
}

// ---- The kernel on blocked inputs -----------------------------------------------------------

// One Resize (or Upsample) node: its attributes and its inputs after the data.
struct ResizeCase {
  std::string name;
  std::string op = "Resize";
  int64_t opset = 13;
  std::vector<std::pair<std::string, Attribute>> attributes;
  Shape64 in = {2, 20, 5, 7};
  std::vector<float> roi, scales;
  Shape64 sizes;
  // Whether a channels-last or channel-blocked input is resized in its layout (the channels
  // stay, and the mode is not tf_crop_and_resize): the output then keeps that layout.
  bool in_layout = true;
};

ResizeCase mode_case(std::string name, std::string mode, std::string transform,
                     std::vector<float> scales, Shape64 sizes) {
  ResizeCase c;
  c.name = std::move(name);
  c.attributes = {{"mode", Attribute::of_string(std::move(mode))},
                  {"coordinate_transformation_mode", Attribute::of_string(std::move(transform))}};
  c.scales = std::move(scales);
  c.sizes = std::move(sizes);
  return c;
}

std::vector<ResizeCase> every_mode() {
  std::vector<ResizeCase> cases;
  const Shape64 grow = {2, 20, 9, 13};
  const std::vector<float> shrink = {1, 1, 0.6f, 0.5f}, stretch = {1, 1, 2.5f, 1.5f};
  for (const char* transform : {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                                "tf_half_pixel_for_nn"}) {
    const std::string t = transform;
    for (const char* rounding : {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}) {
      for (auto [how, scales, sizes] : {std::tuple{"Grow", std::vector<float>{}, grow},
                                        std::tuple{"Shrink", shrink, Shape64{}}}) {
        cases.push_back(
            mode_case("Nearest_" + t + "_" + rounding + "_" + how, "nearest", t, scales, sizes));
        cases.back().attributes.push_back({"nearest_mode", Attribute::of_string(rounding)});
        // tf_half_pixel_for_nn moves every axis by half an input, the channels too: rounded up,
        // channel c reads channel c + 1.
        cases.back().in_layout =
            t != "tf_half_pixel_for_nn" || std::string(rounding).find("ceil") == std::string::npos;
      }
    }
    cases.push_back(mode_case("Linear_" + t + "_Grow", "linear", t, {}, grow));
    cases.push_back(mode_case("Linear_" + t + "_Shrink", "linear", t, shrink, {}));
    cases.push_back(mode_case("Linear_" + t + "_Stretch", "linear", t, stretch, {}));
    for (int exclude : {0, 1}) {
      cases.push_back(
          mode_case("Cubic_" + t + "_Exclude" + std::to_string(exclude), "cubic", t, stretch, {}));
      cases.back().attributes.push_back({"exclude_outside", Attribute::of_int(exclude)});
      cases.back().attributes.push_back({"cubic_coeff_a", Attribute::of_float(-0.5f)});
    }
    // Interpolated, that half-input shift mixes neighbouring channels.
    if (t == "tf_half_pixel_for_nn") {
      for (auto c = cases.end() - 5; c != cases.end(); ++c) c->in_layout = false;
    }
  }
  for (const char* mode : {"nearest", "linear"}) {
    cases.push_back(
        mode_case(std::string("CropAndResize_") + mode, mode, "tf_crop_and_resize", {}, grow));
    cases.back().roi = {0, 0, 0.1f, -0.2f, 1, 1, 0.8f, 1.3f};
    cases.back().in_layout = false;
    cases.back().attributes.push_back({"extrapolation_value", Attribute::of_float(-7.0f)});
  }
  // The channels resized too: a blocked input is reordered to plain.
  cases.push_back(mode_case("LinearChannelsToo", "linear", "half_pixel", {}, {2, 30, 9, 13}));
  cases.back().in_layout = false;
  cases.push_back(mode_case("NearestBatchToo", "nearest", "asymmetric", {2, 1, 2, 2}, {}));
  // Other ranks.
  cases.push_back(mode_case("Linear3d", "linear", "half_pixel", {}, {1, 20, 5, 6, 9}));
  cases.back().in = {1, 20, 3, 4, 5};
  cases.push_back(mode_case("Linear1d", "linear", "align_corners", {}, {2, 20, 17}));
  cases.back().in = {2, 20, 7};
  // The older forms: asymmetric with their own nearest rounding, scales as the second input.
  for (auto [op, opset] : {std::pair{"Resize", 10}, std::pair{"Upsample", 9}}) {
    for (const char* mode : {"nearest", "linear"}) {
      ResizeCase c;
      c.name = std::string(op) + std::to_string(opset) + "_" + mode;
      c.op = op;
      c.opset = opset;
      c.attributes = {{"mode", Attribute::of_string(mode)}};
      c.scales = {1, 1, 2, 1.5f};
      cases.push_back(c);
    }
  }
  return cases;
}

Tensor float_tensor(const Shape64& shape, const std::vector<float>& values) {
  Tensor t = Tensor::allocate(DataType::kFloat, shape);
  if (!values.empty()) std::memcpy(t.raw(), values.data(), values.size() * sizeof(float));
  return t;
}

class ResizeLayouts : public testing::TestWithParam<ResizeCase> {
 protected:
  // Resizes `x` (plain, or in `layout`), returns the output reordered to plain and whether the
  // kernel kept the input's layout for it.
  std::pair<Tensor, bool> resize(const std::vector<float>& x,
                                 std::optional<dnnl::memory::format_tag> layout,
                                 bool blocked_outputs_allowed) {
    const ResizeCase& c = GetParam();
    Graph graph;
    graph.opset_imports[""] = c.opset;
    std::vector<Tensor> held = {float_tensor(c.in, x)};
    std::vector<ValueId> ids = {graph.add_input("x", DataType::kFloat, Shape::of(c.in))};
    bool legacy = c.op == "Upsample" || c.opset < 11;
    auto add_floats = [&](const std::vector<float>& values, const std::string& name) {
      held.push_back(float_tensor({static_cast<int64_t>(values.size())}, values));
      ids.push_back(graph.add_input(name, DataType::kFloat, Shape::of(held.back().shape())));
    };
    if (!legacy) add_floats(c.roi, "roi");
    if (legacy || !c.scales.empty()) add_floats(c.scales, "scales");
    if (!c.sizes.empty()) {
      if (c.scales.empty()) add_floats({}, "scales");
      Tensor sizes = Tensor::allocate(DataType::kInt64, {static_cast<int64_t>(c.sizes.size())});
      std::memcpy(sizes.raw(), c.sizes.data(), c.sizes.size() * sizeof(int64_t));
      held.push_back(sizes);
      ids.push_back(graph.add_input("sizes", DataType::kInt64, Shape::of(sizes.shape())));
    }
    if (layout) held[0] = in_layout(held[0], *layout);
    NodeId node = graph.add_op(c.op, ids, 1, c.attributes, "resize");
    std::vector<const Tensor*> inputs;
    for (const Tensor& t : held) inputs.push_back(&t);
    KernelContext context{graph,   node,   graph.node(node),
                          c.opset, inputs, std::vector<bool>(inputs.size(), false),
                          engine_, 1,      blocked_outputs_allowed};
    auto kernel = KernelRegistry::global().find("", c.op, c.opset)->create(context);
    Tensor output = run_kernel_in_its_layout(*kernel, inputs, stream_);
    bool kept = output.is_blocked();
    return {to_plain(output, engine_, stream_), kept};
  }

  Tensor in_layout(const Tensor& plain, dnnl::memory::format_tag tag) {
    const dnnl::memory::desc layout(to_dnnl_dims(plain.shape()), dnnl::memory::data_type::f32, tag);
    auto storage = std::make_shared<Buffer>(layout.get_size());
    LayoutReorder(plain_desc(plain.shape()), layout, engine_)
        .run(plain.raw(), storage->data(), stream_);
    stream_.wait();
    Tensor blocked = Tensor::view(DataType::kFloat, plain.shape(), storage);
    blocked.set_layout(layout);
    return blocked;
  }

  dnnl::engine engine_{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream_{engine_};
};

TEST_P(ResizeLayouts, EveryBlockedInputGivesThePlainInputsBits) {
  const ResizeCase& c = GetParam();
  const auto rank = static_cast<int>(c.in.size());
  const std::vector<float> x = awkward_values(count_of(c.in), 11);
  const Tensor reference = resize(x, std::nullopt, false).first;
  using Tag = dnnl::memory::format_tag;
  const Tag channels_last = rank == 3 ? Tag::acb : rank == 4 ? Tag::acdb : Tag::acdeb;
  for (Tag tag : {channel_blocked_tag(rank, 16), channel_blocked_tag(rank, 8), channels_last}) {
    for (bool blocked_outputs_allowed : {true, false}) {
      auto [got, kept] = resize(x, tag, blocked_outputs_allowed);
      ASSERT_EQ(got.shape(), reference.shape());
      const std::string where =
          (tag == channels_last
               ? std::string("channels-last")
               : "blocks of " + std::to_string(tag == channel_blocked_tag(rank, 16) ? 16 : 8)) +
          (blocked_outputs_allowed ? ", blocked output allowed" : ", plain output");
      EXPECT_EQ(std::memcmp(got.raw(), reference.raw(), reference.byte_size()), 0) << where;
      EXPECT_EQ(kept, blocked_outputs_allowed && c.in_layout) << where;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(EveryMode, ResizeLayouts, testing::ValuesIn(every_mode()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace cleave
