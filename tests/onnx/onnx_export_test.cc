// ONNX export: valid models, faithful round trips, and no partial files on failure.
#include "onnx/onnx_export.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ir/text.h"
#include "onnx/graph_compare.h"
#include "onnx/onnx_import.h"
#include "onnx_test_util.h"

namespace cleave {
namespace {

using testing::add_input;
using testing::add_node;
using testing::add_output;
using ::testing::AllOf;
using testing::error_of;
using testing::full_check_error;
using ::testing::HasSubstr;
using testing::make_model;
using testing::TempDir;

const char* kMatMulRelu = R"(graph main [ai.onnx=17] (%x: f32[1,2]) {
  @w: f32[2,2] = [1.0, 2.0, 3.0, 4.0]
  %y: f32[1,2] = MatMul(%x, @w)
  %z: f32[1,2] = Relu(%y)
  return %z
}
)";

std::vector<std::string> folder_entries(const std::filesystem::path& folder) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

TEST(OnnxExport, ModelPassesTheFullChecker) {
  onnx::ModelProto model = to_onnx(parse_graph(kMatMulRelu));
  EXPECT_EQ(full_check_error(model), std::nullopt);
  EXPECT_EQ(model.ir_version(), 8);
  ASSERT_EQ(model.opset_import_size(), 1);
  EXPECT_EQ(model.opset_import(0).version(), 17);
}

TEST(OnnxExport, ReimportGivesTheSameGraph) {
  Graph original = parse_graph(kMatMulRelu);
  Graph reimported = import_onnx(to_onnx(original), "memory");
  std::string difference;
  EXPECT_TRUE(graphs_equal(original, reimported, &difference)) << difference;
}

TEST(OnnxExport, GraphsEqualReportsADifference) {
  Graph original = parse_graph(kMatMulRelu);
  Graph changed = parse_graph(kMatMulRelu);
  changed.node(1).op_type = "Sigmoid";
  std::string difference;
  EXPECT_FALSE(graphs_equal(original, changed, &difference));
  EXPECT_THAT(difference, HasSubstr("Relu"));
}

// For shape inference: a weight above the limit, and one left unread, become typed inputs
// and carry no bytes; a shape constant stays an initializer.
TEST(OnnxExport, WeightsAboveTheLimitAreWrittenAsTypedInputs) {
  Graph graph = parse_graph(R"(graph main [ai.onnx=17] (%x: f32[1,2]) {
  @w: f32[2,2] = [1.0, 2.0, 3.0, 4.0]
  @big: f32[2,3]
  @shape: i64[2] = [3, 2]
  %y: f32[1,2] = MatMul(%x, @w)
  %z: f32[1,3] = MatMul(%y, @big)
  %r: f32[3,1] = Reshape(%z, @shape)
  return %r
}
)");
  ASSERT_FALSE(graph.value(*graph.find_value("big")).initializer->has_data());
  ExportOptions options;
  options.weights_as_inputs_above = 3;
  const onnx::GraphProto exported = to_onnx(graph, options).graph();
  ASSERT_EQ(exported.initializer_size(), 1);
  EXPECT_EQ(exported.initializer(0).name(), "shape");
  EXPECT_EQ(exported.initializer(0).raw_data().size(), 16u);
  ASSERT_EQ(exported.input_size(), 3);
  EXPECT_EQ(exported.input(0).name(), "x");
  EXPECT_EQ(exported.input(1).name(), "w");
  EXPECT_EQ(exported.input(2).name(), "big");
  const auto& big = exported.input(2).type().tensor_type();
  EXPECT_EQ(big.elem_type(), onnx::TensorProto::FLOAT);
  ASSERT_EQ(big.shape().dim_size(), 2);
  EXPECT_EQ(big.shape().dim(1).dim_value(), 3);
  // Without the option every weight with bytes is an initializer.
  EXPECT_EQ(to_onnx(graph).graph().initializer_size(), 3);
}

TEST(OnnxExport, WritesTheFile) {
  TempDir dir;
  std::string path = dir.file("out.onnx");
  export_onnx(parse_graph(kMatMulRelu), path);
  Graph back = import_onnx(path);
  EXPECT_EQ(back.node_count(), 2u);
  EXPECT_EQ(folder_entries(dir.path()), (std::vector<std::string>{"out.onnx"}));
}

TEST(OnnxExport, MissingFolderIsAnErrorAndWritesNothing) {
  TempDir dir;
  std::string path = dir.file("absent/out.onnx");
  EXPECT_THAT(error_of([&] { export_onnx(parse_graph(kMatMulRelu), path); }),
              AllOf(HasSubstr(path), HasSubstr("does not exist")));
  EXPECT_TRUE(folder_entries(dir.path()).empty());
}

TEST(OnnxExport, FailureKeepsTheExistingFileAndLeavesNoTemporary) {
  Graph cyclic;
  ValueId a = cyclic.add_value("a", DataType::kFloat, Shape::of({1}));
  ValueId b = cyclic.add_value("b", DataType::kFloat, Shape::of({1}));
  cyclic.add_node("Relu", {a}, {b}, {}, "first");
  cyclic.add_node("Relu", {b}, {a}, {}, "second");
  cyclic.mark_output(b);
  TempDir dir;
  std::string path = dir.file("out.onnx");
  testing::write_bytes(path, "previous contents");
  EXPECT_THAT(error_of([&] { export_onnx(cyclic, path); }),
              AllOf(HasSubstr(path), HasSubstr("cycle")));
  EXPECT_EQ(folder_entries(dir.path()), (std::vector<std::string>{"out.onnx"}));
  std::ifstream in(path);
  std::string contents((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(contents, "previous contents");
}

TEST(OnnxExport, OmittedOutputsAreWrittenAsEmptyNames) {
  onnx::ModelProto model = make_model();
  auto* graph = model.mutable_graph();
  add_input(graph, "x", {2});
  add_node(graph, "Custom", {"x"}, {"", "b"}, "multi")->set_domain("com.example");
  add_output(graph, "b", {2});
  ImportOptions options;
  options.other_domains = true;
  onnx::ModelProto exported = to_onnx(import_onnx(model, "memory", options));
  ASSERT_EQ(exported.graph().node(0).output_size(), 2);
  EXPECT_EQ(exported.graph().node(0).output(0), "");
  EXPECT_EQ(exported.graph().node(0).output(1), "b");
}

TEST(OnnxExport, InitializerListedAsInputStaysBoth) {
  onnx::ModelProto model = make_model();
  model.set_ir_version(3);
  auto* graph = model.mutable_graph();
  add_input(graph, "x", {2});
  testing::add_float_initializer(graph, "w", {2});
  add_input(graph, "w", {2});
  add_node(graph, "Add", {"x", "w"}, {"y"});
  add_output(graph, "y", {2});
  onnx::ModelProto exported = to_onnx(import_onnx(model, "memory"));
  ASSERT_EQ(exported.graph().input_size(), 2);
  EXPECT_EQ(exported.graph().input(1).name(), "w");
  ASSERT_EQ(exported.graph().initializer_size(), 1);
  EXPECT_EQ(exported.graph().initializer(0).name(), "w");
}

TEST(OnnxExport, EveryAttributeKindRoundTrips) {
  onnx::ModelProto model = make_model();
  auto* import = model.add_opset_import();
  import->set_domain("com.example");
  import->set_version(1);
  auto* graph = model.mutable_graph();
  add_input(graph, "x", {2});
  auto* node = add_node(graph, "Everything", {"x"}, {"y"}, "all");
  node->set_domain("com.example");
  using P = onnx::AttributeProto;
  auto attribute = [&](const char* name, P::AttributeType type) {
    auto* a = node->add_attribute();
    a->set_name(name);
    a->set_type(type);
    return a;
  };
  attribute("f", P::FLOAT)->set_f(0.25f);
  attribute("i", P::INT)->set_i(-7);
  attribute("s", P::STRING)->set_s(std::string("bytes\0here", 10));
  auto* t = attribute("t", P::TENSOR)->mutable_t();
  t->set_data_type(onnx::TensorProto::INT64);
  t->add_dims(2);
  t->add_int64_data(5);
  t->add_int64_data(6);
  auto* g = attribute("g", P::GRAPH)->mutable_g();
  g->set_name("body");
  add_node(g, "Neg", {"x"}, {"negated"});
  add_output(g, "negated", {2});
  auto* sparse = attribute("sparse", P::SPARSE_TENSOR)->mutable_sparse_tensor();
  sparse->add_dims(4);
  sparse->mutable_values()->set_data_type(onnx::TensorProto::FLOAT);
  sparse->mutable_values()->add_dims(1);
  sparse->mutable_values()->add_float_data(1);
  sparse->mutable_indices()->set_data_type(onnx::TensorProto::INT64);
  sparse->mutable_indices()->add_dims(1);
  sparse->mutable_indices()->add_int64_data(2);
  attribute("tp", P::TYPE_PROTO)->mutable_tp()->mutable_tensor_type()->set_elem_type(7);
  auto* floats = attribute("fs", P::FLOATS);
  floats->add_floats(1);
  floats->add_floats(2);
  attribute("is", P::INTS)->add_ints(3);
  attribute("ss", P::STRINGS)->add_strings("word");
  auto* ts = attribute("ts", P::TENSORS)->add_tensors();
  ts->set_data_type(onnx::TensorProto::STRING);
  ts->add_string_data("only");
  auto* gs = attribute("gs", P::GRAPHS)->add_graphs();
  gs->set_name("other");
  add_node(gs, "Identity", {"x"}, {"same"});
  add_output(gs, "same", {2});
  *attribute("sparses", P::SPARSE_TENSORS)->add_sparse_tensors() = *sparse;
  attribute("tps", P::TYPE_PROTOS)->add_type_protos()->mutable_sequence_type();
  add_output(graph, "y", {2});

  ImportOptions options;
  options.other_domains = true;
  Graph first = import_onnx(model, "memory", options);
  onnx::ModelProto exported = to_onnx(first);
  const auto& out = exported.graph().node(0);
  ASSERT_EQ(out.attribute_size(), node->attribute_size());
  for (int i = 0; i < out.attribute_size(); ++i) {
    EXPECT_EQ(out.attribute(i).name(), node->attribute(i).name());
    EXPECT_EQ(out.attribute(i).type(), node->attribute(i).type());
  }
  EXPECT_EQ(out.attribute(2).s(), node->attribute(2).s());
  EXPECT_EQ(out.attribute(5).sparse_tensor().SerializeAsString(), sparse->SerializeAsString());
  Graph second = import_onnx(exported, "memory", options);
  std::string difference;
  EXPECT_TRUE(graphs_equal(first, second, &difference)) << difference;
}

TEST(OnnxExport, BodiesReadingOuterValuesRoundTrip) {
  const char* text = R"(graph g [ai.onnx=17] (%c: bool[], %x: f32[2]) {
  %y: f32[2] = If[else_branch=graph e [ai.onnx=17] () {
    %n: f32[2] = Neg(%x)
    return %n
  }, then_branch=graph t [ai.onnx=17] () {
    %p: f32[2] = Identity(%x)
    return %p
  }](%c)
  return %y
}
)";
  Graph original = parse_graph(text);
  onnx::ModelProto model = to_onnx(original);
  EXPECT_EQ(full_check_error(model), std::nullopt);
  Graph back = import_onnx(model, "memory");
  std::string difference;
  EXPECT_TRUE(graphs_equal(original, back, &difference)) << difference;
}

}  // namespace
}  // namespace cleave
