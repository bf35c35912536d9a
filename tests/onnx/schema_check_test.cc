// Schema checks on import: counts, attribute names and types, and opsets, against ONNX's schemas.
#include "onnx/schema_check.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "onnx/onnx_import.h"
#include "onnx_test_util.h"

namespace cleave {
namespace {

using testing::add_float_initializer;
using testing::add_input;
using testing::add_ints_attribute;
using testing::add_node;
using testing::add_output;
using ::testing::AllOf;
using testing::error_of;
using ::testing::HasSubstr;
using testing::make_model;

// x[1,1,4,4] -> Conv "conv1" (w[1,1,2,2], strides 2) -> y[1,1,2,2]
onnx::ModelProto conv_model(const std::string& strides_name, int64_t opset = 17) {
  onnx::ModelProto model = make_model(opset);
  auto* graph = model.mutable_graph();
  add_input(graph, "x", {1, 1, 4, 4});
  add_float_initializer(graph, "w", {1, 1, 2, 2});
  auto* conv = add_node(graph, "Conv", {"x", "w"}, {"y"}, "conv1");
  add_ints_attribute(conv, strides_name, {2, 2});
  add_output(graph, "y", {1, 1, 2, 2});
  return model;
}

std::string check_error(const onnx::ModelProto& model) {
  return error_of([&] { check_schemas(model, "m.onnx"); });
}

TEST(SchemaCheck, AValidModelPasses) {
  EXPECT_EQ(check_error(conv_model("strides")), "<no error>");
  Graph g = import_onnx(conv_model("strides"), "m.onnx");
  EXPECT_EQ(g.node_count(), 1u);
}

// A misspelt attribute ran with the default stride before: it is refused at import.
TEST(SchemaCheck, AMisspeltAttributeIsRefusedWithTheClosestName) {
  EXPECT_THAT(error_of([&] { import_onnx(conv_model("stridez"), "m.onnx"); }),
              AllOf(HasSubstr("m.onnx: node 'conv1' (Conv)"),
                    HasSubstr("unknown attribute 'stridez' (did you mean 'strides'?)")));
}

TEST(SchemaCheck, ExtraInputsAreRefused) {
  onnx::ModelProto model = make_model();
  auto* graph = model.mutable_graph();
  add_input(graph, "x", {2, 3});
  add_node(graph, "Relu", {"x", "x", "x"}, {"y"}, "relu1");
  add_output(graph, "y", {2, 3});
  EXPECT_THAT(check_error(model),
              AllOf(HasSubstr("node 'relu1' (Relu)"), HasSubstr("has 3 inputs, expected 1")));
}

TEST(SchemaCheck, TooManyOutputsAreRefused) {
  onnx::ModelProto model = make_model();
  auto* graph = model.mutable_graph();
  add_input(graph, "x", {2, 3});
  add_node(graph, "Relu", {"x"}, {"y", "z"}, "relu1");
  add_output(graph, "y", {2, 3});
  EXPECT_THAT(check_error(model), HasSubstr("has 2 outputs, expected 1"));
}

TEST(SchemaCheck, AnAttributeOfTheWrongTypeIsRefused) {
  onnx::ModelProto model = conv_model("strides");
  auto* group = model.mutable_graph()->mutable_node(0)->add_attribute();
  group->set_name("group");
  group->set_type(onnx::AttributeProto::FLOAT);
  group->set_f(1.0f);
  EXPECT_THAT(check_error(model),
              AllOf(HasSubstr("node 'conv1' (Conv)"),
                    HasSubstr("attribute 'group' is a float, expected an int")));
}

TEST(SchemaCheck, AMissingRequiredAttributeIsRefused) {
  onnx::ModelProto model = make_model();
  auto* graph = model.mutable_graph();
  add_input(graph, "x", {2, 3});
  add_node(graph, "Cast", {"x"}, {"y"}, "cast1");
  add_output(graph, "y", {2, 3});
  EXPECT_THAT(check_error(model), HasSubstr("required attribute 'to' is missing"));
}

TEST(SchemaCheck, AnOpsetOnnxDoesNotKnowIsRefused) {
  EXPECT_THAT(check_error(conv_model("strides", 99)),
              AllOf(HasSubstr("m.onnx: opset_import"), HasSubstr("opset 99 is outside"),
                    HasSubstr("1 to 17")));
}

TEST(SchemaCheck, AnOpThatDoesNotExistAtTheOpsetIsRefused) {
  onnx::ModelProto model = make_model(11);
  auto* graph = model.mutable_graph();
  add_input(graph, "x", {2, 3});
  add_node(graph, "Relux", {"x"}, {"y"}, "r");
  add_output(graph, "y", {2, 3});
  EXPECT_THAT(check_error(model), HasSubstr("'Relux' is not an ONNX operator at opset 11"));
}

TEST(SchemaCheck, NodesOfOtherDomainsAreLeftToTheirRuntime) {
  onnx::ModelProto model = make_model();
  auto* opset = model.add_opset_import();
  opset->set_domain("com.example");
  opset->set_version(1);
  auto* graph = model.mutable_graph();
  add_input(graph, "x", {2, 3});
  add_node(graph, "Anything", {"x", "x"}, {"y"}, "custom")->set_domain("com.example");
  add_output(graph, "y", {2, 3});
  EXPECT_EQ(check_error(model), "<no error>");
}

TEST(SchemaCheck, ClosestNameNeedsAReasonableMatch) {
  EXPECT_EQ(closest_name("stridez", {"strides", "pads", "group"}), "strides");
  EXPECT_EQ(closest_name("kernel", {"strides", "pads"}), "");
}

}  // namespace
}  // namespace cleave
