// Schema checks on import: counts, attribute names and types, and opsets, against ONNX's schemas.
#include "onnx/schema_check.h"

#include <fmt/core.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "onnx/onnx_import.h"
#include "onnx_test_util.h"
#include "runtime/kernel.h"
#include "test_paths.h"

namespace cleave {
namespace {

using testing::add_float_initializer;
using testing::add_input;
using testing::add_ints_attribute;
using testing::add_node;
using testing::add_output;
using ::testing::AllOf;
using testing::error_of;
using testing::full_check_error;
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

onnx::ModelProto custom_domain_model() {
  onnx::ModelProto model = make_model();
  auto* opset = model.add_opset_import();
  opset->set_domain("com.example");
  opset->set_version(1);
  auto* graph = model.mutable_graph();
  add_input(graph, "x", {2, 3});
  add_node(graph, "Anything", {"x", "x"}, {"y"}, "custom")->set_domain("com.example");
  add_output(graph, "y", {2, 3});
  return model;
}

// No kernel of cleave runs another domain's ops: refused at import as ONNX Runtime refuses
// what it has no kernel for, as unsupported (conformance counts it so).
TEST(SchemaCheck, NodesOfOtherDomainsAreRefusedAsUnsupported) {
  const onnx::ModelProto model = custom_domain_model();
  EXPECT_THAT(check_error(model),
              AllOf(HasSubstr("m.onnx: node 'custom' (Anything)"), HasSubstr("'com.example'"),
                    HasSubstr("cleave runs the operators of the standard ONNX domain")));
  EXPECT_THROW(import_onnx(model, "m.onnx"), UnsupportedError);
}

TEST(SchemaCheck, NodesOfOtherDomainsAreKeptWhenAskedFor) {
  EXPECT_EQ(
      error_of([&] {
        check_schemas(custom_domain_model(), "m.onnx", SchemaCheckOptions{nullptr, true, nullptr});
      }),
      "<no error>");
}

TEST(SchemaCheck, NodesOfOtherDomainsWithAKernelAreKept) {
  SchemaCheckOptions options;
  options.runs_domain_op = [](const std::string& domain, const std::string& op_type) {
    return domain == "com.example" && op_type == "Anything";
  };
  EXPECT_EQ(error_of([&] { check_schemas(custom_domain_model(), "m.onnx", options); }),
            "<no error>");
  options.runs_domain_op = [](const std::string&, const std::string&) { return false; };
  EXPECT_THAT(error_of([&] { check_schemas(custom_domain_model(), "m.onnx", options); }),
              HasSubstr("of domain 'com.example' is not supported"));
}

TEST(SchemaCheck, ACallOfAModelLocalFunctionIsRefused) {
  onnx::ModelProto model = custom_domain_model();
  auto* function = model.add_functions();
  function->set_name("Anything");
  function->set_domain("com.example");
  EXPECT_THAT(check_error(model),
              AllOf(HasSubstr("node 'custom' (Anything)"), HasSubstr("model-local function"),
                    HasSubstr("does not inline")));
}

// x[1,1,2,2], scales[4] -> Upsample -> y
onnx::ModelProto upsample_model(int64_t opset) {
  onnx::ModelProto model = make_model(opset);
  auto* graph = model.mutable_graph();
  add_input(graph, "x", {1, 1, 2, 2});
  add_input(graph, "scales", {4});
  add_node(graph, "Upsample", {"x", "scales"}, {"y"}, "up");
  add_output(graph, "y", {1, 1, 4, 4});
  return model;
}

TEST(SchemaCheck, ADeprecatedOperatorIsRefusedNamingItsReplacement) {
  EXPECT_THAT(check_error(upsample_model(13)),
              AllOf(HasSubstr("node 'up' (Upsample)"), HasSubstr("deprecated since opset 10"),
                    HasSubstr("expected Resize instead, or opset 9 or lower")));
  EXPECT_NE(full_check_error(upsample_model(13)), std::nullopt);
}

TEST(SchemaCheck, AnOperatorBeforeItsDeprecationPasses) {
  EXPECT_EQ(check_error(upsample_model(9)), "<no error>");
}

// The type checks read the import's types: the declared ones, and what inference gives.
std::string import_error(const onnx::ModelProto& model) {
  return error_of([&] { import_onnx(model, "m.onnx"); });
}

TEST(SchemaCheck, AnInputTypeTheConstraintDoesNotAllowIsRefused) {
  onnx::ModelProto model = make_model();
  auto* graph = model.mutable_graph();
  add_input(graph, "x", {2, 3}, onnx::TensorProto::BOOL);
  add_node(graph, "Relu", {"x"}, {"y"}, "relu1");
  add_output(graph, "y", {2, 3}, onnx::TensorProto::BOOL);
  EXPECT_THAT(import_error(model),
              AllOf(HasSubstr("m.onnx: node 'relu1' (Relu)"),
                    HasSubstr("input 0 ('x', X 'T') is tensor(bool); expected one of: "),
                    HasSubstr("tensor(float)")));
  EXPECT_NE(full_check_error(model), std::nullopt);
}

TEST(SchemaCheck, InputsOfOneTypeVariableWithDifferentTypesAreRefused) {
  onnx::ModelProto model = make_model();
  auto* graph = model.mutable_graph();
  add_input(graph, "a", {2}, onnx::TensorProto::FLOAT);
  add_input(graph, "b", {2}, onnx::TensorProto::INT64);
  add_node(graph, "Add", {"a", "b"}, {"c"}, "add1");
  add_output(graph, "c", {2});
  EXPECT_THAT(import_error(model),
              AllOf(HasSubstr("node 'add1' (Add)"),
                    HasSubstr("input 1 ('b', B 'T') is tensor(int64), but input 0 ('a', A 'T') "
                              "is tensor(float); expected one type for 'T'")));
  EXPECT_NE(full_check_error(model), std::nullopt);
}

TEST(SchemaCheck, ATypeConstraintViolationInsideABodyIsRefused) {
  onnx::ModelProto model = make_model();
  auto* graph = model.mutable_graph();
  add_input(graph, "c", {}, onnx::TensorProto::BOOL);
  add_input(graph, "x", {2}, onnx::TensorProto::INT64);
  auto* branch = add_node(graph, "If", {"c"}, {"y"}, "if1");
  for (const char* name : {"then_branch", "else_branch"}) {
    auto* attribute = branch->add_attribute();
    attribute->set_name(name);
    attribute->set_type(onnx::AttributeProto::GRAPH);
    auto* body = attribute->mutable_g();
    body->set_name(name);
    // Through an Identity: inference types the body's own values, not those it reads.
    add_node(body, "Identity", {"x"}, {std::string(name) + "_x"});
    add_node(body, "Sigmoid", {std::string(name) + "_x"}, {std::string(name) + "_out"},
             std::string(name) + "_sig");
    add_output(body, std::string(name) + "_out", {2}, onnx::TensorProto::INT64);
  }
  add_output(graph, "y", {2}, onnx::TensorProto::INT64);
  EXPECT_THAT(import_error(model),
              AllOf(HasSubstr("attribute 'then_branch': node 'then_branch_sig' (Sigmoid)"),
                    HasSubstr("input 0 ('then_branch_x', X 'T') is tensor(int64)")));
}

TEST(SchemaCheck, ADeclaredElementTypeThatInferenceContradictsIsRefused) {
  onnx::ModelProto model = make_model();
  auto* graph = model.mutable_graph();
  add_input(graph, "x", {2, 3});
  add_node(graph, "Relu", {"x"}, {"h"}, "relu1");
  add_node(graph, "Neg", {"h"}, {"y"}, "neg1");
  add_output(graph, "y", {2, 3});
  testing::set_tensor_type(graph->add_value_info(), "h", onnx::TensorProto::INT64, {2, 3});
  EXPECT_THAT(import_error(model),
              AllOf(HasSubstr("value 'h': the model declares (value_info) element type i64"),
                    HasSubstr("inference from the graph's inputs gives f32")));
  EXPECT_NE(full_check_error(model), std::nullopt);
}

// Inference keeps a graph output's declared element type, so a wrong one shows as the node's.
TEST(SchemaCheck, AGraphOutputOfTheWrongElementTypeIsRefused) {
  onnx::ModelProto model = make_model();
  auto* graph = model.mutable_graph();
  add_input(graph, "x", {2, 3});
  add_node(graph, "Relu", {"x"}, {"y"}, "relu1");
  add_output(graph, "y", {2, 3}, onnx::TensorProto::INT64);
  EXPECT_THAT(import_error(model),
              HasSubstr("output 0 ('y', Y 'T') is tensor(int64), but input 0 ('x', X 'T') is "
                        "tensor(float)"));
}

TEST(SchemaCheck, AllowedTypesPass) {
  onnx::ModelProto model = make_model();
  auto* graph = model.mutable_graph();
  add_input(graph, "a", {2}, onnx::TensorProto::INT64);
  add_input(graph, "b", {2}, onnx::TensorProto::INT64);
  add_node(graph, "Add", {"a", "b"}, {"c"}, "add1");
  add_node(graph, "Cast", {"c"}, {"d"}, "cast1")->add_attribute()->set_name("to");
  auto* to = graph->mutable_node(1)->mutable_attribute(0);
  to->set_type(onnx::AttributeProto::INT);
  to->set_i(onnx::TensorProto::FLOAT);
  add_output(graph, "d", {2});
  EXPECT_EQ(import_error(model), "<no error>");
  EXPECT_EQ(full_check_error(model), std::nullopt);
}

// Constant-1 lists only float types, but exporters of its time wrote int64 constants with it
// (ONNX's own pytorch-converted backend cases): the value's type is taken, as ONNX's inference
// and ONNX Runtime take it.
TEST(SchemaCheck, AnOldConstantOfAnIntegerValuePasses) {
  onnx::ModelProto model = make_model(6);
  auto* graph = model.mutable_graph();
  auto* constant = add_node(graph, "Constant", {}, {"c"}, "const1");
  auto* value = constant->add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  value->mutable_t()->set_data_type(onnx::TensorProto::INT64);
  value->mutable_t()->add_dims(2);
  value->mutable_t()->add_int64_data(3);
  value->mutable_t()->add_int64_data(4);
  add_output(graph, "c", {2}, onnx::TensorProto::INT64);
  EXPECT_EQ(import_error(model), "<no error>");
}

// The five single-byte flips of attribute names in a real model each ran silently
// with the attribute's default; each is refused naming the node and the intended name.
TEST(SchemaCheck, SingleByteFlipsOfAttributeNamesInARealModelAreRefused) {
  std::ifstream file(std::string(CLEAVE_SOURCE_DIR) + "/models/inception_demo.onnx",
                     std::ios::binary);
  onnx::ModelProto original;
  ASSERT_TRUE(original.ParseFromIstream(&file));
  ASSERT_EQ(import_error(original), "<no error>");
  int flipped = 0;
  for (int index = 0; index < original.graph().node_size() && flipped < 5; ++index) {
    if (original.graph().node(index).attribute_size() == 0) continue;
    onnx::ModelProto model = original;
    auto* node = model.mutable_graph()->mutable_node(index);
    auto* attribute = node->mutable_attribute(flipped % node->attribute_size());
    const std::string name = attribute->name();
    attribute->mutable_name()->back() ^= 0x01;  // "pads" -> "padr", "strides" -> "strider"
    EXPECT_THAT(import_error(model),
                AllOf(HasSubstr(fmt::format("node '{}'", node->name())),
                      HasSubstr(fmt::format("unknown attribute '{}' (did you mean '{}'?)",
                                            attribute->name(), name))))
        << name;
    ++flipped;
  }
  EXPECT_EQ(flipped, 5);
}

TEST(SchemaCheck, ClosestNameNeedsAReasonableMatch) {
  EXPECT_EQ(closest_name("stridez", {"strides", "pads", "group"}), "strides");
  EXPECT_EQ(closest_name("kernel", {"strides", "pads"}), "");
}

}  // namespace
}  // namespace cleave
