// One rank's part of a plan file's run: read the plan once, keep this rank's weights, its executor.
#include "distributed/rank_part.h"

#include <fmt/core.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <utility>

#include "cost/cost_table.h"
#include "distributed/mpi_executor.h"
#include "distributed/rank_weights.h"
#include "support/error.h"
#include "support/json_file.h"

namespace cleave {

RankPart::RankPart(RankPartOptions options, const MpiSession& mpi)
    : options_(std::move(options)), mpi_(mpi) {}

ModelPlan RankPart::read_plan(const Graph& graph, const std::string& plan_file) {
  if (options_.loaded) options_.loaded(graph);
  const auto unread_of = [&](ValueId id) -> const ExternalWeight& {
    return unread_.at(graph.value(id).name);
  };
  // The plan's fingerprint covers every weight: hash the unread ones piece by piece.
  const std::string fingerprint = graph_fingerprint(
      graph, [&](ValueId id, const std::function<void(const std::byte*, std::size_t)>& add) {
        if (unread_.count(graph.value(id).name))
          read_external_weight_in_pieces(unread_of(id), graph.value(id).name, add);
      });
  // Read once: what the ranks compare is the plan they run.
  const nlohmann::json plan_json =
      options_.plan_json.is_null() ? read_json_file(plan_file, "plan file") : options_.plan_json;
  ModelPlan plan = model_plan_from_json(plan_json, graph, plan_file,
                                        /*cores_on_this_host=*/false, fingerprint);
  const int workers = static_cast<int>(plan.plan.order.size());
  if (workers != mpi_.size()) {
    throw Error(
        fmt::format("{}: the plan has {} workers, but {} ranks were started (run it with "
                    "mpirun -np {})",
                    plan_file, workers, mpi_.size(), workers));
  }
  hash_ = hash_text(plan_json.dump(), hash_text(fingerprint));
  model_weight_bytes_ = 0;
  for (ValueId id : graph.initializers()) {
    const auto& data = *graph.value(id).initializer;
    if (data.bytes) model_weight_bytes_ += static_cast<double>(data.bytes->size());
    if (!data.bytes && unread_.count(graph.value(id).name))
      model_weight_bytes_ += static_cast<double>(unread_of(id).bytes);
  }
  return plan;
}

std::unique_ptr<ExecutorInterface> RankPart::make_executor(Graph& graph, const ModelPlan& plan,
                                                           ConvolutionFamily family) {
  for (ValueId id : initializers_of_worker(graph, plan.tasks, plan.plan, mpi_.rank())) {
    auto& data = *graph.value(id).initializer;
    const std::string& name = graph.value(id).name;
    if (!data.bytes && unread_.count(name))
      data.bytes = read_external_weight(unread_.at(name), name);
  }
  keep_weights_of(graph, plan.tasks, plan.plan, mpi_.rank());
  // Sampled with the weights loaded, just before the kernels fix their teams.
  threads_ = choose_rank_threads(options_.threads, options_.fixed_threads, mpi_.ranks_on_host());
  MpiOptions options;
  options.threads = threads_.threads;
  options.rank_timeout_seconds = options_.rank_timeout_seconds;
  options.release_packed_weights = options_.release_packed_weights;
  options.blocked_layouts = options_.blocked_layouts;
  options.convolution_family = family;
  return std::make_unique<MpiExecutor>(graph, plan.tasks, plan.plan, mpi_.comm(), options);
}

std::vector<double> one_clock_shifts(const std::vector<double>& origins,
                                     const std::vector<double>& offsets) {
  std::vector<double> shifts(origins.size(), 0.0);
  if (origins.empty()) return shifts;
  // Each origin read on rank 0's clock; the earliest becomes 0.
  for (std::size_t r = 0; r < origins.size(); ++r) shifts[r] = origins[r] - offsets.at(r);
  const double earliest = *std::min_element(shifts.begin(), shifts.end());
  for (double& shift : shifts) shift -= earliest;
  return shifts;
}

std::vector<Trace::Event> gather_trace_events(const MpiSession& mpi, const Trace& trace,
                                              double origin, double timeout_seconds) {
  const std::vector<double> offsets = clock_offsets(mpi, timeout_seconds);
  std::vector<double> mine;
  for (const auto& event : trace.events) {
    mine.insert(mine.end(), {static_cast<double>(event.task), static_cast<double>(event.worker),
                             event.start, event.end, event.wait});
  }
  int count = static_cast<int>(mine.size());
  std::vector<int> counts(static_cast<std::size_t>(mpi.size()));
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Igather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, mpi.comm(), &request);
  const auto what = [] { return std::string("every rank's trace"); };
  wait_until(request, deadline_after(timeout_seconds), what, timeout_seconds);
  std::vector<int> offsets_of(counts.size(), 0);
  int total = 0;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    offsets_of[r] = total;
    total += counts[r];
  }
  std::vector<double> all(static_cast<std::size_t>(std::max(total, 1)));
  MPI_Igatherv(mine.data(), count, MPI_DOUBLE, all.data(), counts.data(), offsets_of.data(),
               MPI_DOUBLE, 0, mpi.comm(), &request);
  wait_until(request, deadline_after(timeout_seconds), what, timeout_seconds);
  std::vector<double> origins(counts.size(), 0.0);
  MPI_Igather(&origin, 1, MPI_DOUBLE, origins.data(), 1, MPI_DOUBLE, 0, mpi.comm(), &request);
  wait_until(request, deadline_after(timeout_seconds), what, timeout_seconds);
  std::vector<Trace::Event> events;
  if (mpi.rank() != 0) return events;
  const std::vector<double> shifts = one_clock_shifts(origins, offsets);
  for (std::size_t r = 0; r < counts.size(); ++r) {
    for (int i = offsets_of[r]; i + 4 < offsets_of[r] + counts[r]; i += 5) {
      events.push_back(Trace::Event{static_cast<int>(all[i]), static_cast<int>(all[i + 1]),
                                    all[i + 2] + shifts[r], all[i + 3] + shifts[r], all[i + 4]});
    }
  }
  return events;
}

}  // namespace cleave
