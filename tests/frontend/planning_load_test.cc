// Loading a model to plan it (load_for_planning): from the weights' sizes, with the fingerprint
// of the whole load, unless a pass needs a weight's bytes.
#include "frontend/planning_load.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "cost/cost_table.h"
#include "ir/text.h"
#include "onnx/onnx_export.h"
#include "passes/pass.h"

namespace cleave {
namespace {

// A Conv's and a MatMul's weights of 4 KiB and more that no pass rewrites (the bias Add is
// fused by reference).
const char* kPlain = R"(graph g [ai.onnx=13] (%x: f32[1,8,6,6]) {
  @w: f32[64,8,3,3]
  @fc: f32[64,1100]
  @bias: f32[1100]
  %c = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%x, @w)
  %r = Relu(%c)
  %p = GlobalAveragePool(%r)
  %f = Flatten(%p)
  %y = MatMul(%f, @fc)
  %z = Add(%y, @bias)
  return %z
}
)";

// The first Conv's 4.6 KB weights are folded with the BatchNormalization (new bytes); the
// second's 9.2 KB are not.
const char* kFolded = R"(graph g [ai.onnx=13] (%x: f32[1,8,6,6]) {
  @w: f32[16,8,3,3]
  @s: f32[16]
  @sh: f32[16]
  @m: f32[16]
  @v: f32[16]
  @w2: f32[16,16,3,3]
  %c = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%x, @w)
  %b = BatchNormalization(%c, @s, @sh, @m, @v)
  %c2 = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%b, @w2)
  return %c2
}
)";

// A Conv over a 1x1 map with a 3x3 kernel of 18 KB: dead-tap removal cuts it to its centre.
const char* kDeadTaps = R"(graph g [ai.onnx=13] (%x: f32[1,8,1,1]) {
  @w: f32[64,8,3,3]
  %c = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%x, @w)
  %r = Relu(%c)
  return %r
}
)";

// A transposed 4.4 KB weight: constant folding makes its transpose.
const char* kTransposed = R"(graph g [ai.onnx=13] (%x: f32[1,1100]) {
  @fc: f32[1100,1]
  %t = Transpose[perm=[1,0]](@fc)
  %y = MatMul(%x, @fc)
  %z = Mul(%y, %t)
  return %z
}
)";

// A 4.4 KB weight scaled by a constant: constant folding multiplies it.
const char* kScaled = R"(graph g [ai.onnx=13] (%x: f32[1,1100]) {
  @fc: f32[1100,1]
  @two: f32[1]
  %s = Mul(@fc, @two)
  %y = MatMul(%x, %s)
  return %y
}
)";

// An int8 Conv in QDQ form with 4.6 KB of per-channel int8 weights: the fusion reads their
// type and dims only.
const char* kInt8 = R"(graph g [ai.onnx=13] (%x: f32[1,8,6,6]) {
  @xs: f32[]
  @xz: u8[]
  @w: i8[64,8,3,3]
  @ws: f32[64]
  @ys: f32[]
  @yz: u8[]
  %xq = QuantizeLinear(%x, @xs, @xz)
  %xf = DequantizeLinear(%xq, @xs, @xz)
  %wf = DequantizeLinear[axis=0](@w, @ws)
  %c = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%xf, %wf)
  %yq = QuantizeLinear(%c, @ys, @yz)
  %y = DequantizeLinear(%yq, @ys, @yz)
  return %y
}
)";

class PlanningLoad : public ::testing::Test {
 protected:
  void TearDown() override {
    if (!path_.empty()) std::filesystem::remove(path_);
  }

  // Writes `text` as an ONNX file, every weight filled with small positive values.
  void write(const char* text) {
    Graph graph = parse_graph(text);
    for (ValueId id : graph.initializers()) {
      TensorData& data = *graph.value(id).initializer;
      auto bytes = std::make_shared<std::vector<std::byte>>(
          static_cast<std::size_t>(data.element_count()) * element_size(data.dtype));
      if (data.dtype == DataType::kFloat) {
        for (std::size_t i = 0; i < bytes->size() / sizeof(float); ++i) {
          const float value = 0.5f + 0.125f * static_cast<float>(i % 7);
          std::memcpy(bytes->data() + i * sizeof(float), &value, sizeof(float));
        }
      } else {
        for (std::size_t i = 0; i < bytes->size(); ++i) (*bytes)[i] = std::byte(i % 5);
      }
      data.bytes = std::move(bytes);
    }
    path_ = (std::filesystem::temp_directory_path() /
             ("cleave_planning_load_" + std::to_string(::getpid()) + "_" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".onnx"))
                .string();
    export_onnx(graph, path_);
  }

  // No weight of 4 KiB or more holds bytes.
  static void expect_no_large_bytes(const Graph& graph) {
    for (ValueId id : graph.initializers()) {
      const auto& bytes = graph.value(id).initializer->bytes;
      EXPECT_FALSE(bytes && bytes->size() >= 4096) << graph.value(id).name;
    }
  }

  std::string path_;
};

TEST_F(PlanningLoad, WeightsNoPassRewritesStayInTheFileAndAreHashedAsLoadedWhole) {
  write(kPlain);
  const PlanningModel model = load_for_planning(path_, {});
  const Graph whole = load_model(path_);
  EXPECT_FALSE(model.loaded_whole);
  EXPECT_TRUE(model.weights_read.empty());
  EXPECT_EQ(print_graph(model.graph, 0), print_graph(whole, 0));
  EXPECT_EQ(model.fingerprint, graph_fingerprint(whole));
  expect_no_large_bytes(model.graph);
}

TEST_F(PlanningLoad, AnInt8ModelIsFusedFromItsWeightsSizes) {
  write(kInt8);
  const PlanningModel model = load_for_planning(path_, {});
  const Graph whole = load_model(path_);
  EXPECT_FALSE(model.loaded_whole);
  EXPECT_TRUE(model.weights_read.empty());
  EXPECT_NE(print_graph(whole, 0).find("QLinearConv"), std::string::npos);
  EXPECT_EQ(print_graph(model.graph, 0), print_graph(whole, 0));
  EXPECT_EQ(model.fingerprint, graph_fingerprint(whole));
  expect_no_large_bytes(model.graph);
}

TEST_F(PlanningLoad, AWeightFoldedWithABatchNormIsMadeOnlyToBeHashed) {
  write(kFolded);
  const PlanningModel model = load_for_planning(path_, {});
  const Graph whole = load_model(path_);
  EXPECT_FALSE(model.loaded_whole);
  EXPECT_TRUE(model.weights_read.empty());
  EXPECT_EQ(model.weights_rewritten_when_hashed, (std::vector<std::string>{"w", "w_fused_bias"}));
  EXPECT_EQ(print_graph(model.graph, 0), print_graph(whole, 0));
  EXPECT_EQ(model.fingerprint, graph_fingerprint(whole));
  expect_no_large_bytes(model.graph);
}

TEST_F(PlanningLoad, AKernelCutToItsLiveTapsIsMadeOnlyToBeHashed) {
  write(kDeadTaps);
  const PlanningModel model = load_for_planning(path_, {});
  const Graph whole = load_model(path_);
  EXPECT_FALSE(model.loaded_whole);
  EXPECT_TRUE(model.weights_read.empty());
  EXPECT_EQ(model.weights_rewritten_when_hashed, std::vector<std::string>{"w"});
  EXPECT_NE(print_graph(whole, 0).find("f32[64,8,1,1]"), std::string::npos);
  EXPECT_EQ(print_graph(model.graph, 0), print_graph(whole, 0));
  EXPECT_EQ(model.fingerprint, graph_fingerprint(whole));
  expect_no_large_bytes(model.graph);
}

TEST_F(PlanningLoad, AWeightsTransposeIsMadeOnlyToBeHashed) {
  write(kTransposed);
  const PlanningModel model = load_for_planning(path_, {});
  const Graph whole = load_model(path_);
  EXPECT_FALSE(model.loaded_whole);
  EXPECT_TRUE(model.weights_read.empty());
  EXPECT_EQ(model.weights_rewritten_when_hashed, std::vector<std::string>{"t"});
  EXPECT_EQ(print_graph(model.graph, 0), print_graph(whole, 0));
  EXPECT_EQ(model.fingerprint, graph_fingerprint(whole));
  expect_no_large_bytes(model.graph);
}

TEST_F(PlanningLoad, AWeightScaledByFoldingIsRead) {
  // A product is not a move of the weight's elements: the weight is read to fold it.
  write(kScaled);
  const PlanningModel model = load_for_planning(path_, {});
  const Graph whole = load_model(path_);
  EXPECT_FALSE(model.loaded_whole);
  EXPECT_EQ(model.weights_read, std::vector<std::string>{"fc"});
  EXPECT_EQ(print_graph(model.graph, 0), print_graph(whole, 0));
  EXPECT_EQ(model.fingerprint, graph_fingerprint(whole));
}

TEST_F(PlanningLoad, AMissingModelIsAnErrorNamingIt) {
  try {
    load_for_planning("/nonexistent/cleave_planning_load.onnx", {});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/cleave_planning_load.onnx"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace cleave
