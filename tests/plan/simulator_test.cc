// The simulator: exact list scheduling of a plan's orders, transfers and deadlock detection.
#include "plan/simulator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "plan/earliest_finish.h"
#include "plan/list_schedule.h"
#include "task_graph_util.h"

namespace cleave {
namespace {

using testing::graph_error;
using testing::graph_from_text;
using ::testing::HasSubstr;

// a -> b, a -> c, b -> d, c -> d; 100 bytes per edge over 100 bytes/s (1 s) plus 0.5 s latency.
const char* const kDiamond = R"({
  "devices": [{"name": "p"}, {"name": "q"}],
  "bandwidth": [[0, 100], [100, 0]], "latency": [[0, 0.5], [0.5, 0]],
  "tasks": [{"name": "a", "time": [1, 1], "output_bytes": 100},
            {"name": "b", "time": [2, 2], "output_bytes": 100},
            {"name": "c", "time": [3, 3], "output_bytes": 100},
            {"name": "d", "time": [1, 1]}],
  "edges": [["a", "b"], ["a", "c"], ["b", "d"], ["c", "d"]]
})";

Plan make_plan(const std::vector<int>& workers, const std::vector<std::vector<int>>& order) {
  Plan plan;
  for (std::size_t task = 0; task < workers.size(); ++task) {
    plan.tasks.push_back(PlannedTask{static_cast<int>(task), workers[task], 0, 0});
  }
  plan.order = order;
  return plan;
}

TEST(SimulatorTest, OneWorkerRunsTasksBackToBack) {
  const TaskGraph graph = graph_from_text(kDiamond);
  const Simulation result = simulate(make_plan({0, 0, 0, 0}, {{0, 2, 1, 3}, {}}), graph);
  EXPECT_EQ(result.start, (std::vector<double>{0, 4, 1, 6}));
  EXPECT_EQ(result.makespan, 7);
  EXPECT_EQ(result.busy, (std::vector<double>{7, 0}));
  EXPECT_EQ(result.idle, (std::vector<double>{0, 7}));
  EXPECT_EQ(result.transfer_count, 0);
}

TEST(SimulatorTest, InputFromAnotherWorkerArrivesAfterLatencyAndBandwidth) {
  const TaskGraph graph = graph_from_text(kDiamond);
  // c on q: a finishes at 1, its data reaches q at 1 + 0.5 + 1 = 2.5; c runs 2.5-5.5; its
  // output reaches p at 7; b ran 1-3 on p, so d runs 7-8.
  const Simulation result = simulate(make_plan({0, 0, 1, 0}, {{0, 1, 3}, {2}}), graph);
  EXPECT_DOUBLE_EQ(result.start[2], 2.5);
  EXPECT_DOUBLE_EQ(result.finish[2], 5.5);
  EXPECT_DOUBLE_EQ(result.start[3], 7);
  EXPECT_DOUBLE_EQ(result.makespan, 8);
  EXPECT_EQ(result.transfer_count, 2);
  EXPECT_EQ(result.transfer_bytes, 200);
  EXPECT_DOUBLE_EQ(result.busy[1], 3);
  EXPECT_DOUBLE_EQ(result.idle[1], 5);
}

// a -> b -> d, a -> c -> d; b (on q) is short and c (on p) long, so b's value reaches p while
// p still runs c; 100 bytes per edge over 100 bytes/s plus 0.5 s latency.
std::string slack_graph(bool shared_memory) {
  return std::string(R"({"devices": [{"name": "p"}, {"name": "q"}],
    "bandwidth": [[0, 100], [100, 0]], "latency": [[0, 0.5], [0.5, 0]],
    "shared_memory": )") +
         (shared_memory ? "true" : "false") + R"(,
    "tasks": [{"name": "a", "time": [1, 1], "output_bytes": 100},
              {"name": "b", "time": [1, 1], "output_bytes": 100},
              {"name": "c", "time": [5, 5], "output_bytes": 100},
              {"name": "d", "time": [1, 1]}],
    "edges": [["a", "b"], ["a", "c"], ["b", "d"], ["c", "d"]]})";
}

TEST(SimulatorTest, AMessageArrivingWhileTheReaderIsBusyCostsItNothing) {
  // b runs 2.5-3.5 on q (a's message took 1.5 s), its message reaches p at 5, while c runs
  // 1-6 there: d runs 6-7.
  const Simulation result =
      simulate(make_plan({0, 1, 0, 0}, {{0, 2, 3}, {1}}), graph_from_text(slack_graph(false)));
  EXPECT_DOUBLE_EQ(result.start[1], 2.5);
  EXPECT_DOUBLE_EQ(result.start[3], 6);
  EXPECT_DOUBLE_EQ(result.makespan, 7);
}

TEST(SimulatorTest, OnSharedMemoryTheReaderPaysTheBytesInsideItsTask) {
  // Only the latency delays b (start 1.5), which reads a's 100 bytes while it runs (2 s, to
  // 3.5); d starts when c ends (6) and reads b's bytes as it runs: 6-8.
  const Simulation result =
      simulate(make_plan({0, 1, 0, 0}, {{0, 2, 3}, {1}}), graph_from_text(slack_graph(true)));
  EXPECT_DOUBLE_EQ(result.start[1], 1.5);
  EXPECT_DOUBLE_EQ(result.finish[1], 3.5);
  EXPECT_DOUBLE_EQ(result.start[3], 6);
  EXPECT_DOUBLE_EQ(result.makespan, 8);
  EXPECT_DOUBLE_EQ(result.busy[0], 1 + 5 + 2);
  EXPECT_EQ(result.transfer_bytes, 200);
}

TEST(SimulatorTest, ATaskGraphFileKeepsSharedMemory) {
  const TaskGraph graph = graph_from_text(slack_graph(true));
  EXPECT_TRUE(graph.machine.shared_memory);
  EXPECT_TRUE(task_graph_from_json(task_graph_to_json(graph), "g.json").machine.shared_memory);
  EXPECT_FALSE(graph_from_text(kDiamond).machine.shared_memory);
}

TEST(SimulatorTest, ASharedMemoryFlagThatIsNotABooleanIsRefusedByName) {
  std::string text = slack_graph(true);
  text.replace(text.find("true"), 4, "\"yes\"");
  EXPECT_THAT(graph_error(text), HasSubstr("shared_memory: expected true or false"));
}

// slack_graph with each end of a 100-byte message copied in 0.5 s (endpoint_bandwidth 200).
TaskGraph priced_slack_graph() {
  TaskGraph graph = graph_from_text(slack_graph(false));
  graph.machine.endpoint_bandwidth = 200;
  return graph;
}

TEST(SimulatorTest, AMessageThatCameWhileTheReaderWasBusyCostsItsCopyAtPricedEnds) {
  // a computes 0-1 and sends to q 1-1.5; the message is on q at max(1.5 + 0.5, 1 + 1.5) = 2.5,
  // b waits for it there (its copy overlaps the link's) and runs 2.5-3.5, sending 3.5-4. c runs
  // 1.5-6.5 on p; b's message came at 5, so d copies it first: 7, and runs 7-8.
  const Simulation result =
      simulate(make_plan({0, 1, 0, 0}, {{0, 2, 3}, {1}}), priced_slack_graph());
  EXPECT_DOUBLE_EQ(result.finish[0], 1.5);
  EXPECT_DOUBLE_EQ(result.start[1], 2.5);
  EXPECT_DOUBLE_EQ(result.finish[1], 4);
  EXPECT_DOUBLE_EQ(result.start[2], 1.5);
  EXPECT_DOUBLE_EQ(result.start[3], 7);
  EXPECT_DOUBLE_EQ(result.makespan, 8);
  EXPECT_DOUBLE_EQ(result.busy[0], 1.5 + 5 + 1);
  EXPECT_DOUBLE_EQ(result.busy[1], 1.5);
  // Unpriced, the message that came during c costs d nothing (6-7).
  EXPECT_DOUBLE_EQ(
      simulate(make_plan({0, 1, 0, 0}, {{0, 2, 3}, {1}}), graph_from_text(slack_graph(false)))
          .makespan,
      7);
}

TEST(SimulatorTest, TwoReadersOnOneWorkerShareOneMessageAtPricedEnds) {
  // b and c on q read a: a sends one message (1-1.5), b copies it as it comes (2.5), runs
  // 2.5-3.5 and sends 3.5-4; c needs no second copy: 4-9, sending 9-9.5. b's message is on p
  // at 5, c's at max(9.5 + 0.5, 9 + 1.5) = 10.5; d copies b's while c's is on its way and
  // runs 10.5-11.5.
  TaskGraph graph = priced_slack_graph();
  const Simulation result = simulate(make_plan({0, 1, 1, 0}, {{0, 3}, {1, 2}}), graph);
  EXPECT_DOUBLE_EQ(result.finish[0], 1.5);
  EXPECT_DOUBLE_EQ(result.start[1], 2.5);
  EXPECT_DOUBLE_EQ(result.start[2], 4);
  EXPECT_DOUBLE_EQ(result.start[3], 10.5);
  EXPECT_DOUBLE_EQ(result.makespan, 11.5);
}

TEST(SimulatorTest, ATaskGraphFileKeepsItsEndpointBandwidth) {
  const TaskGraph graph = priced_slack_graph();
  EXPECT_EQ(task_graph_from_json(task_graph_to_json(graph), "g.json").machine.endpoint_bandwidth,
            200);
  std::string text = slack_graph(false);
  text.replace(text.find("\"shared_memory\""), 0, "\"endpoint_bandwidth\": -5, ");
  EXPECT_THAT(graph_error(text), HasSubstr("endpoint_bandwidth: expected a non-negative number"));
}

// a (1 ms on p) -> b (2 ms on q) -> d (1 ms on p), 100 bytes a message over 1e8 bytes/s (1 us),
// no latency, the ranks' waits priced at 20 us a poll (wake_seconds); q at `speed`.
std::string waking_graph(double speed) {
  return R"({"devices": [{"name": "p"}, {"name": "q", "speed": )" + std::to_string(speed) + R"(}],
    "bandwidth": [[0, 1e8], [1e8, 0]], "latency": [[0, 0], [0, 0]], "wake_seconds": 2e-5,
    "tasks": [{"name": "a", "time": [0.001, 0.001], "output_bytes": 100},
              {"name": "b", "time": [0.002, 0.002], "output_bytes": 100},
              {"name": "d", "time": [0.001, 0.001]}],
    "edges": [["a", "b"], ["b", "d"]]})";
}

TEST(SimulatorTest, ARankAtAShareOfACorePaysEveryPollOfItsWait) {
  // b's input is on q at 1.001 ms: q waited 1.001 ms, 15 polls (10 + ... + 140 us of pauses),
  // 15 x 20 us at half speed: b starts 1.601 ms. d's input is on p at 3.602 ms, after p
  // waited since 1 ms; p has a core of its own: only the poll that finds it, 20 us.
  const Simulation result =
      simulate(make_plan({0, 1, 0}, {{0, 2}, {1}}), graph_from_text(waking_graph(0.5)));
  EXPECT_DOUBLE_EQ(result.start[1], 0.001001 + 15 * 2e-5 / 0.5);
  EXPECT_DOUBLE_EQ(result.start[2], 0.001601 + 0.002 + 0.000001 + 2e-5);
  EXPECT_NEAR(result.makespan, 0.004622, 1e-12);
  // q with a core of its own: one poll's 20 us.
  const Simulation own =
      simulate(make_plan({0, 1, 0}, {{0, 2}, {1}}), graph_from_text(waking_graph(1)));
  EXPECT_DOUBLE_EQ(own.start[1], 0.001001 + 2e-5);
  EXPECT_NEAR(own.makespan, 0.004042, 1e-12);
  // Not priced: the messages alone (1.001 ms, then 3.002 ms).
  std::string plain = waking_graph(0.5);
  plain.replace(plain.find(R"("wake_seconds": 2e-5,)"), 21, "");
  EXPECT_NEAR(simulate(make_plan({0, 1, 0}, {{0, 2}, {1}}), graph_from_text(plain)).makespan,
              0.004002, 1e-12);
}

TEST(SimulatorTest, AMessageThatIsThereCostsNoWakeUp) {
  // All on p but b on q, which is busy with c (5 ms) when a's message comes: no wait, no poll.
  const TaskGraph graph =
      graph_from_text(R"({"devices": [{"name": "p"}, {"name": "q", "speed": 0.5}],
    "bandwidth": [[0, 1e8], [1e8, 0]], "latency": [[0, 0], [0, 0]], "wake_seconds": 2e-5,
    "tasks": [{"name": "a", "time": [0.001, 0.001], "output_bytes": 100},
              {"name": "c", "time": [0.005, 0.005]},
              {"name": "b", "time": [0.002, 0.002]}],
    "edges": [["a", "b"]]})");
  const Simulation result = simulate(make_plan({0, 1, 1}, {{0}, {1, 2}}), graph);
  EXPECT_DOUBLE_EQ(result.start[2], 0.005);
  EXPECT_DOUBLE_EQ(result.makespan, 0.007);
}

// a (1 ms on p) -> b (2 ms on q, after c's 5 ms there) -> d (1 ms on p); 100 bytes a message,
// each end copying it in 0.1 ms at endpoint_bandwidth (1e6 bytes/s), the link 1 us; q at
// `speed`.
std::string copying_graph(double speed) {
  return R"({"devices": [{"name": "p"}, {"name": "q", "speed": )" + std::to_string(speed) + R"(}],
    "bandwidth": [[0, 1e8], [1e8, 0]], "latency": [[0, 0], [0, 0]], "endpoint_bandwidth": 1e6,
    "tasks": [{"name": "a", "time": [0.001, 0.001], "output_bytes": 100},
              {"name": "c", "time": [0.005, 0.005]},
              {"name": "b", "time": [0.002, 0.002], "output_bytes": 100},
              {"name": "d", "time": [0.001, 0.001]}],
    "edges": [["a", "b"], ["b", "d"]]})";
}

TEST(SimulatorTest, ARankAtAShareOfACoreCopiesItsMessagesOutOfThatShare) {
  // q at half speed: a's message came during c, so q copies it after c, 0.2 ms (5.0-5.2 ms);
  // b runs 5.2-7.2 and sends to p in 0.2 ms (7.4); d runs 7.4-8.4. p copies a's in 0.1 ms.
  const Plan plan = make_plan({0, 1, 1, 0}, {{0, 3}, {1, 2}});
  const Simulation half = simulate(plan, graph_from_text(copying_graph(0.5)));
  EXPECT_DOUBLE_EQ(half.finish[0], 0.0011);
  EXPECT_DOUBLE_EQ(half.start[2], 0.0052);
  EXPECT_DOUBLE_EQ(half.finish[2], 0.0074);
  EXPECT_NEAR(half.makespan, 0.0084, 1e-12);
  // q at full speed copies as p does: 0.1 ms each end.
  const Simulation full = simulate(plan, graph_from_text(copying_graph(1)));
  EXPECT_DOUBLE_EQ(full.start[2], 0.0051);
  EXPECT_DOUBLE_EQ(full.finish[2], 0.0072);
  EXPECT_NEAR(full.makespan, 0.0082, 1e-12);
}

// Three devices, 100 bytes/s and 0.5 s latency between any two; `shared` makes the links one
// medium.
std::string three_devices(bool shared, const std::string& tasks) {
  return R"({"devices": [{"name": "p"}, {"name": "q"}, {"name": "r"}],
    "bandwidth": 100, "latency": 0.5, "shared_link": )" +
         std::string(shared ? "true" : "false") + ",\n" + tasks + "}";
}

TEST(SimulatorTest, OnASharedLinkTwoMessagesCrossInTurn) {
  // a (p, 0-1 s) sends 100 bytes to q and to r: 1 s each on the medium, q's first (1-2 s,
  // there at 2.5), r's after it (2-3 s, there at 3.5). Links of their own: both at 2.5.
  const std::string tasks = R"("tasks": [{"name": "a", "time": [1, 1, 1], "output_bytes": 100},
      {"name": "b", "time": [1, 1, 1]}, {"name": "c", "time": [1, 1, 1]}],
    "edges": [["a", "b"], ["a", "c"]])";
  const Plan plan = make_plan({0, 1, 2}, {{0}, {1}, {2}});
  const Simulation shared = simulate(plan, graph_from_text(three_devices(true, tasks)));
  EXPECT_DOUBLE_EQ(shared.start[1], 2.5);
  EXPECT_DOUBLE_EQ(shared.start[2], 3.5);
  const Simulation own = simulate(plan, graph_from_text(three_devices(false, tasks)));
  EXPECT_DOUBLE_EQ(own.start[1], 2.5);
  EXPECT_DOUBLE_EQ(own.start[2], 2.5);
}

TEST(SimulatorTest, OnASharedLinkABurstLetsMessagesThroughAheadOfTheRate) {
  // As OnASharedLinkTwoMessagesCrossInTurn with a 150-byte bucket: q's message (gap 1-2 s) is
  // across at 1 s (there 1.5), r's (gap 2-3 s) at 3 - 1.5 = 1.5 s (there 2): the bucket held 150
  // of their 200 bytes.
  std::string text = three_devices(true, R"("tasks": [
      {"name": "a", "time": [1, 1, 1], "output_bytes": 100},
      {"name": "b", "time": [1, 1, 1]}, {"name": "c", "time": [1, 1, 1]}],
    "edges": [["a", "b"], ["a", "c"]])");
  text.replace(text.find("\"shared_link\": true"), 19,
               R"("shared_link": true, "link_burst_bytes": 150)");
  const Simulation bucket = simulate(make_plan({0, 1, 2}, {{0}, {1}, {2}}), graph_from_text(text));
  EXPECT_DOUBLE_EQ(bucket.start[1], 1.5);
  EXPECT_DOUBLE_EQ(bucket.start[2], 2);
}

TEST(SimulatorTest, OnASharedLinkBothDirectionsQueue) {
  // a (p) sends to b (q) and x (q) to y (p), both at 1 s: a's crosses 1-2 s, x's 2-3 s.
  const std::string tasks = R"("tasks": [{"name": "a", "time": [1, 1, 1], "output_bytes": 100},
      {"name": "x", "time": [1, 1, 1], "output_bytes": 100},
      {"name": "b", "time": [1, 1, 1]}, {"name": "y", "time": [1, 1, 1]}],
    "edges": [["a", "b"], ["x", "y"]])";
  const Plan plan = make_plan({0, 1, 1, 0}, {{0, 3}, {1, 2}, {}});
  const Simulation shared = simulate(plan, graph_from_text(three_devices(true, tasks)));
  EXPECT_DOUBLE_EQ(shared.start[2], 2.5);
  EXPECT_DOUBLE_EQ(shared.start[3], 3.5);
  EXPECT_DOUBLE_EQ(shared.makespan, 4.5);
  EXPECT_DOUBLE_EQ(simulate(plan, graph_from_text(three_devices(false, tasks))).makespan, 3.5);
}

TEST(SimulatorTest, OnASharedLinkAMessageMetLaterTakesAnEarlierGap) {
  // The clock meets a (p, 0-5 s) before x (q, 0-1 s): a's message takes the medium 5-6 s, and
  // x's, ready at 1 s, the gap before it (1-2 s): y starts at 2.5, b at 6.5.
  const std::string tasks = R"("tasks": [{"name": "a", "time": [5, 5, 5], "output_bytes": 100},
      {"name": "x", "time": [1, 1, 1], "output_bytes": 100},
      {"name": "b", "time": [1, 1, 1]}, {"name": "y", "time": [1, 1, 1]}],
    "edges": [["a", "b"], ["x", "y"]])";
  const Plan plan = make_plan({0, 1, 2, 2}, {{0}, {1}, {3, 2}});
  const Simulation shared = simulate(plan, graph_from_text(three_devices(true, tasks)));
  EXPECT_DOUBLE_EQ(shared.start[3], 2.5);
  EXPECT_DOUBLE_EQ(shared.start[2], 6.5);
}

TEST(SimulatorTest, OnASharedLinkTheSendersCopyComesBeforeTheMedium) {
  // Priced ends, 200 bytes/s at each end: a (p, 0-1 s) copies each of its two 200-byte messages
  // out in 1 s (finish 3 s). Each leaves as p copies it or as the medium carries it (2 s), from
  // a's end: q's crosses 1-3 s (there 3.5), r's 3-5 s (there 5.5); b and c, waiting, copy
  // them as they come. Links of their own: both there at 3.5.
  const std::string tasks = R"("endpoint_bandwidth": 200,
    "tasks": [{"name": "a", "time": [1, 1, 1], "output_bytes": 200},
      {"name": "b", "time": [1, 1, 1]}, {"name": "c", "time": [1, 1, 1]}],
    "edges": [["a", "b"], ["a", "c"]])";
  const Plan plan = make_plan({0, 1, 2}, {{0}, {1}, {2}});
  const Simulation shared = simulate(plan, graph_from_text(three_devices(true, tasks)));
  EXPECT_DOUBLE_EQ(shared.finish[0], 3);
  EXPECT_DOUBLE_EQ(shared.start[1], 3.5);
  EXPECT_DOUBLE_EQ(shared.start[2], 5.5);
  EXPECT_DOUBLE_EQ(simulate(plan, graph_from_text(three_devices(false, tasks))).start[2], 3.5);
}

TEST(SimulatorTest, OnASharedLinkTheHandOutsAndGathersCrossIt) {
  // Priced ends (1e6 bytes/s). p hands the model input x (100 bytes, 1 s on the medium) out to
  // q and r at the start: q's crosses 0-1 s (there 1.5), r's 1-2 s (there 2.5). b and c then
  // gather their 200-byte outputs to p (2 s each): b's crosses 2.5-4.5 s (there 5), c's, ready
  // at 3.5 s, after it, 4.5-6.5 s (there 7). Links of their own: b and c both start at 1.5 and
  // both outputs are there at 5 (p copies the second by 5.0002).
  const std::string tasks = R"("endpoint_bandwidth": 1e6,
    "tasks": [{"name": "a", "time": [1, 1, 1]},
      {"name": "b", "time": [1, 1, 1], "model_inputs": [{"name": "x", "bytes": 100}],
       "model_outputs": [{"name": "yb", "bytes": 200}]},
      {"name": "c", "time": [1, 1, 1], "model_inputs": [{"name": "x", "bytes": 100}],
       "model_outputs": [{"name": "yc", "bytes": 200}]}],
    "edges": [])";
  const Plan plan = make_plan({0, 1, 2}, {{0}, {1}, {2}});
  const Simulation shared = simulate(plan, graph_from_text(three_devices(true, tasks)));
  EXPECT_NEAR(shared.start[1], 1.5, 1e-9);
  EXPECT_NEAR(shared.start[2], 2.5, 1e-9);
  EXPECT_NEAR(shared.makespan, 7, 1e-9);
  const Simulation own = simulate(plan, graph_from_text(three_devices(false, tasks)));
  EXPECT_NEAR(own.start[2], 1.5, 1e-9);
  EXPECT_NEAR(own.makespan, 5.0002, 1e-9);
}

TEST(SimulatorTest, EachMessageSentCostsItsSenderTheCostPerMessage) {
  // cleave's cost per message sent, 0.25 s: a (p, 0-1 s) sends 10 bytes (0.6 s on the link) to
  // q and to r, one message each: it is busy until 1.5 s, and each message is there as it is
  // sent and the latency has passed (2 s), not as the link carried it (1.6 s).
  const std::string tasks = R"("send_seconds": 0.25,
    "tasks": [{"name": "a", "time": [1, 1, 1], "output_bytes": 10},
      {"name": "b", "time": [1, 1, 1]}, {"name": "c", "time": [1, 1, 1]}],
    "edges": [["a", "b"], ["a", "c"]])";
  const Plan plan = make_plan({0, 1, 2}, {{0}, {1}, {2}});
  const Simulation priced = simulate(plan, graph_from_text(three_devices(false, tasks)));
  EXPECT_DOUBLE_EQ(priced.finish[0], 1.5);
  EXPECT_DOUBLE_EQ(priced.start[1], 2);
  EXPECT_DOUBLE_EQ(priced.start[2], 2);
  std::string unpriced = three_devices(false, tasks);
  unpriced.replace(unpriced.find("0.25"), 4, "0");
  const Simulation plain = simulate(plan, graph_from_text(unpriced));
  EXPECT_DOUBLE_EQ(plain.finish[0], 1);
  EXPECT_DOUBLE_EQ(plain.start[1], 1.6);
}

TEST(SimulatorTest, TheHandOutsAndGathersCostTheCostPerMessage) {
  // 0.25 s per message sent. p hands x (100 bytes: 1.5 s) to q before its own task (a starts at
  // 0.25); b (q) gets it at 1.5 s and sends its 10-byte output to p after it (2.5-2.75 s), there
  // at 2.75 + 0.5 = 3.25 s, not 2.5 + 0.6.
  const std::string tasks = R"("send_seconds": 0.25,
    "tasks": [{"name": "a", "time": [1, 1, 1]},
      {"name": "b", "time": [1, 1, 1], "model_inputs": [{"name": "x", "bytes": 100}],
       "model_outputs": [{"name": "yb", "bytes": 10}]}],
    "edges": [])";
  const Simulation priced =
      simulate(make_plan({0, 1}, {{0}, {1}, {}}), graph_from_text(three_devices(false, tasks)));
  EXPECT_DOUBLE_EQ(priced.start[0], 0.25);
  EXPECT_DOUBLE_EQ(priced.start[1], 1.5);
  EXPECT_DOUBLE_EQ(priced.finish[1], 2.75);
  EXPECT_DOUBLE_EQ(priced.makespan, 3.25);
}

TEST(SimulatorTest, ATaskGraphFileKeepsItsSharedLink) {
  const TaskGraph graph = graph_from_text(three_devices(true, R"("tasks": [])"));
  EXPECT_TRUE(graph.machine.shared_link);
  EXPECT_TRUE(task_graph_from_json(task_graph_to_json(graph), "g.json").machine.shared_link);
  std::string text = three_devices(true, R"("tasks": [])");
  text.replace(text.find("true"), 4, "\"on\"");
  EXPECT_THAT(graph_error(text), HasSubstr("shared_link: expected true"));
}

TEST(SimulatorTest, ATaskGraphFileKeepsItsWakeSeconds) {
  const TaskGraph graph = graph_from_text(waking_graph(0.5));
  EXPECT_EQ(graph.machine.wake_seconds, 2e-5);
  EXPECT_EQ(task_graph_from_json(task_graph_to_json(graph), "g.json").machine.wake_seconds, 2e-5);
  std::string text = waking_graph(0.5);
  text.replace(text.find("2e-5"), 4, "-1");
  EXPECT_THAT(graph_error(text), HasSubstr("wake_seconds: expected a non-negative number"));
}

TEST(SimulatorTest, WorkerWaitsForItsPreviousTaskEvenWhenInputsAreReady) {
  const TaskGraph graph = graph_from_text(R"({"devices": [{"name": "p"}],
    "tasks": [{"name": "long", "time": [5]}, {"name": "short", "time": [1]}]})");
  const Simulation result = simulate(make_plan({0, 0}, {{0, 1}}), graph);
  EXPECT_EQ(result.start[1], 5);
}

TEST(SimulatorTest, DetectsADeadlockingOrder) {
  const TaskGraph graph = graph_from_text(kDiamond);
  try {
    simulate(make_plan({0, 0, 0, 0}, {{0, 3, 1, 2}, {}}), graph);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("deadlock"));
    EXPECT_THAT(e.what(), HasSubstr("\"d\" on p"));
  }
}

// a -> b, a -> c, b -> d, c -> d on two workers sharing memory; each task also has its time
// while the other worker computes (busy_time), twice its time alone. No bytes: hand-offs free.
const char* const kBusyDiamond = R"({
  "devices": [{"name": "p"}, {"name": "q"}], "bandwidth": [[0, 1], [1, 0]],
  "tasks": [{"name": "a", "time": [1, 1], "busy_time": [2, 2]},
            {"name": "b", "time": [2, 2], "busy_time": [4, 4]},
            {"name": "c", "time": [3, 3], "busy_time": [6, 6]},
            {"name": "d", "time": [1, 1], "busy_time": [2, 2]}],
  "edges": [["a", "b"], ["a", "c"], ["b", "d"], ["c", "d"]]
})";

TEST(SimulatorTest, APlanWhoseTwoWorkersComputeTakesTheBusyNeighbourTimes) {
  const TaskGraph graph = graph_from_text(kBusyDiamond);
  // c on q: a 0-2, b 2-6 on p, c 2-8 on q, d 8-10.
  const Plan plan = make_plan({0, 0, 1, 0}, {{0, 1, 3}, {2}});
  EXPECT_TRUE(prices_beside_busy(plan, graph));
  const Simulation result = simulate(plan, graph);
  EXPECT_TRUE(result.beside_busy);
  EXPECT_DOUBLE_EQ(result.finish[2], 8);
  EXPECT_DOUBLE_EQ(result.makespan, 10);
}

TEST(SimulatorTest, AOneWorkerPlanKeepsItsTimesAlone) {
  const TaskGraph graph = graph_from_text(kBusyDiamond);
  // The second worker has no task: nothing computes beside the first.
  const Plan plan = make_plan({0, 0, 0, 0}, {{0, 1, 2, 3}, {}});
  EXPECT_FALSE(prices_beside_busy(plan, graph));
  const Simulation result = simulate(plan, graph);
  EXPECT_FALSE(result.beside_busy);
  EXPECT_DOUBLE_EQ(result.makespan, 7);
}

TEST(SimulatorTest, WithoutBusyTimesATwoWorkerPlanKeepsItsTimes) {
  const TaskGraph graph = graph_from_text(kDiamond);
  const Plan plan = make_plan({0, 0, 1, 0}, {{0, 1, 3}, {2}});
  EXPECT_FALSE(prices_beside_busy(plan, graph));
  EXPECT_DOUBLE_EQ(simulate(plan, graph).makespan, 8);
}

TEST(SimulatorTest, ApplySimulationCopiesTimesIntoThePlan) {
  const TaskGraph graph = graph_from_text(kDiamond);
  Plan plan = make_plan({0, 0, 1, 0}, {{0, 1, 3}, {2}});
  apply_simulation(plan, simulate(plan, graph));
  EXPECT_DOUBLE_EQ(plan.tasks[3].start, 7);
  EXPECT_DOUBLE_EQ(plan.makespan, 8);
}

// a (1 s) -> b (2 s) on devices p (rank 0) and q, 100 bytes/s and 0.5 s latency between them;
// a reads the model input x (200 bytes: 0.5 + 2 s from p to q), b produces the model output y
// (50 bytes: 0.5 + 0.5 s from q to p). `values` false: the same graph without them (threads).
TaskGraph model_chain(bool values) {
  const std::string in = values ? R"(, "model_inputs": [{"name": "x", "bytes": 200}])" : "";
  const std::string out = values ? R"(, "model_outputs": [{"name": "y", "bytes": 50}])" : "";
  return graph_from_text(R"({
    "devices": [{"name": "p"}, {"name": "q"}],
    "bandwidth": [[0, 100], [100, 0]], "latency": [[0, 0.5], [0.5, 0]],
    "tasks": [{"name": "a", "time": [1, 1], "output_bytes": 100)" +
                         in + R"(},
              {"name": "b", "time": [2, 2])" +
                         out + R"(}],
    "edges": [["a", "b"]]})");
}

TEST(SimulatorTest, AModelInputReadOffRankZeroArrivesFromItFirst) {
  // a and b on q: a starts once x is there, 0.5 + 200 / 100 s after the start. The output
  // is left out, so only the hand-out differs from the same plan without model values.
  TaskGraph graph = model_chain(true);
  graph.tasks[1].model_outputs.clear();
  const Plan plan = make_plan({1, 1}, {{}, {0, 1}});
  const Simulation before = simulate(plan, model_chain(false));
  const Simulation after = simulate(plan, graph);
  EXPECT_DOUBLE_EQ(after.start[0], 2.5);
  EXPECT_DOUBLE_EQ(after.makespan - before.makespan, 0.5 + 200.0 / 100);
  EXPECT_EQ(after.transfer_count, 1);
  EXPECT_DOUBLE_EQ(after.transfer_bytes, 200);
}

TEST(SimulatorTest, AModelOutputProducedOffRankZeroIsGatheredThere) {
  // As above, and y travels back: b finishes at 5.5, y reaches p 0.5 + 50 / 100 s later.
  const Plan plan = make_plan({1, 1}, {{}, {0, 1}});
  const Simulation result = simulate(plan, model_chain(true));
  EXPECT_DOUBLE_EQ(result.finish[1], 5.5);
  EXPECT_DOUBLE_EQ(result.makespan, 6.5);
  EXPECT_EQ(result.transfer_count, 2);
  EXPECT_DOUBLE_EQ(result.transfer_bytes, 250);
  EXPECT_DOUBLE_EQ(result.idle[1], 3.5);  // q runs a and b (3 s) of the 6.5
}

TEST(SimulatorTest, APlanAllOnRankZeroSendsNothing) {
  const Plan plan = make_plan({0, 0}, {{0, 1}, {}});
  const Simulation with = simulate(plan, model_chain(true));
  const Simulation without = simulate(plan, model_chain(false));
  EXPECT_EQ(with.start, without.start);
  EXPECT_EQ(with.makespan, 3);
  EXPECT_EQ(with.transfer_count, 0);
}

TEST(SimulatorTest, OneMessagePerModelInputSampleAndDevice) {
  // Two readers of x on q share one message; the second sample's reader gets its own.
  const TaskGraph graph = graph_from_text(R"({
    "devices": [{"name": "p"}, {"name": "q"}],
    "bandwidth": [[0, 100], [100, 0]], "latency": [[0, 0.5], [0.5, 0]],
    "tasks": [{"name": "a", "time": [1, 1], "model_inputs": [{"name": "x", "bytes": 100}]},
              {"name": "b", "time": [1, 1], "model_inputs": [{"name": "x", "bytes": 100}]},
              {"name": "c", "time": [1, 1], "batch_begin": 1, "batch_end": 2,
               "model_inputs": [{"name": "x", "bytes": 100}]}]})");
  const Simulation result = simulate(make_plan({1, 1, 1}, {{}, {0, 1, 2}}), graph);
  EXPECT_EQ(result.transfer_count, 2);
  EXPECT_DOUBLE_EQ(result.transfer_bytes, 200);
  EXPECT_DOUBLE_EQ(result.start[0], 1.5);
  EXPECT_DOUBLE_EQ(result.makespan, 4.5);
}

TEST(SimulatorTest, AnOutputWithACopyOnRankZeroIsNotGathered) {
  // b and its clone b2 both produce y: rank 0 takes its own copy, so q's is never sent.
  const TaskGraph graph = graph_from_text(R"({
    "devices": [{"name": "p"}, {"name": "q"}],
    "bandwidth": [[0, 100], [100, 0]], "latency": [[0, 0.5], [0.5, 0]],
    "tasks": [{"name": "b", "time": [3, 3], "model_outputs": [{"name": "y", "bytes": 100}]},
              {"name": "b2", "time": [1, 1], "model_outputs": [{"name": "y", "bytes": 100}]}]})");
  const Simulation result = simulate(make_plan({1, 0}, {{1}, {0}}), graph);
  EXPECT_DOUBLE_EQ(result.makespan, 3);
  EXPECT_EQ(result.transfer_count, 0);
}

TEST(SimulatorTest, ListSchedulingPricesModelValuesAsTheSimulatorDoes) {
  // The scheduler's own estimate (annealing and evolution search on it) is the simulator's.
  const TaskGraph graph = model_chain(true);
  AppendScheduler scheduler(graph, upward_rank_order(graph));
  const Plan plan = scheduler.to_plan({1, 1}, "test");
  EXPECT_DOUBLE_EQ(plan.makespan, 6.5);
  EXPECT_DOUBLE_EQ(plan.notes.at("planner_makespan").get<double>(), plan.makespan);
}

TEST(SimulatorTest, EarliestFinishWeighsTheHandOutAndAgreesWithTheSimulator) {
  // q runs the chain in 0.8 of p's time: without model values HEFT puts it there (2.4 s);
  // with them a would wait 2.5 s for x on q, so the chain stays on p (3 s).
  EarliestFinishOptions options;
  options.planner = "heft";
  for (const bool values : {false, true}) {
    TaskGraph graph = model_chain(values);
    graph.tasks[0].time[1] = 0.8;
    graph.tasks[1].time[1] = 1.6;
    const Plan plan = plan_earliest_finish(graph, options);
    EXPECT_EQ(plan.tasks[0].worker, values ? 0 : 1) << values;
    EXPECT_EQ(plan.tasks[1].worker, values ? 0 : 1) << values;
    EXPECT_DOUBLE_EQ(plan.makespan, values ? 3 : 2.4) << values;
    EXPECT_DOUBLE_EQ(plan.notes.at("planner_makespan").get<double>(), plan.makespan) << values;
  }
}

TEST(SimulatorTest, EmptyGraphHasZeroMakespan) {
  const TaskGraph graph = graph_from_text(R"({"devices": [{"name": "p"}], "tasks": []})");
  EXPECT_EQ(simulate(make_plan({}, {{}}), graph).makespan, 0);
}

}  // namespace
}  // namespace cleave
