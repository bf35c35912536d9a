// ONNX export of cleave's fused forms: standard nodes only, the same results, fused again on
// import.
#include "onnx/standard_forms.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "ir/text.h"
#include "onnx/onnx_export.h"
#include "onnx/onnx_import.h"
#include "onnx/schema_check.h"
#include "onnx_test_util.h"
#include "passes/optimize.h"
#include "runtime/executor.h"
#include "runtime/random_inputs.h"

namespace cleave {
namespace {

using testing::error_of;
using testing::full_check_error;
using ::testing::HasSubstr;

struct FusedCase {
  const char* name;
  const char* text;  // A graph in the fused form the optimizer makes.
};

// Every form the passes make that ONNX does not define (conv_activation_fusion,
// matmul_epilogue_fusion, layer_norm_fusion below opset 17).
const FusedCase kCases[] = {
    {"ConvRelu", R"(graph main [ai.onnx=17] (%x: f32[1,2,5,5]) {
  @w: f32[2,2,3,3] = [0.1, -0.2, 0.3, 0.4, -0.5, 0.6, 0.7, -0.8, 0.9, 0.1, 0.2, -0.3, 0.4, 0.5, -0.6, 0.7, 0.8, -0.9, -0.1, 0.2, 0.3, -0.4, 0.5, 0.6, -0.7, 0.8, 0.9, 0.1, -0.2, 0.3, 0.4, -0.5, 0.6, 0.7, -0.8, 0.9]
  @b: f32[2] = [0.1, -0.1]
  %y: f32[1,2,5,5] = Conv[pads=[1,1,1,1], activation="Relu"](%x, @w, @b)
  return %y
})"},
    {"ConvClip", R"(graph main [ai.onnx=17] (%x: f32[1,1,4,4]) {
  @w: f32[1,1,1,1] = [2.0]
  %y: f32[1,1,4,4] = Conv[activation="Clip", activation_min=-0.5, activation_max=0.75](%x, @w)
  return %y
})"},
    {"ConvClipOpset9", R"(graph main [ai.onnx=9] (%x: f32[1,1,4,4]) {
  @w: f32[1,1,1,1] = [2.0]
  %y: f32[1,1,4,4] = Conv[activation="Clip", activation_min=0.0, activation_max=6.0](%x, @w)
  return %y
})"},
    {"ConvSwish", R"(graph main [ai.onnx=17] (%x: f32[1,1,4,4]) {
  @w: f32[1,1,1,1] = [3.0]
  %y: f32[1,1,4,4] = Conv[activation="Swish"](%x, @w)
  return %y
})"},
    {"ConvHardSwish", R"(graph main [ai.onnx=13] (%x: f32[1,1,4,4]) {
  @w: f32[1,1,1,1] = [5.0]
  %y: f32[1,1,4,4] = Conv[activation="HardSwish"](%x, @w)
  return %y
})"},
    {"ConvSumThenRelu", R"(graph main [ai.onnx=17] (%x: f32[1,1,4,4], %r: f32[1,1,4,4]) {
  @w: f32[1,1,1,1] = [2.0]
  %y: f32[1,1,4,4] = Conv[sum_input=3, activation="Relu"](%x, @w, _, %r)
  return %y
})"},
    {"BatchNormRelu", R"(graph main [ai.onnx=17] (%x: f32[1,2,3,3]) {
  @s: f32[2] = [1.0, 2.0]
  @b: f32[2] = [0.5, -0.5]
  @m: f32[2] = [0.1, 0.2]
  @v: f32[2] = [1.0, 4.0]
  %y: f32[1,2,3,3] = BatchNormalization[activation="Relu"](%x, @s, @b, @m, @v)
  return %y
})"},
    {"MatMulBiasRelu", R"(graph main [ai.onnx=17] (%x: f32[3,2]) {
  @w: f32[2,2] = [1.0, -2.0, 3.0, 4.0]
  @b: f32[2] = [0.5, -0.25]
  %y: f32[3,2] = MatMul[activation="Relu"](%x, @w, @b)
  return %y
})"},
    {"MatMulGelu", R"(graph main [ai.onnx=17] (%x: f32[3,2]) {
  @w: f32[2,2] = [1.0, -2.0, 3.0, 4.0]
  %y: f32[3,2] = MatMul[activation="Gelu"](%x, @w)
  return %y
})"},
    {"LayerNormOpset13", R"(graph main [ai.onnx=13] (%x: f32[2,3,4]) {
  @s: f32[4] = [1.0, 2.0, 0.5, -1.0]
  @b: f32[4] = [0.1, 0.2, 0.3, 0.4]
  %y: f32[2,3,4] = LayerNormalization[axis=2, epsilon=0.00001](%x, @s, @b)
  return %y
})"},
};

void PrintTo(const FusedCase& fused, std::ostream* out) {
  *out << fused.name;
}

class StandardForms : public ::testing::TestWithParam<FusedCase> {};

std::vector<Tensor> run(const Graph& graph, const std::map<std::string, Tensor>& inputs) {
  Executor executor(graph);
  return executor.run(inputs);
}

// Every node of `model` is a standard operator with only its schema's attributes.
TEST_P(StandardForms, ExportIsStandardOnnx) {
  const onnx::ModelProto model = to_onnx(parse_graph(GetParam().text));
  EXPECT_EQ(full_check_error(model), std::nullopt);
  EXPECT_EQ(error_of([&] { check_schemas(model, "memory"); }), "<no error>");
  for (const onnx::NodeProto& node : model.graph().node()) {
    for (const onnx::AttributeProto& attribute : node.attribute()) {
      EXPECT_THAT(attribute.name(), ::testing::Not(::testing::StartsWith("activation")));
      EXPECT_NE(attribute.name(), "sum_input");
    }
  }
}

TEST_P(StandardForms, ReimportComputesTheSame) {
  const Graph fused = parse_graph(GetParam().text);
  const Graph back = import_onnx(to_onnx(fused), "memory");
  const auto inputs = random_inputs(fused, 3);
  const std::vector<Tensor> want = run(fused, inputs);
  const std::vector<Tensor> got = run(back, inputs);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(got[i].shape(), want[i].shape());
    auto expected = want[i].values<float>();
    auto actual = got[i].values<float>();
    for (std::size_t k = 0; k < expected.size(); ++k) {
      EXPECT_NEAR(actual[k], expected[k], 1e-5 + 1e-5 * std::fabs(expected[k])) << "at " << k;
    }
  }
}

TEST_P(StandardForms, OptimizerFusesTheReimportAgain) {
  const Graph fused = parse_graph(GetParam().text);
  Graph back = import_onnx(to_onnx(fused), "memory");
  OptimizeOptions options;
  options.fuse_activations = true;
  options.fold_channel_scales = true;
  optimize_graph(back, options);
  std::vector<std::string> ops;
  for (NodeId id : back.node_ids()) ops.push_back(back.node(id).op_type);
  std::vector<std::string> original;
  for (NodeId id : fused.node_ids()) original.push_back(fused.node(id).op_type);
  EXPECT_EQ(ops, original);
}

INSTANTIATE_TEST_SUITE_P(Onnx, StandardForms, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(StandardFormsErrors, UnknownActivationNamesTheNode) {
  const Graph graph = parse_graph(R"(graph main [ai.onnx=17] (%x: f32[1,1,2,2]) {
  @w: f32[1,1,1,1] = [2.0]
  %y: f32[1,1,2,2] = "c" Conv[activation="Tanh"](%x, @w)
  return %y
})");
  EXPECT_THAT(error_of([&] { to_onnx(graph); }),
              ::testing::AllOf(HasSubstr("'c'"), HasSubstr("fused activation 'Tanh'")));
}

}  // namespace
}  // namespace cleave
