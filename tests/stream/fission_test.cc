// Fission of a row-wise filter into round-robin copies: same rows out, refusals named.
#include "stream/fission.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "stream/builder.h"
#include "stream/executor.h"
#include "stream/schedule.h"
#include "stream/stream_text.h"
#include "test_models.h"

namespace cleave {
namespace {

Stream linear_filter(int64_t rows) {
  Stream f;
  f.name = "lin";
  f.op = FilterOp::kModel;
  f.pop = f.peek = f.push = rows;
  f.graph = testing::linear_model(rows, 4, 3);
  return f;
}

// Rows of one tensor, as views (as `cleave stream run` cuts an npy file).
std::vector<Tensor> rows(int64_t count, int64_t k) {
  Tensor all = Tensor::allocate(DataType::kFloat, {count, k});
  for (int64_t i = 0; i < count * k; ++i) all.data<float>()[i] = std::sin(0.1f * i);
  std::vector<Tensor> out;
  for (int64_t r = 0; r < count; ++r) {
    out.push_back(Tensor::view(DataType::kFloat, {k}, all.storage(), r * k * sizeof(float)));
  }
  return out;
}

TEST(StreamFission, SplitsIntoRoundRobinCopies) {
  const Stream sj = fission_filter(linear_filter(8), 2, 2);
  EXPECT_EQ(print_stream(sj),
            "splitjoin lin_fission {\n"
            "  split roundrobin(2, 2);\n"
            "  filter lin_0(pop 2, peek 2, push 2) model \"<graph>\";\n"
            "  filter lin_1(pop 2, peek 2, push 2) model \"<graph>\";\n"
            "  join roundrobin(2, 2);\n"
            "}\n");
  EXPECT_EQ(sj.streams[0].graph->value(sj.streams[0].graph->inputs()[0]).shape, Shape::of({2, 4}));
  const StreamGraph g = flatten_stream(sj);
  EXPECT_EQ(schedule_stream(g, "x").input_per_iteration, 4);
}

TEST(StreamFission, CopiesComputeTheSameRows) {
  const std::vector<Tensor> input = rows(32, 4);
  const StreamRunResult whole =
      run_stream({linear_filter(8), "whole"}, input, testing::on_workers(1));
  const StreamRunResult split =
      run_stream({fission_filter(linear_filter(8), 2, 2), "split"}, input, testing::on_workers(2));
  ASSERT_EQ(whole.outputs.size(), 32u);
  ASSERT_EQ(split.outputs.size(), 32u);
  for (std::size_t r = 0; r < 32; ++r) {
    for (int j = 0; j < 3; ++j) {
      // Different row counts may block the GEMM differently: equal up to rounding.
      EXPECT_NEAR(split.outputs[r].values<float>()[j], whole.outputs[r].values<float>()[j], 1e-5);
    }
  }
}

// On one worker the copies share one executor (the same re-shaped graph): still every row.
TEST(StreamFission, CopiesOnOneWorkerShareAnExecutorAndComputeTheSameRows) {
  const std::vector<Tensor> input = rows(32, 4);
  const StreamRunResult whole =
      run_stream({linear_filter(8), "whole"}, input, testing::on_workers(1));
  const StreamRunResult split =
      run_stream({fission_filter(linear_filter(8), 4, 2), "split"}, input, testing::on_workers(1));
  ASSERT_EQ(split.outputs.size(), 32u);
  for (std::size_t r = 0; r < 32; ++r) {
    for (int j = 0; j < 3; ++j) {
      EXPECT_NEAR(split.outputs[r].values<float>()[j], whole.outputs[r].values<float>()[j], 1e-5);
    }
  }
}

TEST(StreamFission, PeekingFilterIsRefused) {
  Stream f = linear_filter(8);
  f.pop = 4;
  try {
    fission_filter(f, 2, 2);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("filter \"lin\": it peeks 8 but pops 4"));
  }
}

}  // namespace
}  // namespace cleave
