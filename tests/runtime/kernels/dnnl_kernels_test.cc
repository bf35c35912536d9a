// Tests of the oneDNN-backed kernels (conv, matmul, pooling, norms, softmax, concat, reductions)
// against naive loop references.
#include <fmt/core.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "run_kernel.h"
#include "runtime/claim_pool.h"
#include "runtime/cpu_isa.h"
#include "runtime/executor.h"
#include "runtime/kernel.h"
#include "runtime/kernels/dnnl_util.h"
#include "runtime/kernels/nn/pool_loops.h"
#include "runtime/tensor.h"

namespace cleave {
namespace {

using Shape64 = std::vector<int64_t>;

std::vector<float> random_values(int64_t count, uint32_t seed) {
  std::vector<float> values(static_cast<std::size_t>(count));
  uint32_t state = seed * 2654435761u + 12345u;
  for (float& v : values) {
    state = state * 1664525u + 1013904223u;
    v = static_cast<float>(state >> 8) / static_cast<float>(1u << 24) * 2.0f - 1.0f;
  }
  return values;
}

int64_t count_of(const Shape64& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Tensor float_tensor(const Shape64& shape, const std::vector<float>& values) {
  Tensor t = Tensor::allocate(DataType::kFloat, shape);
  // memcpy from an empty vector's data() (null) is undefined even for 0 bytes.
  if (!values.empty()) std::memcpy(t.raw(), values.data(), values.size() * sizeof(float));
  return t;
}

/// A graph of one node, its inputs given as graph inputs (not constant) or initializers.
class OneNode {
 public:
  explicit OneNode(std::string op, int64_t opset = 17) : op_(std::move(op)) {
    graph_.opset_imports[""] = opset;
  }
  OneNode& input(const Shape64& shape, const std::vector<float>& values) {
    std::string name = "in" + std::to_string(inputs_.size());
    inputs_.push_back(graph_.add_input(name, DataType::kFloat, Shape::of(shape)));
    feeds_[name] = float_tensor(shape, values);
    return *this;
  }
  OneNode& constant(const Shape64& shape, const std::vector<float>& values) {
    std::string name = "in" + std::to_string(inputs_.size());
    inputs_.push_back(
        graph_.add_initializer(name, TensorData::from(DataType::kFloat, shape, values)));
    return *this;
  }
  OneNode& int64_constant(const Shape64& shape, const std::vector<int64_t>& values) {
    std::string name = "in" + std::to_string(inputs_.size());
    inputs_.push_back(
        graph_.add_initializer(name, TensorData::from(DataType::kInt64, shape, values)));
    return *this;
  }
  OneNode& int64_input(const Shape64& shape, const std::vector<int64_t>& values) {
    std::string name = "in" + std::to_string(inputs_.size());
    inputs_.push_back(graph_.add_input(name, DataType::kInt64, Shape::of(shape)));
    Tensor t = Tensor::allocate(DataType::kInt64, shape);
    if (!values.empty()) std::memcpy(t.raw(), values.data(), values.size() * sizeof(int64_t));
    feeds_[name] = t;
    return *this;
  }
  OneNode& missing() {
    inputs_.push_back(kNoValue);
    return *this;
  }
  OneNode& attr(std::string name, Attribute value) {
    attributes_.emplace_back(std::move(name), std::move(value));
    return *this;
  }
  OneNode& ints(std::string name, std::vector<int64_t> values) {
    return attr(std::move(name), Attribute::of_ints(std::move(values)));
  }
  OneNode& integer(std::string name, int64_t value) {
    return attr(std::move(name), Attribute::of_int(value));
  }
  OneNode& real(std::string name, float value) {
    return attr(std::move(name), Attribute::of_float(value));
  }
  OneNode& text(std::string name, std::string value) {
    return attr(std::move(name), Attribute::of_string(std::move(value)));
  }
  OneNode& outputs(int count) {
    output_count_ = count;
    return *this;
  }

  std::vector<Tensor> run(ExecutorOptions options = {}) {
    build();
    Executor executor(graph_, options);
    return executor.run(feeds_);
  }
  Tensor run_one() { return run().at(0); }

  static constexpr int64_t kChannelsLast = -1;

  /// Prepares the node's kernel directly (as the executor would), with blocked outputs allowed.
  /// With `blocked_input`, input 0 comes in channel blocks as from a blocked producer: of
  /// `block` channels (kChannelsLast: channels last), or by default of the block the effective
  /// ISA's kernels write (8 or 16).
  std::unique_ptr<Kernel> prepare(bool blocked_outputs_allowed, int threads = 1,
                                  bool blocked_input = false, int64_t block = 0,
                                  ClaimPool* claim_pool = nullptr) {
    build();
    held_.clear();
    std::vector<const Tensor*> inputs;
    std::vector<bool> constant;
    for (ValueId id : inputs_) {
      const Value& v = graph_.value(id);
      if (v.initializer) {
        held_.push_back(Tensor::from_data(*v.initializer));
        constant.push_back(true);
      } else {
        held_.push_back(feeds_.at(v.name));
        if (blocked_input && held_.size() == 1) {
          held_.back() = in_channel_blocks(held_[0], block > 0 ? block : native_channel_block());
        }
        constant.push_back(false);
      }
    }
    for (const Tensor& t : held_) inputs.push_back(&t);
    const Node& node = graph_.node(node_);
    KernelContext context{graph_,   node_,   node,    graph_.opset_imports[""], inputs,
                          constant, engine_, threads, blocked_outputs_allowed};
    context.claim_pool = claim_pool;
    return KernelRegistry::global().find("", op_, graph_.opset_imports[""])->create(context);
  }

  /// Runs a kernel from prepare() on the inputs prepared with it; the output comes back plain.
  Tensor run_prepared(Kernel& kernel) {
    std::vector<const Tensor*> inputs;
    for (const Tensor& t : held_) inputs.push_back(&t);
    return to_plain(run_kernel_in_its_layout(kernel, inputs, stream_), engine_, stream_);
  }

 private:
  Tensor in_channel_blocks(const Tensor& plain, int64_t block) {
    const dnnl::memory::desc layout(
        dnnl::memory::dims(plain.shape().begin(), plain.shape().end()),
        dnnl::memory::data_type::f32,
        block == kChannelsLast ? dnnl::memory::format_tag::acdb
                               : channel_blocked_tag(static_cast<int>(plain.rank()), block));
    auto storage = std::make_shared<Buffer>(layout.get_size());
    LayoutReorder(plain_desc(plain.shape()), layout, engine_)
        .run(plain.raw(), storage->data(), stream_);
    stream_.wait();
    Tensor blocked = Tensor::view(DataType::kFloat, plain.shape(), storage);
    blocked.set_layout(layout);
    return blocked;
  }

  void build() {
    if (built_) return;
    built_ = true;
    std::vector<ValueId> outputs;
    for (int i = 0; i < output_count_; ++i)
      outputs.push_back(graph_.add_value("out" + std::to_string(i)));
    node_ = graph_.add_node(op_, inputs_, outputs, attributes_, "node");
    for (ValueId v : outputs) graph_.mark_output(v);
  }

  std::string op_;
  Graph graph_;
  std::vector<ValueId> inputs_;
  std::map<std::string, Tensor> feeds_;
  std::vector<std::pair<std::string, Attribute>> attributes_;
  int output_count_ = 1;
  bool built_ = false;
  NodeId node_ = -1;
  std::vector<Tensor> held_;
  dnnl::engine engine_{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream_{engine_};
};

void expect_near(const Tensor& actual, const Shape64& shape, const std::vector<float>& expected) {
  ASSERT_EQ(actual.shape(), shape);
  ASSERT_FALSE(actual.is_blocked());
  ASSERT_EQ(static_cast<std::size_t>(actual.element_count()), expected.size());
  const float* got = actual.data<float>();
  int mismatches = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    float tolerance = 1e-5f + 1e-4f * std::fabs(expected[i]);
    bool ok = std::fabs(got[i] - expected[i]) <= tolerance ||
              (std::isnan(got[i]) && std::isnan(expected[i])) ||
              (std::isinf(expected[i]) && got[i] == expected[i]);
    if (!ok && ++mismatches <= 5)
      ADD_FAILURE() << "element " << i << ": got " << got[i] << ", expected " << expected[i];
  }
  EXPECT_EQ(mismatches, 0);
}

// ---- Naive references -------------------------------------------------------------------

/// Spatial sizes padded to three axes (1-D and 2-D ops run as 3-D with unit leading axes).
Shape64 three(const Shape64& spatial, int64_t fill) {
  Shape64 result(3 - spatial.size(), fill);
  result.insert(result.end(), spatial.begin(), spatial.end());
  return result;
}

struct Window {
  Shape64 strides, dilations, pads_begin;
};

std::vector<float> conv_reference(const std::vector<float>& x, const Shape64& x_shape,
                                  const std::vector<float>& w, const Shape64& w_shape,
                                  const std::vector<float>& bias, int64_t group,
                                  const Window& window, const Shape64& y_shape) {
  int64_t n_count = x_shape[0], c_count = x_shape[1], m_count = w_shape[0];
  Shape64 in = three(Shape64(x_shape.begin() + 2, x_shape.end()), 1);
  Shape64 k = three(Shape64(w_shape.begin() + 2, w_shape.end()), 1);
  Shape64 out = three(Shape64(y_shape.begin() + 2, y_shape.end()), 1);
  Shape64 s = three(window.strides, 1), d = three(window.dilations, 1),
          p = three(window.pads_begin, 0);
  int64_t c_per_group = c_count / group, m_per_group = m_count / group;
  std::vector<float> y(static_cast<std::size_t>(count_of(y_shape)));
  for (int64_t n = 0; n < n_count; ++n)
    for (int64_t m = 0; m < m_count; ++m)
      for (int64_t o0 = 0; o0 < out[0]; ++o0)
        for (int64_t o1 = 0; o1 < out[1]; ++o1)
          for (int64_t o2 = 0; o2 < out[2]; ++o2) {
            double sum = bias.empty() ? 0.0 : bias[m];
            int64_t g = m / m_per_group;
            for (int64_t cl = 0; cl < c_per_group; ++cl)
              for (int64_t k0 = 0; k0 < k[0]; ++k0)
                for (int64_t k1 = 0; k1 < k[1]; ++k1)
                  for (int64_t k2 = 0; k2 < k[2]; ++k2) {
                    int64_t i0 = o0 * s[0] - p[0] + k0 * d[0], i1 = o1 * s[1] - p[1] + k1 * d[1],
                            i2 = o2 * s[2] - p[2] + k2 * d[2];
                    if (i0 < 0 || i0 >= in[0] || i1 < 0 || i1 >= in[1] || i2 < 0 || i2 >= in[2])
                      continue;
                    int64_t c = g * c_per_group + cl;
                    sum += static_cast<double>(
                               x[(((n * c_count + c) * in[0] + i0) * in[1] + i1) * in[2] + i2]) *
                           w[(((m * c_per_group + cl) * k[0] + k0) * k[1] + k1) * k[2] + k2];
                  }
            y[(((n * m_count + m) * out[0] + o0) * out[1] + o1) * out[2] + o2] =
                static_cast<float>(sum);
          }
  return y;
}

std::vector<float> conv_transpose_reference(const std::vector<float>& x, const Shape64& x_shape,
                                            const std::vector<float>& w, const Shape64& w_shape,
                                            const std::vector<float>& bias, int64_t group,
                                            const Window& window, const Shape64& y_shape) {
  int64_t n_count = x_shape[0], c_count = x_shape[1], m_per_group = w_shape[1],
          m_count = m_per_group * group;
  int64_t c_per_group = c_count / group;
  Shape64 in = three(Shape64(x_shape.begin() + 2, x_shape.end()), 1);
  Shape64 k = three(Shape64(w_shape.begin() + 2, w_shape.end()), 1);
  Shape64 out = three(Shape64(y_shape.begin() + 2, y_shape.end()), 1);
  Shape64 s = three(window.strides, 1), d = three(window.dilations, 1),
          p = three(window.pads_begin, 0);
  std::vector<double> y(static_cast<std::size_t>(count_of(y_shape)), 0.0);
  for (int64_t n = 0; n < n_count; ++n)
    for (int64_t m = 0; m < m_count; ++m)
      for (int64_t o = 0; o < out[0] * out[1] * out[2]; ++o)
        y[(n * m_count + m) * out[0] * out[1] * out[2] + o] = bias.empty() ? 0.0 : bias[m];
  for (int64_t n = 0; n < n_count; ++n)
    for (int64_t c = 0; c < c_count; ++c)
      for (int64_t i0 = 0; i0 < in[0]; ++i0)
        for (int64_t i1 = 0; i1 < in[1]; ++i1)
          for (int64_t i2 = 0; i2 < in[2]; ++i2) {
            float value = x[(((n * c_count + c) * in[0] + i0) * in[1] + i1) * in[2] + i2];
            int64_t g = c / c_per_group;
            for (int64_t ml = 0; ml < m_per_group; ++ml)
              for (int64_t k0 = 0; k0 < k[0]; ++k0)
                for (int64_t k1 = 0; k1 < k[1]; ++k1)
                  for (int64_t k2 = 0; k2 < k[2]; ++k2) {
                    int64_t o0 = i0 * s[0] - p[0] + k0 * d[0], o1 = i1 * s[1] - p[1] + k1 * d[1],
                            o2 = i2 * s[2] - p[2] + k2 * d[2];
                    if (o0 < 0 || o0 >= out[0] || o1 < 0 || o1 >= out[1] || o2 < 0 || o2 >= out[2])
                      continue;
                    int64_t m = g * m_per_group + ml;
                    y[(((n * m_count + m) * out[0] + o0) * out[1] + o1) * out[2] + o2] +=
                        static_cast<double>(value) *
                        w[(((c * m_per_group + ml) * k[0] + k0) * k[1] + k1) * k[2] + k2];
                  }
          }
  return std::vector<float>(y.begin(), y.end());
}

enum class Pool { kMax, kAverageExcludePad, kAverageIncludePad };

/// Pooling as ONNX Runtime and PyTorch define it: an average with count_include_pad divides by
/// the window clipped to the padded input (explicit pads count, ceil_mode overhang does not).
std::vector<float> pool_reference(Pool kind, const std::vector<float>& x, const Shape64& x_shape,
                                  const Shape64& kernel, const Window& window,
                                  const Shape64& pads_end, const Shape64& y_shape) {
  int64_t planes = x_shape[0] * x_shape[1];
  Shape64 in = three(Shape64(x_shape.begin() + 2, x_shape.end()), 1);
  Shape64 k = three(kernel, 1), s = three(window.strides, 1), d = three(window.dilations, 1);
  Shape64 pb = three(window.pads_begin, 0), pe = three(pads_end, 0);
  Shape64 out = three(Shape64(y_shape.begin() + 2, y_shape.end()), 1);
  std::vector<float> y;
  for (int64_t plane = 0; plane < planes; ++plane)
    for (int64_t o0 = 0; o0 < out[0]; ++o0)
      for (int64_t o1 = 0; o1 < out[1]; ++o1)
        for (int64_t o2 = 0; o2 < out[2]; ++o2) {
          int64_t o[3] = {o0, o1, o2};
          double sum = 0, best = -std::numeric_limits<double>::infinity();
          int64_t inside = 0, padded_count = 1;
          for (int a = 0; a < 3; ++a) {
            int64_t start = o[a] * s[a] - pb[a];
            int64_t stop = std::min(start + (k[a] - 1) * d[a] + 1, in[a] + pe[a]);
            padded_count *= stop - start;
          }
          for (int64_t k0 = 0; k0 < k[0]; ++k0)
            for (int64_t k1 = 0; k1 < k[1]; ++k1)
              for (int64_t k2 = 0; k2 < k[2]; ++k2) {
                int64_t i0 = o0 * s[0] - pb[0] + k0 * d[0], i1 = o1 * s[1] - pb[1] + k1 * d[1],
                        i2 = o2 * s[2] - pb[2] + k2 * d[2];
                if (i0 < 0 || i0 >= in[0] || i1 < 0 || i1 >= in[1] || i2 < 0 || i2 >= in[2])
                  continue;
                double v = x[((plane * in[0] + i0) * in[1] + i1) * in[2] + i2];
                sum += v;
                best = std::max(best, v);
                ++inside;
              }
          double value = kind == Pool::kMax ? best
                         : kind == Pool::kAverageExcludePad
                             ? sum / static_cast<double>(inside)
                             : sum / static_cast<double>(padded_count);
          y.push_back(static_cast<float>(value));
        }
  return y;
}

/// Y = alpha * A' B' + beta * C for plain row-major matrices, C broadcast from [cm, cn].
std::vector<float> gemm_reference(const std::vector<float>& a, const std::vector<float>& b,
                                  int64_t m, int64_t k, int64_t n, bool trans_a, bool trans_b,
                                  float alpha, float beta, const std::vector<float>& c,
                                  int64_t c_rows, int64_t c_cols) {
  std::vector<float> y(static_cast<std::size_t>(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t l = 0; l < k; ++l) {
        float av = trans_a ? a[l * m + i] : a[i * k + l];
        float bv = trans_b ? b[j * k + l] : b[l * n + j];
        sum += static_cast<double>(av) * bv;
      }
      double add = c.empty() ? 0.0 : c[(c_rows == 1 ? 0 : i) * c_cols + (c_cols == 1 ? 0 : j)];
      y[i * n + j] = static_cast<float>(alpha * sum + beta * add);
    }
  return y;
}

/// Batched matmul with numpy broadcasting of batch dims; shapes already padded to equal rank.
std::vector<float> matmul_reference(const std::vector<float>& a, const Shape64& a_shape,
                                    const std::vector<float>& b, const Shape64& b_shape) {
  std::size_t rank = a_shape.size();
  int64_t m = a_shape[rank - 2], k = a_shape[rank - 1], n = b_shape[rank - 1];
  Shape64 batch;
  for (std::size_t i = 0; i + 2 < rank; ++i) batch.push_back(std::max(a_shape[i], b_shape[i]));
  int64_t batches = count_of(batch);
  std::vector<float> y;
  for (int64_t flat = 0; flat < batches; ++flat) {
    int64_t a_offset = 0, b_offset = 0, rest = flat, a_stride = m * k, b_stride = k * n;
    for (std::size_t i = batch.size(); i-- > 0;) {
      int64_t index = rest % batch[i];
      rest /= batch[i];
      if (a_shape[i] != 1) a_offset += index * a_stride;
      if (b_shape[i] != 1) b_offset += index * b_stride;
      a_stride *= a_shape[i];
      b_stride *= b_shape[i];
    }
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0;
        for (int64_t l = 0; l < k; ++l)
          sum += static_cast<double>(a[a_offset + i * k + l]) * b[b_offset + l * n + j];
        y.push_back(static_cast<float>(sum));
      }
  }
  return y;
}

/// Softmax over [outer, length, inner] along the middle axis.
std::vector<float> softmax_reference(const std::vector<float>& x, int64_t outer, int64_t length,
                                     int64_t inner, bool logarithmic) {
  std::vector<float> y(x.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double top = -std::numeric_limits<double>::infinity(), sum = 0;
      for (int64_t l = 0; l < length; ++l)
        top = std::max<double>(top, x[(o * length + l) * inner + i]);
      for (int64_t l = 0; l < length; ++l) sum += std::exp(x[(o * length + l) * inner + i] - top);
      for (int64_t l = 0; l < length; ++l) {
        double shifted = x[(o * length + l) * inner + i] - top;
        y[(o * length + l) * inner + i] =
            static_cast<float>(logarithmic ? shifted - std::log(sum) : std::exp(shifted) / sum);
      }
    }
  return y;
}

// ---- Conv -------------------------------------------------------------------------------

struct ConvCase {
  Shape64 x_shape, w_shape, y_shape;
  int64_t group = 1;
  Window window;
  bool bias = true;
};

void check_conv(OneNode& node, const ConvCase& c, const std::vector<float>& x,
                const std::vector<float>& w, const std::vector<float>& bias) {
  Tensor y = node.run_one();
  expect_near(y, c.y_shape,
              conv_reference(x, c.x_shape, w, c.w_shape, bias, c.group, c.window, c.y_shape));
}

/// Conv with constant weights and bias; attributes from the case (pads symmetric unless given).
void run_conv_case(const ConvCase& c, const Shape64& pads,
                   std::vector<std::pair<std::string, Attribute>> extra = {}) {
  auto x = random_values(count_of(c.x_shape), 1);
  auto w = random_values(count_of(c.w_shape), 2);
  auto b = c.bias ? random_values(c.w_shape[0], 3) : std::vector<float>{};
  OneNode node("Conv");
  node.input(c.x_shape, x).constant(c.w_shape, w);
  if (c.bias) node.constant({c.w_shape[0]}, b);
  node.integer("group", c.group)
      .ints("strides", c.window.strides)
      .ints("dilations", c.window.dilations);
  if (!pads.empty()) node.ints("pads", pads);
  for (auto& [name, value] : extra) node.attr(name, value);
  check_conv(node, c, x, w, b);
}

TEST(DnnlConv, Plain3x3WithBias) {
  run_conv_case({{1, 3, 6, 6}, {4, 3, 3, 3}, {1, 4, 4, 4}, 1, {{1, 1}, {1, 1}, {0, 0}}}, {});
}

TEST(DnnlConv, SymmetricPadding) {
  run_conv_case({{2, 5, 7, 6}, {8, 5, 3, 3}, {2, 8, 7, 6}, 1, {{1, 1}, {1, 1}, {1, 1}}},
                {1, 1, 1, 1});
}

TEST(DnnlConv, StridedWithAsymmetricPads) {
  // H: (7 + 2 + 0 - 3) / 2 + 1 = 4; W: (9 + 0 + 1 - 3) / 3 + 1 = 3.
  run_conv_case({{1, 4, 7, 9}, {6, 4, 3, 3}, {1, 6, 4, 3}, 1, {{2, 3}, {1, 1}, {2, 0}}},
                {2, 0, 0, 1});
}

TEST(DnnlConv, Dilated) {
  run_conv_case({{1, 3, 9, 9}, {5, 3, 3, 3}, {1, 5, 7, 7}, 1, {{1, 1}, {2, 2}, {1, 1}}},
                {1, 1, 1, 1});
}

TEST(DnnlConv, Grouped) {
  run_conv_case({{1, 8, 6, 6}, {6, 4, 3, 3}, {1, 6, 6, 6}, 2, {{1, 1}, {1, 1}, {1, 1}}},
                {1, 1, 1, 1});
}

TEST(DnnlConv, DepthwiseStrided) {
  run_conv_case({{1, 32, 10, 10}, {32, 1, 3, 3}, {1, 32, 5, 5}, 32, {{2, 2}, {1, 1}, {1, 1}}},
                {1, 1, 1, 1});
}

TEST(DnnlConv, Pointwise) {
  run_conv_case({{1, 32, 5, 5}, {16, 32, 1, 1}, {1, 16, 5, 5}, 1, {{1, 1}, {1, 1}, {0, 0}}}, {});
}

TEST(DnnlConv, OneDimensional) {
  run_conv_case({{2, 3, 11}, {4, 3, 4}, {2, 4, 5}, 1, {{2}, {1}, {1}}}, {1, 1});
}

TEST(DnnlConv, ThreeDimensional) {
  run_conv_case(
      {{1, 2, 5, 6, 4}, {3, 2, 3, 3, 3}, {1, 3, 5, 6, 4}, 1, {{1, 1, 1}, {1, 1, 1}, {1, 1, 1}}},
      {1, 1, 1, 1, 1, 1});
}

TEST(DnnlConv, WithoutBias) {
  ConvCase c{{1, 3, 5, 5}, {2, 3, 3, 3}, {1, 2, 3, 3}, 1, {{1, 1}, {1, 1}, {0, 0}}};
  c.bias = false;
  run_conv_case(c, {});
}

TEST(DnnlConv, AutoPadSameUpperPutsExtraPadAtEnd) {
  // Input 6, kernel 4, stride 2: output 3, total pad 2*2+4-6 = 2... use kernel 3: total 1, all at
  // the end.
  run_conv_case({{1, 2, 6, 6}, {3, 2, 3, 3}, {1, 3, 3, 3}, 1, {{2, 2}, {1, 1}, {0, 0}}}, {},
                {{"auto_pad", Attribute::of_string("SAME_UPPER")}});
}

TEST(DnnlConv, AutoPadSameLowerPutsExtraPadAtBegin) {
  run_conv_case({{1, 2, 6, 6}, {3, 2, 3, 3}, {1, 3, 3, 3}, 1, {{2, 2}, {1, 1}, {1, 1}}}, {},
                {{"auto_pad", Attribute::of_string("SAME_LOWER")}});
}

TEST(DnnlConv, AutoPadValidIgnoresPads) {
  run_conv_case({{1, 2, 7, 7}, {3, 2, 3, 3}, {1, 3, 3, 3}, 1, {{2, 2}, {1, 1}, {0, 0}}}, {},
                {{"auto_pad", Attribute::of_string("VALID")}});
}

TEST(DnnlConv, WeightsAsRuntimeInput) {
  ConvCase c{{1, 4, 6, 6}, {4, 2, 3, 3}, {1, 4, 6, 6}, 2, {{1, 1}, {1, 1}, {1, 1}}};
  auto x = random_values(count_of(c.x_shape), 4);
  auto w = random_values(count_of(c.w_shape), 5);
  auto b = random_values(4, 6);
  OneNode node("Conv");
  node.input(c.x_shape, x)
      .input(c.w_shape, w)
      .input({4}, b)
      .integer("group", 2)
      .ints("pads", {1, 1, 1, 1});
  check_conv(node, c, x, w, b);
}

TEST(DnnlConv, FusedReluClampsNegatives) {
  ConvCase c{{1, 8, 6, 6}, {16, 8, 3, 3}, {1, 16, 6, 6}, 1, {{1, 1}, {1, 1}, {1, 1}}};
  auto x = random_values(count_of(c.x_shape), 7);
  auto w = random_values(count_of(c.w_shape), 8);
  auto b = random_values(16, 9);
  OneNode node("Conv");
  node.input(c.x_shape, x)
      .constant(c.w_shape, w)
      .constant({16}, b)
      .ints("pads", {1, 1, 1, 1})
      .text("activation", "Relu");
  auto expected = conv_reference(x, c.x_shape, w, c.w_shape, b, 1, c.window, c.y_shape);
  for (float& v : expected) v = std::max(v, 0.0f);
  expect_near(node.run_one(), c.y_shape, expected);
}

TEST(DnnlConv, FusedClipBoundsBothSides) {
  ConvCase c{{1, 8, 6, 6}, {16, 8, 3, 3}, {1, 16, 6, 6}, 1, {{1, 1}, {1, 1}, {1, 1}}};
  auto x = random_values(count_of(c.x_shape), 10);
  auto w = random_values(count_of(c.w_shape), 11);
  OneNode node("Conv");
  node.input(c.x_shape, x)
      .constant(c.w_shape, w)
      .ints("pads", {1, 1, 1, 1})
      .text("activation", "Clip");
  node.real("activation_min", -0.5f).real("activation_max", 0.75f);
  auto expected = conv_reference(x, c.x_shape, w, c.w_shape, {}, 1, c.window, c.y_shape);
  for (float& v : expected) v = std::clamp(v, -0.5f, 0.75f);
  expect_near(node.run_one(), c.y_shape, expected);
}

TEST(DnnlConv, FusedSwishIsXTimesSigmoidX) {
  ConvCase c{{1, 8, 6, 6}, {16, 8, 3, 3}, {1, 16, 6, 6}, 1, {{1, 1}, {1, 1}, {1, 1}}};
  auto x = random_values(count_of(c.x_shape), 16);
  auto w = random_values(count_of(c.w_shape), 17);
  auto b = random_values(16, 18);
  OneNode node("Conv");
  node.input(c.x_shape, x)
      .constant(c.w_shape, w)
      .constant({16}, b)
      .ints("pads", {1, 1, 1, 1})
      .text("activation", "Swish");
  auto expected = conv_reference(x, c.x_shape, w, c.w_shape, b, 1, c.window, c.y_shape);
  for (float& v : expected) v = v / (1.0f + std::exp(-v));
  expect_near(node.run_one(), c.y_shape, expected);
}

TEST(DnnlConv, SumInputIsAddedBeforeActivation) {
  ConvCase c{{1, 16, 5, 5}, {16, 16, 3, 3}, {1, 16, 5, 5}, 1, {{1, 1}, {1, 1}, {1, 1}}};
  auto x = random_values(count_of(c.x_shape), 12);
  auto w = random_values(count_of(c.w_shape), 13);
  auto b = random_values(16, 14);
  auto shortcut = random_values(count_of(c.y_shape), 15);
  OneNode node("Conv");
  node.input(c.x_shape, x).constant(c.w_shape, w).constant({16}, b).input(c.y_shape, shortcut);
  node.ints("pads", {1, 1, 1, 1}).integer("sum_input", 3).text("activation", "Relu");
  auto expected = conv_reference(x, c.x_shape, w, c.w_shape, b, 1, c.window, c.y_shape);
  for (std::size_t i = 0; i < expected.size(); ++i)
    expected[i] = std::max(expected[i] + shortcut[i], 0.0f);
  expect_near(node.run_one(), c.y_shape, expected);
}

TEST(DnnlConv, UnknownFusedActivationIsUnsupported) {
  OneNode node("Conv");
  node.input({1, 1, 3, 3}, random_values(9, 1))
      .constant({1, 1, 1, 1}, {1.0f})
      .text("activation", "Mish");
  EXPECT_THROW(node.run(), UnsupportedError);
}

TEST(DnnlConv, GroupNotDividingChannelsIsAnError) {
  OneNode node("Conv");
  node.input({1, 6, 3, 3}, random_values(54, 1))
      .constant({4, 3, 1, 1}, random_values(12, 2))
      .integer("group", 4);
  EXPECT_THROW(node.run(), Error);
}

TEST(DnnlConv, ProducesBlockedLayoutWhenAllowed) {
  OneNode node("Conv");
  node.input({1, 64, 8, 8}, random_values(64 * 64, 1))
      .constant({64, 64, 3, 3}, random_values(64 * 64 * 9, 2));
  node.ints("pads", {1, 1, 1, 1});
  auto kernel = node.prepare(true);
  EXPECT_TRUE(kernel->output_specs()[0].layout.has_value());
}

TEST(DnnlConv, ProducesPlainLayoutWhenNotAllowed) {
  OneNode node("Conv");
  node.input({1, 64, 8, 8}, random_values(64 * 64, 1))
      .constant({64, 64, 3, 3}, random_values(64 * 64 * 9, 2));
  node.ints("pads", {1, 1, 1, 1});
  auto kernel = node.prepare(false);
  EXPECT_FALSE(kernel->output_specs()[0].layout.has_value());
}

// Depthwise convolutions on 2 threads run as one single-thread primitive per half of their
// channel blocks (when they come blocked, as from the 1x1 convolution before them); each
// output element is computed as on 1 thread. Blocks are the ISA's: 16 channels on AVX-512, 8 on
// AVX2, so the channel counts below are written in blocks.
struct DepthwiseCase {
  int64_t channels, size, kernel, stride;
  std::string activation;
};

OneNode depthwise_node(const DepthwiseCase& c) {
  const int64_t pad = c.kernel / 2;
  OneNode node("Conv");
  node.input({1, c.channels, c.size, c.size}, random_values(c.channels * c.size * c.size, 1))
      .constant({c.channels, 1, c.kernel, c.kernel},
                random_values(c.channels * c.kernel * c.kernel, 2))
      .constant({c.channels}, random_values(c.channels, 3))
      .integer("group", c.channels)
      .ints("strides", {c.stride, c.stride})
      .ints("pads", {pad, pad, pad, pad});
  if (!c.activation.empty()) node.text("activation", c.activation);
  return node;
}

std::string depthwise_implementation(const DepthwiseCase& c, int threads, bool blocked = true) {
  return depthwise_node(c).prepare(true, threads, blocked)->implementation();
}

TEST(DnnlDepthwiseSplit, TwoThreadsSplitFourAndAHalfBlocks) {
  EXPECT_THAT(depthwise_implementation({native_channel_block() * 9 / 2, 8, 3, 1, ""}, 2),
              testing::EndsWith("in 2 channel parts"));
}

TEST(DnnlDepthwiseSplit, OneThreadDoesNotSplit) {
  EXPECT_THAT(depthwise_implementation({72, 8, 3, 1, ""}, 1),
              testing::Not(testing::HasSubstr("channel parts")));
}

TEST(DnnlDepthwiseSplit, FewerThanTwoBlocksPerThreadAreNotSplit) {
  EXPECT_THAT(depthwise_implementation({native_channel_block() * 5 / 2, 8, 3, 1, ""}, 2),
              testing::Not(testing::HasSubstr("channel parts")));
}

TEST(DnnlDepthwiseSplit, FourThreadsSplitEightBlocksInFour) {
  EXPECT_THAT(depthwise_implementation({native_channel_block() * 8, 8, 3, 1, ""}, 4),
              testing::EndsWith("in 4 channel parts"));
}

TEST(DnnlDepthwiseSplit, PlainInputIsSplitOnlyWhenComputedInBlocks) {
  // On AVX-512 oneDNN reads it with another kernel (brdgmm_dw on channels-last), which shares
  // well; AVX2 has no such kernel in oneDNN 2.6, so the input is reordered into blocks for
  // jit_dw, which is then split as a blocked input is.
  const std::string implementation =
      depthwise_implementation({72, 8, 3, 1, ""}, 2, /*blocked=*/false);
  if (implementation.starts_with("jit_dw")) {
    EXPECT_THAT(implementation, testing::EndsWith("in 2 channel parts"));
  } else {
    EXPECT_THAT(implementation, testing::Not(testing::HasSubstr("channel parts")));
  }
  if (native_channel_block() == 16) {
    EXPECT_THAT(implementation, testing::HasSubstr("brdgmm_dw"));
  }
}

TEST(DnnlDepthwiseSplit, GroupedButNotDepthwiseIsNotSplit) {
  OneNode node("Conv");
  node.input({1, 128, 6, 6}, random_values(128 * 36, 1))
      .constant({128, 2, 3, 3}, random_values(128 * 18, 2))
      .integer("group", 64)
      .ints("pads", {1, 1, 1, 1});
  EXPECT_THAT(node.prepare(true, 2, true)->implementation(),
              testing::Not(testing::HasSubstr("channel parts")));
}

void expect_split_equals_one_thread(const DepthwiseCase& c) {
  OneNode split_node = depthwise_node(c);
  auto split_kernel = split_node.prepare(false, 2, true);
  ASSERT_THAT(split_kernel->implementation(), testing::HasSubstr("channel parts"));
  Tensor split = split_node.run_prepared(*split_kernel);
  const int team = omp_get_max_threads();
  omp_set_num_threads(1);  // A truly single-thread primitive, as a 1-thread run makes.
  OneNode single_node = depthwise_node(c);
  auto single_kernel = single_node.prepare(false, 1, true);
  omp_set_num_threads(team);
  Tensor single = single_node.run_prepared(*single_kernel);
  ASSERT_EQ(split.shape(), single.shape());
  EXPECT_EQ(std::memcmp(split.raw(), single.raw(), single.element_count() * sizeof(float)), 0);
  // And both are right: the reference with the activation applied.
  const int64_t pad = c.kernel / 2;
  Window window{{c.stride, c.stride}, {1, 1}, {pad, pad}};
  const int64_t out = (c.size + 2 * pad - c.kernel) / c.stride + 1;
  std::vector<float> expected = conv_reference(
      random_values(c.channels * c.size * c.size, 1), {1, c.channels, c.size, c.size},
      random_values(c.channels * c.kernel * c.kernel, 2), {c.channels, 1, c.kernel, c.kernel},
      random_values(c.channels, 3), c.channels, window, {1, c.channels, out, out});
  for (float& value : expected) {
    if (c.activation == "Relu") value = std::max(value, 0.0f);
    if (c.activation == "Swish") value = value / (1.0f + std::exp(-value));
  }
  expect_near(split, {1, c.channels, out, out}, expected);
}

TEST(DnnlDepthwiseSplit, SplitOutputEqualsOneThreadBitForBit) {
  expect_split_equals_one_thread({72, 14, 3, 1, ""});
}

TEST(DnnlDepthwiseSplit, StridedFiveByFiveWithReluEqualsOneThread) {
  expect_split_equals_one_thread({72, 15, 5, 2, "Relu"});
}

TEST(DnnlDepthwiseSplit, FullBlocksWithSwishEqualOneThread) {
  expect_split_equals_one_thread({96, 9, 3, 1, "Swish"});
}

// Four blocks and 3 channels of a fifth on 2 threads: parts of 3 and 2 blocks, which start at
// a multiple of the ISA's block (the outputs could not equal one thread's otherwise).
TEST(DnnlDepthwiseSplit, PartlyFilledLastBlockEqualsOneThread) {
  expect_split_equals_one_thread({native_channel_block() * 4 + 3, 7, 3, 1, ""});
}

// ---- Convolutions in parts claimed by a ClaimPool (a host with no core free) ---------------

// A 3x3 convolution of 64 input channels into `channels_out` at `size` x `size` (28: 39 million
// flops or more, enough to be split), with a fused sum of a shortcut and ReLU when `with_sum`.
OneNode claimed_conv_node(int64_t channels_out, bool with_sum, int64_t size = 28) {
  OneNode node("Conv");
  node.input({1, 64, size, size}, random_values(64 * size * size, 31))
      .constant({channels_out, 64, 3, 3}, random_values(channels_out * 64 * 9, 32))
      .constant({channels_out}, random_values(channels_out, 33));
  if (with_sum) {
    node.input({1, channels_out, size, size}, random_values(channels_out * size * size, 34));
  }
  node.ints("pads", {1, 1, 1, 1}).text("activation", "Relu");
  if (with_sum) node.integer("sum_input", 3);
  return node;
}

void expect_claimed_parts_equal_one_thread(bool with_sum) {
  const int64_t channels_out = native_channel_block() * 5 + 3;
  ClaimPool pool(2);
  OneNode claimed_node = claimed_conv_node(channels_out, with_sum);
  auto claimed_kernel = claimed_node.prepare(true, 1, true, 0, &pool);
  // Six blocks, two parts per thread; the first parts take the extra blocks.
  ASSERT_THAT(claimed_kernel->implementation(),
              testing::EndsWith("in 4 parts claimed by 2 threads"));
  const int team = omp_get_max_threads();
  omp_set_num_threads(1);
  OneNode single_node = claimed_conv_node(channels_out, with_sum);
  auto single_kernel = single_node.prepare(true, 1, true);
  omp_set_num_threads(team);
  EXPECT_THAT(single_kernel->implementation(), testing::Not(testing::HasSubstr("parts")));
  for (int run = 0; run < 3; ++run) {  // The pool's threads come back for each run.
    Tensor claimed = claimed_node.run_prepared(*claimed_kernel);
    Tensor single = single_node.run_prepared(*single_kernel);
    ASSERT_EQ(claimed.shape(), single.shape());
    EXPECT_EQ(std::memcmp(claimed.raw(), single.raw(), single.element_count() * sizeof(float)), 0)
        << "run " << run;
  }
  // And both are right.
  Window window{{1, 1}, {1, 1}, {1, 1}};
  std::vector<float> expected =
      conv_reference(random_values(64 * 28 * 28, 31), {1, 64, 28, 28},
                     random_values(channels_out * 64 * 9, 32), {channels_out, 64, 3, 3},
                     random_values(channels_out, 33), 1, window, {1, channels_out, 28, 28});
  const std::vector<float> shortcut = random_values(channels_out * 28 * 28, 34);
  for (std::size_t i = 0; i < expected.size(); ++i) {
    expected[i] = std::max(expected[i] + (with_sum ? shortcut[i] : 0.0f), 0.0f);
  }
  expect_near(claimed_node.run_prepared(*claimed_kernel), {1, channels_out, 28, 28}, expected);
}

TEST(DnnlClaimedParts, DenseConvolutionEqualsOneThreadBitForBit) {
  expect_claimed_parts_equal_one_thread(false);
}

TEST(DnnlClaimedParts, FusedSumSplitsTooAndEqualsOneThread) {
  expect_claimed_parts_equal_one_thread(true);
}

// 9x9: 4-8 million flops, less than waking a helper is worth.
TEST(DnnlClaimedParts, ASmallConvolutionRunsWhole) {
  ClaimPool pool(2);
  OneNode node = claimed_conv_node(native_channel_block() * 5 + 3, false, 9);
  EXPECT_THAT(node.prepare(true, 1, true, 0, &pool)->implementation(),
              testing::Not(testing::HasSubstr("parts")));
}

TEST(DnnlClaimedParts, OneBlockIsNotSplit) {
  ClaimPool pool(2);
  OneNode node = claimed_conv_node(native_channel_block(), false);
  EXPECT_THAT(node.prepare(true, 1, true, 0, &pool)->implementation(),
              testing::Not(testing::HasSubstr("parts")));
}

TEST(DnnlClaimedParts, GroupedButNotDepthwiseIsNotSplit) {
  ClaimPool pool(2);
  OneNode node("Conv");
  node.input({1, 128, 6, 6}, random_values(128 * 36, 1))
      .constant({128, 2, 3, 3}, random_values(128 * 18, 2))
      .integer("group", 64)
      .ints("pads", {1, 1, 1, 1});
  EXPECT_THAT(node.prepare(true, 1, true, 0, &pool)->implementation(),
              testing::Not(testing::HasSubstr("parts")));
}

// ---- ConvTranspose ----------------------------------------------------------------------

void run_conv_transpose(const Shape64& x_shape, const Shape64& w_shape, int64_t group,
                        const Window& window, const Shape64& y_shape,
                        std::vector<std::pair<std::string, Attribute>> attributes,
                        bool bias = true) {
  auto x = random_values(count_of(x_shape), 21);
  auto w = random_values(count_of(w_shape), 22);
  auto b = bias ? random_values(w_shape[1] * group, 23) : std::vector<float>{};
  OneNode node("ConvTranspose");
  node.input(x_shape, x).constant(w_shape, w);
  if (bias) node.constant({w_shape[1] * group}, b);
  node.integer("group", group);
  for (auto& [name, value] : attributes) node.attr(name, value);
  expect_near(node.run_one(), y_shape,
              conv_transpose_reference(x, x_shape, w, w_shape, b, group, window, y_shape));
}

TEST(DnnlConvTranspose, Basic) {
  run_conv_transpose({1, 2, 3, 3}, {2, 3, 3, 3}, 1, {{1, 1}, {1, 1}, {0, 0}}, {1, 3, 5, 5}, {});
}

TEST(DnnlConvTranspose, StridedWithPads) {
  // (4 - 1) * 2 + 3 - 1 - 1 = 7.
  run_conv_transpose(
      {1, 3, 4, 4}, {3, 2, 3, 3}, 1, {{2, 2}, {1, 1}, {1, 1}}, {1, 2, 7, 7},
      {{"strides", Attribute::of_ints({2, 2})}, {"pads", Attribute::of_ints({1, 1, 1, 1})}});
}

TEST(DnnlConvTranspose, OutputPaddingExtendsTheEnd) {
  // (3 - 1) * 3 + 3 + 1 - 1 = 9 along H; (3 - 1) * 2 + 3 + 1 - 1 = 7 along W.
  run_conv_transpose({1, 2, 3, 3}, {2, 2, 3, 3}, 1, {{3, 2}, {1, 1}, {1, 1}}, {1, 2, 9, 7},
                     {{"strides", Attribute::of_ints({3, 2})},
                      {"pads", Attribute::of_ints({1, 1, 0, 0})},
                      {"output_padding", Attribute::of_ints({1, 1})}});
}

TEST(DnnlConvTranspose, OutputPaddingBeyondPadsIsZeroFilled) {
  // ONNX test_convtranspose_pad's geometry: no pads, output_padding 1: (3-1)*3+3+1 = 10,
  // (3-1)*2+3+1 = 8.
  run_conv_transpose(
      {1, 1, 3, 3}, {1, 2, 3, 3}, 1, {{3, 2}, {1, 1}, {0, 0}}, {1, 2, 10, 8},
      {{"strides", Attribute::of_ints({3, 2})}, {"output_padding", Attribute::of_ints({1, 1})}});
}

TEST(DnnlConvTranspose, OutputShapeDecidesPads) {
  // Natural size (3-1)*3+3 = 9 and (3-1)*2+3 = 7; requested 10x8 needs no pads and 1 extra.
  run_conv_transpose(
      {1, 1, 3, 3}, {1, 2, 3, 3}, 1, {{3, 2}, {1, 1}, {0, 0}}, {1, 2, 10, 8},
      {{"strides", Attribute::of_ints({3, 2})}, {"output_shape", Attribute::of_ints({10, 8})}});
}

TEST(DnnlConvTranspose, AutoPadSameUpperMatchesOnnxTestData) {
  // test_convtranspose_autopad_same: x = 0..8 (1x1x3x3), W = ones (1x2x3x3), strides 2.
  OneNode node("ConvTranspose");
  std::vector<float> x(9);
  for (int i = 0; i < 9; ++i) x[i] = static_cast<float>(i);
  node.input({1, 1, 3, 3}, x).constant({1, 2, 3, 3}, std::vector<float>(18, 1.0f));
  node.ints("strides", {2, 2}).text("auto_pad", "SAME_UPPER");
  Tensor y = node.run_one();
  ASSERT_EQ(y.shape(), (Shape64{1, 2, 6, 6}));
  std::vector<float> first_rows = {0, 0, 1, 1, 3, 2, 0, 0, 1, 1, 3, 2, 3, 3, 8, 5, 12, 7};
  for (std::size_t i = 0; i < first_rows.size(); ++i)
    EXPECT_FLOAT_EQ(y.data<float>()[i], first_rows[i]) << i;
}

TEST(DnnlConvTranspose, Grouped) {
  run_conv_transpose({1, 4, 3, 3}, {4, 3, 2, 2}, 2, {{2, 2}, {1, 1}, {0, 0}}, {1, 6, 6, 6},
                     {{"strides", Attribute::of_ints({2, 2})}});
}

TEST(DnnlConvTranspose, Dilated) {
  // (3-1)*1 + (3-1)*2+1 = 7.
  run_conv_transpose({1, 2, 3, 3}, {2, 2, 3, 3}, 1, {{1, 1}, {2, 2}, {0, 0}}, {1, 2, 7, 7},
                     {{"dilations", Attribute::of_ints({2, 2})}}, false);
}

TEST(DnnlConvTranspose, OneDimensional) {
  run_conv_transpose({1, 2, 5}, {2, 3, 3}, 1, {{2}, {1}, {0}}, {1, 3, 11},
                     {{"strides", Attribute::of_ints({2})}});
}

TEST(DnnlConvTranspose, ThreeDimensional) {
  run_conv_transpose({1, 2, 3, 3, 2}, {2, 2, 2, 2, 2}, 1, {{1, 1, 1}, {1, 1, 1}, {0, 0, 0}},
                     {1, 2, 4, 4, 3}, {});
}

// ---- Gemm and MatMul --------------------------------------------------------------------

void run_gemm(int64_t m, int64_t k, int64_t n, bool trans_a, bool trans_b, float alpha, float beta,
              const Shape64& c_shape, bool b_constant = true) {
  auto a = random_values(m * k, 31);
  auto b = random_values(k * n, 32);
  auto c = c_shape.empty() ? std::vector<float>{} : random_values(count_of(c_shape), 33);
  OneNode node("Gemm");
  node.input(trans_a ? Shape64{k, m} : Shape64{m, k}, a);
  if (b_constant) {
    node.constant(trans_b ? Shape64{n, k} : Shape64{k, n}, b);
  } else {
    node.input(trans_b ? Shape64{n, k} : Shape64{k, n}, b);
  }
  if (!c_shape.empty()) node.constant(c_shape, c);
  node.integer("transA", trans_a)
      .integer("transB", trans_b)
      .real("alpha", alpha)
      .real("beta", beta);
  Shape64 c2 = c_shape;
  while (c2.size() < 2) c2.insert(c2.begin(), 1);
  expect_near(node.run_one(), {m, n},
              gemm_reference(a, b, m, k, n, trans_a, trans_b, alpha, beta, c, c2[0], c2[1]));
}

TEST(DnnlGemm, VectorBias) {
  run_gemm(3, 5, 4, false, false, 1.0f, 1.0f, {4});
}
TEST(DnnlGemm, TransposedA) {
  run_gemm(3, 5, 4, true, false, 1.0f, 1.0f, {4});
}
TEST(DnnlGemm, TransposedB) {
  run_gemm(3, 5, 4, false, true, 1.0f, 1.0f, {1, 4});
}
TEST(DnnlGemm, BothTransposedWithAlphaBeta) {
  run_gemm(4, 3, 5, true, true, 0.25f, 0.35f, {4, 5});
}
TEST(DnnlGemm, ScalarC) {
  run_gemm(2, 3, 4, false, false, 1.0f, 2.0f, {});
}
TEST(DnnlGemm, SingleElementC) {
  run_gemm(2, 3, 4, false, false, 1.0f, 1.0f, {1});
}
TEST(DnnlGemm, ColumnC) {
  run_gemm(3, 6, 2, false, false, 1.5f, 0.5f, {3, 1});
}
TEST(DnnlGemm, RuntimeWeights) {
  run_gemm(7, 9, 5, false, true, 1.0f, 1.0f, {5}, false);
}

TEST(DnnlGemm, WithoutC) {
  auto a = random_values(6, 1), b = random_values(12, 2);
  OneNode node("Gemm");
  node.input({2, 3}, a).constant({3, 4}, b).real("alpha", 2.0f);
  expect_near(node.run_one(), {2, 4},
              gemm_reference(a, b, 2, 3, 4, false, false, 2.0f, 0.0f, {}, 1, 1));
}

void run_matmul(const Shape64& a_shape, const Shape64& b_shape, const Shape64& y_shape,
                bool b_constant) {
  auto a = random_values(count_of(a_shape), 41);
  auto b = random_values(count_of(b_shape), 42);
  OneNode node("MatMul");
  node.input(a_shape, a);
  if (b_constant) {
    node.constant(b_shape, b);
  } else {
    node.input(b_shape, b);
  }
  Shape64 a_full = a_shape, b_full = b_shape;
  if (a_full.size() == 1) a_full.insert(a_full.begin(), 1);
  if (b_full.size() == 1) b_full.push_back(1);
  while (a_full.size() < b_full.size()) a_full.insert(a_full.begin(), 1);
  while (b_full.size() < a_full.size()) b_full.insert(b_full.begin(), 1);
  expect_near(node.run_one(), y_shape, matmul_reference(a, a_full, b, b_full));
}

TEST(DnnlMatMul, TwoDimensional) {
  run_matmul({3, 4}, {4, 5}, {3, 5}, false);
}
TEST(DnnlMatMul, BatchedBothSides) {
  run_matmul({2, 3, 4}, {2, 4, 5}, {2, 3, 5}, false);
}
TEST(DnnlMatMul, BroadcastBatchDims) {
  run_matmul({2, 1, 3, 4}, {5, 4, 6}, {2, 5, 3, 6}, false);
}
TEST(DnnlMatMul, ConstantMatrixSharedByBatch) {
  run_matmul({2, 3, 7}, {7, 5}, {2, 3, 5}, true);
}
// Rows of a multiple of 128 floats: on the sgemm path (AVX2) the packed weights get padded rows.
TEST(DnnlMatMul, ConstantWeightsWithRowsOfPowerOfTwoFloats) {
  run_matmul({3, 5}, {5, 256}, {3, 256}, true);
  run_matmul({2, 3, 7}, {7, 384}, {2, 3, 384}, true);
  run_matmul({1, 4}, {1, 4, 128}, {1, 1, 128}, true);
}
TEST(DnnlGemm, TransposedConstantWeightsWithRowsOfPowerOfTwoFloats) {
  run_gemm(3, 6, 256, false, true, 1.0f, 1.0f, {256});
}
TEST(DnnlMatMul, MatrixTimesBatch) {
  run_matmul({3, 4}, {2, 4, 5}, {2, 3, 5}, true);
}
TEST(DnnlMatMul, VectorLeft) {
  run_matmul({4}, {2, 4, 5}, {2, 5}, false);
}
TEST(DnnlMatMul, VectorRight) {
  run_matmul({2, 3, 4}, {4}, {2, 3}, false);
}
TEST(DnnlMatMul, VectorDotVector) {
  run_matmul({6}, {6}, {}, false);
}

TEST(DnnlMatMul, MismatchedInnerSizeIsAnError) {
  OneNode node("MatMul");
  node.input({2, 3}, random_values(6, 1)).input({4, 2}, random_values(8, 2));
  EXPECT_THROW(node.run(), Error);
}

// A MatMul fused by fuse_matmul_epilogues: bias (input 2) then `activation`, against the loop
// reference.
void run_fused_matmul(const std::string& activation, float (*reference)(float)) {
  Shape64 a_shape{2, 3, 8}, b_shape{8, 5};
  auto a = random_values(count_of(a_shape), 61);
  auto b = random_values(count_of(b_shape), 62);
  auto bias = random_values(5, 63);
  OneNode node("MatMul");
  node.input(a_shape, a).constant(b_shape, b).constant({5}, bias).text("activation", activation);
  auto expected = matmul_reference(a, {1, 6, 8}, b, {1, 8, 5});
  for (std::size_t i = 0; i < expected.size(); ++i)
    expected[i] = reference(expected[i] + bias[i % 5]);
  expect_near(node.run_one(), {2, 3, 5}, expected);
}

TEST(DnnlMatMul, FusedBiasAndGeluMatchTheErfFormula) {
  run_fused_matmul("Gelu",
                   [](float v) { return 0.5f * v * (1.0f + std::erf(v / std::sqrt(2.0f))); });
}

TEST(DnnlMatMul, FusedBiasAndReluClampNegatives) {
  run_fused_matmul("Relu", [](float v) { return std::max(v, 0.0f); });
}

TEST(DnnlMatMul, UnknownFusedActivationIsUnsupported) {
  OneNode node("MatMul");
  node.input({2, 3}, random_values(6, 1))
      .constant({3, 2}, random_values(6, 2))
      .text("activation", "Mish");
  EXPECT_THROW(node.run(), UnsupportedError);
}

TEST(DnnlMatMul, FusedActivationOverAnEmptyInnerDimensionIsUnsupported) {
  OneNode node("MatMul");
  node.input({2, 0}, {}).constant({0, 3}, {}).text("activation", "Gelu");
  EXPECT_THROW(node.run(), UnsupportedError);
}

TEST(DnnlMatMul, FusedBiasOfTheWrongLengthNamesTheNode) {
  OneNode node("MatMul");
  node.input({2, 3}, random_values(6, 1))
      .constant({3, 2}, random_values(6, 2))
      .constant({3}, random_values(3, 3));
  try {
    node.run();
    FAIL() << "a bias of 3 values for 2 columns was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("fused bias"), std::string::npos) << e.what();
  }
}

// ---- Pooling ----------------------------------------------------------------------------

void run_pool(const std::string& op, Pool kind, const Shape64& x_shape, const Shape64& kernel,
              const Window& window, const Shape64& pads_end, const Shape64& y_shape,
              std::vector<std::pair<std::string, Attribute>> attributes) {
  auto x = random_values(count_of(x_shape), 51);
  OneNode node(op);
  node.input(x_shape, x).ints("kernel_shape", kernel);
  for (auto& [name, value] : attributes) node.attr(name, value);
  expect_near(node.run_one(), y_shape,
              pool_reference(kind, x, x_shape, kernel, window, pads_end, y_shape));
}

TEST(DnnlMaxPool, Default2x2) {
  run_pool("MaxPool", Pool::kMax, {1, 3, 6, 6}, {2, 2}, {{2, 2}, {1, 1}, {0, 0}}, {0, 0},
           {1, 3, 3, 3}, {{"strides", Attribute::of_ints({2, 2})}});
}

TEST(DnnlMaxPool, CeilModeAddsPartialWindow) {
  // (5 - 2) / 2 + 1 = 2 in floor mode, 3 with ceil_mode.
  run_pool("MaxPool", Pool::kMax, {1, 2, 5, 5}, {2, 2}, {{2, 2}, {1, 1}, {0, 0}}, {0, 0},
           {1, 2, 3, 3},
           {{"strides", Attribute::of_ints({2, 2})}, {"ceil_mode", Attribute::of_int(1)}});
}

TEST(DnnlMaxPool, CeilModeDropsWindowStartingInPadding) {
  // ceil((4 + 1 - 2) / 2) + 1 = 3, but the third window would start at 4 = in + pad_begin: 2.
  run_pool("MaxPool", Pool::kMax, {1, 1, 4, 4}, {2, 2}, {{2, 2}, {1, 1}, {0, 0}}, {1, 1},
           {1, 1, 2, 2},
           {{"strides", Attribute::of_ints({2, 2})},
            {"ceil_mode", Attribute::of_int(1)},
            {"pads", Attribute::of_ints({0, 0, 1, 1})}});
}

TEST(DnnlMaxPool, AsymmetricPads) {
  run_pool("MaxPool", Pool::kMax, {1, 2, 5, 5}, {3, 3}, {{1, 1}, {1, 1}, {2, 0}}, {0, 1},
           {1, 2, 5, 4}, {{"pads", Attribute::of_ints({2, 0, 0, 1})}});
}

TEST(DnnlMaxPool, Dilated) {
  run_pool("MaxPool", Pool::kMax, {1, 1, 4, 4}, {2, 2}, {{1, 1}, {2, 2}, {0, 0}}, {0, 0},
           {1, 1, 2, 2}, {{"dilations", Attribute::of_ints({2, 2})}});
}

TEST(DnnlMaxPool, SameUpper) {
  // Input 5, kernel 3, stride 2: output 3, total pad 2 split 1/1.
  run_pool(
      "MaxPool", Pool::kMax, {1, 2, 5, 5}, {3, 3}, {{2, 2}, {1, 1}, {1, 1}}, {1, 1}, {1, 2, 3, 3},
      {{"strides", Attribute::of_ints({2, 2})}, {"auto_pad", Attribute::of_string("SAME_UPPER")}});
}

TEST(DnnlMaxPool, SameLowerPadsBeginFirst) {
  // Input 4, kernel 2, stride 1: output 4, total pad 1 at the beginning.
  run_pool("MaxPool", Pool::kMax, {1, 1, 4, 4}, {2, 2}, {{1, 1}, {1, 1}, {1, 1}}, {0, 0},
           {1, 1, 4, 4}, {{"auto_pad", Attribute::of_string("SAME_LOWER")}});
}

TEST(DnnlMaxPool, OneDimensional) {
  run_pool("MaxPool", Pool::kMax, {1, 3, 9}, {3}, {{2}, {1}, {0}}, {0}, {1, 3, 4},
           {{"strides", Attribute::of_ints({2})}});
}

TEST(DnnlMaxPool, ThreeDimensional) {
  run_pool("MaxPool", Pool::kMax, {1, 2, 4, 4, 4}, {2, 2, 2}, {{2, 2, 2}, {1, 1, 1}, {0, 0, 0}},
           {0, 0, 0}, {1, 2, 2, 2, 2}, {{"strides", Attribute::of_ints({2, 2, 2})}});
}

// On AVX2, 2-D inputs pool in cleave's own loops (oneDNN's AVX2 pooling kernel is slow on Intel
// cores, and has none for plain data), elsewhere in oneDNN's: either way every layout (blocks
// of 8 and 16, channels last, plain), a padded last block, two samples and two threads give
// the reference's values.
void run_pool_in_layouts(const std::string& op, Pool kind, const Shape64& x_shape,
                         const Shape64& kernel, const Window& window, const Shape64& pads_end,
                         const Shape64& y_shape,
                         std::vector<std::pair<std::string, Attribute>> attributes) {
  auto x = random_values(count_of(x_shape), 52);
  const auto expected = pool_reference(kind, x, x_shape, kernel, window, pads_end, y_shape);
  constexpr int64_t kPlain = 0;
  for (int64_t block : {int64_t{8}, int64_t{16}, OneNode::kChannelsLast, kPlain}) {
    for (int threads : {1, 2}) {
      SCOPED_TRACE(fmt::format("block {}, {} thread(s)", block, threads));
      OneNode node(op);
      node.input(x_shape, x).ints("kernel_shape", kernel);
      for (auto& [name, value] : attributes) node.attr(name, value);
      auto pool = node.prepare(/*blocked_outputs_allowed=*/true, threads, block != kPlain, block);
      EXPECT_EQ(pool->implementation() == "cleave:avx2", pool_loops_available())
          << pool->implementation();
      // The loops keep the input's layout (oneDNN's reference average gives plain output).
      if (pool_loops_available()) {
        ASSERT_EQ(pool->output_specs()[0].layout.has_value(), block != kPlain);
      }
      expect_near(node.run_prepared(*pool), y_shape, expected);
    }
  }
}

TEST(PoolLoops, MaxCeilModeWithPaddedLastBlock) {
  // googlenet's pools: 3x3 stride 2 with ceil_mode; 20 channels leave a block part empty.
  run_pool_in_layouts(
      "MaxPool", Pool::kMax, {2, 20, 10, 10}, {3, 3}, {{2, 2}, {1, 1}, {0, 0}}, {0, 0},
      {2, 20, 5, 5},
      {{"strides", Attribute::of_ints({2, 2})}, {"ceil_mode", Attribute::of_int(1)}});
}

TEST(PoolLoops, MaxAsymmetricPadsAndDilation) {
  run_pool_in_layouts("MaxPool", Pool::kMax, {1, 24, 7, 8}, {2, 3}, {{1, 2}, {2, 1}, {1, 0}},
                      {0, 2}, {1, 24, 6, 4},
                      {{"strides", Attribute::of_ints({1, 2})},
                       {"dilations", Attribute::of_ints({2, 1})},
                       {"pads", Attribute::of_ints({1, 0, 0, 2})}});
}

TEST(PoolLoops, AverageExcludingPads) {
  run_pool_in_layouts("AveragePool", Pool::kAverageExcludePad, {2, 16, 6, 6}, {3, 3},
                      {{1, 1}, {1, 1}, {1, 1}}, {1, 1}, {2, 16, 6, 6},
                      {{"pads", Attribute::of_ints({1, 1, 1, 1})}});
}

TEST(PoolLoops, AverageCountingExplicitPadsButNotCeilModesOverhang) {
  // 6 + 2 pads, kernel 3, stride 2, ceil: 4 outputs; the last window reaches 1 past the pad.
  run_pool_in_layouts("AveragePool", Pool::kAverageIncludePad, {1, 12, 6, 6}, {3, 3},
                      {{2, 2}, {1, 1}, {1, 1}}, {1, 1}, {1, 12, 4, 4},
                      {{"strides", Attribute::of_ints({2, 2})},
                       {"pads", Attribute::of_ints({1, 1, 1, 1})},
                       {"ceil_mode", Attribute::of_int(1)},
                       {"count_include_pad", Attribute::of_int(1)}});
}

TEST(PoolLoops, OutputComesBackPlainWhenTheConsumerAsks) {
  auto x = random_values(2 * 20 * 6 * 6, 53);
  OneNode node("MaxPool");
  node.input({2, 20, 6, 6}, x).ints("kernel_shape", {2, 2}).ints("strides", {2, 2});
  auto pool = node.prepare(/*blocked_outputs_allowed=*/false, 1, true, 8);
  EXPECT_FALSE(pool->output_specs()[0].layout);
  expect_near(node.run_prepared(*pool), {2, 20, 3, 3},
              pool_reference(Pool::kMax, x, {2, 20, 6, 6}, {2, 2}, {{2, 2}, {1, 1}, {0, 0}}, {0, 0},
                             {2, 20, 3, 3}));
}

TEST(PoolLoops, AreUsedExactlyWhereTheVectorCodeIsAvx2) {
  EXPECT_EQ(pool_loops_available(), vector_isa() == VectorIsa::kAvx2);
}

TEST(PoolLoops, StrideOneOverWideRowsTakesEightPixelsAtATime) {
  // Plain rows of 21: whole windows in the middle go eight output pixels at a time, the edges
  // and the rest one by one.
  run_pool_in_layouts("MaxPool", Pool::kMax, {1, 9, 5, 21}, {3, 3}, {{1, 1}, {1, 1}, {1, 1}},
                      {1, 1}, {1, 9, 5, 21}, {{"pads", Attribute::of_ints({1, 1, 1, 1})}});
  run_pool_in_layouts(
      "AveragePool", Pool::kAverageIncludePad, {1, 9, 5, 21}, {3, 3}, {{1, 1}, {1, 1}, {1, 1}},
      {1, 1}, {1, 9, 5, 21},
      {{"pads", Attribute::of_ints({1, 1, 1, 1})}, {"count_include_pad", Attribute::of_int(1)}});
  run_pool_in_layouts("AveragePool", Pool::kAverageExcludePad, {1, 3, 4, 19}, {2, 2},
                      {{1, 1}, {1, 1}, {0, 0}}, {0, 0}, {1, 3, 3, 18}, {});
}

TEST(PoolLoops, GlobalMaxPoolStaysOnOneDnn) {
  OneNode global("GlobalMaxPool");
  global.input({1, 16, 4, 4}, random_values(256, 54));
  EXPECT_FALSE(global.prepare(true, 1, true, 8)->implementation().starts_with("cleave:"));
}

// A global average runs in channel_loops in every layout and keeps it: 20 channels pad the last
// block of 8 and 16, 7x7 leaves pixels after the partial sums' groups of 4 and 16.
TEST(GlobalAveragePool, RunsInChannelLoopsInEveryLayoutOnOneAndTwoThreads) {
  for (const Shape64& shape : {Shape64{2, 20, 7, 7}, Shape64{1, 640, 8, 8}}) {
    auto x = random_values(count_of(shape), 55);
    const Shape64 y_shape = {shape[0], shape[1], 1, 1};
    const auto expected = pool_reference(Pool::kAverageExcludePad, x, shape, {shape[2], shape[3]},
                                         {{1, 1}, {1, 1}, {0, 0}}, {0, 0}, y_shape);
    constexpr int64_t kPlain = 0;
    for (int64_t block : {int64_t{8}, int64_t{16}, OneNode::kChannelsLast, kPlain}) {
      for (int threads : {1, 2}) {
        SCOPED_TRACE(fmt::format("[{}, {}, ...], block {}, {} thread(s)", shape[0], shape[1], block,
                                 threads));
        OneNode node("GlobalAveragePool");
        node.input(shape, x);
        auto pool = node.prepare(/*blocked_outputs_allowed=*/true, threads, block != kPlain, block);
        EXPECT_EQ(pool->implementation(), "cleave:" + vector_isa_name(vector_isa()));
        EXPECT_EQ(pool->output_specs()[0].layout.has_value(), block != kPlain);
        expect_near(node.run_prepared(*pool), y_shape, expected);
      }
    }
  }
}

TEST(GlobalAveragePool, BlockedOutputComesBackPlainWhenTheConsumerAsks) {
  auto x = random_values(2 * 20 * 5 * 5, 56);
  OneNode node("GlobalAveragePool");
  node.input({2, 20, 5, 5}, x);
  auto pool = node.prepare(/*blocked_outputs_allowed=*/false, 1, true, 16);
  EXPECT_FALSE(pool->output_specs()[0].layout);
  expect_near(node.run_prepared(*pool), {2, 20, 1, 1},
              pool_reference(Pool::kAverageExcludePad, x, {2, 20, 5, 5}, {5, 5},
                             {{1, 1}, {1, 1}, {0, 0}}, {0, 0}, {2, 20, 1, 1}));
}

TEST(DnnlMaxPool, UnreadIndicesOutputIsIgnored) {
  Graph graph;
  auto x = random_values(16, 1);
  ValueId input = graph.add_input("x", DataType::kFloat, Shape::of({1, 1, 4, 4}));
  ValueId y = graph.add_value("y"), indices = graph.add_value("indices");
  graph.add_node("MaxPool", {input}, {y, indices}, {{"kernel_shape", Attribute::of_ints({2, 2})}});
  graph.mark_output(y);
  Executor executor(graph);
  auto outputs = executor.run({{"x", float_tensor({1, 1, 4, 4}, x)}});
  expect_near(outputs.at(0), {1, 1, 3, 3},
              pool_reference(Pool::kMax, x, {1, 1, 4, 4}, {2, 2}, {{1, 1}, {1, 1}, {0, 0}}, {0, 0},
                             {1, 1, 3, 3}));
}

TEST(DnnlAveragePool, ExcludesPadsByDefault) {
  run_pool("AveragePool", Pool::kAverageExcludePad, {1, 2, 5, 5}, {3, 3}, {{1, 1}, {1, 1}, {1, 1}},
           {1, 1}, {1, 2, 5, 5}, {{"pads", Attribute::of_ints({1, 1, 1, 1})}});
}

TEST(DnnlAveragePool, CountIncludePad) {
  run_pool(
      "AveragePool", Pool::kAverageIncludePad, {1, 2, 5, 5}, {3, 3}, {{1, 1}, {1, 1}, {2, 1}},
      {2, 1}, {1, 2, 7, 5},
      {{"pads", Attribute::of_ints({2, 1, 2, 1})}, {"count_include_pad", Attribute::of_int(1)}});
}

TEST(DnnlAveragePool, CeilModeExcludingPads) {
  run_pool("AveragePool", Pool::kAverageExcludePad, {1, 1, 4, 4}, {3, 3}, {{2, 2}, {1, 1}, {0, 0}},
           {0, 0}, {1, 1, 2, 2},
           {{"strides", Attribute::of_ints({2, 2})}, {"ceil_mode", Attribute::of_int(1)}});
}

TEST(DnnlAveragePool, CeilModeWithCountIncludePadIgnoresOverhang) {
  // Output ceil((5 + 2 - 3) / 2) + 1 = 3; the last window overhangs the end pad by one.
  run_pool("AveragePool", Pool::kAverageIncludePad, {1, 2, 5, 5}, {3, 3}, {{2, 2}, {1, 1}, {1, 1}},
           {1, 1}, {1, 2, 3, 3},
           {{"strides", Attribute::of_ints({2, 2})},
            {"pads", Attribute::of_ints({1, 1, 1, 1})},
            {"ceil_mode", Attribute::of_int(1)},
            {"count_include_pad", Attribute::of_int(1)}});
}

TEST(DnnlAveragePool, SameUpperExcludesPads) {
  run_pool("AveragePool", Pool::kAverageExcludePad, {1, 1, 4, 4}, {2, 2}, {{1, 1}, {1, 1}, {0, 0}},
           {1, 1}, {1, 1, 4, 4}, {{"auto_pad", Attribute::of_string("SAME_UPPER")}});
}

TEST(DnnlGlobalPool, AverageOverSpatialAxes) {
  auto x = random_values(2 * 3 * 4 * 5, 61);
  OneNode node("GlobalAveragePool");
  node.input({2, 3, 4, 5}, x);
  expect_near(node.run_one(), {2, 3, 1, 1},
              pool_reference(Pool::kAverageExcludePad, x, {2, 3, 4, 5}, {4, 5},
                             {{1, 1}, {1, 1}, {0, 0}}, {0, 0}, {2, 3, 1, 1}));
}

// For a consumer that reads plain tensors: one sample of whole channel blocks is already in
// plain order; two samples of 20 channels are reordered.
TEST(DnnlGlobalPool, BlockedInputGivesPlainOutputWhenAsked) {
  for (const Shape64& shape : {Shape64{1, 32, 3, 3}, Shape64{2, 20, 3, 3}}) {
    SCOPED_TRACE(shape[1]);
    auto x = random_values(shape[0] * shape[1] * 9, 63);
    OneNode node("GlobalAveragePool");
    node.input(shape, x);
    auto kernel = node.prepare(/*blocked_outputs_allowed=*/false, 1, /*blocked_input=*/true);
    EXPECT_FALSE(kernel->output_specs()[0].layout);
    Shape64 pooled = {shape[0], shape[1], 1, 1};
    expect_near(node.run_prepared(*kernel), pooled,
                pool_reference(Pool::kAverageExcludePad, x, shape, {3, 3}, {{1, 1}, {1, 1}, {0, 0}},
                               {0, 0}, pooled));
  }
}

TEST(DnnlGlobalPool, MaxOverSpatialAxes) {
  auto x = random_values(2 * 3 * 7, 62);
  OneNode node("GlobalMaxPool");
  node.input({2, 3, 7}, x);
  expect_near(node.run_one(), {2, 3, 1},
              pool_reference(Pool::kMax, x, {2, 3, 7}, {7}, {{1}, {1}, {0}}, {0}, {2, 3, 1}));
}

// ---- Normalizations ---------------------------------------------------------------------

TEST(DnnlBatchNorm, InferenceUsesGivenStatistics) {
  Shape64 shape = {2, 3, 4, 5};
  auto x = random_values(count_of(shape), 71);
  std::vector<float> scale = {0.5f, 1.5f, -1.0f}, bias = {0.1f, 0.2f, 0.3f},
                     mean = {0.05f, -0.1f, 0.2f}, var = {0.5f, 1.0f, 2.0f};
  OneNode node("BatchNormalization", 15);
  node.input(shape, x)
      .constant({3}, scale)
      .constant({3}, bias)
      .constant({3}, mean)
      .constant({3}, var)
      .real("epsilon", 1e-3f);
  std::vector<float> expected(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    std::size_t c = (i / 20) % 3;
    expected[i] = (x[i] - mean[c]) / std::sqrt(var[c] + 1e-3f) * scale[c] + bias[c];
  }
  expect_near(node.run_one(), shape, expected);
}

TEST(DnnlBatchNorm, FusedReluClampsNegativeResults) {
  Shape64 shape = {1, 3, 4, 4};
  auto x = random_values(count_of(shape), 73);
  std::vector<float> scale = {0.5f, 1.5f, -1.0f}, bias = {0.1f, -0.2f, 0.3f},
                     mean = {0.05f, -0.1f, 0.2f}, var = {0.5f, 1.0f, 2.0f};
  OneNode node("BatchNormalization", 15);
  node.input(shape, x)
      .constant({3}, scale)
      .constant({3}, bias)
      .constant({3}, mean)
      .constant({3}, var)
      .text("activation", "Relu");
  std::vector<float> expected(x.size());
  int clamped = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    std::size_t c = (i / 16) % 3;
    float normalized = (x[i] - mean[c]) / std::sqrt(var[c] + 1e-5f) * scale[c] + bias[c];
    clamped += normalized < 0;
    expected[i] = std::max(normalized, 0.0f);
  }
  ASSERT_GT(clamped, 0);
  expect_near(node.run_one(), shape, expected);
}

TEST(DnnlBatchNorm, OtherFusedActivationsAreUnsupported) {
  OneNode node("BatchNormalization", 15);
  node.input({1, 1, 2, 2}, {1, 2, 3, 4});
  for (int i = 0; i < 4; ++i) node.constant({1}, {1.0f});
  node.text("activation", "Clip");
  EXPECT_THROW(node.run(), UnsupportedError);
}

TEST(DnnlBatchNorm, TwoDimensionalInput) {
  auto x = random_values(8, 72);
  OneNode node("BatchNormalization", 9);
  node.input({2, 4}, x)
      .constant({4}, {1, 2, 3, 4})
      .constant({4}, {0, 0, 1, 1})
      .constant({4}, {0, 0.5f, 0, 0.5f});
  node.constant({4}, {1, 1, 4, 4});
  std::vector<float> scale = {1, 2, 3, 4}, bias = {0, 0, 1, 1}, mean = {0, 0.5f, 0, 0.5f},
                     var = {1, 1, 4, 4};
  std::vector<float> expected(8);
  for (int i = 0; i < 8; ++i)
    expected[i] = (x[i] - mean[i % 4]) / std::sqrt(var[i % 4] + 1e-5f) * scale[i % 4] + bias[i % 4];
  expect_near(node.run_one(), {2, 4}, expected);
}

TEST(DnnlBatchNorm, UnreadStatisticsOutputsAreIgnored) {
  Graph graph;
  graph.opset_imports[""] = 9;
  ValueId input = graph.add_input("x", DataType::kFloat, Shape::of({1, 2, 1, 2}));
  std::vector<ValueId> inputs = {input};
  for (int i = 0; i < 4; ++i) {
    inputs.push_back(graph.add_initializer(
        "p" + std::to_string(i),
        TensorData::from(DataType::kFloat, {2}, std::vector<float>{1.0f, 1.0f})));
  }
  std::vector<ValueId> outputs;
  for (int i = 0; i < 5; ++i) outputs.push_back(graph.add_value("out" + std::to_string(i)));
  graph.add_node("BatchNormalization", inputs, outputs);
  graph.mark_output(outputs[0]);
  Executor executor(graph);
  auto y = executor.run({{"x", float_tensor({1, 2, 1, 2}, {1.0f, 2.0f, 3.0f, 4.0f})}});
  float scale = 1.0f / std::sqrt(1.0f + 1e-5f);
  expect_near(y.at(0), {1, 2, 1, 2},
              {1.0f, (2.0f - 1.0f) * scale + 1.0f, (3.0f - 1.0f) * scale + 1.0f,
               (4.0f - 1.0f) * scale + 1.0f});
}

TEST(DnnlInstanceNorm, NormalizesEachImageAndChannel) {
  Shape64 shape = {2, 3, 4, 3};
  auto x = random_values(count_of(shape), 81);
  std::vector<float> scale = {1.0f, 0.5f, 2.0f}, bias = {0.0f, 0.1f, -0.2f};
  OneNode node("InstanceNormalization");
  node.input(shape, x).constant({3}, scale).constant({3}, bias).real("epsilon", 1e-4f);
  std::vector<float> expected(x.size());
  for (int64_t plane = 0; plane < 6; ++plane) {
    double mean = 0, var = 0;
    for (int i = 0; i < 12; ++i) mean += x[plane * 12 + i];
    mean /= 12;
    for (int i = 0; i < 12; ++i) var += (x[plane * 12 + i] - mean) * (x[plane * 12 + i] - mean);
    var /= 12;
    for (int i = 0; i < 12; ++i) {
      expected[plane * 12 + i] = static_cast<float>(
          (x[plane * 12 + i] - mean) / std::sqrt(var + 1e-4) * scale[plane % 3] + bias[plane % 3]);
    }
  }
  expect_near(node.run_one(), shape, expected);
}

std::vector<float> layer_norm_reference(const std::vector<float>& x, int64_t outer, int64_t inner,
                                        const std::vector<float>& scale,
                                        const std::vector<float>& bias, float epsilon,
                                        std::vector<float>* means = nullptr,
                                        std::vector<float>* inverse = nullptr) {
  std::vector<float> y(x.size());
  for (int64_t o = 0; o < outer; ++o) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < inner; ++i) mean += x[o * inner + i];
    mean /= static_cast<double>(inner);
    for (int64_t i = 0; i < inner; ++i)
      var += (x[o * inner + i] - mean) * (x[o * inner + i] - mean);
    var /= static_cast<double>(inner);
    double inv = 1.0 / std::sqrt(var + epsilon);
    if (means) means->push_back(static_cast<float>(mean));
    if (inverse) inverse->push_back(static_cast<float>(inv));
    for (int64_t i = 0; i < inner; ++i) {
      y[o * inner + i] =
          static_cast<float>((x[o * inner + i] - mean) * inv * scale[i % scale.size()] +
                             (bias.empty() ? 0.0f : bias[i % bias.size()]));
    }
  }
  return y;
}

TEST(DnnlLayerNorm, LastAxis) {
  auto x = random_values(3 * 4 * 8, 91);
  auto scale = random_values(8, 92), bias = random_values(8, 93);
  OneNode node("LayerNormalization");
  node.input({3, 4, 8}, x).constant({8}, scale).constant({8}, bias);
  expect_near(node.run_one(), {3, 4, 8}, layer_norm_reference(x, 12, 8, scale, bias, 1e-5f));
}

TEST(DnnlLayerNorm, FromAxisOneWithoutBias) {
  auto x = random_values(3 * 4 * 5, 94);
  auto scale = random_values(20, 95);
  OneNode node("LayerNormalization");
  node.input({3, 4, 5}, x).constant({4, 5}, scale).integer("axis", 1).real("epsilon", 1e-3f);
  expect_near(node.run_one(), {3, 4, 5}, layer_norm_reference(x, 3, 20, scale, {}, 1e-3f));
}

TEST(DnnlLayerNorm, BroadcastScale) {
  auto x = random_values(2 * 3 * 4, 96);
  OneNode node("LayerNormalization");
  node.input({2, 3, 4}, x).constant({1, 4}, {1, 2, 3, 4}).integer("axis", -2);
  std::vector<float> scale = {1, 2, 3, 4};  // Repeats along the normalized axis of size 3.
  expect_near(node.run_one(), {2, 3, 4}, layer_norm_reference(x, 2, 12, scale, {}, 1e-5f));
}

TEST(DnnlLayerNorm, MeanAndInverseStdDevOutputs) {
  auto x = random_values(4 * 6, 97);
  auto scale = random_values(6, 98);
  OneNode node("LayerNormalization");
  node.input({4, 6}, x).constant({6}, scale).outputs(3);
  std::vector<float> means, inverse;
  auto y = layer_norm_reference(x, 4, 6, scale, {}, 1e-5f, &means, &inverse);
  auto outputs = node.run();
  expect_near(outputs[0], {4, 6}, y);
  expect_near(outputs[1], {4, 1}, means);
  expect_near(outputs[2], {4, 1}, inverse);
}

std::vector<float> lrn_reference(const std::vector<float>& x, const Shape64& shape, int64_t size,
                                 float alpha, float beta, float bias) {
  int64_t channels = shape[1], spatial = count_of(shape) / (shape[0] * channels);
  std::vector<float> y(x.size());
  for (int64_t n = 0; n < shape[0]; ++n)
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t s = 0; s < spatial; ++s) {
        double sum = 0;
        int64_t low = std::max<int64_t>(0, c - (size - 1) / 2),
                high = std::min(channels - 1, c + size / 2);
        for (int64_t j = low; j <= high; ++j)
          sum += std::pow(x[(n * channels + j) * spatial + s], 2.0);
        double v = x[(n * channels + c) * spatial + s];
        y[(n * channels + c) * spatial + s] =
            static_cast<float>(v / std::pow(bias + alpha / size * sum, beta));
      }
  return y;
}

TEST(DnnlLrn, OddSize) {
  auto x = random_values(2 * 7 * 3 * 3, 101);
  OneNode node("LRN");
  node.input({2, 7, 3, 3}, x)
      .integer("size", 3)
      .real("alpha", 0.002f)
      .real("beta", 0.5f)
      .real("bias", 2.0f);
  expect_near(node.run_one(), {2, 7, 3, 3}, lrn_reference(x, {2, 7, 3, 3}, 3, 0.002f, 0.5f, 2.0f));
}

TEST(DnnlLrn, EvenSizeReachesFurtherForward) {
  auto x = random_values(1 * 6 * 2 * 2, 102);
  OneNode node("LRN");
  node.input({1, 6, 2, 2}, x).integer("size", 4);
  expect_near(node.run_one(), {1, 6, 2, 2}, lrn_reference(x, {1, 6, 2, 2}, 4, 1e-4f, 0.75f, 1.0f));
}

// ---- Softmax ----------------------------------------------------------------------------

TEST(DnnlSoftmax, Opset11CoercesTo2dAtAxis) {
  auto x = random_values(2 * 3 * 4, 111);
  OneNode node("Softmax", 11);
  node.input({2, 3, 4}, x).integer("axis", 1);
  expect_near(node.run_one(), {2, 3, 4}, softmax_reference(x, 2, 12, 1, false));
}

TEST(DnnlSoftmax, Opset11DefaultAxisIsOne) {
  auto x = random_values(2 * 3 * 4, 112);
  OneNode node("Softmax", 11);
  node.input({2, 3, 4}, x);
  expect_near(node.run_one(), {2, 3, 4}, softmax_reference(x, 2, 12, 1, false));
}

TEST(DnnlSoftmax, Opset13UsesSingleAxis) {
  auto x = random_values(2 * 3 * 4, 113);
  OneNode node("Softmax", 13);
  node.input({2, 3, 4}, x).integer("axis", 1);
  expect_near(node.run_one(), {2, 3, 4}, softmax_reference(x, 2, 3, 4, false));
}

TEST(DnnlSoftmax, Opset13DefaultAxisIsLast) {
  auto x = random_values(2 * 3 * 4, 114);
  OneNode node("Softmax", 13);
  node.input({2, 3, 4}, x);
  expect_near(node.run_one(), {2, 3, 4}, softmax_reference(x, 6, 4, 1, false));
}

TEST(DnnlSoftmax, LargeValuesStayFinite) {
  std::vector<float> x = {1000.0f, 1001.0f, 1002.0f, 3.0f};
  OneNode node("Softmax", 13);
  node.input({1, 4}, x);
  expect_near(node.run_one(), {1, 4}, softmax_reference(x, 1, 4, 1, false));
}

TEST(DnnlLogSoftmax, Opset11CoercesTo2d) {
  auto x = random_values(3 * 2 * 5, 115);
  OneNode node("LogSoftmax", 11);
  node.input({3, 2, 5}, x).integer("axis", 0);
  expect_near(node.run_one(), {3, 2, 5}, softmax_reference(x, 1, 30, 1, true));
}

TEST(DnnlLogSoftmax, Opset13NegativeAxis) {
  auto x = random_values(3 * 2 * 5, 116);
  OneNode node("LogSoftmax", 13);
  node.input({3, 2, 5}, x).integer("axis", -2);
  expect_near(node.run_one(), {3, 2, 5}, softmax_reference(x, 3, 2, 5, true));
}

// ---- Concat -----------------------------------------------------------------------------

TEST(DnnlConcat, MiddleAxis) {
  auto a = random_values(2 * 2 * 3, 121), b = random_values(2 * 1 * 3, 122);
  OneNode node("Concat");
  node.input({2, 2, 3}, a).input({2, 1, 3}, b).integer("axis", 1);
  std::vector<float> expected;
  for (int n = 0; n < 2; ++n) {
    expected.insert(expected.end(), a.begin() + n * 6, a.begin() + n * 6 + 6);
    expected.insert(expected.end(), b.begin() + n * 3, b.begin() + n * 3 + 3);
  }
  expect_near(node.run_one(), {2, 3, 3}, expected);
}

TEST(DnnlConcat, NegativeAxisWithEmptyInput) {
  auto a = random_values(4, 123), b = random_values(2, 124);
  OneNode node("Concat");
  node.input({2, 2}, a).input({2, 0}, {}).input({2, 1}, b).integer("axis", -1);
  expect_near(node.run_one(), {2, 3}, {a[0], a[1], b[0], a[2], a[3], b[1]});
}

TEST(DnnlConcat, Int64Values) {
  OneNode node("Concat");
  node.int64_constant({2}, {1, 2}).int64_input({3}, {3, 4, 5}).integer("axis", 0);
  Tensor y = node.run_one();
  EXPECT_EQ(y.to_int64_vector(), (std::vector<int64_t>{1, 2, 3, 4, 5}));
}

TEST(DnnlConcat, BlockedBesidePlainRunsAsReordersAndIsNamedSo) {
  // ShuffleNet joins a blocked branch of 58 channels with a plain one: oneDNN's concat is its
  // `ref:any` there, so the kernel reorders each input into its slice and must say that.
  Shape64 shape = {1, 58, 3, 4};
  auto a = random_values(count_of(shape), 125), b = random_values(count_of(shape), 126);
  OneNode node("Concat");
  node.input(shape, a).input(shape, b).integer("axis", 1);
  auto kernel = node.prepare(false, 1, /*blocked_input=*/true);
  EXPECT_THAT(kernel->implementation(), testing::StartsWith("reorders "));
  EXPECT_THAT(kernel->implementation(), testing::Not(testing::HasSubstr("ref")));
  std::vector<float> expected = a;
  expected.insert(expected.end(), b.begin(), b.end());
  expect_near(node.run_prepared(*kernel), {1, 116, 3, 4}, expected);
}

TEST(DnnlConcat, MismatchedDimsAreAnError) {
  OneNode node("Concat");
  node.input({2, 2}, random_values(4, 1)).input({3, 2}, random_values(6, 2)).integer("axis", 1);
  EXPECT_THROW(node.run(), Error);
}

// ---- Reductions -------------------------------------------------------------------------

/// Reduces a tensor of `shape` (by default [2, 3, 4]) over `axes` with `combine` over the
/// (double) values, `finish` applied with the reduced count.
template <typename Combine, typename Finish>
std::vector<float> reduce_reference(const std::vector<float>& x, const std::vector<bool>& reduce,
                                    double start, Combine combine, Finish finish,
                                    const Shape64& shape = {2, 3, 4}) {
  std::map<int64_t, std::pair<double, int64_t>> groups;
  for (int64_t i = 0; i < static_cast<int64_t>(x.size()); ++i) {
    int64_t key = 0, stride = 1, rest = i;
    for (std::size_t a = shape.size(); a-- > 0;) {
      if (!reduce[a]) key += (rest % shape[a]) * stride;
      if (!reduce[a]) stride *= shape[a];
      rest /= shape[a];
    }
    auto [it, fresh] = groups.try_emplace(key, start, 0);
    it->second.first = combine(it->second.first, x[i]);
    ++it->second.second;
  }
  std::vector<float> y;
  for (auto& [key, value] : groups)
    y.push_back(static_cast<float>(finish(value.first, value.second)));
  return y;
}

struct ReduceCase {
  const char* op;
  double start;
  double (*combine)(double, double);
  double (*finish)(double, int64_t);
};

const ReduceCase kReduceCases[] = {
    {"ReduceSum", 0, [](double a, double x) { return a + x; }, [](double a, int64_t) { return a; }},
    {"ReduceMean", 0, [](double a, double x) { return a + x; },
     [](double a, int64_t n) { return a / n; }},
    {"ReduceMax", -1e300, [](double a, double x) { return std::max(a, x); },
     [](double a, int64_t) { return a; }},
    {"ReduceMin", 1e300, [](double a, double x) { return std::min(a, x); },
     [](double a, int64_t) { return a; }},
    {"ReduceProd", 1, [](double a, double x) { return a * x; },
     [](double a, int64_t) { return a; }},
    {"ReduceL1", 0, [](double a, double x) { return a + std::fabs(x); },
     [](double a, int64_t) { return a; }},
    {"ReduceL2", 0, [](double a, double x) { return a + x * x; },
     [](double a, int64_t) { return std::sqrt(a); }},
    {"ReduceSumSquare", 0, [](double a, double x) { return a + x * x; },
     [](double a, int64_t) { return a; }},
    {"ReduceLogSum", 0, [](double a, double x) { return a + x + 2.0; },
     [](double a, int64_t) { return std::log(a); }},
    {"ReduceLogSumExp", 0, [](double a, double x) { return a + std::exp(x); },
     [](double a, int64_t) { return std::log(a); }},
};

TEST(DnnlReduce, EveryOpOverNonAdjacentAxesKeepingDims) {
  auto x = random_values(24, 131);
  for (const ReduceCase& c : kReduceCases) {
    SCOPED_TRACE(c.op);
    std::vector<float> input = x;
    // LogSum needs positive sums: shift the inputs (the reference adds the same 2).
    if (std::string(c.op) == "ReduceLogSum") {
      for (float& v : input) v += 2.0f;
    }
    OneNode node(c.op, std::string(c.op) == "ReduceSum" ? 11 : 17);
    node.input({2, 3, 4}, input).ints("axes", {0, 2});
    expect_near(node.run_one(), {1, 3, 1},
                reduce_reference(x, {true, false, true}, c.start, c.combine, c.finish));
  }
}

TEST(DnnlReduce, EveryOpOverAllAxesWithoutKeepingDims) {
  auto x = random_values(24, 132);
  for (const ReduceCase& c : kReduceCases) {
    SCOPED_TRACE(c.op);
    std::vector<float> input = x;
    if (std::string(c.op) == "ReduceLogSum") {
      for (float& v : input) v += 2.0f;
    }
    OneNode node(c.op, 11);
    node.input({2, 3, 4}, input).integer("keepdims", 0);
    expect_near(node.run_one(), {},
                reduce_reference(x, {true, true, true}, c.start, c.combine, c.finish));
  }
}

TEST(DnnlReduce, MeanOverLastAxisNegative) {
  auto x = random_values(24, 133);
  OneNode node("ReduceMean", 13);
  node.input({2, 3, 4}, x).ints("axes", {-1}).integer("keepdims", 0);
  expect_near(node.run_one(), {2, 3},
              reduce_reference(x, {false, false, true}, 0, kReduceCases[1].combine,
                               kReduceCases[1].finish));
}

TEST(DnnlReduce, SumOpset13TakesAxesInput) {
  auto x = random_values(24, 134);
  OneNode node("ReduceSum", 13);
  node.input({2, 3, 4}, x).int64_constant({1}, {1});
  expect_near(node.run_one(), {2, 1, 4},
              reduce_reference(x, {false, true, false}, 0, kReduceCases[0].combine,
                               kReduceCases[0].finish));
}

TEST(DnnlReduce, SumOpset13WithoutAxesReducesAll) {
  auto x = random_values(24, 135);
  OneNode node("ReduceSum", 13);
  node.input({2, 3, 4}, x);
  expect_near(
      node.run_one(), {1, 1, 1},
      reduce_reference(x, {true, true, true}, 0, kReduceCases[0].combine, kReduceCases[0].finish));
}

TEST(DnnlReduce, SumNoopWithEmptyAxesReturnsInput) {
  auto x = random_values(24, 136);
  OneNode node("ReduceSum", 13);
  node.input({2, 3, 4}, x).int64_constant({0}, {}).integer("noop_with_empty_axes", 1);
  expect_near(node.run_one(), {2, 3, 4}, x);
}

// ---- Layouts whose bytes are plain ---------------------------------------------------------

bool plain_bytes(const Shape64& shape, dnnl::memory::format_tag tag) {
  dnnl::memory::dims dims(shape.begin(), shape.end());
  return holds_plain_bytes(dnnl::memory::desc(dims, dnnl::memory::data_type::f32, tag), shape);
}

bool layout_recorded(const Shape64& shape, dnnl::memory::format_tag tag) {
  dnnl::memory::dims dims(shape.begin(), shape.end());
  return recorded_layout(dnnl::memory::desc(dims, dnnl::memory::data_type::f32, tag), shape)
      .has_value();
}

TEST(HoldsPlainBytes, ChannelBlocksOfOnePixelAreInPlainOrder) {
  using Tag = dnnl::memory::format_tag;
  EXPECT_TRUE(plain_bytes({1, 1280, 1, 1}, Tag::aBcd16b));
  EXPECT_TRUE(plain_bytes({1, 32, 1, 1}, Tag::acdb));
  // Padded channels, a second sample, or pixels: elements move.
  EXPECT_FALSE(plain_bytes({1, 20, 1, 1}, Tag::aBcd16b));
  EXPECT_FALSE(plain_bytes({2, 32, 1, 1}, Tag::aBcd16b));
  EXPECT_FALSE(plain_bytes({1, 32, 2, 2}, Tag::aBcd16b));
}

TEST(HoldsPlainBytes, BlocksStayRecordedForTheNextConvolution) {
  using Tag = dnnl::memory::format_tag;
  EXPECT_TRUE(layout_recorded({1, 32, 1, 1}, Tag::aBcd16b));
  EXPECT_FALSE(layout_recorded({1, 32, 1, 1}, Tag::acdb));
}

// A blocked input (from a convolution) is reduced where it lies: a mean or max over the spatial
// axes is oneDNN's global pooling on the blocks, anything else reads a plain copy.
TEST(DnnlReduce, MeanOverSpatialAxesOfBlockedInputIsAGlobalPooling) {
  // 20 channels in two samples: the pooled blocks' padding lies between the samples.
  auto x = random_values(2 * 20 * 3 * 5, 137);
  OneNode node("ReduceMean", 13);
  node.input({2, 20, 3, 5}, x).ints("axes", {2, 3}).integer("keepdims", 0);
  auto kernel = node.prepare(true, 2, /*blocked_input=*/true);
  EXPECT_THAT(kernel->implementation(), testing::HasSubstr("jit"));
  expect_near(node.run_prepared(*kernel), {2, 20},
              reduce_reference(x, {false, false, true, true}, 0, kReduceCases[1].combine,
                               kReduceCases[1].finish, {2, 20, 3, 5}));
}

TEST(DnnlReduce, MaxOverSpatialAxesOfBlockedInputKeepingDims) {
  auto x = random_values(32 * 4 * 4, 138);
  OneNode node("ReduceMax", 13);
  node.input({1, 32, 4, 4}, x).ints("axes", {-1, -2});
  auto kernel = node.prepare(true, 1, /*blocked_input=*/true);
  EXPECT_THAT(kernel->implementation(), testing::HasSubstr("jit"));
  expect_near(node.run_prepared(*kernel), {1, 32, 1, 1},
              reduce_reference(x, {false, false, true, true}, kReduceCases[2].start,
                               kReduceCases[2].combine, kReduceCases[2].finish, {1, 32, 4, 4}));
}

// Blocks of the other ISA's width (16 channels under an AVX2 cap, 8 on AVX-512) are reordered
// into the native ones rather than pooled by oneDNN's reference kernel.
TEST(DnnlReduce, MeanOverBlocksOfAnotherWidthIsStillAJitPooling) {
  const int64_t other_block = native_channel_block() == 16 ? 8 : 16;
  auto x = random_values(2 * 20 * 3 * 5, 141);
  OneNode node("ReduceMean", 13);
  node.input({2, 20, 3, 5}, x).ints("axes", {2, 3}).integer("keepdims", 0);
  auto kernel = node.prepare(true, 2, /*blocked_input=*/true, other_block);
  EXPECT_THAT(kernel->implementation(), testing::HasSubstr("jit"));
  expect_near(node.run_prepared(*kernel), {2, 20},
              reduce_reference(x, {false, false, true, true}, 0, kReduceCases[1].combine,
                               kReduceCases[1].finish, {2, 20, 3, 5}));
}

TEST(DnnlReduce, SumOverChannelsOfBlockedInputReadsAPlainCopy) {
  auto x = random_values(2 * 20 * 3 * 5, 139);
  OneNode node("ReduceSum", 11);
  node.input({2, 20, 3, 5}, x).ints("axes", {1});
  auto kernel = node.prepare(true, 1, /*blocked_input=*/true);
  EXPECT_EQ(kernel->implementation(), "");
  expect_near(node.run_prepared(*kernel), {2, 1, 3, 5},
              reduce_reference(x, {false, true, false, false}, 0, kReduceCases[0].combine,
                               kReduceCases[0].finish, {2, 20, 3, 5}));
}

TEST(DnnlReduce, NoopOnBlockedInputCopiesItPlain) {
  auto x = random_values(1 * 20 * 2 * 3, 140);
  OneNode node("ReduceSum", 13);
  node.input({1, 20, 2, 3}, x).int64_constant({0}, {}).integer("noop_with_empty_axes", 1);
  auto kernel = node.prepare(true, 1, /*blocked_input=*/true);
  expect_near(node.run_prepared(*kernel), {1, 20, 2, 3}, x);
}

TEST(DnnlReduce, Int64Sum) {
  OneNode node("ReduceSum", 11);
  node.int64_input({2, 3}, {1, 2, 3, 4, 5, 6}).ints("axes", {1}).integer("keepdims", 0);
  EXPECT_EQ(node.run_one().to_int64_vector(), (std::vector<int64_t>{6, 15}));
}

TEST(DnnlReduce, Int64ProdOfShape) {
  OneNode node("ReduceProd", 13);
  node.int64_input({3}, {2, 3, 7}).integer("keepdims", 0);
  EXPECT_EQ(node.run_one().to_int64_vector(), (std::vector<int64_t>{42}));
}

TEST(DnnlReduce, AxisOutOfRangeIsAnError) {
  OneNode node("ReduceMax", 13);
  node.input({2, 2}, random_values(4, 1)).ints("axes", {2});
  EXPECT_THROW(node.run(), Error);
}

// ---- Blocked layouts through the executor -------------------------------------------------

/// conv -> maxpool -> conv (-> LRN, BN, concat of two convs): run with oneDNN's blocked layouts
/// between the ops, compared with the plain references.
TEST(DnnlBlockedChain, ConvPoolConvMatchesPlainReference) {
  Graph graph;
  Shape64 x_shape = {1, 16, 12, 12}, w1_shape = {32, 16, 3, 3}, w2_shape = {32, 32, 3, 3};
  auto x = random_values(count_of(x_shape), 141);
  auto w1 = random_values(count_of(w1_shape), 142), b1 = random_values(32, 143);
  auto w2 = random_values(count_of(w2_shape), 144), b2 = random_values(32, 145);
  for (float& v : w1) v *= 0.1f;  // ~1/sqrt(fan-in): unit-size activations, bounded rounding.
  for (float& v : w2) v *= 0.1f;
  ValueId input = graph.add_input("x", DataType::kFloat, Shape::of(x_shape));
  ValueId w1_id = graph.add_initializer("w1", TensorData::from(DataType::kFloat, w1_shape, w1));
  ValueId b1_id = graph.add_initializer("b1", TensorData::from(DataType::kFloat, {32}, b1));
  ValueId w2_id = graph.add_initializer("w2", TensorData::from(DataType::kFloat, w2_shape, w2));
  ValueId b2_id = graph.add_initializer("b2", TensorData::from(DataType::kFloat, {32}, b2));
  ValueId c1 = graph.add_value("c1"), p1 = graph.add_value("p1"), c2 = graph.add_value("c2");
  graph.add_node(
      "Conv", {input, w1_id, b1_id}, {c1},
      {{"pads", Attribute::of_ints({1, 1, 1, 1})}, {"activation", Attribute::of_string("Relu")}},
      "conv1");
  graph.add_node(
      "MaxPool", {c1}, {p1},
      {{"kernel_shape", Attribute::of_ints({2, 2})}, {"strides", Attribute::of_ints({2, 2})}},
      "pool");
  graph.add_node("Conv", {p1, w2_id, b2_id}, {c2}, {{"pads", Attribute::of_ints({1, 1, 1, 1})}},
                 "conv2");
  graph.mark_output(c2);

  auto r1 =
      conv_reference(x, x_shape, w1, w1_shape, b1, 1, {{1, 1}, {1, 1}, {1, 1}}, {1, 32, 12, 12});
  for (float& v : r1) v = std::max(v, 0.0f);
  auto r2 = pool_reference(Pool::kMax, r1, {1, 32, 12, 12}, {2, 2}, {{2, 2}, {1, 1}, {0, 0}},
                           {0, 0}, {1, 32, 6, 6});
  auto r3 = conv_reference(r2, {1, 32, 6, 6}, w2, w2_shape, b2, 1, {{1, 1}, {1, 1}, {1, 1}},
                           {1, 32, 6, 6});

  ASSERT_TRUE(blocked_layout_allowed(graph, c1));
  ASSERT_TRUE(blocked_layout_allowed(graph, p1));
  for (bool blocked : {true, false}) {
    SCOPED_TRACE(blocked ? "blocked" : "plain");
    Executor executor(graph, ExecutorOptions{1, blocked, false});
    auto outputs = executor.run({{"x", float_tensor(x_shape, x)}});
    expect_near(outputs.at(0), {1, 32, 6, 6}, r3);
  }
}

TEST(DnnlBlockedChain, ConcatBatchNormLrnOfBlockedConvs) {
  Graph graph;
  Shape64 x_shape = {1, 8, 6, 6}, w_shape = {16, 8, 3, 3};
  auto x = random_values(count_of(x_shape), 151);
  auto wa = random_values(count_of(w_shape), 152), wb = random_values(count_of(w_shape), 153);
  std::vector<float> scale(32), bias(32), mean(32), var(32);
  for (int c = 0; c < 32; ++c) {
    scale[c] = 0.5f + c * 0.03f;
    bias[c] = -0.2f + c * 0.01f;
    mean[c] = 0.1f * (c % 5);
    var[c] = 1.0f + 0.1f * (c % 7);
  }
  ValueId input = graph.add_input("x", DataType::kFloat, Shape::of(x_shape));
  ValueId wa_id = graph.add_initializer("wa", TensorData::from(DataType::kFloat, w_shape, wa));
  ValueId wb_id = graph.add_initializer("wb", TensorData::from(DataType::kFloat, w_shape, wb));
  std::vector<ValueId> bn_inputs;
  for (auto* values : {&scale, &bias, &mean, &var}) {
    bn_inputs.push_back(graph.add_initializer("bn" + std::to_string(bn_inputs.size()),
                                              TensorData::from(DataType::kFloat, {32}, *values)));
  }
  ValueId ca = graph.add_value("ca"), cb = graph.add_value("cb"), cat = graph.add_value("cat");
  ValueId bn = graph.add_value("bn"), lrn = graph.add_value("lrn");
  graph.add_node("Conv", {input, wa_id}, {ca}, {{"pads", Attribute::of_ints({1, 1, 1, 1})}},
                 "conv_a");
  graph.add_node("Conv", {input, wb_id}, {cb}, {{"pads", Attribute::of_ints({1, 1, 1, 1})}},
                 "conv_b");
  graph.add_node("Concat", {ca, cb}, {cat}, {{"axis", Attribute::of_int(1)}}, "concat");
  graph.add_node("BatchNormalization",
                 {cat, bn_inputs[0], bn_inputs[1], bn_inputs[2], bn_inputs[3]}, {bn}, {}, "bn");
  graph.add_node("LRN", {bn}, {lrn}, {{"size", Attribute::of_int(5)}}, "lrn");
  graph.mark_output(lrn);

  Window same = {{1, 1}, {1, 1}, {1, 1}};
  auto ra = conv_reference(x, x_shape, wa, w_shape, {}, 1, same, {1, 16, 6, 6});
  auto rb = conv_reference(x, x_shape, wb, w_shape, {}, 1, same, {1, 16, 6, 6});
  std::vector<float> expected = ra;
  expected.insert(expected.end(), rb.begin(), rb.end());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    std::size_t c = i / 36;
    expected[i] = (expected[i] - mean[c]) / std::sqrt(var[c] + 1e-5f) * scale[c] + bias[c];
  }
  expected = lrn_reference(expected, {1, 32, 6, 6}, 5, 1e-4f, 0.75f, 1.0f);
  for (bool blocked : {true, false}) {
    SCOPED_TRACE(blocked ? "blocked" : "plain");
    Executor executor(graph, ExecutorOptions{1, blocked, false});
    auto outputs = executor.run({{"x", float_tensor(x_shape, x)}});
    expect_near(outputs.at(0), {1, 32, 6, 6}, expected);
  }
}

TEST(DnnlBlockedChain, ResidualSumOfBlockedShortcut) {
  // a = conv(x); b = conv(a); y = relu(conv(b) + a), the shortcut `a` read blocked.
  Graph graph;
  Shape64 shape = {1, 16, 7, 7}, w_shape = {16, 16, 3, 3};
  auto x = random_values(count_of(shape), 161);
  std::vector<std::vector<float>> weights = {random_values(count_of(w_shape), 162),
                                             random_values(count_of(w_shape), 163),
                                             random_values(count_of(w_shape), 164)};
  // Weights ~ 1/sqrt(fan-in) keep activations near unit size, so float rounding stays within
  // the tolerance after three layers.
  for (auto& layer : weights) {
    for (float& v : layer) v *= 0.1f;
  }
  auto bias = random_values(16, 165);
  ValueId input = graph.add_input("x", DataType::kFloat, Shape::of(shape));
  std::vector<ValueId> w;
  for (std::size_t i = 0; i < weights.size(); ++i) {
    w.push_back(graph.add_initializer("w" + std::to_string(i),
                                      TensorData::from(DataType::kFloat, w_shape, weights[i])));
  }
  ValueId b_id = graph.add_initializer("bias", TensorData::from(DataType::kFloat, {16}, bias));
  ValueId a = graph.add_value("a"), b = graph.add_value("b"), y = graph.add_value("y");
  auto pads = Attribute::of_ints({1, 1, 1, 1});
  graph.add_node("Conv", {input, w[0]}, {a}, {{"pads", pads}}, "conv_a");
  graph.add_node("Conv", {a, w[1]}, {b}, {{"pads", pads}}, "conv_b");
  graph.add_node("Conv", {b, w[2], b_id, a}, {y},
                 {{"pads", pads},
                  {"sum_input", Attribute::of_int(3)},
                  {"activation", Attribute::of_string("Relu")}},
                 "conv_sum");
  graph.mark_output(y);
  ASSERT_TRUE(blocked_layout_allowed(graph, a));

  Window same = {{1, 1}, {1, 1}, {1, 1}};
  auto ra = conv_reference(x, shape, weights[0], w_shape, {}, 1, same, shape);
  auto rb = conv_reference(ra, shape, weights[1], w_shape, {}, 1, same, shape);
  auto expected = conv_reference(rb, shape, weights[2], w_shape, bias, 1, same, shape);
  for (std::size_t i = 0; i < expected.size(); ++i)
    expected[i] = std::max(expected[i] + ra[i], 0.0f);
  for (bool blocked : {true, false}) {
    SCOPED_TRACE(blocked ? "blocked" : "plain");
    Executor executor(graph, ExecutorOptions{1, blocked, false});
    auto outputs = executor.run({{"x", float_tensor(shape, x)}});
    expect_near(outputs.at(0), shape, expected);
  }
}

}  // namespace
}  // namespace cleave
