// The optimizer (thesis §3.4): which region of each tensor each machine computes and holds.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "machine/machine.h"
#include "machine/shared_medium.h"
#include "spatial/naive_partition.h"

namespace cleave {

/// How machines get the inputs of their slices.
enum class JoinMode {
  /// The thesis's naive phase: after every layer each machine that reads a tensor gathers the
  /// whole of it (concatenation of every machine's part), then crops what its slice reads.
  kNaive,
  /// Only the missing rows are fetched, a crop only where needed, nothing where the held part
  /// is exactly what is read (the four cases of §3.4).
  kOptimized,
};

/// One message of a layer's halo exchange: `bytes` from machine `from` to machine `to`.
struct HaloMessage {
  int from = 0;
  int to = 0;
  double bytes = 0;
};

/// What a transfer and a redundant computation cost, for the fusion decision and predictions.
struct SplitCostModel {
  double flops_per_second = 1e10;   ///< Of a machine of speed 1.
  double bytes_per_second = 125e6;  ///< Per link (1 Gbit/s).
  double latency_seconds = 1e-4;    ///< Per message.
  /// When positive, a copy of the partitioned graph (Slice, Concat: crops, halo joins) costs
  /// the bytes it reads and writes at this rate plus `seconds_per_copy` (this CPU's measured
  /// memory bandwidth and per-op cost, PeakRates), instead of a quarter FLOP per element at
  /// `flops_per_second`, which prices them at almost nothing.
  double copy_bytes_per_second = 0;
  double seconds_per_copy = 0;
  std::vector<double> speeds;  ///< Per machine; empty = all 1.
  /// Optional per-pair link bandwidth (bytes/s) and latency, from a machine file.
  std::vector<std::vector<double>> bandwidth;
  std::vector<std::vector<double>> latency;
  /// The machine file's machine (use_split_machine), for the ends of a message it prices
  /// (Machine::prices_message_ends: the copies at endpoint_bandwidth, the wake-up of a wait);
  /// null: a message is its transfer.
  std::shared_ptr<const Machine> machine;

  /// When positive, the cost model is not asked: the outputs of the first this many layers (in
  /// topological order) are fused and no others — DeepThings' fixed-depth fused tiles.
  int fixed_fuse_depth = 0;

  double speed(int m) const { return speeds.empty() ? 1.0 : speeds.at(m); }
  double transfer_seconds(int from, int to, double bytes) const;
  /// Seconds from a message's send until machine `to` has taken it, the receiver free and
  /// waiting from the send (a layer's halos are exchanged when both ends have computed the
  /// layer before): transfer_seconds, then the receiving end as the simulator prices it
  /// (Machine::message_taken) when the machine prices message ends.
  double receive_seconds(int from, int to, double bytes) const;
  /// Per machine (`machines` of them), the seconds from a layer's start, when every machine has
  /// computed what the messages carry, until it has sent its own messages and taken every one
  /// sent to it: the simulator's rules for one exchange. Each sender first pays each of its
  /// messages' sending end (Machine::sender_seconds: its copy and the per-message cost) where
  /// the machine prices message ends; a message leaves as the sender copies it or as the link
  /// carries it, whichever is later. On a shared link (Machine::queues_on_one_link) every
  /// message crosses the one medium in turn (SharedMedium, booked by sender then receiver, at
  /// the pair's bandwidth), else each receiver's own link carries its messages one after
  /// another; the latency follows. A receiver takes its messages as they come, after its own
  /// sends (Machine::message_taken where ends are priced). Without a machine: the sum of the
  /// transfers to each machine.
  std::vector<double> exchange_seconds(std::vector<HaloMessage> messages, int machines) const;
  /// Seconds `machine` spends on the sending end of one message of `bytes` (0 unless the
  /// machine prices message ends).
  double send_seconds(int machine, double bytes) const;
};

/// Per value, per machine, the box that machine computes (or, for graph inputs, has); an empty
/// box when it holds none of it.
struct Regions {
  std::vector<std::vector<Box>> held;      ///< [ValueId][machine]
  std::vector<std::vector<Box>> owned;     ///< [ValueId][machine]: the partition others fetch from
  std::vector<std::vector<char>> present;  ///< [ValueId][machine]: the machine holds a part
  std::vector<bool> fused;                 ///< [ValueId]: held grown past owned to skip transfers
  int fused_count = 0;
};

/// The box of `value` each machine's slices read (bounding box over its consumers there; the
/// whole tensor on machine 0 for a graph output). In kNaive mode, the whole tensor.
std::vector<Box> needed_boxes(const Graph& graph, const Partition& partition,
                              const Regions& regions, ValueId value, JoinMode mode);

/// Held regions: graph inputs whole on every machine; each node output owned as the partition
/// says; with `fuse`, a tensor's held box grows to what the machine's consumers read whenever
/// the cost model says the redundant computation costs less than the transfers it saves (fused
/// tile partitioning, decided per tensor from the last layer back, not at a fixed depth).
Regions plan_regions(const Graph& graph, const Partition& partition, JoinMode mode, bool fuse,
                     const SplitCostModel& cost);

/// §3.4's four cases for a machine reading box `read` of a tensor it holds `held` of.
enum class JoinCase {
  kSame,       ///< Equal: no crop, no join.
  kCrop,       ///< Held larger, nothing missing: crop only.
  kFetch,      ///< Held inside what is read: fetch the missing rows and join.
  kFetchCrop,  ///< Some missing and some extra: fetch, join and crop.
};
JoinCase classify_join(const Box& held, const Box& read);
std::string_view join_case_name(JoinCase c);

}  // namespace cleave
