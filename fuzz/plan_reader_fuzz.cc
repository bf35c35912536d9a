// libFuzzer target: arbitrary bytes into the task-graph, plan and machine JSON readers, which
// may only fail with cleave::Error.
//
// Each input is parsed as JSON (bytes that are not JSON stop there). The whole document is read
// as a task graph, as a machine and as a stand-alone plan; a document with a "task_graph"
// member is read as a plan file of `cleave plan`: its task graph, then the plan against it
// (names resolved, then validated). A task graph that reads must also survive writing and
// reading back.
#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "machine/machine.h"
#include "plan/plan.h"
#include "plan/task_graph.h"

namespace {

template <typename Action>
void expect_only_errors(Action&& action) {
  try {
    action();
  } catch (const cleave::Error&) {
    // Rejected with a message: what bad input should get.
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  nlohmann::json json = nlohmann::json::parse(bytes, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return 0;
  expect_only_errors([&] {
    const cleave::TaskGraph graph = cleave::task_graph_from_json(json, "fuzz task graph");
    const cleave::TaskGraph again =
        cleave::task_graph_from_json(cleave::task_graph_to_json(graph), "fuzz round trip");
    if (again.tasks.size() != graph.tasks.size() || again.edges.size() != graph.edges.size()) {
      std::fprintf(stderr, "task graph round trip changed the graph\n");
      std::abort();
    }
  });
  expect_only_errors([&] { cleave::machine_from_json(json, "fuzz machine"); });
  expect_only_errors([&] { cleave::plan_from_json(json, "fuzz plan"); });
  if (json.is_object() && json.contains("task_graph")) {
    expect_only_errors([&] {
      const cleave::TaskGraph graph =
          cleave::task_graph_from_json(json["task_graph"], "fuzz plan: task_graph");
      const cleave::Plan plan = cleave::plan_from_json(json, graph, "fuzz plan");
      cleave::plan_to_json(plan, graph);
    });
  }
  return 0;
}
