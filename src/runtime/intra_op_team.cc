// The intra-op team of a node from its work, and the scope that holds OpenMP's team to it.
#include "runtime/intra_op_team.h"

#include <omp.h>

#include <algorithm>
#include <string_view>

#include "runtime/kernels/math/quantize_util.h"
#include "runtime/wait_policy.h"

namespace cleave {

namespace {

bool is_one_of(std::string_view op, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), op) != names.end();
}

const Tensor* input_at(std::span<const Tensor* const> inputs, std::size_t slot) {
  return slot < inputs.size() ? inputs[slot] : nullptr;
}

double elements(const Tensor& tensor) {
  return static_cast<double>(tensor.element_count());
}

bool is_integer(const Tensor& tensor) {
  return tensor.dtype() == DataType::kInt8 || tensor.dtype() == DataType::kUInt8;
}

// Each output element (each input element, transposed) meets every weight of its group:
// 2 |W| N prod(spatial), with the output's spatial size taken as the input's over the strides.
// Padding and dilation are left out: this decides a thread count, not a cost to report.
double conv_flops(const Node& node, const Tensor& x, const Tensor& w, bool transposed) {
  if (x.rank() < 3) return 0;
  double pixels = 1;
  for (std::size_t d = 2; d < x.rank(); ++d) pixels *= static_cast<double>(x.shape()[d]);
  if (!transposed) {
    for (int64_t stride : node.ints_attribute("strides")) pixels /= std::max<int64_t>(1, stride);
  }
  return 2 * elements(w) * static_cast<double>(x.shape()[0]) * pixels;
}

// 2 M K N over the broadcast batch: the larger of 2 |A| N and 2 |B| M.
double matmul_flops(const Tensor& a, const Tensor& b) {
  if (a.rank() == 0 || b.rank() == 0) return 0;
  const double n = b.rank() >= 2 ? static_cast<double>(b.shape().back()) : 1;
  const double m = a.rank() >= 2 ? static_cast<double>(a.shape()[a.rank() - 2]) : 1;
  return 2 * std::max(elements(a) * n, elements(b) * m);
}

double gemm_flops(const Node& node, const Tensor& a, const Tensor& b) {
  if (a.rank() != 2 || b.rank() != 2) return 0;
  const double n = static_cast<double>(b.shape()[node.int_attribute("transB", 0) ? 0 : 1]);
  return 2 * elements(a) * n;
}

// A recurrence's product of the input with W over every step does not wait for the previous
// step: 2 · steps · batch · |W| decides the team (LSTM's loops, lstm_loops.h, run that product on
// it). oneDNN's primitives fork their team once a step and hold it at one step's work
// themselves (recurrent_dnnl.cc: lstm on 2 threads had run 2.1x its 1-thread time with every
// thread kept).
NodeWork recurrence_work(const Node& node, std::span<const Tensor* const> inputs) {
  NodeWork work;
  const Tensor* x = input_at(inputs, 0);
  const Tensor* w = input_at(inputs, 1);
  const Tensor* r = input_at(inputs, 2);
  if (!x || !w || !r || x->rank() != 3) {
    work.unknown = true;
    return work;
  }
  const bool time_major = node.int_attribute("layout", 0) == 0;
  const auto steps = static_cast<double>(x->shape()[time_major ? 0 : 1]);
  const auto batch = static_cast<double>(x->shape()[time_major ? 1 : 0]);
  work.flops = 2 * batch * std::max(steps * elements(*w), elements(*w) + elements(*r));
  return work;
}

}  // namespace

NodeWork node_work(const Node& node, std::span<const Tensor* const> inputs) {
  NodeWork work;
  for (const auto& [name, attribute] : node.attributes) {
    if (attribute.g || !attribute.graphs.empty()) work.unknown = true;  // If, Loop, Scan
  }
  const std::string_view op = node.op_type;
  if (is_one_of(op, {"LSTM", "GRU", "RNN"}) && !work.unknown) return recurrence_work(node, inputs);
  if (op == "Einsum") work.unknown = true;
  double largest = 0;
  for (const Tensor* input : inputs) {
    if (!input) continue;
    const auto bytes = static_cast<double>(input->byte_size());
    work.bytes += bytes;
    largest = std::max(largest, bytes);
  }
  work.bytes += largest;
  // The operands of the products, by op: {first, second}.
  std::size_t first = 0, second = 1;
  if (is_one_of(op, {"QLinearConv", "QLinearMatMul"})) second = 3;
  const Tensor* a = input_at(inputs, first);
  const Tensor* b = input_at(inputs, second);
  if (!a || !b) return work;
  if (is_one_of(op, {"Conv", "ConvInteger", "QLinearConv"})) {
    work.flops = conv_flops(node, *a, *b, false);
  } else if (op == "ConvTranspose") {
    work.flops = conv_flops(node, *a, *b, true);
  } else if (is_one_of(op, {"MatMul", "MatMulInteger", "QLinearMatMul", "FusedMatMul"})) {
    work.flops = matmul_flops(*a, *b);
  } else if (op == "Gemm") {
    work.flops = gemm_flops(node, *a, *b);
  } else {
    return work;
  }
  work.integer = is_integer(*a) && is_integer(*b);
  return work;
}

double integer_ops_per_thread(bool one_pass_int8, bool threads_spin) {
  return one_pass_int8 || !threads_spin ? kIntraOpIntegerOpsPerThread
                                        : kIntraOpExactInt8OpsPerThread;
}

double integer_ops_per_thread() {
  static const double rate = integer_ops_per_thread(quantize_detail::dnnl_int8_products_exact(),
                                                    spin_count_in_effect() > 0);
  return rate;
}

int intra_op_team(const NodeWork& work, int threads) {
  return intra_op_team(work, threads, work.integer ? integer_ops_per_thread() : 0);
}

int intra_op_team(const NodeWork& work, int threads, double integer_rate) {
  threads = std::max(1, threads);
  if (work.unknown || threads == 1) return threads;
  const double per_thread = work.integer ? integer_rate : kIntraOpFlopsPerThread;
  const double shares = std::max(work.flops / per_thread, work.bytes / kIntraOpBytesPerThread);
  // One thread or all of them, never a team in between: libgomp ends the surplus threads of
  // its pool when a smaller team starts and creates them again when the full team next runs,
  // so nodes alternating 3 and 8 threads paid a thread creation per node (on the 16-core Xeon
  // the RWNN ran 26.6 ms on 16 threads against 8.1 on 4; bench/device/threads_probe.sh).
  return shares < 2 ? 1 : threads;  // NaN: keep every thread.
}

int loop_team(int64_t parts, int threads) {
  return parts > 1 && threads > 1 ? threads : 1;
}

IntraOpTeamScope::IntraOpTeamScope(int team) {
  const int current = omp_get_max_threads();
  team = std::max(1, team);
  if (team >= current) return;
  saved_ = current;
  omp_set_num_threads(team);
}

IntraOpTeamScope::~IntraOpTeamScope() {
  if (saved_ > 0) omp_set_num_threads(saved_);
}

}  // namespace cleave
