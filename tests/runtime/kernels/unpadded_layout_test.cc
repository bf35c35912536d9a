// Elementwise maps on inputs in oneDNN layouts: QuantizeLinear and DequantizeLinear per tensor,
// and HardSigmoid's plain loop, keep an unpadded layout (channels-last, as int8 convolutions
// write), else they read a plain copy.
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "run_kernel.h"
#include "runtime/executor.h"
#include "runtime/kernel.h"
#include "runtime/kernels/dnnl_util.h"

namespace cleave {
namespace {

using kernel_test::make_tensor;
using Tag = dnnl::memory::format_tag;

dnnl::memory::data_type dnnl_type(DataType type) {
  return type == DataType::kUInt8 ? dnnl::memory::data_type::u8 : dnnl::memory::data_type::f32;
}

// The one node of `text` prepared as the executor would, with input `x` given in `tag` and
// blocked outputs allowed where `blocked_outputs_allowed`; runs it and returns its output
// (in the kernel's layout) beside the plain graph's own result.
struct LayoutRun {
  std::optional<dnnl::memory::desc> layout;  // The output's, as the kernel announced it.
  std::vector<double> values;                // The output, read back plain.
  std::vector<double> reference;             // The graph run on plain tensors.
};

LayoutRun run_in_layout(const std::string& text, const Tensor& x, Tag tag,
                        bool blocked_outputs_allowed = true) {
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  const Graph graph = parse_graph(text);
  const dnnl::memory::desc layout(to_dnnl_dims(x.shape()), dnnl_type(x.dtype()), tag);
  auto storage = std::make_shared<Buffer>(layout.get_size());
  LayoutReorder(plain_desc(x.shape(), layout.data_type()), layout, engine)
      .run(x.raw(), storage->data(), stream);
  Tensor blocked = Tensor::view(x.dtype(), x.shape(), storage);
  blocked.set_layout(layout);

  const NodeId id = 0;
  const Node& node = graph.node(id);
  std::vector<Tensor> held = {blocked};
  std::vector<bool> constant = {false};
  for (std::size_t i = 1; i < node.inputs.size(); ++i) {
    held.push_back(Tensor::from_data(*graph.value(node.inputs[i]).initializer));
    constant.push_back(true);
  }
  std::vector<const Tensor*> inputs;
  for (const Tensor& t : held) inputs.push_back(&t);
  KernelContext context{graph,    id,     node, graph.opset_imports.at(""), inputs,
                        constant, engine, 1,    blocked_outputs_allowed};
  const KernelInfo* info = KernelRegistry::global().find("", node.op_type, 13);
  EXPECT_TRUE(info->accepts_blocked(0));
  std::unique_ptr<Kernel> kernel = info->create(context);
  Tensor out = run_kernel_in_its_layout(*kernel, inputs, stream);

  LayoutRun run;
  run.layout = out.layout();
  Tensor plain = Tensor::allocate(out.dtype(), out.shape());
  LayoutReorder(desc_of(out), plain_desc(out.shape(), dnnl_type(out.dtype())), engine)
      .run(out.raw(), plain.raw(), stream);
  stream.wait();
  run.values = (out.is_blocked() ? plain : out).to_double_vector();
  run.reference = kernel_test::run_graph(text, {{"x", x}}).at(0).to_double_vector();
  return run;
}

std::vector<double> byte_values(int64_t count) {
  std::vector<double> values;
  for (int64_t i = 0; i < count; ++i) values.push_back((i * 89 + 7) % 256);
  return values;
}

const char* kDequantize = R"(graph g [ai.onnx=13] (%x: u8[1,5,3,4]) {
  @scale: f32[] = [0.0371]
  @zero: u8[] = [131]
  %y = DequantizeLinear(%x, @scale, @zero)
  return %y
}
)";

TEST(UnpaddedLayout, DequantizeKeepsChannelsLast) {
  const Tensor x = make_tensor(DataType::kUInt8, {1, 5, 3, 4}, byte_values(60));
  const LayoutRun run = run_in_layout(kDequantize, x, Tag::acdb);
  ASSERT_TRUE(run.layout.has_value());
  EXPECT_EQ(*run.layout, dnnl::memory::desc({1, 5, 3, 4}, dnnl::memory::data_type::f32, Tag::acdb));
  EXPECT_EQ(run.values, run.reference);
}

TEST(UnpaddedLayout, QuantizeKeepsChannelsLast) {
  const char* text = R"(graph g [ai.onnx=13] (%x: f32[1,5,3,4]) {
  @scale: f32[] = [0.05]
  @zero: u8[] = [100]
  %y = QuantizeLinear(%x, @scale, @zero)
  return %y
}
)";
  std::vector<double> values;
  for (int64_t i = 0; i < 60; ++i) values.push_back((i % 17) * 0.83 - 6.5);  // Some saturate.
  const LayoutRun run = run_in_layout(text, kernel_test::floats({1, 5, 3, 4}, values), Tag::acdb);
  ASSERT_TRUE(run.layout.has_value());
  EXPECT_EQ(*run.layout, dnnl::memory::desc({1, 5, 3, 4}, dnnl::memory::data_type::u8, Tag::acdb));
  EXPECT_EQ(run.values, run.reference);
}

TEST(UnpaddedLayout, PaddedChannelBlocksComeOutPlain) {
  // 5 channels in blocks of 16: the padding holds no element, so the output is plain.
  const Tensor x = make_tensor(DataType::kUInt8, {1, 5, 3, 4}, byte_values(60));
  const LayoutRun run = run_in_layout(kDequantize, x, Tag::aBcd16b);
  EXPECT_FALSE(run.layout.has_value());
  EXPECT_EQ(run.values, run.reference);
}

TEST(UnpaddedLayout, PerAxisScalesComeOutPlain) {
  const char* text = R"(graph g [ai.onnx=13] (%x: u8[1,5,3,4]) {
  @scale: f32[5] = [0.5, 1.0, 2.0, 0.25, 0.125]
  @zero: u8[5] = [1, 2, 3, 4, 5]
  %y = DequantizeLinear[axis=1](%x, @scale, @zero)
  return %y
}
)";
  const Tensor x = make_tensor(DataType::kUInt8, {1, 5, 3, 4}, byte_values(60));
  const LayoutRun run = run_in_layout(text, x, Tag::acdb);
  EXPECT_FALSE(run.layout.has_value());
  EXPECT_EQ(run.values, run.reference);
}

TEST(UnpaddedLayout, PlainWhereConsumersNeedIt) {
  const Tensor x = make_tensor(DataType::kUInt8, {1, 5, 3, 4}, byte_values(60));
  const LayoutRun run = run_in_layout(kDequantize, x, Tag::acdb, /*blocked_outputs_allowed=*/false);
  EXPECT_FALSE(run.layout.has_value());
  EXPECT_EQ(run.values, run.reference);
}

TEST(UnpaddedLayout, HardSigmoidKeepsChannelsLast) {
  // MobileNetV3's hardswish between int8 convolutions: DequantizeLinear → HardSigmoid → Mul.
  const char* text = R"(graph g [ai.onnx=13] (%x: f32[1,5,3,4]) {
  %y = HardSigmoid[alpha=0.16666667, beta=0.5](%x)
  return %y
}
)";
  std::vector<double> values;
  for (int64_t i = 0; i < 60; ++i) values.push_back((i % 13) * 0.9 - 5.5);
  const LayoutRun run = run_in_layout(text, kernel_test::floats({1, 5, 3, 4}, values), Tag::acdb);
  ASSERT_TRUE(run.layout.has_value());
  EXPECT_EQ(*run.layout, dnnl::memory::desc({1, 5, 3, 4}, dnnl::memory::data_type::f32, Tag::acdb));
  EXPECT_EQ(run.values, run.reference);
}

TEST(UnpaddedLayout, HardSigmoidOfPaddedBlocksComesOutPlain) {
  const char* text = R"(graph g [ai.onnx=13] (%x: f32[1,5,3,4]) {
  %y = HardSigmoid(%x)
  return %y
}
)";
  std::vector<double> values;
  for (int64_t i = 0; i < 60; ++i) values.push_back((i % 11) * 0.7 - 3.5);
  const LayoutRun run =
      run_in_layout(text, kernel_test::floats({1, 5, 3, 4}, values), Tag::aBcd16b);
  EXPECT_FALSE(run.layout.has_value());
  EXPECT_EQ(run.values, run.reference);
}

// EfficientNet's SiLU between int8 convolutions, as QDQ fusion leaves it: the float part runs
// in the convolutions' layout, and gives the bytes of the all-plain run.
TEST(UnpaddedLayout, SiluBetweenInt8ConvolutionsMatchesPlain) {
  std::vector<double> w, w2;
  for (int i = 0; i < 32 * 16; ++i) w.push_back((i * 37) % 255 - 127);
  for (int i = 0; i < 16 * 32; ++i) w2.push_back((i * 53) % 255 - 127);
  const std::string text = fmt::format(R"(graph g [ai.onnx=13] (%x: u8[1,16,6,6]) {{
  @xs: f32[] = [0.02]
  @xz: u8[] = [128]
  @w: i8[32,16,1,1] = {}
  @ws: f32[] = [0.01]
  @wz: i8[] = [0]
  @cs: f32[] = [0.03]
  @cz: u8[] = [120]
  @ss: f32[] = [0.015]
  @sz: u8[] = [20]
  @w2: i8[16,32,1,1] = {}
  @ys: f32[] = [0.04]
  @yz: u8[] = [128]
  %c = QLinearConv(%x, @xs, @xz, @w, @ws, @wz, @cs, @cz)
  %cf = DequantizeLinear(%c, @cs, @cz)
  %s = Sigmoid(%cf)
  %m = Mul(%cf, %s)
  %q = QuantizeLinear(%m, @ss, @sz)
  %y = QLinearConv(%q, @ss, @sz, @w2, @ws, @wz, @ys, @yz)
  return %y
}}
)",
                                       kernel_test::listed(w), kernel_test::listed(w2));
  const Tensor x = make_tensor(DataType::kUInt8, {1, 16, 6, 6}, byte_values(16 * 36));
  const Graph graph = parse_graph(text);
  std::vector<std::vector<double>> outputs;
  for (bool blocked : {false, true}) {
    ExecutorOptions options{1, blocked, false};
    options.convolution_family = ConvolutionFamily::kChannelsLast;
    Executor executor(graph, options);
    outputs.push_back(executor.run({{"x", x}}).at(0).to_double_vector());
  }
  EXPECT_EQ(outputs[1], outputs[0]);
}

}  // namespace
}  // namespace cleave
