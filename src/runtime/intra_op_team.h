// How many of a worker's intra-op threads one node's kernel uses, fixed when the kernel is made.
#pragma once

#include <span>

#include "ir/graph.h"
#include "runtime/tensor.h"

namespace cleave {

/// The work of one node as its kernel is made: estimated from the node's attributes and the
/// shapes of the inputs it is made for, never from the graph's inferred shapes, so that every
/// executor and generated program that makes the kernel for these inputs estimates the same.
struct NodeWork {
  double flops = 0;      ///< Multiply-adds count 2; 0 where the op is not a convolution or product.
  double bytes = 0;      ///< Bytes read, and written by an output the size of the largest input.
  bool integer = false;  ///< Integer products (QLinearConv, MatMulInteger, ...): VNNI's rate.
  /// Work that cannot be estimated here (sub-graphs, recurrences): the node keeps every thread.
  bool unknown = false;
};

/// The estimate for `node` made for `inputs` (nullptr for an omitted input).
NodeWork node_work(const Node& node, std::span<const Tensor* const> inputs);

/// The intra-op team for a node of this work when `threads` are available: 1 where the work is
/// under two threads' share (kIntraOpFlopsPerThread, integer products
/// integer_ops_per_thread(), or bytes per kIntraOpBytesPerThread), else all `threads` (a team
/// in between makes libgomp end and recreate pool threads). Deterministic: the same node and
/// input shapes give the same team in a process, which the bitwise comparisons of a plan's run
/// with the sequential run rely on.
int intra_op_team(const NodeWork& work, int threads);
/// The same with integer products counted at `integer_rate` ops per thread.
int intra_op_team(const NodeWork& work, int threads, double integer_rate);

/// Integer product ops per thread: kIntraOpIntegerOpsPerThread where int8 is multiplied in one
/// exact pass (`one_pass_int8`: VNNI) or where OpenMP's threads sleep between regions (not
/// `threads_spin`: each region then wakes them), else kIntraOpExactInt8OpsPerThread.
double integer_ops_per_thread(bool one_pass_int8, bool threads_spin);
/// This process's: dnnl_int8_products_exact() and spin_count_in_effect() > 0, read once.
double integer_ops_per_thread();

/// The OpenMP team for a loop of `parts` independent parts inside a node of `threads`: 1 for one
/// part, else all `threads` (members beyond `parts` find no work), for the same reason.
int loop_team(int64_t parts, int threads);

/// Floating-point work below which a second thread costs more than it saves: an empty 2-thread
/// region took 2.8 us on Zen 5, and nodes under ~2 million FLOPs were 3-5 us slower on 2 threads
/// than on 1 (docs/results/heldout-speed.md, 2026-11-29).
inline constexpr double kIntraOpFlopsPerThread = 1e6;
/// The same for integer products with VNNI: an instruction does 4 int8 multiply-adds per lane.
inline constexpr double kIntraOpIntegerOpsPerThread = 4e6;
/// Integer ops per thread where int8 takes cleave's exact paths without VNNI (oneDNN's saturating
/// pass and cleave's sums of what it could not hold, or products widened to int16: the int8
/// models took 1.7-4.8x their VNNI CPU time) and OpenMP's threads spin. On the AVX2 paths at 2
/// spinning threads 1e6 ran regnet_x_400mf_int8 in 0.78x the time of 4e6, and 5e5 and 2.5e5 ran
/// mnasnet0_5_int8 (1-2 M-op convolutions) in 0.85-0.87x and 0.81-0.86x that of 1e6, no held-out
/// int8 model more than 1% slower; with sleeping threads 1e6 ran regnet 1.16x slower
/// (docs/results/heldout-speed.md, 2026-12-01, hi8team).
inline constexpr double kIntraOpExactInt8OpsPerThread = 2.5e5;
/// Bytes read and written per thread below which a node runs on one.
inline constexpr double kIntraOpBytesPerThread = 256.0 * 1024;

/// Holds OpenMP's team for the calling thread at `team` while in scope (oneDNN fixes a
/// primitive's team when it is created, and its run-time loops read the team again); restores
/// the team found on entry. Only lowers it: a team at or above the current one changes nothing.
class IntraOpTeamScope {
 public:
  explicit IntraOpTeamScope(int team);
  ~IntraOpTeamScope();
  IntraOpTeamScope(const IntraOpTeamScope&) = delete;
  IntraOpTeamScope& operator=(const IntraOpTeamScope&) = delete;

 private:
  int saved_ = 0;  ///< 0: nothing changed.
};

}  // namespace cleave
