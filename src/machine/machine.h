// The places that run work (workers/devices) and the links between them, read from JSON.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace cleave {

/// A device's analytical speed: a node takes seconds_per_op + max(flops / flops_per_second,
/// bytes moved / bytes_per_second) there. Lets a machine file describe devices whose speed
/// relative to each other differs from op to op (a GPU's launch cost dominates small ops, its
/// peak rate large ones), which one relative `speed` cannot.
struct Roofline {
  double flops_per_second = 0;  ///< Sustained arithmetic rate; 0: no roofline declared.
  double bytes_per_second = 0;  ///< Sustained memory bandwidth.
  double seconds_per_op = 0;    ///< Fixed cost of running one node (launch, dispatch).
  bool declared() const { return flops_per_second > 0; }
};

/// One place that runs tasks one at a time: a group of CPU cores, a GPU, an MPI rank.
struct Device {
  std::string name;
  std::string kind = "cpu";  ///< "cpu", "gpu", ... (free text; devices of one kind and speed
                             ///< are interchangeable for symmetry breaking)
  double speed = 1.0;        ///< Relative speed: time = reference time / speed.
  double memory_bytes = std::numeric_limits<double>::infinity();
  int threads = 1;                   ///< Intra-op threads (CPU core groups).
  std::vector<int> cores;            ///< Cores to pin to, empty = unpinned.
  std::vector<int64_t> batch_sizes;  ///< Supported batch sizes; empty = any.
  bool simulated = false;            ///< Absent on this machine: plans on it are simulated only.
  /// Used by analytical costs instead of this CPU's measured peaks divided by `speed`.
  Roofline roofline;
};

/// Devices plus a link table. bandwidth[u][v] in bytes/s (0 = no link), latency[u][v] in s.
struct Machine {
  std::string name;
  std::vector<Device> devices;
  std::vector<std::vector<double>> bandwidth;
  std::vector<std::vector<double>> latency;
  /// Where the links come from, for plan files and `plan --explain`: HostLinks::source for this
  /// host's workers (cpu_machine); empty for a machine or task-graph file's own links.
  std::string link_source;
  /// Seconds each task costs a worker of a plan in which two or more workers compute, beyond
  /// its node time: the thread executor's dispatch (input waits that find the value there,
  /// publishing, shared counts) that a sequential profile run does not pay.
  double task_seconds = 0;
  /// Seconds each run of such a plan costs beyond its tasks: waking the workers and joining them.
  double run_seconds = 0;
  /// Workers of one process (cpu_machine): a value crossing workers is shared by pointer, never
  /// sent, so the reader pays bytes / bandwidth on its own core, inside its task (reading the
  /// lines left in the producer's cache), and only the latency delays it. False (machine and
  /// task-graph files): a transfer is a message that arrives after latency + bytes / bandwidth.
  bool shared_memory = false;
  /// Bytes/s at which a rank copies a message it sends or receives (into and out of the MPI
  /// transport, header and check included); 0: not priced. Without shared_memory, a sender's
  /// worker is busy bytes / endpoint_bandwidth after the task, and a receiver that reaches the
  /// reading task after the message has arrived still pays it: MPI over TCP moves a message only
  /// while both ranks are inside MPI, so bytes a busy rank was sent wait for it to read them.
  double endpoint_bandwidth = 0;
  /// CPU seconds of a full-speed core that one poll of a rank's sleeping wait for a message
  /// costs (the wake-up from its pause: 18 us on this host's VM), per nominal poll of the
  /// backoff (support/wait_backoff.h: sleeping_wait_polls); 0: not priced. A rank that waits w
  /// for a message pays, once it is there, wake_seconds x sleeping_wait_polls(w) / speed where
  /// its device's speed is below 1 (a CPU quota, or a core shared with other ranks: every poll
  /// is taken from that share), and one poll's wake_seconds on a core of its own.
  double wake_seconds = 0;
  /// CPU seconds of a full-speed core that a rank spends on each message it sends beyond
  /// copying its bytes (endpoint_bandwidth): cleave's header, derived datatype and posting, and
  /// MPI's own per-message cost (`cleave info --send-cost` on two ranks); 0: not priced. Paid by
  /// the sender after the task, once per message, at its device's speed where that is below 1.
  double send_seconds = 0;
  /// The links are one medium (an emulated cluster's one shaped loopback, a shared bus): every
  /// message between devices, of any pair and direction, crosses it in turn at its pair's
  /// bandwidth, where false gives each pair (and direction) a link of its own. Without
  /// shared_memory only.
  bool shared_link = false;
  /// With shared_link, the bytes the medium lets through at once ahead of its rate (a token
  /// bucket's depth, tc's tbf burst): a message is across when the medium, at its rate, would
  /// have carried it, less burst / bandwidth, and never before its sender had it. 0: none.
  double link_burst_bytes = 0;

  std::size_t size() const { return devices.size(); }
  /// Seconds to move `bytes` from device u to v; 0 when u == v; +inf when there is no link.
  double transfer_time(std::size_t from, std::size_t to, double bytes) const;
  /// Of transfer_time, what delays the reader's start: all of it, or with shared_memory only the
  /// latency (the rest is read_time, paid inside the reader's task).
  double arrival_delay(std::size_t from, std::size_t to, double bytes) const;
  /// Of transfer_time, what the reader's task pays on its core: bytes / bandwidth with
  /// shared_memory, else 0.
  double read_time(std::size_t from, std::size_t to, double bytes) const;
  /// Seconds one end of a message of `bytes` spends copying it (endpoint_bandwidth); 0 when
  /// not priced or with shared_memory.
  double endpoint_seconds(double bytes) const;
  /// Seconds `device` spends on one end of a message of `bytes` (endpoint_seconds), at its
  /// speed where that is below 1: a rank under a CPU quota, or sharing a core, copies out of
  /// that share as it computes (a wait's polls are priced so too, wake_up_seconds).
  double copy_seconds(std::size_t device, double bytes) const;
  /// Seconds `device` spends sending one message of `bytes`: its copy (copy_seconds) and the
  /// per-message send_seconds, at its speed where that is below 1; 0 with shared_memory.
  double sender_seconds(std::size_t device, double bytes) const;
  /// Whether the ends of a message are priced: endpoint_bandwidth, wake_seconds or
  /// send_seconds, and no shared_memory.
  bool prices_message_ends() const;
  /// Whether messages queue on one medium: shared_link, and no shared_memory.
  bool queues_on_one_link() const { return shared_link && !shared_memory; }
  /// CPU-bound seconds `device` loses to a sleeping wait of `wait` seconds for a message once
  /// it is there (wake_seconds); 0 when not priced or it did not wait.
  double wake_up_seconds(std::size_t device, double wait) const;
  /// When `device`, free from `start`, has taken a message of `bytes` that is there at `there`:
  /// one that came while it was busy costs it its copy (copy_seconds), one it waits for is
  /// copied as it comes and costs the wait's wake-up (wake_up_seconds). The simulator and the
  /// spatial partition search price a message's receiving end with this.
  double message_taken(std::size_t device, double start, double there, double bytes) const;
  /// Same kind, speed, roofline, memory and batch sizes.
  bool identical(std::size_t a, std::size_t b) const;
};

/// Reads a machine file (JSON, schema in docs/formats.md). Throws Error naming the file and field.
Machine read_machine(const std::string& path);
Machine machine_from_json(const nlohmann::json& json, const std::string& origin);
nlohmann::json machine_to_json(const Machine& machine);
/// Reads one entry of a "devices" array; `where` prefixes errors ("m.json: devices[2]").
Device device_from_json(const nlohmann::json& json, const std::string& where);
nlohmann::json device_to_json(const Device& device);
/// Reads an n x n matrix of non-negative numbers (diagonal ignored); `where` prefixes errors.
std::vector<std::vector<double>> link_matrix_from_json(const nlohmann::json& json, std::size_t n,
                                                       const std::string& where);
/// Reads `json`'s "endpoint_bandwidth" (Machine::endpoint_bandwidth); Error naming `origin`.
double endpoint_bandwidth_from_json(const nlohmann::json& json, const std::string& origin);
/// Reads `json`'s optional "endpoint_bandwidth", "wake_seconds" and "send_seconds" into
/// `machine`: the ends of
/// a message, as machine and task-graph files give them. Error naming `origin` and the field.
void message_ends_from_json(const nlohmann::json& json, const std::string& origin,
                            Machine& machine);
/// Writes `machine`'s priced message ends (the fields above that are set) and shared_link, when
/// set, into `json`.
void message_ends_to_json(const Machine& machine, nlohmann::json& json);
/// Reads `json`'s optional "shared_link" and "link_burst_bytes" (Machine::shared_link,
/// link_burst_bytes) into `machine`; Error naming `origin` and the field when shared_link is not
/// true or false, or the burst not a non-negative number or given without a shared link.
void shared_link_from_json(const nlohmann::json& json, const std::string& origin, Machine& machine);
/// Writes the machine file atomically (temporary file in the same folder, then rename).
void write_machine(const Machine& machine, const std::string& path);
/// How this host's workers hand values to each other (cpu_machine's links and overheads).
struct HostLinks {
  double latency = 2e-6;    ///< Seconds from a producer's end to a waiting reader's start.
  double bandwidth = 20e9;  ///< Bytes/s a reader pays for a value produced on another core.
  double task_seconds = 0;  ///< Machine::task_seconds.
  double run_seconds = 0;   ///< Machine::run_seconds.
  std::string source = "host hand-off (assumed, not measured)";
};

/// `workers` identical CPU workers of `threads_each` threads on this host, linked by `links`:
/// a calibration of this host (cost/hand_off_calibration.h, carried by the cost table a plan is
/// made with: CostTable::host_links), else the assumed constants.
Machine cpu_machine(int workers, int threads_each = 1, const HostLinks& links = {});

}  // namespace cleave
