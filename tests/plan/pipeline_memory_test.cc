// Activation memory per stage worker of a pipeline (pipeline_activation_bytes).
#include <gtest/gtest.h>

#include "plan/plan_memory.h"
#include "task_graph_util.h"

namespace cleave {
namespace {

using testing::graph_from_text;

// a -> b -> c -> d, outputs of 100, 200 and 300 bytes; stage 0 runs a and b, stage 1 c and d.
const char* const kChain = R"({
  "devices": [{"name": "p"}, {"name": "q"}],
  "bandwidth": [[0, 1000], [1000, 0]],
  "tasks": [{"name": "a", "time": [1, 1], "output_bytes": 100},
            {"name": "b", "time": [1, 1], "output_bytes": 200},
            {"name": "c", "time": [1, 1], "output_bytes": 300},
            {"name": "d", "time": [1, 1]}],
  "edges": [["a", "b"], ["b", "c"], ["c", "d"]]
})";

TEST(PipelineMemory, EachStageHoldsItsOwnValuesAndTheInputsItReceived) {
  const TaskGraph graph = graph_from_text(kChain);
  // Stage 0 holds a and b while b runs; stage 1 holds b's copy and c while c runs.
  EXPECT_EQ(pipeline_activation_bytes(graph, {0, 0, 1, 1}, 1), (std::vector<double>{300, 500}));
}

TEST(PipelineMemory, WithSamplesInFlightALaterStageAlsoHoldsTheNextSamplesInputs) {
  const TaskGraph graph = graph_from_text(kChain);
  // Stage 1 gets b's 200 bytes of the next sample while it works on this one.
  EXPECT_EQ(pipeline_activation_bytes(graph, {0, 0, 1, 1}, 4), (std::vector<double>{300, 700}));
}

TEST(PipelineMemory, ACutElsewhereMovesTheHoldings) {
  const TaskGraph graph = graph_from_text(kChain);
  // Stage 0 runs a alone: it holds a until b starts; stage 1 holds a's copy, b and c at once
  // never: a's copy goes as b ends, before c runs.
  EXPECT_EQ(pipeline_activation_bytes(graph, {0, 1, 1, 1}, 1), (std::vector<double>{100, 500}));
}

}  // namespace
}  // namespace cleave
