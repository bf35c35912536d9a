// Inception and SqueezeNet generators: structure, shapes, determinism of the weights.
#include <gtest/gtest.h>

#include "ir/text.h"
#include "ir/verify.h"
#include "modelgen/inception.h"
#include "modelgen/squeezenet.h"
#include "onnx/onnx_export.h"

namespace cleave {
namespace {

int count_ops(const Graph& graph, const std::string& op) {
  int count = 0;
  for (NodeId id : graph.node_ids()) count += graph.node(id).op_type == op;
  return count;
}

std::string serialized(const Graph& graph) {
  return to_onnx(graph).SerializeAsString();
}

TEST(Inception, HasFourteenNodesPerBlockPlusStemAndHead) {
  InceptionOptions options;
  options.blocks = 3;
  Graph graph = generate_inception(options);
  EXPECT_EQ(graph.node_count(), 2u + 3 * 14 + 3);
  EXPECT_EQ(count_ops(graph, "Concat"), 3);
  EXPECT_EQ(count_ops(graph, "Conv"), 1 + 3 * 6);
}

TEST(Inception, DoubleThreeByThreeAddsTwoNodesPerBlock) {
  InceptionOptions options;
  options.blocks = 2;
  options.double_3x3 = true;
  EXPECT_EQ(generate_inception(options).node_count(), 2u + 2 * 16 + 3);
}

TEST(Inception, PassesTheVerifierWithEveryShapeStatic) {
  InceptionOptions options;
  options.blocks = 2;
  options.channels = 10;  // not divisible by 4: the last branch takes the remainder
  Graph graph = generate_inception(options);
  EXPECT_NO_THROW(verify_graph(graph));
  for (NodeId id : graph.node_ids()) {
    for (ValueId out : graph.node(id).outputs) {
      EXPECT_TRUE(graph.value(out).shape.is_static()) << graph.value(out).name;
      EXPECT_EQ(graph.value(out).dtype, DataType::kFloat);
    }
  }
  const Value& concat = graph.value(*graph.find_value("block2_concat"));
  EXPECT_EQ(concat.shape, Shape::of({1, 10, 32, 32}));
  EXPECT_EQ(graph.value(graph.outputs()[0]).shape, Shape::of({1, 10}));
}

TEST(Inception, SameSeedGivesByteIdenticalModels) {
  InceptionOptions options;
  options.blocks = 2;
  options.seed = 9;
  EXPECT_EQ(serialized(generate_inception(options)), serialized(generate_inception(options)));
}

TEST(Inception, DifferentSeedsChangeTheWeightsButNotTheStructure) {
  InceptionOptions options;
  options.blocks = 1;
  Graph a = generate_inception(options);
  options.seed = 2;
  Graph b = generate_inception(options);
  const ValueId wa = *a.find_value("stem.weight");
  const ValueId wb = *b.find_value("stem.weight");
  EXPECT_FALSE(*a.value(wa).initializer == *b.value(wb).initializer);
  // Without inline weight data the printed graphs differ only in the seed in the doc string.
  EXPECT_EQ(print_graph(a, 0), print_graph(b, 0));
}

TEST(Inception, RejectsTooFewChannels) {
  InceptionOptions options;
  options.channels = 3;
  EXPECT_THROW(generate_inception(options), Error);
}

TEST(SqueezeNet, HasSevenNodesPerFireModuleAndTwoPools) {
  SqueezeNetOptions options;  // 8 fire modules, as SqueezeNet 1.1
  Graph graph = generate_squeezenet(options);
  EXPECT_EQ(graph.node_count(), 2u + 8 * 7 + 2 + 4);
  EXPECT_EQ(count_ops(graph, "MaxPool"), 2);
  EXPECT_NO_THROW(verify_graph(graph));
}

TEST(SqueezeNet, SqueezeWidthGrowsEveryTwoModulesAndPoolsHalveTheSize) {
  SqueezeNetOptions options;
  options.fire_modules = 5;
  Graph graph = generate_squeezenet(options);
  EXPECT_EQ(graph.value(*graph.find_value("fire5_squeeze")).shape, Shape::of({1, 48, 8, 8}));
  EXPECT_EQ(graph.value(*graph.find_value("fire5_concat")).shape, Shape::of({1, 384, 8, 8}));
  EXPECT_EQ(graph.value(graph.outputs()[0]).shape, Shape::of({1, 10}));
}

TEST(SqueezeNet, NoPoolAfterTheLastFireModule) {
  SqueezeNetOptions options;
  options.fire_modules = 2;
  EXPECT_EQ(count_ops(generate_squeezenet(options), "MaxPool"), 0);
}

TEST(SqueezeNet, SameSeedGivesByteIdenticalModels) {
  SqueezeNetOptions options;
  options.fire_modules = 3;
  EXPECT_EQ(serialized(generate_squeezenet(options)), serialized(generate_squeezenet(options)));
}

}  // namespace
}  // namespace cleave
