// The task-graph JSON: fields, defaults, per-edge bytes, round trips and error messages.
#include "plan/task_graph.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "task_graph_util.h"

namespace cleave {
namespace {

using testing::graph_error;
using testing::graph_from_text;
using ::testing::HasSubstr;

const char* const kDiamond = R"({
  "devices": [{"name": "cpu", "memory_bytes": 3.2e10}, {"name": "gpu", "kind": "gpu",
               "speed": 4, "batch_sizes": [1, 2]}],
  "bandwidth": [[0, 1.6e10], [1.6e10, 0]],
  "tasks": [{"name": "a", "time": [0.004, 0.001], "output_bytes": 4096, "weight_bytes": 0},
            {"name": "b", "time": [0.002, null], "output_bytes": 16},
            {"name": "c", "time": [0.002, 0.0005], "weight_bytes": 1e6, "note": "extra ok"},
            {"name": "d", "time": [0.001, 0.001]}],
  "edges": [["a", "b"], ["a", "c"], ["b", "d"], ["c", "d", 99]]
})";

TEST(TaskGraphTest, ReadsTasksDevicesAndEdges) {
  const TaskGraph graph = graph_from_text(kDiamond);
  ASSERT_EQ(graph.tasks.size(), 4u);
  ASSERT_EQ(graph.machine.size(), 2u);
  EXPECT_EQ(graph.machine.devices[0].memory_bytes, 3.2e10);
  EXPECT_EQ(graph.machine.devices[1].batch_sizes, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(graph.tasks[0].output_bytes, 4096);
  EXPECT_TRUE(std::isinf(graph.tasks[1].time[1]));
  EXPECT_EQ(graph.tasks[2].weight_bytes, 1e6);
  EXPECT_EQ(graph.edges, (std::vector<std::pair<int, int>>{{0, 1}, {0, 2}, {1, 3}, {2, 3}}));
}

TEST(TaskGraphTest, EdgeBytesDefaultToProducerOutputUnlessGiven) {
  const TaskGraph graph = graph_from_text(kDiamond);
  EXPECT_EQ(graph.bytes_on_edge(0), 4096);
  EXPECT_EQ(graph.bytes_on_edge(3), 99);
  EXPECT_DOUBLE_EQ(graph.edge_time(0, 0, 1), 4096 / 1.6e10);
  EXPECT_EQ(graph.edge_time(0, 1, 1), 0);
}

TEST(TaskGraphTest, TopologicalOrderTakesSmallestReadyIndexFirst) {
  const TaskGraph graph = graph_from_text(kDiamond);
  EXPECT_EQ(graph.topological_order(), (std::vector<int>{0, 1, 2, 3}));
}

TEST(TaskGraphTest, DuplicateEdgeCountsOnce) {
  const TaskGraph graph = graph_from_text(R"({"devices": [{"name": "d"}],
    "tasks": [{"name": "a", "time": [1]}, {"name": "b", "time": [1]}],
    "edges": [["a", "b"], ["a", "b"]]})");
  EXPECT_EQ(graph.edges.size(), 1u);
}

TEST(TaskGraphTest, JsonRoundTrip) {
  const TaskGraph graph = graph_from_text(kDiamond);
  const nlohmann::json json = task_graph_to_json(graph);
  const TaskGraph again = task_graph_from_json(json, "again");
  EXPECT_EQ(task_graph_to_json(again), json);
  EXPECT_TRUE(std::isinf(again.tasks[1].time[1]));
  EXPECT_EQ(again.bytes_on_edge(3), 99);
}

TEST(TaskGraphTest, ModelValuesRoundTripAndScaleWithABatchSlice) {
  const TaskGraph graph = graph_from_text(R"({"devices": [{"name": "d"}],
    "tasks": [{"name": "a", "time": [1], "model_inputs": [{"name": "x", "bytes": 8}],
               "model_outputs": [{"name": "y", "bytes": 4}]}]})");
  ASSERT_EQ(graph.tasks[0].model_inputs, (std::vector<ModelValue>{{"x", 8}}));
  const nlohmann::json json = task_graph_to_json(graph);
  EXPECT_EQ(task_graph_to_json(task_graph_from_json(json, "again")), json);
  const TaskGraph batched = batch_task_graph(graph, 4, {1, 3});
  EXPECT_EQ(batched.tasks[1].model_inputs, (std::vector<ModelValue>{{"x", 24}}));
  EXPECT_EQ(batched.tasks[1].model_outputs, (std::vector<ModelValue>{{"y", 12}}));
}

TEST(TaskGraphTest, BusyTimesRoundTripAndScaleWithABatchSlice) {
  const TaskGraph graph = graph_from_text(R"({"devices": [{"name": "d"}, {"name": "e"}],
    "bandwidth": [[0, 1], [1, 0]],
    "tasks": [{"name": "a", "time": [1, 2], "busy_time": [3, null]}]})");
  ASSERT_EQ(graph.tasks[0].busy_time.size(), 2u);
  EXPECT_EQ(graph.tasks[0].busy_time[0], 3);
  EXPECT_TRUE(std::isinf(graph.tasks[0].busy_time[1]));
  const nlohmann::json json = task_graph_to_json(graph);
  EXPECT_EQ(task_graph_to_json(task_graph_from_json(json, "again")), json);
  const TaskGraph batched = batch_task_graph(graph, 4, {1, 3});
  EXPECT_EQ(batched.tasks[1].busy_time[0], 9);
}

TEST(TaskGraphTest, WriteThenReadFile) {
  const std::string path =
      (std::filesystem::temp_directory_path() / "cleave_task_graph_test.json").string();
  write_task_graph(graph_from_text(kDiamond), path);
  EXPECT_EQ(read_task_graph(path).tasks[3].name, "d");
  std::filesystem::remove(path);
}

TEST(TaskGraphErrorTest, UnknownTaskInEdge) {
  EXPECT_EQ(graph_error(R"({"devices": [{"name": "d"}], "tasks": [{"name": "a", "time": [1]}],
                           "edges": [["a", "zz"]]})"),
            "g.json: edges[0]: unknown task \"zz\"");
}

TEST(TaskGraphErrorTest, DuplicateTaskName) {
  EXPECT_THAT(graph_error(R"({"devices": [{"name": "d"}],
                              "tasks": [{"name": "a", "time": [1]}, {"name": "a", "time": [2]}]})"),
              HasSubstr("g.json: task \"a\": duplicate task name (also tasks[0])"));
}

TEST(TaskGraphErrorTest, WrongTimeVectorLength) {
  EXPECT_THAT(
      graph_error(R"({"devices": [{"name": "d"}, {"name": "e"}],
                              "bandwidth": [[0, 1], [1, 0]],
                              "tasks": [{"name": "conv1", "time": [1]}]})"),
      HasSubstr("g.json: task \"conv1\": time: expected 2 entries (one per device), got 1"));
}

TEST(TaskGraphErrorTest, WrongBusyTimeVectorLength) {
  EXPECT_THAT(
      graph_error(R"({"devices": [{"name": "d"}, {"name": "e"}],
                              "bandwidth": [[0, 1], [1, 0]],
                              "tasks": [{"name": "conv1", "time": [1, 1], "busy_time": [2]}]})"),
      HasSubstr("g.json: task \"conv1\": busy_time: expected 2 entries (one per device), got 1"));
}

TEST(TaskGraphErrorTest, NegativeBusyTime) {
  EXPECT_THAT(graph_error(R"({"devices": [{"name": "d"}],
                              "tasks": [{"name": "a", "time": [1], "busy_time": [-1]}]})"),
              HasSubstr("g.json: task \"a\": busy_time[0]: expected a non-negative number"));
}

TEST(TaskGraphErrorTest, BusyTimeNotAList) {
  EXPECT_THAT(graph_error(R"({"devices": [{"name": "d"}],
                              "tasks": [{"name": "a", "time": [1], "busy_time": 2}]})"),
              HasSubstr("g.json: task \"a\": busy_time: expected an array of 1 seconds"));
}

TEST(TaskGraphErrorTest, BusyTimeOfTheWrongLengthBuiltInCode) {
  TaskGraph graph = graph_from_text(R"({"devices": [{"name": "d"}],
                                        "tasks": [{"name": "a", "time": [1]}]})");
  graph.tasks[0].busy_time = {1, 2};
  try {
    graph.check("built");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("built: task \"a\": busy_time: expected 1 entries"));
  }
}

TEST(TaskGraphErrorTest, CycleNamesItsTasks) {
  EXPECT_THAT(graph_error(R"({"devices": [{"name": "d"}],
                              "tasks": [{"name": "a", "time": [1]}, {"name": "b", "time": [1]},
                                        {"name": "c", "time": [1]}, {"name": "x", "time": [1]}],
                              "edges": [["x", "a"], ["a", "b"], ["b", "c"], ["c", "a"]]})"),
              HasSubstr("cycle through task \"a\": a -> b -> c -> a"));
}

TEST(TaskGraphErrorTest, SelfLoopIsACycle) {
  EXPECT_THAT(graph_error(R"({"devices": [{"name": "d"}], "tasks": [{"name": "a", "time": [1]}],
                              "edges": [["a", "a"]]})"),
              HasSubstr("task \"a\" depends on itself"));
}

TEST(TaskGraphErrorTest, NegativeTime) {
  EXPECT_THAT(
      graph_error(R"({"devices": [{"name": "d"}], "tasks": [{"name": "a", "time": [-1]}]})"),
      HasSubstr("g.json: task \"a\": time[0]: expected a non-negative number, got -1"));
}

TEST(TaskGraphErrorTest, NaNTimeBuiltInCode) {
  TaskGraph graph = graph_from_text(R"({"devices": [{"name": "d"}],
                                        "tasks": [{"name": "a", "time": [1]}]})");
  graph.tasks[0].time[0] = std::nan("");
  try {
    graph.check("built");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("built: task \"a\": time[0] (d): expected a non-negative"));
  }
}

TEST(TaskGraphErrorTest, TaskThatRunsNowhere) {
  EXPECT_THAT(
      graph_error(R"({"devices": [{"name": "d"}], "tasks": [{"name": "a", "time": [null]}]})"),
      HasSubstr("task \"a\": cannot run on any device"));
}

TEST(TaskGraphErrorTest, NegativeOutputBytes) {
  EXPECT_THAT(graph_error(R"({"devices": [{"name": "d"}],
                              "tasks": [{"name": "a", "time": [1], "output_bytes": -5}]})"),
              HasSubstr("task \"a\": output_bytes: expected a non-negative number, got -5"));
}

TEST(TaskGraphErrorTest, ModelInputsNotAList) {
  EXPECT_THAT(graph_error(R"({"devices": [{"name": "d"}],
                              "tasks": [{"name": "a", "time": [1], "model_inputs": "x"}]})"),
              HasSubstr("g.json: task \"a\": model_inputs: expected an array"));
}

TEST(TaskGraphErrorTest, ModelOutputWithoutBytes) {
  EXPECT_THAT(graph_error(R"({"devices": [{"name": "d"}],
                     "tasks": [{"name": "a", "time": [1], "model_outputs": [{"name": "y"}]}]})"),
              HasSubstr("g.json: task \"a\": model_outputs[0]: expected {\"name\""));
}

TEST(TaskGraphErrorTest, NegativeModelInputBytes) {
  EXPECT_THAT(graph_error(R"({"devices": [{"name": "d"}], "tasks": [{"name": "a", "time": [1],
                              "model_inputs": [{"name": "x", "bytes": -1}]}]})"),
              HasSubstr("g.json: task \"a\": model_inputs[0]: bytes: expected a non-negative "
                        "number, got -1"));
}

TEST(TaskGraphErrorTest, NaNModelOutputBytesBuiltInCode) {
  TaskGraph graph = graph_from_text(R"({"devices": [{"name": "d"}],
                                        "tasks": [{"name": "a", "time": [1]}]})");
  graph.tasks[0].model_outputs.push_back({"y", std::nan("")});
  try {
    graph.check("built");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("built: task \"a\": model_outputs[0] ('y'): bytes"));
  }
}

TEST(TaskGraphErrorTest, EdgeNotAPair) {
  EXPECT_THAT(graph_error(R"({"devices": [{"name": "d"}], "tasks": [{"name": "a", "time": [1]}],
                              "edges": [["a"]]})"),
              HasSubstr("g.json: edges[0]: expected [\"producer\", \"consumer\"]"));
}

TEST(TaskGraphErrorTest, MissingBandwidthForTwoDevices) {
  EXPECT_THAT(graph_error(R"({"devices": [{"name": "d"}, {"name": "e"}], "tasks": []})"),
              HasSubstr("g.json: bandwidth: missing"));
}

TEST(TaskGraphErrorTest, BadDeviceField) {
  EXPECT_THAT(graph_error(R"({"devices": [{"name": "d", "memory_bytes": -3}], "tasks": []})"),
              HasSubstr("g.json: devices[0].memory_bytes: expected a positive number, got -3"));
}

TEST(TaskGraphErrorTest, TimeMustBeANumber) {
  EXPECT_THAT(
      graph_error(R"({"devices": [{"name": "d"}], "tasks": [{"name": "a", "time": ["x"]}]})"),
      HasSubstr("task \"a\": time[0]: expected a non-negative number, got \"x\""));
}

}  // namespace
}  // namespace cleave
