// The stream executor: the three-model audio pipeline equals the models run one by one.
#include "stream/executor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include "runtime/executor.h"
#include "stream/builder.h"
#include "stream/stream_json.h"
#include "test_models.h"

namespace cleave {
namespace {

using testing::dense_model;

std::vector<Tensor> chunks(int count, int64_t size) {
  std::vector<Tensor> out;
  for (int i = 0; i < count; ++i) {
    Tensor t = Tensor::allocate(DataType::kFloat, {size});
    for (int64_t j = 0; j < size; ++j) t.data<float>()[j] = std::cos(0.3f * (i * size + j));
    out.push_back(std::move(t));
  }
  return out;
}

// Runs `graph` on windows of `peek` items stepping by `pop`, cutting each output into `push`.
std::vector<std::vector<float>> run_windows(const Graph& graph,
                                            const std::vector<std::vector<float>>& items, int pop,
                                            int peek, int push) {
  Executor executor(graph);
  const Value& in = graph.value(graph.inputs()[0]);
  std::vector<std::vector<float>> out;
  for (std::size_t start = 0; start + peek <= items.size(); start += pop) {
    Tensor x = Tensor::allocate(DataType::kFloat, in.shape.sizes());
    float* dst = x.data<float>();
    for (int i = 0; i < peek; ++i) {
      std::copy(items[start + i].begin(), items[start + i].end(), dst);
      dst += items[start + i].size();
    }
    const std::vector<Tensor> y = executor.run({{in.name, x}});
    const auto values = y[0].values<float>();
    const std::size_t per = values.size() / push;
    for (int p = 0; p < push; ++p) {
      out.emplace_back(values.begin() + p * per, values.begin() + (p + 1) * per);
    }
  }
  return out;
}

struct Audio {
  std::shared_ptr<Graph> features = dense_model("features", {1, 16}, 8, {2, 4}, "Relu", 1);
  std::shared_ptr<Graph> embed = dense_model("embed", {3, 4}, 6, {1, 6}, "Tanh", 2);
  std::shared_ptr<Graph> classify = dense_model("classify", {4, 6}, 3, {1, 3}, "Sigmoid", 3);

  Stream program() const {
    return make_pipeline("audio", [&](StreamBuilder& p) {
      p.model("features", 1, 1, 2, features);
      p.model("embed", 1, 3, 1, embed);
      p.model("classify", 2, 4, 1, classify);
    });
  }

  std::vector<std::vector<float>> sequential(const std::vector<Tensor>& inputs) const {
    std::vector<std::vector<float>> items;
    for (const Tensor& t : inputs) {
      items.emplace_back(t.values<float>().begin(), t.values<float>().end());
    }
    return run_windows(
        *classify, run_windows(*embed, run_windows(*features, items, 1, 1, 2), 1, 3, 1), 2, 4, 1);
  }
};

void expect_equal(const std::vector<Tensor>& got, const std::vector<std::vector<float>>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    const auto values = got[i].values<float>();
    ASSERT_EQ(values.size(), want[i].size()) << "item " << i;
    for (std::size_t j = 0; j < values.size(); ++j) {
      EXPECT_NEAR(values[j], want[i][j], 1e-5) << "item " << i << " element " << j;
    }
  }
}

TEST(StreamExecutor, AudioPipelineEqualsModelsRunOneAfterAnother) {
  const Audio audio;
  const StreamProgram program{audio.program(), "<audio>"};
  verify_stream(program.root, program.origin);
  const std::vector<Tensor> inputs = chunks(20, 16);
  const StreamRunResult r = run_stream(program, inputs, testing::on_workers(1));
  // 20 chunks -> 40 frames -> 38 embeddings -> 18 class vectors.
  EXPECT_EQ(r.outputs.size(), 18u);
  expect_equal(r.outputs, audio.sequential(inputs));
}

TEST(StreamExecutor, PipelinedOnThreeWorkersGivesTheSameItems) {
  const Audio audio;
  const StreamProgram program{audio.program(), "<audio>"};
  const std::vector<Tensor> inputs = chunks(50, 16);
  const StreamRunResult r = run_stream(program, inputs, testing::on_workers(3, {0, 1, 2}));
  expect_equal(r.outputs, audio.sequential(inputs));
  ASSERT_EQ(r.worker_busy.size(), 3u);
  for (double b : r.worker_busy) EXPECT_GT(b, 0.0);
  EXPECT_FALSE(r.iteration_latency.empty());
}

TEST(StreamExecutor, AudioProgramFileNamingThreeOnnxFilesRuns) {
  const Audio audio;
  const auto dir = testing::scratch_dir("audio");
  export_onnx(*audio.features, (dir / "features.onnx").string());
  export_onnx(*audio.embed, (dir / "embed.onnx").string());
  export_onnx(*audio.classify, (dir / "classify.onnx").string());
  std::ofstream(dir / "audio.json") << R"({"pipeline": {"name": "audio", "streams": [
    {"filter": {"name": "features", "pop": 1, "push": 2, "model": "features.onnx",
                "input_item": "f32[16]", "output_item": "f32[4]"}},
    {"filter": {"name": "embed", "pop": 1, "peek": 3, "push": 1, "model": "embed.onnx"}},
    {"filter": {"name": "classify", "pop": 2, "peek": 4, "push": 1, "model": "classify.onnx"}}]}})";
  const StreamProgram program = load_stream_program((dir / "audio.json").string());
  const std::vector<Tensor> inputs = chunks(12, 16);
  const StreamRunResult r = run_stream(program, inputs, testing::on_workers(2));
  expect_equal(r.outputs, audio.sequential(inputs));
  std::filesystem::remove_all(dir);
}

TEST(StreamExecutor, SplitJoinBranchesRunOnDifferentWorkers) {
  // Duplicate each item to two slices and join them back: [x0, x0, x1, x1, ...].
  const Stream s = make_splitjoin("dup", Splitter{SplitKind::kDuplicate, {}}, Joiner{{1, 1}},
                                  [](StreamBuilder& b) {
                                    b.filter("left", FilterOp::kIdentity, 1, 1, 1);
                                    b.filter("right", FilterOp::kIdentity, 1, 1, 1);
                                  });
  const StreamProgram program{s, "<dup>"};
  const std::vector<Tensor> inputs = chunks(5, 2);
  const StreamRunResult r = run_stream(program, inputs, testing::on_workers(2, {0, 0, 1, 1}));
  ASSERT_EQ(r.outputs.size(), 10u);
  for (std::size_t i = 0; i < 10; ++i) {
    EXPECT_EQ(r.outputs[i].values<float>()[0], inputs[i / 2].values<float>()[0]);
  }
}

TEST(StreamExecutor, RoundRobinSplitWithConcatAndSeparator) {
  // Split [2,2]: items 0,1 -> concat into one f32[4]; items 2,3 -> concat too; join [1,1];
  // then a separator keeps the second of each pair: concat(x2, x3), concat(x6, x7).
  const Stream s = make_pipeline("p", [](StreamBuilder& p) {
    p.splitjoin("rr", Splitter{SplitKind::kRoundRobin, {2, 2}}, Joiner{{1, 1}},
                [](StreamBuilder& b) {
                  b.filter("cat1", FilterOp::kConcat, 2, 2, 1, {0});
                  b.filter("cat2", FilterOp::kConcat, 2, 2, 1, {0});
                });
    p.filter("sep", FilterOp::kSeparator, 2, 2, 1, {1});
  });
  const std::vector<Tensor> inputs = chunks(8, 2);
  const StreamRunResult r = run_stream({s, "<rr>"}, inputs, testing::on_workers(2));
  ASSERT_EQ(r.outputs.size(), 2u);
  for (int k = 0; k < 2; ++k) {
    const auto v = r.outputs[k].values<float>();
    ASSERT_EQ(v.size(), 4u);
    EXPECT_EQ(v[0], inputs[4 * k + 2].values<float>()[0]);
    EXPECT_EQ(v[1], inputs[4 * k + 2].values<float>()[1]);
    EXPECT_EQ(v[2], inputs[4 * k + 3].values<float>()[0]);
    EXPECT_EQ(v[3], inputs[4 * k + 3].values<float>()[1]);
  }
}

TEST(StreamExecutor, JoinerOfDifferentItemTypesIsRefused) {
  const Stream s = make_splitjoin("mixed", Splitter{SplitKind::kRoundRobin, {2, 1}}, Joiner{{1, 1}},
                                  [](StreamBuilder& b) {
                                    b.filter("cat", FilterOp::kConcat, 2, 2, 1, {0});
                                    b.filter("one", FilterOp::kIdentity, 1, 1, 1);
                                  });
  try {
    run_stream({s, "mixed.json"}, chunks(6, 2), {});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("mixed.json: splitjoin \"mixed\""));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("f32[4]"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("f32[2]"));
  }
}

TEST(StreamExecutor, FilterShapeThatDisagreesWithTheChannelIsRefused) {
  const Audio audio;
  const Stream s = make_pipeline("bad", [&](StreamBuilder& p) {
    p.model("embed", 1, 3, 1, audio.embed);  // wants 3 items of f32[4], gets f32[16]
  });
  try {
    run_stream({s, "bad.json"}, chunks(4, 16), {});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("bad.json: filter \"embed\""));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("f32[3,4]"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("3 items of f32[16]"));
  }
}

TEST(StreamExecutor, OutputsCanBeCountedWithoutKeepingThem) {
  const Audio audio;
  StreamRunOptions options = testing::on_workers(2);
  options.keep_outputs = false;
  const StreamRunResult r = run_stream({audio.program(), "<audio>"}, chunks(20, 16), options);
  EXPECT_TRUE(r.outputs.empty());
  EXPECT_EQ(r.output_count, 18);
}

TEST(StreamExecutor, PlacementBalancesByCost) {
  const std::vector<int> placement = place_stream({5.0, 1.0, 4.0, 2.0}, 2);
  // Longest first: 5 -> w0, 4 -> w1, 2 -> w1, 1 -> w0: loads 6 and 6.
  EXPECT_EQ(placement, (std::vector<int>{0, 0, 1, 1}));
}

// Given firing costs (a cost table's), the executor places by them, reports the plan and
// still computes what one worker computes; fission's copies on one worker share one executor.
TEST(StreamExecutor, GivenFiringCostsThePlannedPlacementRunsTheProgram) {
  const Audio audio;
  const std::vector<Tensor> inputs = chunks(20, 16);
  StreamRunOptions options = testing::on_workers(2);
  options.firing_seconds = {4e-3, 1e-3, 3e-3};  // features, embed, classify
  options.handoff_seconds = 0;
  options.handoff_seconds_per_byte = 0;
  const StreamRunResult r = run_stream({audio.program(), "<audio>"}, inputs, options);
  // Per iteration (1 chunk in) features fires once, embed twice, classify once: 4, 2 and 3
  // ms; features alone against embed + classify is the best split (4 and 5 ms).
  EXPECT_NE(r.placement[0], r.placement[1]);
  EXPECT_EQ(r.placement[1], r.placement[2]);
  EXPECT_DOUBLE_EQ(r.plan.bound_items_per_second, 1 / 5e-3);
  EXPECT_EQ(r.worker_cpu_seconds.size(), 2u);
  expect_equal(r.outputs, audio.sequential(inputs));
}

TEST(StreamExecutor, TraceRecordsEveryFiringOnItsWorker) {
  const Audio audio;
  StreamRunOptions options = testing::on_workers(2);
  options.trace = true;
  const StreamRunResult r = run_stream({audio.program(), "<audio>"}, chunks(20, 16), options);
  // 20 chunks: features 20, embed (peek 3 of 40 frames, pop 1) 38, classify (peek 4, pop 2) 18.
  ASSERT_EQ(r.firings.size(), 20u + 38u + 18u);
  for (const StreamRunResult::Firing& f : r.firings) {
    EXPECT_EQ(f.worker, r.placement[f.node]);
    EXPECT_LE(f.start, f.end);
  }
}

}  // namespace
}  // namespace cleave
