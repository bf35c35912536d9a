// The generated program's arena: a Concat's inputs live inside its output, as `cleave run` puts
// them.
#include "codegen/program_layout.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "codegen_runtime/static_program.h"
#include "cost/cost_table.h"
#include "ir/text.h"

namespace cleave {
namespace {

const char* kJoin = R"(graph main [ai.onnx=17] (%x: f32[1,2,4,4]) {
  %a = Relu(%x)
  %b = Sigmoid(%x)
  %c = Concat[axis=1](%a, %b)
  %y = Tanh(%c)
  return %y
})";

WorkerProgram sequential_program(const Graph& graph) {
  ModelPlanOptions options;
  options.strategy = "sequential";
  options.workers = 1;
  return worker_program(graph, plan_model(graph, static_costs(graph), options));
}

// Worker 0 runs a, c and y; worker 1 runs b, which worker 0's Concat reads.
WorkerProgram two_worker_program(const Graph& graph) {
  WorkerProgram program;
  program.workers = 2;
  program.strategy = "by hand";
  program.worker_of_node.assign(graph.node_capacity(), -1);
  program.position_of_node.assign(graph.node_capacity(), 0);
  program.order.resize(2);
  program.cores.resize(2);
  program.remote_readers.resize(graph.value_capacity());
  for (NodeId id : graph.topological_order()) {
    const bool on_one = graph.value(graph.node(id).outputs[0]).name == "b";
    const int worker = on_one ? 1 : 0;
    program.worker_of_node[id] = worker;
    program.position_of_node[id] = static_cast<int>(program.order[worker].size());
    program.order[worker].push_back(id);
    if (on_one) program.remote_readers[graph.node(id).outputs[0]] = {0};
  }
  return program;
}

const ProgramValue& value_named(const ProgramLayout& layout, const Graph& graph,
                                const std::string& name) {
  return layout.values[layout.index_of[*graph.find_value(name)]];
}

// Every two arena values that hold bytes of their own (no view, not placed in a Concat) are
// disjoint: in these graphs each is live while the others are.
void expect_roots_disjoint(const ProgramLayout& layout) {
  for (std::size_t u = 0; u < layout.values.size(); ++u) {
    for (std::size_t v = u + 1; v < layout.values.size(); ++v) {
      const ProgramValue& p = layout.values[u];
      const ProgramValue& q = layout.values[v];
      if (p.kind == StaticValue::kConstant || q.kind == StaticValue::kConstant) continue;
      if (p.alias_of >= 0 || q.alias_of >= 0 || p.in_place_of >= 0 || q.in_place_of >= 0) continue;
      EXPECT_TRUE(p.offset + p.bytes <= q.offset || q.offset + q.bytes <= p.offset)
          << p.name << " and " << q.name << " overlap";
    }
  }
}

TEST(ProgramLayout, ConcatInputsAreWrittenInsideTheConcatsOutput) {
  const Graph graph = parse_graph(kJoin);
  const ProgramLayout layout = lay_out_program(graph, sequential_program(graph), {});
  const ProgramValue& a = value_named(layout, graph, "a");
  const ProgramValue& b = value_named(layout, graph, "b");
  const ProgramValue& c = value_named(layout, graph, "c");
  EXPECT_EQ(layout.concat_inputs_in_place, 2);
  EXPECT_EQ(a.in_place_of, layout.index_of[*graph.find_value("c")]);
  EXPECT_EQ(b.in_place_of, a.in_place_of);
  EXPECT_EQ(a.offset, c.offset);
  EXPECT_EQ(b.offset, c.offset + 2 * 4 * 4 * sizeof(float));
  EXPECT_EQ(c.in_place_of, -1);
  expect_roots_disjoint(layout);
  const std::string comment =
      step_comment(graph, layout, graph.value(*graph.find_value("b")).producer);
  EXPECT_NE(comment.find("in place in c"), std::string::npos) << comment;
  // Without the placement each value would have had its own buffer.
  EXPECT_EQ(layout.unshared_bytes, 3 * 2 * 4 * 4 * sizeof(float) + 2 * 4 * 4 * 4 * sizeof(float));
}

TEST(ProgramLayout, ConcatInputFromAnotherWorkerIsPlacedAndItsBufferLivesTheWholeRun) {
  const Graph graph = parse_graph(kJoin);
  const WorkerProgram program = two_worker_program(graph);
  const ProgramLayout layout = lay_out_program(graph, program, {});
  const ProgramValue& b = value_named(layout, graph, "b");
  const ProgramValue& c = value_named(layout, graph, "c");
  EXPECT_EQ(layout.concat_inputs_in_place, 2);
  EXPECT_EQ(b.offset, c.offset + 2 * 4 * 4 * sizeof(float));
  expect_roots_disjoint(layout);
}

TEST(ProgramLayout, RunTimeStepsOutputsStayOutOfTheConcat) {
  // The Concat's output is shaped by NonZero's values: a run-time step, outside the arena.
  const Graph graph = parse_graph(R"(graph main [ai.onnx=17] (%x: f32[1,2,4,4]) {
  %a = Relu(%x)
  %i = NonZero(%a)
  %f = Cast[to=1](%i)
  %g = Relu(%f)
  %c = Concat[axis=0](%f, %g)
  return %c
})");
  const ProgramLayout layout = lay_out_program(graph, sequential_program(graph), {});
  EXPECT_EQ(layout.concat_inputs_in_place, 0);
  EXPECT_EQ(value_named(layout, graph, "g").in_place_of, -1);
}

}  // namespace
}  // namespace cleave
