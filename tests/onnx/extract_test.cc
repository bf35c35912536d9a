// Sub-model extraction: exactly the right inputs, outputs and initializers.
#include "onnx/extract.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ir/text.h"
#include "onnx/graph_compare.h"
#include "onnx/onnx_import.h"
#include "onnx_test_util.h"

namespace cleave {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using testing::error_of;
using testing::full_check_error;
using ::testing::HasSubstr;

// Two branches from %a that meet again in %d; %w feeds one branch, %v is unused.
const char* kDiamond = R"(graph main [ai.onnx=17] (%x: f32[2]) {
  @w: f32[2] = [1.0, 2.0]
  @v: f32[2] = [3.0, 4.0]
  %a: f32[2] = "A" Relu(%x)
  %b: f32[2] = "B" Mul(%a, @w)
  %c: f32[2] = "C" Exp(%a)
  %d: f32[2] = "D" Add(%b, %c)
  return %d
}
)";

std::vector<std::string> input_names(const onnx::ModelProto& model) {
  std::vector<std::string> names;
  for (const auto& input : model.graph().input()) names.push_back(input.name());
  return names;
}

std::vector<std::string> output_names(const onnx::ModelProto& model) {
  std::vector<std::string> names;
  for (const auto& output : model.graph().output()) names.push_back(output.name());
  return names;
}

std::vector<std::string> initializer_names(const onnx::ModelProto& model) {
  std::vector<std::string> names;
  for (const auto& tensor : model.graph().initializer()) names.push_back(tensor.name());
  return names;
}

std::vector<NodeId> by_name(const Graph& graph, std::initializer_list<const char*> names) {
  std::vector<NodeId> ids;
  for (const char* name : names) ids.push_back(*graph.find_node(name));
  return ids;
}

TEST(Extract, OneNodeReadsItsInputsAndWeights) {
  Graph g = parse_graph(kDiamond);
  onnx::ModelProto model = extract_submodel(g, by_name(g, {"B"}));
  EXPECT_THAT(input_names(model), ElementsAre("a"));
  EXPECT_THAT(output_names(model), ElementsAre("b"));
  EXPECT_THAT(initializer_names(model), ElementsAre("w"));
  EXPECT_EQ(full_check_error(model), std::nullopt);
}

TEST(Extract, ComplementaryHalvesMeetAtTheirBoundary) {
  Graph g = parse_graph(kDiamond);
  onnx::ModelProto first = extract_submodel(g, by_name(g, {"A", "B"}));
  onnx::ModelProto second = extract_submodel(g, by_name(g, {"C", "D"}));
  EXPECT_THAT(input_names(first), ElementsAre("x"));
  EXPECT_THAT(output_names(first), ElementsAre("a", "b"));  // %a is also read by C.
  EXPECT_THAT(initializer_names(first), ElementsAre("w"));
  EXPECT_THAT(input_names(second), ElementsAre("a", "b"));
  EXPECT_THAT(output_names(second), ElementsAre("d"));
  EXPECT_TRUE(initializer_names(second).empty());
  EXPECT_EQ(full_check_error(first), std::nullopt);
  EXPECT_EQ(full_check_error(second), std::nullopt);
}

TEST(Extract, GraphOutputReadInsideIsStillAnOutput) {
  Graph g = parse_graph(R"(graph main [ai.onnx=17] (%x: f32[2]) {
  %a: f32[2] = "A" Relu(%x)
  %b: f32[2] = "B" Neg(%a)
  return %a, %b
}
)");
  onnx::ModelProto model = extract_submodel(g, by_name(g, {"A", "B"}));
  EXPECT_THAT(output_names(model), ElementsAre("a", "b"));
}

TEST(Extract, AllNodesGiveTheSameGraphWithoutUnusedInitializers) {
  Graph g = parse_graph(kDiamond);
  Graph whole = extract_subgraph(g, g.node_ids());
  EXPECT_FALSE(whole.find_value("v").has_value());
  Graph without_unused = parse_graph(R"(graph main [ai.onnx=17] (%x: f32[2]) {
  @w: f32[2] = [1.0, 2.0]
  %a: f32[2] = "A" Relu(%x)
  %b: f32[2] = "B" Mul(%a, @w)
  %c: f32[2] = "C" Exp(%a)
  %d: f32[2] = "D" Add(%b, %c)
  return %d
}
)");
  std::string difference;
  EXPECT_TRUE(graphs_equal(whole, without_unused, &difference)) << difference;
  Graph reimported = import_onnx(extract_submodel(g, g.node_ids()), "memory");
  EXPECT_TRUE(graphs_equal(whole, reimported, &difference)) << difference;
}

TEST(Extract, BodyReadsOfOuterValuesAreInputs) {
  Graph g = parse_graph(R"(graph main [ai.onnx=17] (%c: bool[], %x: f32[2]) {
  %a: f32[2] = "A" Relu(%x)
  %y: f32[2] = "branch" If[else_branch=graph e [ai.onnx=17] () {
    %n: f32[2] = Neg(%a)
    return %n
  }, then_branch=graph t [ai.onnx=17] () {
    %p: f32[2] = Identity(%a)
    return %p
  }](%c)
  return %y
}
)");
  onnx::ModelProto branch = extract_submodel(g, by_name(g, {"branch"}));
  EXPECT_THAT(input_names(branch), ElementsAre("c", "a"));
  EXPECT_EQ(full_check_error(branch), std::nullopt);
  onnx::ModelProto relu = extract_submodel(g, by_name(g, {"A"}));
  EXPECT_THAT(output_names(relu), ElementsAre("a"));  // Read only by the bodies.
}

TEST(Extract, WritesAFile) {
  Graph g = parse_graph(kDiamond);
  testing::TempDir dir;
  std::string path = dir.file("part.onnx");
  extract_submodel_to_file(g, by_name(g, {"C", "D"}), path);
  Graph part = import_onnx(path);
  EXPECT_EQ(part.node_count(), 2u);
}

TEST(Extract, EmptySelectionIsAnError) {
  Graph g = parse_graph(kDiamond);
  EXPECT_THAT(error_of([&] { extract_submodel(g, {}); }), HasSubstr("no nodes selected"));
}

TEST(Extract, UnknownNodeIdIsAnError) {
  Graph g = parse_graph(kDiamond);
  EXPECT_THAT(error_of([&] { extract_submodel(g, {42}); }), HasSubstr("node id 42"));
}

TEST(Extract, NodeSelectedTwiceIsAnError) {
  Graph g = parse_graph(kDiamond);
  EXPECT_THAT(error_of([&] {
                extract_submodel(g, by_name(g, {"B", "B"}));
              }),
              AllOf(HasSubstr("'B' (Mul)"), HasSubstr("twice")));
}

TEST(Extract, UnreadResultsAreAnError) {
  Graph g = parse_graph(R"(graph main [ai.onnx=17] (%x: f32[2]) {
  %a: f32[2] = "A" Relu(%x)
  %dead: f32[2] = "Dead" Neg(%x)
  return %a
}
)");
  EXPECT_THAT(error_of([&] { extract_submodel(g, by_name(g, {"Dead"})); }),
              HasSubstr("produce nothing"));
}

TEST(Extract, UntypedBoundaryValueIsAnError) {
  Graph g = parse_graph(R"(graph main [ai.onnx=17] (%x: f32[2]) {
  %a = "A" Relu(%x)
  %b: f32[2] = "B" Neg(%a)
  return %b
}
)");
  EXPECT_THAT(error_of([&] { extract_submodel(g, by_name(g, {"B"})); }),
              AllOf(HasSubstr("input 'a'"), HasSubstr("no known element type")));
}

}  // namespace
}  // namespace cleave
