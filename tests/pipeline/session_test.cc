// The session: one model loaded once, prepared per input shape (cached, bounded), run from threads.
#include "pipeline/session.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "ir/text.h"
#include "onnx/onnx_export.h"
#include "runtime/random_inputs.h"

namespace cleave {
namespace {

using ::testing::HasSubstr;

// A batch dim named N: each batch size given is prepared once.
const char* kSymbolicBatch = R"(graph g [ai.onnx=13] (%x: f32[N,3,4,4]) {
  @w: f32[2,3,1,1]
  %c = Conv[kernel_shape=[1,1]](%x, @w)
  %r = Relu(%c)
  return %r
}
)";

Graph symbolic_batch_model() {
  Graph graph = parse_graph(kSymbolicBatch);
  for (ValueId id : graph.initializers()) {
    TensorData& data = *graph.value(id).initializer;
    std::vector<float> values(static_cast<std::size_t>(data.element_count()), 0.5f);
    data = TensorData::from(DataType::kFloat, data.dims, values);
  }
  return graph;
}

Tensor batch_of(int64_t n, float value) {
  std::vector<float> values(static_cast<std::size_t>(n * 3 * 4 * 4), value);
  return Tensor::from_data(TensorData::from(DataType::kFloat, {n, 3, 4, 4}, values));
}

std::string error_of(const std::function<void()>& work) {
  try {
    work();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

class SessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (std::filesystem::temp_directory_path() /
             ("cleave_session_test_" + std::to_string(::getpid()) + "_" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".onnx"))
                .string();
    export_onnx(symbolic_batch_model(), path_);
  }
  void TearDown() override { std::filesystem::remove(path_); }
  SessionOptions options() const {
    SessionOptions options;
    options.recipe.layouts = "blocked";  // No layout measurement: these tests time nothing.
    return options;
  }
  std::string path_;
};

TEST_F(SessionTest, ModelKeepsItsSymbolicDims) {
  Session session(path_, options());
  const Value& x = session.model().value(session.model().inputs().front());
  EXPECT_EQ(print_type(x.dtype, x.shape), "f32[N,3,4,4]");
  EXPECT_EQ(session.prepared_count(), 0u);
}

TEST_F(SessionTest, EachNewBatchIsPreparedOnceAndOutputsFollowIt) {
  Session session(path_, options());
  // Each output is relu(sum over 3 channels of 0.5 * x) = 1.5 * x.
  std::vector<Tensor> one = session.run({{"x", batch_of(1, 2.0f)}});
  std::vector<Tensor> four = session.run({{"x", batch_of(4, 1.0f)}});
  std::vector<Tensor> again = session.run({{"x", batch_of(1, 2.0f)}});
  EXPECT_EQ(one[0].shape(), (std::vector<int64_t>{1, 2, 4, 4}));
  EXPECT_EQ(four[0].shape(), (std::vector<int64_t>{4, 2, 4, 4}));
  EXPECT_FLOAT_EQ(one[0].to_double_vector()[0], 3.0);
  EXPECT_FLOAT_EQ(four[0].to_double_vector().back(), 1.5);
  EXPECT_EQ(again[0].to_double_vector(), one[0].to_double_vector());
  ASSERT_EQ(session.events().size(), 2u);
  EXPECT_EQ(session.events()[0].what, "prepared x=[1,3,4,4]");
  EXPECT_EQ(session.events()[1].what, "prepared x=[4,3,4,4]");
}

// Its only shape prepared, the session keeps the model's inputs and outputs, not its nodes: the
// executor's graph is the one that runs.
TEST_F(SessionTest, AModelOfOneShapeKeepsOnlyItsInputsAndOutputsOncePrepared) {
  SessionOptions fixed = options();
  fixed.load.shapes = {{"x", {2, 3, 4, 4}}};
  Session session(path_, fixed);
  EXPECT_EQ(session.model().node_count(), 2u);
  std::vector<Tensor> first = session.run({{"x", batch_of(2, 2.0f)}});
  EXPECT_EQ(session.model().node_count(), 0u);
  EXPECT_TRUE(session.model().initializers().empty());
  ASSERT_EQ(session.model().inputs().size(), 1u);
  ASSERT_EQ(session.model().outputs().size(), 1u);
  const Value& x = session.model().value(session.model().inputs().front());
  const Value& r = session.model().value(session.model().outputs().front());
  EXPECT_EQ(x.name + " " + print_type(x.dtype, x.shape), "x f32[2,3,4,4]");
  EXPECT_EQ(r.name + " " + print_type(r.dtype, r.shape), "r f32[2,2,4,4]");
  EXPECT_EQ(session.run({{"x", batch_of(2, 2.0f)}})[0].to_double_vector(),
            first[0].to_double_vector());
  EXPECT_THAT(error_of([&] {
                session.run({{"y", batch_of(2, 2.0f)}});
              }),
              HasSubstr("no input is named 'y'; inputs are: x"));
  EXPECT_EQ(session.events().size(), 1u);
}

TEST_F(SessionTest, PreparedShapesAreBounded) {
  SessionOptions bounded = options();
  bounded.max_prepared_shapes = 2;
  Session session(path_, bounded);
  for (int64_t n : {1, 2, 3, 1}) session.run({{"x", batch_of(n, 1.0f)}});
  EXPECT_EQ(session.prepared_count(), 2u);
  EXPECT_EQ(session.events().size(), 4u);  // batch 1 was dropped by batch 3, then prepared again
}

TEST_F(SessionTest, ShapeOptionFixesTheDimForEveryRun) {
  SessionOptions fixed = options();
  fixed.load.shapes = {{"x", {2, 3, 4, 4}}};
  Session session(path_, fixed);
  EXPECT_EQ(session.shapes_of({{"x", batch_of(2, 1.0f)}}).size(), 0u);
  EXPECT_THAT(error_of([&] { session.run({{"x", batch_of(3, 1.0f)}}); }), HasSubstr("'x'"));
}

TEST_F(SessionTest, ContradictedDimNamesTheInput) {
  Session session(path_, options());
  std::vector<float> values(2 * 5 * 4 * 4, 1.0f);
  Tensor wrong = Tensor::from_data(TensorData::from(DataType::kFloat, {2, 5, 4, 4}, values));
  EXPECT_THAT(error_of([&] {
                session.run({{"x", wrong}});
              }),
              HasSubstr("input 'x' dim 1 is fixed to 3 by the model, the value given has 5"));
  EXPECT_EQ(session.prepared_count(), 0u);
}

TEST_F(SessionTest, UnknownInputIsRefusedWithTheInputsListed) {
  Session session(path_, options());
  EXPECT_THAT(error_of([&] {
                session.run({{"y", batch_of(1, 1.0f)}});
              }),
              HasSubstr("no input is named 'y'; inputs are: x"));
}

TEST_F(SessionTest, ModelFromBytesRunsAsFromItsFile) {
  std::ifstream in(path_, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  std::unique_ptr<Session> session = Session::from_bytes(bytes.str(), "<bytes>", options());
  EXPECT_EQ(session->origin(), "<bytes>");
  EXPECT_FLOAT_EQ(session->run({{"x", batch_of(1, 2.0f)}})[0].to_double_vector()[0], 3.0);
}

TEST_F(SessionTest, ThreadsRunOneSessionAtOnce) {
  Session session(path_, options());
  std::vector<std::vector<double>> results(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        results[t] = session.run({{"x", batch_of(1 + t % 2, float(t + 1))}})[0].to_double_vector();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < 4; ++t) EXPECT_DOUBLE_EQ(results[t][0], 1.5 * (t + 1));
  EXPECT_EQ(session.prepared_count(), 2u);
}

}  // namespace
}  // namespace cleave
