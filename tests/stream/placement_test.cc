// Stream placement: hand-computed placements, loads and simulated throughputs.
#include "stream/placement.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "stream/stream_json.h"

namespace cleave {
namespace {

using ::testing::HasSubstr;

struct Placed {
  StreamGraph graph;
  StreamSchedule schedule;
  StreamPlacement placement;
  std::map<std::string, int> worker;  // by actor name
};

// Places the program with per-actor firing costs by name (0 for actors not named).
Placed place(const std::string& text, const std::map<std::string, double>& firing, int workers,
             PlacementMethod method, double handoff = 0) {
  const StreamProgram program =
      parse_stream_program(text, "test.json", ".", StreamLoadOptions{false, true});
  Placed out;
  out.graph = flatten_stream(program.root);
  out.schedule = schedule_stream(out.graph, program.origin);
  PlacementCosts costs;
  costs.handoff_seconds = handoff;
  costs.handoff_seconds_per_byte = 0;
  for (const StreamNode& node : out.graph.nodes) {
    const auto it = firing.find(node.name);
    costs.firing_seconds.push_back(it == firing.end() ? 0.0 : it->second);
  }
  out.placement = place_stream_nodes(out.graph, out.schedule, costs, workers, method);
  for (std::size_t v = 0; v < out.graph.nodes.size(); ++v) {
    out.worker[out.graph.nodes[v].name] = out.placement.worker[v];
  }
  return out;
}

const char* kChain = R"({"pipeline": {"name": "p", "streams": [
  {"filter": {"name": "a", "pop": 1, "push": 1, "op": "identity"}},
  {"filter": {"name": "b", "pop": 1, "push": 1, "op": "identity"}},
  {"filter": {"name": "c", "pop": 1, "push": 1, "op": "identity"}},
  {"filter": {"name": "d", "pop": 1, "push": 1, "op": "identity"}}]}})";

// Costs 4 3 2 1 on 2 workers: no contiguous cut does better than 4 | 3+2+1 = 6, but a+d and
// b+c give 5 each, so one item every 5 s.
TEST(StreamPlacement, BalancedPairsNonAdjacentFiltersThatContiguousStagesCannot) {
  const Placed p =
      place(kChain, {{"a", 4}, {"b", 3}, {"c", 2}, {"d", 1}}, 2, PlacementMethod::kBalanced);
  EXPECT_EQ(p.worker.at("a"), p.worker.at("d"));
  EXPECT_EQ(p.worker.at("b"), p.worker.at("c"));
  EXPECT_NE(p.worker.at("a"), p.worker.at("b"));
  EXPECT_THAT(p.placement.worker_seconds, ::testing::UnorderedElementsAre(5.0, 5.0));
  EXPECT_DOUBLE_EQ(p.placement.bound_items_per_second, 1.0 / 5);
  EXPECT_NEAR(p.placement.predicted_items_per_second, 1.0 / 5, 0.01 / 5);
}

TEST(StreamPlacement, ContiguousCutsTheChainWhereTheBottleneckIsLowest) {
  const Placed p =
      place(kChain, {{"a", 4}, {"b", 3}, {"c", 2}, {"d", 1}}, 2, PlacementMethod::kContiguous);
  EXPECT_EQ(p.worker.at("a"), 0);
  EXPECT_EQ(p.worker.at("b"), 1);
  EXPECT_EQ(p.worker.at("c"), 1);
  EXPECT_EQ(p.worker.at("d"), 1);
  EXPECT_DOUBLE_EQ(p.placement.bound_items_per_second, 1.0 / 6);
  EXPECT_NEAR(p.placement.predicted_items_per_second, 1.0 / 6, 0.01 / 6);
}

// Handing an item over costs 10 s: splitting a (1 s) and b (1 s) makes b's worker spend 11 s
// per item, so balanced keeps them together (2 s per item); greedy ignores hand-offs.
TEST(StreamPlacement, CostlyHandOffsKeepNeighboursOnOneWorker) {
  const char* pair = R"({"pipeline": {"name": "p", "streams": [
    {"filter": {"name": "a", "pop": 1, "push": 1, "op": "identity"}},
    {"filter": {"name": "b", "pop": 1, "push": 1, "op": "identity"}}]}})";
  const Placed balanced = place(pair, {{"a", 1}, {"b", 1}}, 2, PlacementMethod::kBalanced, 10);
  EXPECT_EQ(balanced.worker.at("a"), balanced.worker.at("b"));
  EXPECT_DOUBLE_EQ(balanced.placement.handoff_seconds, 0);
  EXPECT_NEAR(balanced.placement.predicted_items_per_second, 0.5, 0.005);
  const Placed greedy = place(pair, {{"a", 1}, {"b", 1}}, 2, PlacementMethod::kGreedy, 10);
  EXPECT_NE(greedy.worker.at("a"), greedy.worker.at("b"));
  EXPECT_DOUBLE_EQ(greedy.placement.handoff_seconds, 10);
  EXPECT_NEAR(greedy.placement.predicted_items_per_second, 1.0 / 11, 0.01 / 11);
}

// a fires twice per iteration (b pops 2): steady-state costs 2 × 1 and 1 × 3, one per worker;
// 2 input items every 3 s.
TEST(StreamPlacement, RepetitionsMultiplyTheFiringCost) {
  const char* rates = R"({"pipeline": {"name": "p", "streams": [
    {"filter": {"name": "a", "pop": 1, "push": 1, "op": "identity"}},
    {"filter": {"name": "b", "pop": 2, "push": 1, "op": "concat"}}]}})";
  const Placed p = place(rates, {{"a", 1}, {"b", 3}}, 2, PlacementMethod::kBalanced);
  EXPECT_THAT(p.placement.node_seconds, ::testing::ElementsAre(2.0, 3.0));
  EXPECT_NE(p.worker.at("a"), p.worker.at("b"));
  EXPECT_DOUBLE_EQ(p.placement.bound_items_per_second, 2.0 / 3);
  EXPECT_NEAR(p.placement.predicted_items_per_second, 2.0 / 3, 0.01 * 2 / 3);
}

// Two branches of 3 s on 2 workers run side by side: one item every 3 s.
TEST(StreamPlacement, SplitJoinBranchesGoToDifferentWorkers) {
  const char* sj = R"({"splitjoin": {"name": "sj", "split": "duplicate",
    "streams": [{"filter": {"name": "x", "pop": 1, "push": 1, "op": "identity"}},
                {"filter": {"name": "y", "pop": 1, "push": 1, "op": "identity"}}],
    "join": {"roundrobin": [1, 1]}}})";
  const Placed p = place(sj, {{"x", 3}, {"y", 3}}, 2, PlacementMethod::kBalanced);
  EXPECT_NE(p.worker.at("x"), p.worker.at("y"));
  EXPECT_NEAR(p.placement.predicted_items_per_second, 1.0 / 3, 0.01 / 3);
  const Placed one = place(sj, {{"x", 3}, {"y", 3}}, 1, PlacementMethod::kBalanced);
  EXPECT_NEAR(one.placement.predicted_items_per_second, 1.0 / 6, 0.01 / 6);
}

// A worker per filter of 2 s: the four stages overlap on successive items, one every 2 s.
TEST(StreamPlacement, SimulatorPipelinesStagesOnTheirOwnWorkers) {
  const Placed p =
      place(kChain, {{"a", 2}, {"b", 2}, {"c", 2}, {"d", 2}}, 4, PlacementMethod::kBalanced);
  std::set<int> used;
  for (const auto& [name, w] : p.worker) used.insert(w);
  EXPECT_EQ(used.size(), 4u);
  EXPECT_NEAR(p.placement.predicted_items_per_second, 0.5, 0.005);
}

TEST(StreamPlacement, BadCostsAndPlacementsAreRefusedNamingTheActor) {
  const StreamProgram program =
      parse_stream_program(kChain, "test.json", ".", StreamLoadOptions{false, true});
  const StreamGraph graph = flatten_stream(program.root);
  const StreamSchedule schedule = schedule_stream(graph, program.origin);
  PlacementCosts costs;
  costs.firing_seconds = {1, -1, 1, 1};
  try {
    place_stream_nodes(graph, schedule, costs, 2);
    FAIL() << "a negative cost was accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("actor \"b\""));
  }
  costs.firing_seconds = {1, 1, 1, 1};
  try {
    evaluate_placement(graph, schedule, costs, {0, 0, 2, 0}, 2);
    FAIL() << "worker 2 of 2 was accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("actor \"c\" on worker 2 of 2"));
  }
  EXPECT_THROW(parse_placement_method("spread"), Error);
  EXPECT_EQ(parse_placement_method("greedy"), PlacementMethod::kGreedy);
}

}  // namespace
}  // namespace cleave
