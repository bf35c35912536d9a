// Predicts the timeline of a plan by executing its per-worker orders on paper.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "machine/shared_medium.h"
#include "plan/plan.h"
#include "plan/task_graph.h"

namespace cleave {

/// What executing a plan would do, under the task graph's cost model.
struct Simulation {
  std::vector<double> start;   ///< Per task, seconds.
  std::vector<double> finish;  ///< Per task, seconds.
  std::vector<double> busy;    ///< Per worker, seconds spent running tasks.
  std::vector<double> idle;    ///< Per worker, makespan - busy.
  /// Finish of the last task, or the arrival on device 0 of the last model output gathered
  /// there when later (0 for an empty graph).
  double makespan = 0;
  double transfer_bytes = 0;  ///< Bytes crossing between workers.
  /// Edges whose ends run on different workers, model inputs handed out from device 0 (one per
  /// input, sample and device) and model outputs gathered there.
  int transfer_count = 0;
  /// Whether the tasks were priced at their busy-neighbour times (prices_beside_busy).
  bool beside_busy = false;
};

/// Whether two or more of `plan`'s workers have tasks: the thread executor's dispatch and
/// run overheads (Machine::task_seconds, run_seconds) are then priced.
bool computes_on_several_workers(const Plan& plan);

/// Whether `plan` runs on two or more workers that each compute at least one task, and the
/// graph's tasks carry busy-neighbour times (Task::busy_time): then every task is priced at
/// those. On this host a core runs a node 2-4.6x slower while the other core computes (or a
/// worker spins waiting for its next input), so a multi-worker plan's nodes take their
/// busy-neighbour times however their intervals overlap; a one-worker plan keeps `time`
/// (docs/results/families-heldout.md).
bool prices_beside_busy(const Plan& plan, const TaskGraph& graph);

/// List-schedules the plan's per-worker orders exactly: a task starts when the task before it
/// on its worker has finished and every input has arrived (producer finish, plus latency and
/// bytes / bandwidth when the producer ran on another worker; on a Machine::shared_memory
/// machine only the latency, and the reader's task takes bytes / bandwidth longer instead: it
/// reads the value from the other core's cache while it runs). Model inputs a task on another
/// device than 0 reads arrive from device 0, sent at the start (TaskGraph::input_arrival); the
/// model outputs produced only off device 0 end the run when they reach it
/// (TaskGraph::output_gathers): what the MPI executor sends. Links carry any number of
/// transfers at once, but on a Machine::shared_link machine every message (one per producer and
/// reading worker; with priced ends the hand-outs and gathers too) crosses one medium in turn:
/// it takes the first gap of bytes / bandwidth on the medium from when its sender has computed
/// it, in the order the clock meets the senders, and arrives the latency after that gap (less
/// Machine::link_burst_bytes / bandwidth, never before it was sent: a token bucket's burst). With
/// Machine::endpoint_bandwidth (ranks), each end of a task-to-task message is priced too: the
/// producer's worker sends for bytes / endpoint_bandwidth after the task (one message per reading
/// worker; each Machine::send_seconds more, the hand-outs and gathers too), and a reader copies
/// each message when it gets to it (at once when it was waiting for it: the copy then overlaps the
/// link's, and the wait's polls cost it Machine::wake_up_seconds once the message is there); a task
/// that Task::copies_remote_inputs (a Concat) copies each value from another worker once more, at
/// the same rate, inside its task. Every such copy is made at the copying device's speed where that
/// is below 1 (Machine::copy_seconds: a rank under a CPU quota copies out of its share, as it
/// computes). Device 0's hand-out and gather are priced the same way: it copies every model input
/// it hands out before its first task (each leaves then, or as the link carries it), a task whose
/// model output is gathered copies it after the task, and device 0 takes the gathered outputs after
/// its own last task. Tasks take Task::time, or Task::busy_time where prices_beside_busy says so;
/// where two or more workers compute, each task takes Machine::task_seconds more and the makespan
/// Machine::run_seconds more. Throws Error when the orders deadlock or the plan does not place
/// every task once.
Simulation simulate(const Plan& plan, const TaskGraph& graph);

/// simulate()'s timeline of per-worker orders that need not list every task: a planner's
/// schedule so far (earliest_finish.h) or a whole assignment it judges (AppendScheduler), so
/// that a plan is made on the model that predicts it. Tasks listed nowhere are left out (start
/// and finish 0), and so are the messages to them and their model outputs' gather; a complete
/// set of orders gives simulate()'s result. Throws Error when an order lists a task twice or
/// one whose producer is listed nowhere, or when the orders deadlock.
Simulation simulate_orders(const std::vector<std::vector<int>>& order, const TaskGraph& graph);

/// simulate_orders for the many orders of one graph that a planner's search tries: the graph's
/// edges are listed once and the scratch space kept between calls (not thread-safe).
class OrdersClock {
 public:
  explicit OrdersClock(const TaskGraph& graph);
  Simulation simulate(const std::vector<std::vector<int>>& order) const;

 private:
  struct Message {
    int producer = -1;     // -1: a model input handed out by device 0
    std::size_t slot = 0;  // index into received_: per (producer, worker), then per hand-out
    double there = 0;      // when it can be on the reader's worker
    double bytes = 0;
  };
  // With priced ends: the messages device 0 hands out at the start (one per model input,
  // sample and reading worker), what it spends copying them, and per task the bytes of the
  // model outputs it sends to device 0 after it.
  void hand_outs() const;
  void hand_out_messages(int task, int worker) const;
  double gather_end(const std::vector<double>& finish, double makespan) const;
  void sequence_of(const std::vector<std::vector<int>>& order) const;
  // Fills worker_of_task_ from the orders; throws where a task is listed twice, does not exist,
  // or is listed without its producer.
  void workers_of(const std::vector<std::vector<int>>& order) const;
  double take_messages(int worker, double start) const;
  double send_seconds(int task, int worker) const;
  // On a shared link: books `bytes` from `from` to `to` on the medium from `ready` and returns
  // when they are across (before the latency).
  double cross_medium(std::size_t from, std::size_t to, double ready, double bytes) const;
  // On a shared link: books the messages `task` sends from `worker` (one per reading worker,
  // its largest value there), from `ready`, into crossed_.
  void send_over_medium(int task, int worker, double ready) const;
  // When `producer`'s value of `bytes` (finished at `finish`) is there on `worker`: over the
  // shared medium, or the pair's own link; with priced ends, sent once the producer computed.
  double message_there(int producer, int worker, double bytes, double finish) const;

  const TaskGraph* graph_;
  std::vector<std::vector<int>> in_edges_;
  std::vector<std::vector<int>> out_edges_;
  bool priced_ends_ = false;
  bool busy_times_ = false;   // whether the tasks carry busy-neighbour times
  bool shared_link_ = false;  // Machine::shared_link, not shared_memory
  // Scratch, per call.
  mutable std::vector<int> worker_of_task_, previous_on_worker_, next_on_worker_, waiting_,
      sequence_;
  mutable std::vector<Message> messages_;
  mutable std::vector<std::pair<double, double>> pending_;
  mutable std::vector<double> sends_, to_worker_, received_;
  // On a shared link: the medium's bookings, and per (producer, reading worker) when its
  // message is across.
  mutable SharedMedium medium_;
  mutable std::vector<double> crossed_;
  mutable std::vector<double> medium_bytes_;  // per reading worker, -1: sent nothing there
  struct HandOut {
    std::string name;
    int64_t sample = 0;
    int worker = 0;
    double bytes = 0;
    double crossed = 0;  // on a shared link: when it is across the medium
  };
  mutable std::vector<HandOut> hand_outs_;
  mutable double hand_out_seconds_ = 0;  // device 0's copies of hand_outs_, before its tasks
  mutable std::vector<OutputGather> gathers_;
  mutable std::vector<double> gather_sends_;      // per task: its gathers' sender copies
  mutable std::vector<uint64_t> received_stamp_;  // received_ holds this call's when == stamp_
  mutable uint64_t stamp_ = 0;
};

/// Copies a simulation's times into the plan (start, finish, makespan).
void apply_simulation(Plan& plan, const Simulation& simulation);

}  // namespace cleave
