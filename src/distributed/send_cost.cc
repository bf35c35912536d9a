// The per-message probe: small values published from rank 0 to rank 1 through MpiHandOff.
#include "distributed/send_cost.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>

#include "distributed/mpi_hand_off.h"
#include "distributed/mpi_session.h"
#include "support/error.h"

namespace cleave {

namespace {

constexpr double kTimeoutSeconds = 60;

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values.empty() ? 0.0 : values[values.size() / 2];
}

// One channel per probe task, every task on rank 0 and read on rank 1.
MpiRoutes probe_routes(const SendCostProbe& probe) {
  MpiRoutes routes;
  for (int k = 0; k < probe.messages; ++k) {
    Channel channel;
    channel.producer = k;
    channel.name = fmt::format("probe{}", k);
    channel.from = 0;
    channel.to = 1;
    channel.expect.channel = k;
    channel.expect.dtype = DataType::kFloat;
    channel.expect.shape = {probe.elements};
    channel.expect.what = fmt::format("probe message {}", k);
    routes.channels.push_back(channel);
    routes.sends.push_back({{k}});
    routes.task_to_rank[{k, 1}] = {k};
  }
  return routes;
}

}  // namespace

double measure_send_cost(const MpiSession& mpi, const SendCostProbe& probe,
                         std::vector<double>* per_round) {
  if (mpi.size() < 2) {
    throw Error(
        "info --send-cost: needs two ranks (one sends, one receives); run it as "
        "`mpirun -np 2 cleave info --send-cost`");
  }
  if (probe.messages < 1 || probe.rounds < 1 || probe.elements < 1)
    throw Error("info --send-cost: the probe needs messages, rounds and elements of at least 1");
  const MpiRoutes routes = probe_routes(probe);
  std::vector<int> worker(static_cast<std::size_t>(probe.messages), 0);
  std::vector<int> outputs(static_cast<std::size_t>(probe.messages), 1);
  MpiHandOff hand_off(routes, worker, outputs, mpi.comm(), mpi.rank(), FaultInjection{});
  std::vector<std::vector<Tensor>> values;
  for (int k = 0; k < probe.messages; ++k)
    values.push_back({Tensor::allocate(DataType::kFloat, {probe.elements})});
  std::vector<double> rounds;
  for (int round = 0; round < probe.rounds + 1; ++round) {  // the first warms up
    MPI_Barrier(mpi.comm());
    const int64_t run = round;
    hand_off.begin_run(run);
    std::vector<double> each;
    if (mpi.rank() == 0) {
      for (int k = 0; k < probe.messages; ++k) {
        const auto start = std::chrono::steady_clock::now();
        hand_off.publish(k, run, values[static_cast<std::size_t>(k)]);
        each.push_back(
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      }
      hand_off.finish_sends(run, kTimeoutSeconds);
    } else if (mpi.rank() == 1) {
      for (int k = 0; k < probe.messages; ++k) {
        const std::vector<Tensor>* got = nullptr;
        if (hand_off.await(k, run, kTimeoutSeconds, &got) != ValueHandOff::Wait::kReady)
          throw Error(fmt::format("info --send-cost: probe message {} did not come", k));
      }
      hand_off.end_tasks(run);
    }
    hand_off.end_run(run);
    if (round > 0 && mpi.rank() == 0) rounds.push_back(median(each));
  }
  MPI_Barrier(mpi.comm());
  if (per_round) *per_round = rounds;
  return mpi.rank() == 0 ? median(rounds) : 0.0;
}

int print_send_cost(bool json) {
  if (!launched_by_mpi()) {
    throw Error(
        "info --send-cost: needs two ranks (one sends, one receives); run it as "
        "`mpirun -np 2 cleave info --send-cost`");
  }
  MpiSession mpi;
  std::vector<double> per_round;
  const double seconds = measure_send_cost(mpi, SendCostProbe{}, &per_round);
  if (mpi.rank() != 0) return 0;
  if (json) {
    fmt::print("{}\n", nlohmann::json{{"send_seconds", seconds}, {"per_round", per_round}}.dump());
  } else {
    fmt::print("send_us {:.2f}\n", seconds * 1e6);
  }
  return 0;
}

}  // namespace cleave
