// Each node's intra-op team: small nodes on one thread, big products on every thread given.
#include "runtime/intra_op_team.h"

#include <fmt/core.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <omp.h>

#include <string>
#include <vector>

#include "bitwise_equal.h"
#include "ir/text.h"
#include "runtime/executor.h"
#include "runtime/kernels/math/quantize_util.h"
#include "runtime/node_runner.h"
#include "runtime/random_inputs.h"
#include "runtime/wait_policy.h"
#include "text_numbers.h"

namespace cleave {
namespace {

NodeId producer(const Graph& graph, const std::string& value) {
  return graph.value(*graph.find_value(value)).producer;
}

// The team NodeRunner prepares the producer of `value` with, given `threads`; graph inputs
// get seeded values, initializers their data.
int prepared_team(const Graph& graph, const std::string& value, int threads) {
  const NodeId id = producer(graph, value);
  const Node& node = graph.node(id);
  const SampleInputs given = random_inputs(graph, 1);
  std::vector<Tensor> tensors;
  std::vector<bool> constant;
  tensors.reserve(node.inputs.size());
  for (ValueId input : node.inputs) {
    const Value& v = graph.value(input);
    constant.push_back(v.initializer.has_value());
    tensors.push_back(v.initializer
                          ? Tensor::borrow(v.dtype, v.shape.sizes(), v.initializer->bytes->data())
                          : given.at(v.name));
  }
  std::vector<const Tensor*> inputs;
  for (const Tensor& tensor : tensors) inputs.push_back(&tensor);
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  BufferPool pool;
  NodeRunner runner(graph, id, /*blocked_outputs_allowed=*/false);
  std::vector<Tensor> outputs;
  runner.run(inputs, constant, outputs, pool, engine, stream, threads);
  stream.wait();
  return runner.team();
}

TEST(IntraOpTeam, ATinyAddRunsOnOneThreadOfTwo) {
  const Graph graph = parse_graph(R"(graph main [ai.onnx=17] (%a: f32[1,16], %b: f32[1,16]) {
  %y: f32[1,16] = Add(%a, %b)
  return %y
})");
  EXPECT_EQ(prepared_team(graph, "y", 2), 1);
}

TEST(IntraOpTeam, ABigConvUsesEveryThreadGiven) {
  // 2 * 9216 weights * 56 * 56 pixels: 58 million FLOPs, 57 threads' worth.
  const Graph graph = parse_graph(fmt::format(R"(graph main [ai.onnx=17] (%x: f32[1,32,56,56]) {{
  @w: f32[32,32,3,3] = [{}]
  %y: f32[1,32,56,56] = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%x, @w)
  return %y
}})",
                                              text_numbers(32 * 32 * 9, 1)));
  EXPECT_EQ(prepared_team(graph, "y", 2), 2);
  EXPECT_EQ(prepared_team(graph, "y", 4), 4);
}

TEST(IntraOpTeam, AStridedConvCountsItsOutputPixelsOnly) {
  const Graph graph = parse_graph(fmt::format(R"(graph main [ai.onnx=17] (%x: f32[1,8,32,32]) {{
  @w: f32[8,8,3,3] = [{}]
  %y: f32[1,8,16,16] = Conv[kernel_shape=[3,3], pads=[1,1,1,1], strides=[2,2]](%x, @w)
  return %y
}})",
                                              text_numbers(8 * 8 * 9, 2)));
  const NodeId id = producer(graph, "y");
  const Tensor x = Tensor::allocate(DataType::kFloat, {1, 8, 32, 32});
  const Tensor w = Tensor::allocate(DataType::kFloat, {8, 8, 3, 3});
  const std::vector<const Tensor*> inputs{&x, &w};
  // 2 * 576 weights * 16 * 16 output pixels.
  EXPECT_DOUBLE_EQ(node_work(graph.node(id), inputs).flops, 2.0 * 576 * 256);
}

TEST(IntraOpTeam, QLinearConvReadsItsWeightAtInputThreeAndCountsAsInteger) {
  Node node;
  node.op_type = "QLinearConv";
  const Tensor x = Tensor::allocate(DataType::kUInt8, {1, 16, 10, 10});
  const Tensor w = Tensor::allocate(DataType::kInt8, {4, 16, 1, 1});
  const Tensor scale = Tensor::allocate(DataType::kFloat, {});
  const Tensor zero = Tensor::allocate(DataType::kUInt8, {});
  const std::vector<const Tensor*> inputs{&x, &scale, &zero, &w, &scale, &zero};
  const NodeWork work = node_work(node, inputs);
  EXPECT_DOUBLE_EQ(work.flops, 2.0 * 64 * 100);
  EXPECT_TRUE(work.integer);
}

TEST(IntraOpTeam, IntegerOpsCountMoreWithoutVnniWhereTheThreadsSpin) {
  EXPECT_EQ(integer_ops_per_thread(true, true), kIntraOpIntegerOpsPerThread);
  EXPECT_EQ(integer_ops_per_thread(true, false), kIntraOpIntegerOpsPerThread);
  EXPECT_EQ(integer_ops_per_thread(false, true), kIntraOpExactInt8OpsPerThread);
  // Sleeping threads: each region wakes them, which a second thread's share does not repay.
  EXPECT_EQ(integer_ops_per_thread(false, false), kIntraOpIntegerOpsPerThread);
  EXPECT_EQ(integer_ops_per_thread(),
            integer_ops_per_thread(quantize_detail::dnnl_int8_products_exact(),
                                   spin_count_in_effect() > 0));
  NodeWork work;
  work.integer = true;
  work.flops = 3.5 * kIntraOpFlopsPerThread;
  EXPECT_EQ(intra_op_team(work, 2), intra_op_team(work, 2, integer_ops_per_thread()));
  work.integer = false;  // Floating-point work keeps its rate.
  EXPECT_EQ(intra_op_team(work, 2, kIntraOpIntegerOpsPerThread), 2);
}

std::string int8_weights(int count) {
  std::vector<int> weights;
  for (int i = 0; i < count; ++i) weights.push_back((i * 37 + 5) % 255 - 127);
  return fmt::format("{}", fmt::join(weights, ","));
}

// Four QLinearConvs of one u8 input, 0.13, 3.1, 7.1 and 11.8 million integer ops (2 · weights ·
// 32 · 32 pixels): each one's team at 2 threads, for each integer rate.
TEST(IntraOpTeam, Int8ConvsTeamsFollowTheIntegerRate) {
  const std::string conv =
      "QLinearConv[pads=[{0}, {0}, {0}, {0}]](%x, @x_scale, @zero, @{1}, @w_scale, @w_zero, "
      "@y_scale, @zero)";
  const Graph graph = parse_graph(fmt::format(
      R"(graph main [ai.onnx=13] (%x: u8[1,16,32,32]) {{
  @zero: u8[] = [0]
  @w_zero: i8[] = [0]
  @x_scale: f32[] = [0.05]
  @w_scale: f32[] = [0.01]
  @y_scale: f32[] = [0.5]
  @wa: i8[4,16,1,1] = [{}]
  @wb: i8[96,16,1,1] = [{}]
  @wc: i8[24,16,3,3] = [{}]
  @wd: i8[40,16,3,3] = [{}]
  %a = {}
  %b = {}
  %c = {}
  %d = {}
  return %a, %b, %c, %d
}})",
      int8_weights(4 * 16), int8_weights(96 * 16), int8_weights(24 * 16 * 9),
      int8_weights(40 * 16 * 9), fmt::format(fmt::runtime(conv), 0, "wa"),
      fmt::format(fmt::runtime(conv), 0, "wb"), fmt::format(fmt::runtime(conv), 1, "wc"),
      fmt::format(fmt::runtime(conv), 1, "wd")));
  const auto teams = [&](double rate) {
    std::string text;
    for (const char* name : {"a", "b", "c", "d"}) {
      const Node& node = graph.node(producer(graph, name));
      std::vector<Tensor> tensors;
      for (ValueId input : node.inputs) {
        const Value& v = graph.value(input);
        tensors.push_back(Tensor::allocate(v.dtype, v.shape.sizes()));
      }
      std::vector<const Tensor*> inputs;
      for (const Tensor& tensor : tensors) inputs.push_back(&tensor);
      text += fmt::format("{}{}", text.empty() ? "" : " ",
                          intra_op_team(node_work(node, inputs), 2, rate));
    }
    return text;
  };
  EXPECT_EQ(teams(integer_ops_per_thread(true, true)), "1 1 1 2") << "VNNI";
  EXPECT_EQ(teams(integer_ops_per_thread(false, true)), "1 2 2 2") << "no VNNI, spinning";
  EXPECT_EQ(teams(integer_ops_per_thread(false, false)), "1 1 1 2") << "no VNNI, sleeping";
  // The kernels made for the nodes take this process's team.
  std::string made;
  for (const char* name : {"a", "b", "c", "d"}) {
    made += fmt::format("{}{}", made.empty() ? "" : " ", prepared_team(graph, name, 2));
  }
  EXPECT_EQ(made, teams(integer_ops_per_thread()));
}

TEST(IntraOpTeam, GemmReadsItsColumnCountThroughTransB) {
  Node node;
  node.op_type = "Gemm";
  node.set_attribute("transB", Attribute::of_int(1));
  const Tensor a = Tensor::allocate(DataType::kFloat, {3, 5});
  const Tensor b = Tensor::allocate(DataType::kFloat, {7, 5});  // N = 7 rows, transposed
  const std::vector<const Tensor*> inputs{&a, &b};
  EXPECT_DOUBLE_EQ(node_work(node, inputs).flops, 2.0 * 3 * 5 * 7);
}

TEST(IntraOpTeam, MatMulCountsTheBroadcastBatchOfEitherSide) {
  Node node;
  node.op_type = "MatMul";
  const Tensor a = Tensor::allocate(DataType::kFloat, {4, 2, 3});
  const Tensor b = Tensor::allocate(DataType::kFloat, {3, 5});
  const std::vector<const Tensor*> ab{&a, &b};
  EXPECT_DOUBLE_EQ(node_work(node, ab).flops, 2.0 * 4 * 2 * 3 * 5);
  const Tensor c = Tensor::allocate(DataType::kFloat, {2, 3});
  const Tensor d = Tensor::allocate(DataType::kFloat, {4, 3, 5});
  const std::vector<const Tensor*> cd{&c, &d};
  EXPECT_DOUBLE_EQ(node_work(node, cd).flops, 2.0 * 4 * 2 * 3 * 5);
}

TEST(IntraOpTeam, ANodeRunsOnOneThreadOrOnAllOfThem) {
  NodeWork work;
  work.flops = 3.5 * kIntraOpFlopsPerThread;
  EXPECT_EQ(intra_op_team(work, 8), 8);  // Not 3: a smaller team ends libgomp's pool threads.
  EXPECT_EQ(intra_op_team(work, 2), 2);
  work.flops = 1.9 * kIntraOpFlopsPerThread;
  EXPECT_EQ(intra_op_team(work, 8), 1);
  work.flops = 3.5 * kIntraOpFlopsPerThread;
  work.integer = true;  // The same count of integer ops is less work with VNNI.
  EXPECT_EQ(intra_op_team(work, 8, kIntraOpIntegerOpsPerThread), 1);
  EXPECT_EQ(intra_op_team(work, 8, kIntraOpFlopsPerThread), 8);
  NodeWork bytes;
  bytes.bytes = 5 * kIntraOpBytesPerThread;
  EXPECT_EQ(intra_op_team(bytes, 8), 8);
  bytes.bytes = kIntraOpBytesPerThread;
  EXPECT_EQ(intra_op_team(bytes, 8), 1);
  for (double flops = 0; flops < 20 * kIntraOpFlopsPerThread; flops += 0.25e6) {
    work.integer = false;
    work.flops = flops;
    const int team = intra_op_team(work, 16);
    EXPECT_TRUE(team == 1 || team == 16) << flops << " FLOPs: a team of " << team;
  }
  EXPECT_EQ(intra_op_team(NodeWork{}, 8), 1);
  EXPECT_EQ(intra_op_team(NodeWork{}, 0), 1);
}

TEST(IntraOpTeam, ALoopOfPartsAsksForOneThreadOrTheWholeTeam) {
  EXPECT_EQ(loop_team(1, 16), 1);
  EXPECT_EQ(loop_team(0, 16), 1);
  EXPECT_EQ(loop_team(3, 16), 16);   // Not 3: 13 members find no part.
  EXPECT_EQ(loop_team(40, 16), 16);  // Not 40: more than the team grows libgomp's pool.
  EXPECT_EQ(loop_team(5, 1), 1);
}

TEST(IntraOpTeam, ARecurrenceCountsTheInputsProductOverEveryStep) {
  Node lstm;
  lstm.op_type = "LSTM";
  // 100 steps of batch 2, input 16, hidden 32: X · Wᵀ is 2 * 100 * 2 * (128 * 16) FLOPs, above
  // one step's product with W and R.
  const Tensor x = Tensor::allocate(DataType::kFloat, {100, 2, 16});
  const Tensor w = Tensor::allocate(DataType::kFloat, {1, 128, 16});
  const Tensor r = Tensor::allocate(DataType::kFloat, {1, 128, 32});
  const std::vector<const Tensor*> small{&x, &w, &r};
  EXPECT_DOUBLE_EQ(node_work(lstm, small).flops, 2.0 * 100 * 2 * (128 * 16));
  EXPECT_EQ(intra_op_team(node_work(lstm, small), 4), 1);
  // One step (layout 0: [seq, batch, input]) is the larger: one step's W and R.
  const Tensor one_step = Tensor::allocate(DataType::kFloat, {1, 2, 16});
  const std::vector<const Tensor*> single{&one_step, &w, &r};
  EXPECT_DOUBLE_EQ(node_work(lstm, single).flops, 2.0 * 2 * (128 * 16 + 128 * 32));
  // The held-out lstm's first layer: 50 steps of batch 2, input 64, hidden 128, 6.6 M FLOPs.
  const Tensor seq_x = Tensor::allocate(DataType::kFloat, {50, 2, 64});
  const Tensor seq_w = Tensor::allocate(DataType::kFloat, {1, 512, 64});
  const Tensor seq_r = Tensor::allocate(DataType::kFloat, {1, 512, 128});
  const std::vector<const Tensor*> held_out{&seq_x, &seq_w, &seq_r};
  EXPECT_EQ(intra_op_team(node_work(lstm, held_out), 2), 2);
  // Batch first (layout 1), batch 64, hidden 512: 2 * 64 * 3 * (2048 * 512) FLOPs.
  lstm.set_attribute("layout", Attribute::of_int(1));
  const Tensor wide_x = Tensor::allocate(DataType::kFloat, {64, 3, 512});
  const Tensor wide_w = Tensor::allocate(DataType::kFloat, {1, 2048, 512});
  const Tensor wide_r = Tensor::allocate(DataType::kFloat, {1, 2048, 512});
  const std::vector<const Tensor*> wide{&wide_x, &wide_w, &wide_r};
  EXPECT_DOUBLE_EQ(node_work(lstm, wide).flops, 2.0 * 64 * 3 * 2048 * 512);
  EXPECT_EQ(intra_op_team(node_work(lstm, wide), 4), 4);
  EXPECT_EQ(intra_op_team(node_work(lstm, {}), 4), 4);  // Operands unknown: every thread.
}

TEST(IntraOpTeam, SubgraphsKeepEveryThread) {
  Node loop;
  loop.op_type = "Loop";
  loop.set_attribute("body", Attribute::of_graph(std::make_shared<Graph>()));
  EXPECT_EQ(intra_op_team(node_work(loop, {}), 4), 4);
}

TEST(IntraOpTeam, TheScopeLowersOpenMPsTeamAndPutsItBack) {
  omp_set_num_threads(3);
  {
    const IntraOpTeamScope scope(1);
    EXPECT_EQ(omp_get_max_threads(), 1);
  }
  EXPECT_EQ(omp_get_max_threads(), 3);
  {
    const IntraOpTeamScope scope(5);  // Never raises it.
    EXPECT_EQ(omp_get_max_threads(), 3);
  }
  omp_set_num_threads(1);
}

// A model of small nodes only runs every node on one thread at 2 threads, kernels made and run
// so: it computes the bits of its 1-thread run.
TEST(IntraOpTeam, ASmallModelAtTwoThreadsComputesItsOneThreadBits) {
  const Graph graph = parse_graph(fmt::format(R"(graph main [ai.onnx=17] (%x: f32[1,8,24,24]) {{
  @w: f32[8,8,3,3] = [{}]
  @b: f32[8] = [{}]
  %c: f32[1,8,24,24] = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%x, @w, @b)
  %r: f32[1,8,24,24] = Relu(%c)
  %p: f32[1,8,12,12] = MaxPool[kernel_shape=[2,2], strides=[2,2]](%r)
  %g: f32[1,8,1,1] = GlobalAveragePool(%p)
  %y: f32[1,8,1,1] = Sigmoid(%g)
  return %y, %p
}})",
                                              text_numbers(8 * 8 * 9, 3), text_numbers(8, 4)));
  const SampleInputs inputs = random_inputs(graph, 1);
  ExecutorOptions one;
  one.threads = 1;
  ExecutorOptions two;
  two.threads = 2;
  Executor single(graph, one), pair(graph, two);
  EXPECT_TRUE(bitwise_equal(single.run(inputs), pair.run(inputs)));
  EXPECT_EQ(prepared_team(graph, "c", 2), 1);
}

}  // namespace
}  // namespace cleave
