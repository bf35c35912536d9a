// The load recipe: --shape parsing, fixing input dims, re-inferring shapes, and load_model.
#include "frontend/load.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "ir/text.h"
#include "onnx/onnx_export.h"

namespace cleave {
namespace {

using ::testing::HasSubstr;

// A batch dim named N: the model runs only once --shape fixes it.
const char* kSymbolicBatch = R"(graph g [ai.onnx=13] (%x: f32[N,3,4,4]) {
  @w: f32[2,3,1,1]
  %c = Conv[kernel_shape=[1,1]](%x, @w)
  %i = Identity(%c)
  %r = Relu(%i)
  return %r
}
)";

// The model with its weights filled in, as an exported model needs them.
Graph symbolic_batch_model() {
  Graph graph = parse_graph(kSymbolicBatch);
  for (ValueId id : graph.initializers()) {
    TensorData& data = *graph.value(id).initializer;
    std::vector<float> values(static_cast<std::size_t>(data.element_count()), 0.5f);
    data = TensorData::from(DataType::kFloat, data.dims, values);
  }
  return graph;
}

std::string error_of(const std::function<void()>& work) {
  try {
    work();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(ParseInputShapes, ReadsNamesAndDims) {
  const InputShapes shapes = parse_input_shapes({"x=1,3,224,224", "mask=8"});
  ASSERT_EQ(shapes.size(), 2u);
  EXPECT_EQ(shapes[0].first, "x");
  EXPECT_EQ(shapes[0].second, (std::vector<int64_t>{1, 3, 224, 224}));
  EXPECT_EQ(shapes[1].first, "mask");
  EXPECT_EQ(shapes[1].second, (std::vector<int64_t>{8}));
}

TEST(ParseInputShapes, NameMayContainAnEqualsSign) {
  const InputShapes shapes = parse_input_shapes({"a=b=2,2"});
  EXPECT_EQ(shapes[0].first, "a=b");
  EXPECT_EQ(shapes[0].second, (std::vector<int64_t>{2, 2}));
}

TEST(ParseInputShapes, RefusesMalformedSettingsNamingThem) {
  EXPECT_THAT(error_of([] { parse_input_shapes({"x"}); }), HasSubstr("'x': expected name=d0"));
  EXPECT_THAT(error_of([] { parse_input_shapes({"=1,2"}); }), HasSubstr("expected name=d0"));
  EXPECT_THAT(error_of([] { parse_input_shapes({"x=1,-3"}); }),
              HasSubstr("'x=1,-3': dims must be non-negative integers"));
  EXPECT_THAT(error_of([] { parse_input_shapes({"x=1;3"}); }),
              HasSubstr("expected ',' between dims"));
  EXPECT_THAT(error_of([] { parse_input_shapes({"x=1,,3"}); }),
              HasSubstr("dims must be non-negative integers"));
}

TEST(SetInputShapes, FixesASymbolicDim) {
  Graph graph = parse_graph(kSymbolicBatch);
  set_input_shapes(graph, {{"x", {2, 3, 4, 4}}}, "m.onnx");
  EXPECT_EQ(print_type(graph.value(graph.inputs()[0]).dtype, graph.value(graph.inputs()[0]).shape),
            "f32[2,3,4,4]");
}

TEST(SetInputShapes, RefusesAnUnknownInputListingTheInputs) {
  Graph graph = parse_graph(kSymbolicBatch);
  EXPECT_THAT(error_of([&] {
                set_input_shapes(graph, {{"y", {1}}}, "m.onnx");
              }),
              HasSubstr("m.onnx: --shape names 'y', which is not an input; inputs are: x"));
}

TEST(SetInputShapes, RefusesAnInitializerAsInput) {
  Graph graph = parse_graph(kSymbolicBatch);
  EXPECT_THAT(error_of([&] {
                set_input_shapes(graph, {{"w", {2, 3, 1, 1}}}, "m.onnx");
              }),
              HasSubstr("--shape names 'w', which is not an input"));
}

TEST(SetInputShapes, RefusesAnotherRank) {
  Graph graph = parse_graph(kSymbolicBatch);
  EXPECT_THAT(error_of([&] {
                set_input_shapes(graph, {{"x", {1, 3}}}, "m.onnx");
              }),
              HasSubstr("input 'x' has rank 4 (f32[N,3,4,4]), --shape gives 2 dims"));
}

TEST(SetInputShapes, RefusesToChangeADimTheModelFixes) {
  Graph graph = parse_graph(kSymbolicBatch);
  EXPECT_THAT(error_of([&] {
                set_input_shapes(graph, {{"x", {1, 5, 4, 4}}}, "m.onnx");
              }),
              HasSubstr("input 'x' dim 1 is fixed to 3 by the model, --shape gives 5"));
}

TEST(InferShapes, IntermediateShapesFollowTheNewInputDims) {
  Graph graph = symbolic_batch_model();
  set_input_shapes(graph, {{"x", {5, 3, 4, 4}}}, "m.onnx");
  infer_shapes(graph, "m.onnx");
  const Value& c = graph.value(*graph.find_value("c"));
  EXPECT_EQ(print_type(c.dtype, c.shape), "f32[5,2,4,4]");
  const Value& r = graph.value(*graph.find_value("r"));
  EXPECT_EQ(print_type(r.dtype, r.shape), "f32[5,2,4,4]");
}

class LoadModel : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (std::filesystem::temp_directory_path() /
             ("cleave_load_test_" + std::to_string(::getpid()) + "_" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".onnx"))
                .string();
    export_onnx(symbolic_batch_model(), path_);
  }
  void TearDown() override { std::filesystem::remove(path_); }
  std::string path_;
};

TEST_F(LoadModel, SymbolicInputIsRefusedWithTheShapeOptionToFixIt) {
  EXPECT_THAT(error_of([&] { load_model(path_); }),
              HasSubstr("input 'x' has symbolic or unknown dims (f32[N,3,4,4]); fix them with "
                        "--shape x=<d0,d1,...>"));
}

TEST_F(LoadModel, ShapeOptionFixesInputsAndEachStepIsLogged) {
  LoadOptions options;
  options.shapes = parse_input_shapes({"x=2,3,4,4"});
  std::vector<std::string> log;
  options.log = [&](const std::string& line) { log.push_back(line); };
  const Graph graph = load_model(path_, options);
  const Value& r = graph.value(*graph.find_value("r"));
  EXPECT_EQ(print_type(r.dtype, r.shape), "f32[2,2,4,4]");
  EXPECT_EQ(graph.node_count(), 1u);  // the Identity is gone, the Relu fused into the Conv
  ASSERT_GE(log.size(), 3u);
  EXPECT_THAT(log.front(), HasSubstr("import: 3 nodes, 1 initializers"));
  EXPECT_THAT(log[1], HasSubstr("shapes: fixed 1 input(s)"));
  EXPECT_THAT(log.back(), HasSubstr("ready: 1 nodes"));
}

TEST_F(LoadModel, WithoutStaticInputsRequiredTheSymbolicDimStays) {
  LoadOptions options;
  options.require_static_inputs = false;
  options.optimize = false;
  const Graph graph = load_model(path_, options);
  EXPECT_EQ(graph.node_count(), 3u);
  EXPECT_FALSE(graph.value(graph.inputs()[0]).shape.is_static());
}

// x.chunk(2) as torch exports it: the Slice's end is computed from the input's shape, which
// import's inference cannot evaluate; once folding makes it a constant, the Slice's output
// shape is inferred again (MPI ranks need static shapes for every value they send).
TEST(LoadModelFolded, ShapesThatFoldingMakesComputableAreInferred) {
  Graph graph = parse_graph(R"(graph g [ai.onnx=13] (%x: f32[1,8,4,4]) {
  @channel: i64[1] = [1]
  @two: i64[1] = [2]
  @zero: i64[1] = [0]
  %s = Shape(%x)
  %c = Gather[axis=0](%s, @channel)
  %half = Div(%c, @two)
  %y = Slice(%x, @zero, %half, @channel)
  %z = Relu(%y)
  return %z
}
)");
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("cleave_load_folded_" + std::to_string(::getpid()) + ".onnx"))
                               .string();
  export_onnx(graph, path);
  LoadOptions unoptimized;
  unoptimized.optimize = false;
  const Graph as_imported = load_model(path, unoptimized);
  EXPECT_FALSE(as_imported.value(*as_imported.find_value("y")).shape.is_static());
  std::vector<std::string> log;
  LoadOptions options;
  options.log = [&](const std::string& line) { log.push_back(line); };
  const Graph loaded = load_model(path, options);
  std::filesystem::remove(path);
  for (const char* name : {"y", "z"}) {
    const Value& value = loaded.value(*loaded.find_value(name));
    EXPECT_EQ(print_type(value.dtype, value.shape), "f32[1,4,4,4]") << name;
  }
  EXPECT_THAT(::testing::PrintToString(log), HasSubstr("shapes: 2 more made static after folding"));
}

// Swin's window padding: pads computed from the input's shape, then a reshape by the padded
// shape. Each fold makes the next shape inferable and each inference the next fold possible.
TEST(LoadModelFolded, ShapesAndFoldingAlternateUntilEveryShapeIsStatic) {
  Graph graph = parse_graph(R"(graph g [ai.onnx=13] (%x: f32[1,5,6]) {
  @one: i64[1] = [1]
  @two: i64[1] = [2]
  @four: i64[1] = [4]
  @zero: i64[1] = [0]
  @last: i64[1] = [6]
  %s = Shape(%x)
  %w = Gather[axis=0](%s, @one)
  %r = Mod(%w, @four)
  %extra = Sub(@four, %r)
  %pads = Concat[axis=0](@zero, @zero, @zero, @zero, %extra, @zero)
  %padded = Pad(%x, %pads)
  %s2 = Shape(%padded)
  %h = Gather[axis=0](%s2, @one)
  %half = Div(%h, @two)
  %shape = Concat[axis=0](@two, %half, @last)
  %y = Reshape(%padded, %shape)
  %z = Relu(%y)
  return %z
}
)");
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("cleave_load_rounds_" + std::to_string(::getpid()) + ".onnx"))
                               .string();
  export_onnx(graph, path);
  std::vector<std::string> log;
  LoadOptions options;
  options.log = [&](const std::string& line) { log.push_back(line); };
  const Graph loaded = load_model(path, options);
  std::filesystem::remove(path);
  for (auto [name, type] : {std::pair{"padded", "f32[1,8,6]"}, std::pair{"z", "f32[2,4,6]"}}) {
    const Value& value = loaded.value(*loaded.find_value(name));
    EXPECT_EQ(print_type(value.dtype, value.shape), type) << name;
  }
  EXPECT_THAT(::testing::PrintToString(log), HasSubstr("(2 rounds;"));
  for (NodeId id : loaded.node_ids()) EXPECT_NE(loaded.node(id).op_type, "Shape");
}

// QDQ fusion's com.microsoft.QGemm on a reshape whose shape folding computes: the QGemm's
// shape closes by its formula and ONNX's inference goes on from it (it keeps the declared
// shapes of other domains' outputs), so the values after it are static too. Before, they stayed
// without a rank, and transformer_decoder_int8's layer normalizations went unfused.
TEST(LoadModelFolded, ShapesAfterAQGemmAreInferred) {
  Graph graph = parse_graph(R"(graph g [ai.onnx=13, com.microsoft=1] (%x: u8[2,2,4]) {
  @zero: i64[1] = [0]
  @two: i64[1] = [2]
  @four: i64[1] = [4]
  @s: f32[] = [0.5]
  @z: u8[] = [3]
  @w: i8[4,3] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]
  @wz: i8[] = [0]
  @bias: i32[3] = [1, 2, 3]
  %shape_of = Shape(%x)
  %batch = Gather[axis=0](%shape_of, @zero)
  %rows = Mul(%batch, @two)
  %shape = Concat[axis=0](%rows, @four)
  %a = Reshape(%x, %shape)
  %q = com.microsoft.QGemm(%a, @s, @z, @w, @s, @wz, @bias, @s, @z)
  %d = DequantizeLinear(%q, @s, @z)
  %y = Relu(%d)
  return %y
}
)");
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("cleave_load_qgemm_" + std::to_string(::getpid()) + ".onnx"))
                               .string();
  export_onnx(graph, path);
  const Graph loaded = load_model(path);
  std::filesystem::remove(path);
  for (auto [name, type] : {std::pair{"q", "u8[4,3]"}, std::pair{"d", "f32[4,3]"}}) {
    const Value& value = loaded.value(*loaded.find_value(name));
    EXPECT_EQ(print_type(value.dtype, value.shape), type) << name;
  }
}

// What `cleave optimize` writes for a QDQ Add (com.microsoft's QLinearAdd, which cleave runs)
// loads again; another domain's operator without a kernel is still refused.
std::string contrib_model_path(const std::string& op_type) {
  const std::string text =
      "graph main [ai.onnx=13, com.microsoft=1] (%a: u8[1,2,2], %b: "
      "u8[1,2,2]) {\n"
      "  @as: f32[] = [0.5]\n  @az: u8[] = [3]\n"
      "  @bs: f32[] = [0.25]\n  @bz: u8[] = [7]\n"
      "  @ys: f32[] = [0.2]\n  @yz: u8[] = [0]\n"
      "  %y = \"add\" com.microsoft." +
      op_type +
      "(%a, @as, @az, %b, @bs, @bz, @ys, @yz)\n"
      "  return %y\n}\n";
  const std::string path =
      (std::filesystem::temp_directory_path() /
       ("cleave_load_contrib_" + std::to_string(::getpid()) + op_type + ".onnx"))
          .string();
  export_onnx(parse_graph(text), path);
  return path;
}

TEST(LoadContribOps, AnOperatorOfAnotherDomainThatCleaveRunsLoads) {
  const std::string path = contrib_model_path("QLinearAdd");
  const Graph loaded = load_model(path);
  std::filesystem::remove(path);
  ASSERT_EQ(loaded.node_count(), 1u);
  const Node& node = loaded.node(loaded.topological_order().front());
  EXPECT_EQ(node.domain, "com.microsoft");
  EXPECT_EQ(node.op_type, "QLinearAdd");
}

TEST(LoadContribOps, AnOperatorOfAnotherDomainWithoutAKernelIsRefused) {
  const std::string path = contrib_model_path("QLinearAddition");
  const std::string error = error_of([&] { load_model(path); });
  std::filesystem::remove(path);
  EXPECT_THAT(
      error,
      HasSubstr("(QLinearAddition): the operator of domain 'com.microsoft' is not supported"));
}

}  // namespace
}  // namespace cleave
