// Channels between ranks: one per value, sample and receiving rank, in the same order everywhere.
#include "distributed/mpi_routes.h"

#include <fmt/core.h>

namespace cleave {

MpiRoutes route_values(const Graph& graph, const TaskGraph& tasks, const PlanInputs& plan,
                       int max_tags) {
  MpiRoutes routes;
  routes.sends.resize(tasks.tasks.size());
  for (std::size_t t = 0; t < tasks.tasks.size(); ++t)
    routes.sends[t].resize(graph.node(tasks.tasks[t].node).outputs.size());
  std::map<std::tuple<int, ValueId, int, int>, int> channel_of;
  const auto channel_for = [&](int producer, ValueId value, int sample, int from, int to) {
    auto key = std::make_tuple(producer, value, sample, to);
    auto found = channel_of.find(key);
    if (found != channel_of.end()) return found->second;
    const Value& v = graph.value(value);
    if (!v.shape.is_static() || v.dtype == DataType::kUndefined) {
      throw Error(
          fmt::format("value '{}' crosses from rank {} to rank {}, but its type or shape "
                      "is not static; fix the input shapes (--shape)",
                      v.name, from, to));
    }
    Channel channel;
    channel.producer = producer;
    channel.output = producer >= 0 ? output_index(graph, value) : 0;
    channel.value = value;
    channel.name = v.name;
    channel.sample = sample;
    channel.from = from;
    channel.to = to;
    channel.expect.channel = static_cast<int>(routes.channels.size());
    channel.expect.dtype = v.dtype;
    channel.expect.shape = v.shape.sizes();
    channel.expect.what =
        producer >= 0 ? fmt::format("value '{}' of task '{}'", v.name, tasks.tasks[producer].name)
                      : fmt::format("graph input '{}' (sample {})", v.name, sample);
    const int index = channel.expect.channel;
    if (producer >= 0) {
      routes.sends[producer][channel.output].push_back(index);
      routes.task_to_rank[{producer, to}].push_back(index);
    } else {
      routes.input_to_rank[{value, sample, to}] = index;
    }
    routes.channels.push_back(std::move(channel));
    channel_of[key] = index;
    return index;
  };
  for (std::size_t t = 0; t < tasks.tasks.size(); ++t) {
    const int sample = static_cast<int>(tasks.tasks[t].batch_begin);
    const int rank = plan.worker[t];
    for (const TaskInput& input : plan.inputs[t]) {
      if (input.kind == TaskInput::Kind::kGraphInput && rank != 0) {
        channel_for(-1, input.value, sample, 0, rank);
      } else if (input.kind == TaskInput::Kind::kTask && plan.worker[input.task] != rank) {
        channel_for(input.task, input.value, sample, plan.worker[input.task], rank);
      }
    }
  }
  // Graph outputs go to rank 0, from its own copy of the producer where it has one.
  routes.outputs.resize(plan.samples);
  for (int sample = 0; sample < plan.samples; ++sample) {
    for (ValueId id : graph.outputs()) {
      const Value& v = graph.value(id);
      OutputRoute route;
      route.value = id;
      if (v.initializer) {
        route.kind = OutputRoute::Kind::kConstant;
      } else if (v.producer < 0) {
        route.kind = OutputRoute::Kind::kGraphInput;
      } else {
        const auto& candidates = plan.tasks_of.at({v.producer, sample});
        int producer = candidates.front();
        for (int candidate : candidates) {
          if (plan.worker[candidate] == 0) producer = candidate;
        }
        route.task = producer;
        route.output = output_index(graph, id);
        if (plan.worker[producer] != 0) channel_for(producer, id, sample, plan.worker[producer], 0);
      }
      routes.outputs[sample].push_back(route);
    }
  }
  if (static_cast<int64_t>(routes.channels.size()) > max_tags) {
    throw Error(fmt::format("the plan moves {} values between ranks, more than this MPI's {} tags",
                            routes.channels.size(), max_tags));
  }
  return routes;
}

}  // namespace cleave
