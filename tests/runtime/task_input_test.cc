// The one classification of a node's input that the sequential executor and plan resolution
// share: absent, initializer, graph input, or a task's output.
#include "runtime/task_input.h"

#include <gtest/gtest.h>

#include "ir/text.h"

namespace cleave {
namespace {

// %y = Clip(%x, _, @high): a graph input, an omitted input, an initializer; %z reads %y.
Graph graph_with_every_kind() {
  return parse_graph(R"(graph g (%x: f32[4]) {
  @high: f32[] = [6.0]
  %y = Clip(%x, _, @high)
  %z = Neg(%y)
  return %z
}
)");
}

NodeId node_named(const Graph& graph, const std::string& output) {
  for (NodeId id : graph.node_ids()) {
    if (graph.value(graph.node(id).outputs[0]).name == output) return id;
  }
  ADD_FAILURE() << "no node makes " << output;
  return -1;
}

TEST(TaskInput, AGraphInputIsReadFromTheSample) {
  const Graph graph = graph_with_every_kind();
  const ValueId x = graph.node(node_named(graph, "y")).inputs[0];
  const TaskInput input = classify_input(graph, x);
  EXPECT_EQ(input.kind, TaskInput::Kind::kGraphInput);
  EXPECT_EQ(input.value, x);
}

TEST(TaskInput, AnOmittedInputIsNone) {
  const Graph graph = graph_with_every_kind();
  const TaskInput input = classify_input(graph, graph.node(node_named(graph, "y")).inputs[1]);
  EXPECT_EQ(input.kind, TaskInput::Kind::kNone);
  EXPECT_EQ(input.value, kNoValue);
}

TEST(TaskInput, AnInitializerIsAConstant) {
  const Graph graph = graph_with_every_kind();
  const ValueId high = graph.node(node_named(graph, "y")).inputs[2];
  const TaskInput input = classify_input(graph, high);
  EXPECT_EQ(input.kind, TaskInput::Kind::kConstant);
  EXPECT_EQ(input.value, high);
}

TEST(TaskInput, ANodesOutputComesFromATaskTheCallerNames) {
  const Graph graph = graph_with_every_kind();
  const ValueId y = graph.node(node_named(graph, "z")).inputs[0];
  const TaskInput input = classify_input(graph, y);
  EXPECT_EQ(input.kind, TaskInput::Kind::kTask);
  EXPECT_EQ(input.value, y);
  EXPECT_EQ(input.task, -1);
  EXPECT_EQ(input.output, -1);
}

}  // namespace
}  // namespace cleave
