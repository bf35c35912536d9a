// ONNX import: types, tensors, attributes, bodies, and every error a bad model file can cause.
#include "onnx/onnx_import.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ir/scope.h"
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
using testing::TempDir;
using testing::write_bytes;
using testing::write_model;

// x[2,3] -> Relu "relu1" -> y
onnx::ModelProto relu_model() {
  onnx::ModelProto model = make_model();
  auto* graph = model.mutable_graph();
  add_input(graph, "x", {2, 3});
  add_node(graph, "Relu", {"x"}, {"y"}, "relu1");
  add_output(graph, "y", {2, 3});
  return model;
}

// Writes `model` into a fresh folder and returns the import error (or "<no error>").
std::string import_error(const onnx::ModelProto& model, const TempDir& dir,
                         const std::string& name = "model.onnx") {
  std::string path = dir.file(name);
  write_model(model, path);
  return error_of([&] { import_onnx(path); });
}

TEST(OnnxImport, ReadsNodesValuesAndModelInfo) {
  TempDir dir;
  std::string path = dir.file("relu.onnx");
  write_model(relu_model(), path);
  Graph g = import_onnx(path);
  ASSERT_EQ(g.node_count(), 1u);
  EXPECT_EQ(g.node(0).op_type, "Relu");
  EXPECT_EQ(g.node(0).name, "relu1");
  EXPECT_EQ(g.name, "test");
  EXPECT_EQ(g.ir_version, 8);
  EXPECT_EQ(g.producer_name, "cleave-test");
  EXPECT_EQ(g.opset_imports, (std::map<std::string, int64_t>{{"", 17}}));
  ASSERT_EQ(g.inputs().size(), 1u);
  ASSERT_EQ(g.outputs().size(), 1u);
  EXPECT_EQ(g.value(g.outputs()[0]).shape, Shape::of({2, 3}));
  EXPECT_EQ(g.value(g.outputs()[0]).dtype, DataType::kFloat);
}

TEST(OnnxImport, DimsBecomeKnownNamedOrUnknown) {
  onnx::ModelProto model = relu_model();
  auto* dims = model.mutable_graph()
                   ->mutable_input(0)
                   ->mutable_type()
                   ->mutable_tensor_type()
                   ->mutable_shape();
  dims->mutable_dim(0)->set_dim_param("N");
  dims->mutable_dim(1)->clear_dim_value();
  Graph g = import_onnx(model, "memory");
  Shape expected;
  expected.rank_known = true;
  expected.dims = {Dim::named("N"), Dim::unknown()};
  EXPECT_EQ(g.value(g.inputs()[0]).shape, expected);
}

// A negative dim_value is no size: ONNX Runtime refuses it; a dynamic dim is a dim_param.
TEST(OnnxImport, NegativeDimValueIsRefused) {
  onnx::ModelProto model = relu_model();
  model.mutable_graph()
      ->mutable_input(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(0)
      ->set_dim_value(-1);
  EXPECT_THAT(
      error_of([&] { import_onnx(model, "memory"); }),
      AllOf(HasSubstr("memory: value 'x': dim 0 is -1"), HasSubstr("expected a size >= 0")));
}

TEST(OnnxImport, ShapeInferenceTypesIntermediateValues) {
  onnx::ModelProto model = make_model();
  auto* graph = model.mutable_graph();
  add_input(graph, "x", {2, 3});
  add_node(graph, "Relu", {"x"}, {"h"});
  add_node(graph, "Neg", {"h"}, {"y"});
  add_output(graph, "y", {2, 3});
  Graph g = import_onnx(model, "memory");
  const Value& h = g.value(*g.find_value("h"));
  EXPECT_EQ(h.dtype, DataType::kFloat);
  EXPECT_EQ(h.shape, Shape::of({2, 3}));
}

// A declared shape is compared with what inference computes from the inputs; the two must
// agree, or inspect would report a shape that run does not use.
TEST(OnnxImport, ADeclaredOutputShapeThatContradictsInferenceIsRefused) {
  onnx::ModelProto model = relu_model();
  model.mutable_graph()
      ->mutable_output(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->add_dim()
      ->set_dim_value(7);
  EXPECT_THAT(error_of([&] { import_onnx(model, "memory"); }),
              AllOf(HasSubstr("value 'y'"), HasSubstr("(graph output) shape [2,3,7]"),
                    HasSubstr("gives [2,3]")));
}

TEST(OnnxImport, AWrongValueInfoShapeIsRefusedNotTrusted) {
  onnx::ModelProto model = make_model();
  auto* graph = model.mutable_graph();
  add_input(graph, "x", {2, 3});
  add_node(graph, "Relu", {"x"}, {"h"}, "relu1");
  add_node(graph, "Neg", {"h"}, {"y"}, "neg1");
  add_output(graph, "y", {2, 3});
  // One flipped byte in a real model made a dim 0 here.
  testing::set_tensor_type(graph->add_value_info(), "h", 1, {2, 0});
  EXPECT_THAT(error_of([&] { import_onnx(model, "memory"); }),
              AllOf(HasSubstr("value 'h'"), HasSubstr("(value_info) shape [2,0]"),
                    HasSubstr("gives [2,3]")));
}

TEST(OnnxImport, AValueInfoThatAgreesFillsNothingInferenceLacks) {
  onnx::ModelProto model = make_model();
  auto* graph = model.mutable_graph();
  add_input(graph, "x", {2, 3});
  add_node(graph, "Relu", {"x"}, {"h"}, "relu1");
  add_node(graph, "Neg", {"h"}, {"y"}, "neg1");
  add_output(graph, "y", {2, 3});
  testing::set_tensor_type(graph->add_value_info(), "h", 1, {2, 3});
  Graph g = import_onnx(model, "memory");
  EXPECT_EQ(g.value(*g.find_value("h")).shape, Shape::of({2, 3}));
}

TEST(OnnxImport, ModelThatCrashesOnnxShapeInferenceStillImports) {
  // ONNX 1.12's Conv inference reads past the input's dims when the weight has more; the
  // checker accepts the model. Inference runs in a child process, so only the child dies.
  onnx::ModelProto model = make_model();
  auto* graph = model.mutable_graph();
  add_input(graph, "x", {1, 1, 3});
  add_float_initializer(graph, "w", {1, 1, 2, 2});
  add_node(graph, "Conv", {"x", "w"}, {"y"}, "conv");
  add_output(graph, "y", {1, 1, 2});
  Graph g = import_onnx(model, "memory");
  EXPECT_EQ(g.node_count(), 1u);
  EXPECT_EQ(g.value(g.outputs()[0]).shape, Shape::of({1, 1, 2}));
}

TEST(OnnxImport, UnknownOpsBecomeOpaqueNodesWithAttributes) {
  onnx::ModelProto model = relu_model();
  auto* node = add_node(model.mutable_graph(), "FancyOp", {"y"}, {"z"}, "fancy");
  node->set_domain("com.example");
  add_ints_attribute(node, "levels", {1, 2, 3});
  add_output(model.mutable_graph(), "z", {2, 3});
  auto* import = model.add_opset_import();
  import->set_domain("com.example");
  import->set_version(1);
  ImportOptions options;
  options.other_domains = true;
  Graph g = import_onnx(model, "memory", options);
  NodeId fancy = *g.find_node("fancy");
  EXPECT_EQ(g.node(fancy).domain, "com.example");
  EXPECT_EQ(g.node(fancy).ints_attribute("levels"), (std::vector<int64_t>{1, 2, 3}));
}

TEST(OnnxImport, TypedTensorFieldsBecomeLittleEndianBytes) {
  onnx::ModelProto model = relu_model();
  auto* graph = model.mutable_graph();
  auto add = [&](const std::string& name, int type) {
    auto* t = graph->add_initializer();
    t->set_name(name);
    t->set_data_type(type);
    t->add_dims(2);
    return t;
  };
  auto* half = add("half", onnx::TensorProto::FLOAT16);
  half->add_int32_data(0x3c00);  // 1.0
  half->add_int32_data(0xc000);  // -2.0
  auto* flags = add("flags", onnx::TensorProto::BOOL);
  flags->add_int32_data(1);
  flags->add_int32_data(0);
  auto* small = add("small", onnx::TensorProto::INT8);
  small->add_int32_data(-1);
  small->add_int32_data(5);
  auto* wide = add("wide", onnx::TensorProto::UINT32);
  wide->add_uint64_data(0xfffffffe);
  wide->add_uint64_data(3);
  auto* words = add("words", onnx::TensorProto::STRING);
  words->add_string_data("a");
  words->add_string_data("bc");
  Graph g = import_onnx(model, "memory");
  auto data = [&](const char* name) { return *g.value(*g.find_value(name)).initializer; };
  EXPECT_EQ(data("half").as<uint16_t>()[1], 0xc000);
  EXPECT_EQ(data("flags").bytes->size(), 2u);
  EXPECT_EQ(data("flags").as<uint8_t>()[0], 1);
  EXPECT_EQ(data("small").as<int8_t>()[0], -1);
  EXPECT_EQ(data("wide").as<uint32_t>()[0], 0xfffffffeu);
  EXPECT_EQ(*data("words").strings, (std::vector<std::string>{"a", "bc"}));
}

TEST(OnnxImport, InitializerListedAsInputKeepsBothFlags) {
  onnx::ModelProto model = relu_model();
  model.set_ir_version(3);
  auto* graph = model.mutable_graph();
  add_float_initializer(graph, "w", {2, 3});
  add_input(graph, "w", {2, 3});
  Graph g = import_onnx(model, "memory");
  const Value& w = g.value(*g.find_value("w"));
  EXPECT_TRUE(w.initializer.has_value());
  EXPECT_TRUE(w.is_graph_input);
  EXPECT_EQ(g.inputs().size(), 1u);  // Graph::inputs() lists only the real input.
}

TEST(OnnxImport, NonTensorTypesAreKeptSerialized) {
  onnx::ModelProto model = make_model();
  auto* graph = model.mutable_graph();
  add_input(graph, "x", {2});
  add_node(graph, "SequenceConstruct", {"x", "x"}, {"s"});
  auto* out = graph->add_output();
  out->set_name("s");
  out->mutable_type()
      ->mutable_sequence_type()
      ->mutable_elem_type()
      ->mutable_tensor_type()
      ->set_elem_type(1);
  Graph g = import_onnx(model, "memory");
  const Value& s = g.value(*g.find_value("s"));
  ASSERT_TRUE(s.opaque_type.has_value());
  onnx::TypeProto type;
  ASSERT_TRUE(type.ParseFromString(s.opaque_type->serialized));
  EXPECT_TRUE(type.has_sequence_type());
  EXPECT_EQ(s.dtype, DataType::kUndefined);
}

// cond: bool, x: f32[2] -> If(cond) { then: Identity(x) } { else: Neg(x) } -> y
onnx::ModelProto if_model() {
  onnx::ModelProto model = make_model();
  auto* graph = model.mutable_graph();
  add_input(graph, "cond", {}, onnx::TensorProto::BOOL);
  add_input(graph, "x", {2});
  auto* node = add_node(graph, "If", {"cond"}, {"y"}, "branch");
  for (const char* branch : {"then_branch", "else_branch"}) {
    auto* attribute = node->add_attribute();
    attribute->set_name(branch);
    attribute->set_type(onnx::AttributeProto::GRAPH);
    auto* body = attribute->mutable_g();
    body->set_name(branch);
    add_node(body, branch == std::string("then_branch") ? "Identity" : "Neg", {"x"},
             {std::string(branch) + "_out"});
    add_output(body, std::string(branch) + "_out", {2});
  }
  add_output(graph, "y", {2});
  return model;
}

TEST(OnnxImport, BodiesKeepOuterScopeReadsAsCapturedValues) {
  Graph g = import_onnx(if_model(), "memory");
  NodeId branch = *g.find_node("branch");
  const Attribute* then_branch = g.node(branch).attribute("then_branch");
  ASSERT_NE(then_branch, nullptr);
  ASSERT_EQ(then_branch->kind, AttributeKind::kGraph);
  const Graph& body = *then_branch->g;
  const Value& x = body.value(*body.find_value("x"));
  EXPECT_EQ(x.producer, -1);
  EXPECT_FALSE(x.is_graph_input);
  EXPECT_EQ(outer_scope_names(body), (std::vector<std::string>{"x"}));
  EXPECT_EQ(implicit_inputs(g, branch), (std::vector<ValueId>{*g.find_value("x")}));
}

TEST(OnnxImport, OmittedMiddleOutputBecomesAPlaceholder) {
  onnx::ModelProto model = make_model();
  auto* graph = model.mutable_graph();
  add_input(graph, "x", {2});
  add_node(graph, "Custom", {"x"}, {"", "b", ""}, "multi")->set_domain("com.example");
  add_output(graph, "b", {2});
  ImportOptions options;
  options.other_domains = true;
  Graph g = import_onnx(model, "memory", options);
  const Node& node = g.node(*g.find_node("multi"));
  ASSERT_EQ(node.outputs.size(), 2u);  // The trailing omitted output is dropped.
  EXPECT_TRUE(is_omitted_output(g, node.outputs[0]));
  EXPECT_FALSE(is_omitted_output(g, node.outputs[1]));
}

// ---- Errors: each names the file and, where it applies, the node or tensor.

TEST(OnnxImportErrors, MissingFileNamesIt) {
  TempDir dir;
  std::string path = dir.file("absent.onnx");
  EXPECT_THAT(error_of([&] { import_onnx(path); }), AllOf(HasSubstr(path), HasSubstr("exist")));
}

TEST(OnnxImportErrors, GarbageFileIsNotAModel) {
  TempDir dir;
  std::string path = dir.file("garbage.onnx");
  write_bytes(path, "this is not a protobuf \xff\xff\xff\xff");
  EXPECT_THAT(error_of([&] { import_onnx(path); }),
              AllOf(HasSubstr(path), HasSubstr("not a valid ONNX model")));
}

TEST(OnnxImportErrors, TruncatedFileIsNotAModel) {
  onnx::ModelProto model = relu_model();
  add_float_initializer(model.mutable_graph(), "w", {64});
  std::string bytes = model.SerializeAsString();
  TempDir dir;
  std::string path = dir.file("truncated.onnx");
  write_bytes(path, bytes.substr(0, bytes.size() - 100));
  EXPECT_THAT(error_of([&] { import_onnx(path); }),
              AllOf(HasSubstr(path), HasSubstr("truncated or corrupt")));
}

TEST(OnnxImportErrors, EmptyFileIsNotAModel) {
  TempDir dir;
  std::string path = dir.file("empty.onnx");
  write_bytes(path, "");
  EXPECT_THAT(error_of([&] { import_onnx(path); }), AllOf(HasSubstr(path), HasSubstr("empty")));
}

TEST(OnnxImportErrors, ModelWithoutGraphIsRefused) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  TempDir dir;
  EXPECT_THAT(import_error(model, dir), AllOf(HasSubstr("model.onnx"), HasSubstr("no graph")));
}

TEST(OnnxImportErrors, CycleNamesANodeOnIt) {
  onnx::ModelProto model = make_model();
  auto* graph = model.mutable_graph();
  add_input(graph, "x", {2});
  add_node(graph, "Add", {"x", "b"}, {"a"}, "first");
  add_node(graph, "Relu", {"a"}, {"b"}, "second");
  add_output(graph, "b", {2});
  TempDir dir;
  EXPECT_THAT(import_error(model, dir),
              AllOf(HasSubstr("model.onnx"), HasSubstr("cycle"), HasSubstr("'first' (Add)")));
}

TEST(OnnxImportErrors, DanglingInputNamesNodeAndValue) {
  onnx::ModelProto model = relu_model();
  add_node(model.mutable_graph(), "Add", {"y", "nowhere"}, {"z"}, "adder");
  TempDir dir;
  EXPECT_THAT(import_error(model, dir),
              AllOf(HasSubstr("model.onnx"), HasSubstr("'adder' (Add)"), HasSubstr("'nowhere'")));
}

TEST(OnnxImportErrors, MissingInitializerNamesNodeAndWeight) {
  onnx::ModelProto model = make_model();
  auto* graph = model.mutable_graph();
  add_input(graph, "x", {1, 1, 4, 4});
  add_node(graph, "Conv", {"x", "conv1.weight"}, {"y"}, "conv1");
  add_output(graph, "y", {1, 1, 2, 2});
  TempDir dir;
  EXPECT_THAT(import_error(model, dir), AllOf(HasSubstr("model.onnx"), HasSubstr("'conv1' (Conv)"),
                                              HasSubstr("'conv1.weight'")));
}

TEST(OnnxImportErrors, KnownOpAttributeOfWrongTypeFloat) {
  onnx::ModelProto model = make_model();
  auto* graph = model.mutable_graph();
  add_input(graph, "x", {1, 1, 4, 4});
  add_float_initializer(graph, "w", {1, 1, 3, 3});
  auto* conv = add_node(graph, "Conv", {"x", "w"}, {"y"}, "conv1");
  auto* attribute = conv->add_attribute();
  attribute->set_name("kernel_shape");
  attribute->set_type(onnx::AttributeProto::FLOAT);
  attribute->set_f(3);
  add_output(graph, "y", {1, 1, 2, 2});
  TempDir dir;
  EXPECT_THAT(import_error(model, dir), AllOf(HasSubstr("model.onnx"), HasSubstr("'conv1' (Conv)"),
                                              HasSubstr("'kernel_shape' must be ints, got float")));
}

TEST(OnnxImportErrors, KnownOpAttributeOfWrongTypeString) {
  onnx::ModelProto model = make_model();
  auto* graph = model.mutable_graph();
  add_input(graph, "x", {2, 3});
  auto* node = add_node(graph, "Transpose", {"x"}, {"y"}, "flip");
  auto* attribute = node->add_attribute();
  attribute->set_name("perm");
  attribute->set_type(onnx::AttributeProto::STRING);
  attribute->set_s("1,0");
  add_output(graph, "y", {3, 2});
  TempDir dir;
  EXPECT_THAT(import_error(model, dir),
              AllOf(HasSubstr("model.onnx"), HasSubstr("'flip' (Transpose)"),
                    HasSubstr("'perm' must be ints, got string")));
}

TEST(OnnxImportErrors, InitializerDimsOverflowingInt64) {
  onnx::ModelProto model = relu_model();
  auto* tensor = model.mutable_graph()->add_initializer();
  tensor->set_name("huge");
  tensor->set_data_type(onnx::TensorProto::FLOAT);
  tensor->add_dims(int64_t{1} << 40);
  tensor->add_dims(int64_t{1} << 40);
  TempDir dir;
  EXPECT_THAT(import_error(model, dir),
              AllOf(HasSubstr("model.onnx"), HasSubstr("'huge'"), HasSubstr("int64")));
}

TEST(OnnxImportErrors, DeclaredShapeOverflowingInt64) {
  onnx::ModelProto model = relu_model();
  auto* dims = model.mutable_graph()
                   ->mutable_input(0)
                   ->mutable_type()
                   ->mutable_tensor_type()
                   ->mutable_shape();
  dims->mutable_dim(0)->set_dim_value(int64_t{1} << 40);
  dims->mutable_dim(1)->set_dim_value(int64_t{1} << 40);
  TempDir dir;
  EXPECT_THAT(import_error(model, dir),
              AllOf(HasSubstr("model.onnx"), HasSubstr("'x'"), HasSubstr("int64")));
}

TEST(OnnxImportErrors, RawDataSizeNotMatchingDims) {
  onnx::ModelProto model = relu_model();
  auto* tensor = model.mutable_graph()->add_initializer();
  tensor->set_name("short");
  tensor->set_data_type(onnx::TensorProto::FLOAT);
  tensor->add_dims(1000);
  tensor->set_raw_data(std::string(8, '\0'));
  TempDir dir;
  EXPECT_THAT(import_error(model, dir), AllOf(HasSubstr("model.onnx"), HasSubstr("'short'"),
                                              HasSubstr("raw_data has 8"), HasSubstr("need 4000")));
}

TEST(OnnxImportErrors, DeclaredSizeBeyondAnyModelFileIsRefusedBeforeAllocating) {
  onnx::ModelProto model = relu_model();
  auto* tensor = model.mutable_graph()->add_initializer();
  tensor->set_name("bloated");
  tensor->set_data_type(onnx::TensorProto::FLOAT);
  tensor->add_dims(int64_t{1} << 40);  // 4 TB declared, 8 bytes present.
  tensor->set_raw_data(std::string(8, '\0'));
  TempDir dir;
  EXPECT_THAT(import_error(model, dir), AllOf(HasSubstr("model.onnx"), HasSubstr("'bloated'"),
                                              HasSubstr("more bytes than a model file")));
}

TEST(OnnxImportErrors, TypedDataCountNotMatchingDims) {
  onnx::ModelProto model = relu_model();
  auto* tensor = add_float_initializer(model.mutable_graph(), "w", {2, 2});
  tensor->add_float_data(9);
  TempDir dir;
  EXPECT_THAT(import_error(model, dir),
              AllOf(HasSubstr("model.onnx"), HasSubstr("'w'"), HasSubstr("5 items in float_data")));
}

TEST(OnnxImportErrors, ValueDefinedTwice) {
  onnx::ModelProto model = relu_model();
  add_node(model.mutable_graph(), "Neg", {"x"}, {"y"}, "again");
  TempDir dir;
  EXPECT_THAT(import_error(model, dir),
              AllOf(HasSubstr("model.onnx"), HasSubstr("'again' (Neg)"), HasSubstr("'y'")));
}

TEST(OnnxImportErrors, UnsupportedTensorDataType) {
  onnx::ModelProto model = relu_model();
  auto* tensor = model.mutable_graph()->add_initializer();
  tensor->set_name("odd");
  tensor->set_data_type(99);
  TempDir dir;
  EXPECT_THAT(import_error(model, dir),
              AllOf(HasSubstr("model.onnx"), HasSubstr("'odd'"), HasSubstr("data type 99")));
}

TEST(OnnxImportErrors, BodiesNestedTooDeep) {
  // Five nested If bodies, each with an If inside, against a limit of three.
  onnx::ModelProto model = make_model();
  auto* graph = model.mutable_graph();
  add_input(graph, "cond", {}, onnx::TensorProto::BOOL);
  onnx::GraphProto* level = graph;
  for (int depth = 0; depth < 5; ++depth) {
    auto* node = add_node(level, "If", {"cond"}, {"out" + std::to_string(depth)},
                          "if" + std::to_string(depth));
    auto* attribute = node->add_attribute();
    attribute->set_name("then_branch");
    attribute->set_type(onnx::AttributeProto::GRAPH);
    add_output(level, "out" + std::to_string(depth), {});
    level = attribute->mutable_g();
    level->set_name("body" + std::to_string(depth));
  }
  add_node(level, "Identity", {"cond"}, {"leaf"});
  add_output(level, "leaf", {}, onnx::TensorProto::BOOL);
  TempDir dir;
  std::string path = dir.file("deep.onnx");
  write_model(model, path);
  ImportOptions options;
  options.max_graph_depth = 3;
  EXPECT_THAT(error_of([&] { import_onnx(path, options); }),
              AllOf(HasSubstr(path), HasSubstr("nested deeper than 3"), HasSubstr("'if3' (If)")));
}

TEST(OnnxImportErrors, ErrorsInsideBodiesNameTheEnclosingNode) {
  onnx::ModelProto model = if_model();
  auto* body = model.mutable_graph()->mutable_node(0)->mutable_attribute(0)->mutable_g();
  body->mutable_node(0)->set_input(0, "undefined_anywhere");
  TempDir dir;
  EXPECT_THAT(import_error(model, dir),
              AllOf(HasSubstr("model.onnx"), HasSubstr("of node 'branch' (If)"),
                    HasSubstr("'undefined_anywhere'")));
}

}  // namespace
}  // namespace cleave
