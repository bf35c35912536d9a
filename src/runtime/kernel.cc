// The kernel registry: every op implementation of the runtime, looked up by domain, op and opset.
#include "runtime/kernel.h"

#include <fmt/core.h>

#include <algorithm>

#include "runtime/kernels/registration.h"

namespace cleave {

const Tensor& KernelContext::input(std::size_t i) const {
  if (!has_input(i)) throw Error(fmt::format("{}: input {} is required but missing", where(), i));
  return *inputs[i];
}

std::string KernelContext::where() const {
  return "node " + graph.describe(node_id);
}

const KernelRegistry& KernelRegistry::global() {
  static const KernelRegistry registry = [] {
    KernelRegistry r;
    // The order kernels registered in before ops moved into families (ties keep the first).
    register_conv_kernels(r);
    register_matmul_kernels(r);
    register_einsum_kernels(r);
    register_pool_kernels(r);
    register_norm_kernels(r);
    register_softmax_kernels(r);
    register_concat_kernels(r);
    register_reduce_kernels(r);
    elementwise::register_unary_kernels(r);
    elementwise::register_binary_kernels(r);
    elementwise::register_logic_kernels(r);
    elementwise::register_cast_kernels(r);
    shape::register_view_kernels(r);
    shape::register_source_kernels(r);
    shape::register_layout_kernels(r);
    shape::register_index_kernels(r);
    shape::register_order_kernels(r);
    shape::register_resize_kernels(r);
    register_quantize_kernels(r);
    register_quantized_matmul_kernels(r);
    register_quantized_add_kernels(r);
    register_byte_table_kernels(r);
    register_quantized_concat_kernels(r);
    register_quantized_conv_kernels(r);
    register_loss_kernels(r);
    register_linalg_kernels(r);
    register_sampling_kernels(r);
    register_ngram_kernels(r);
    register_recurrent_kernels(r);
    register_detection_kernels(r);
    shape::register_select_kernels(r);
    register_control_flow_kernels(r);
    return r;
  }();
  return registry;
}

void KernelRegistry::add(KernelInfo info) {
  entries_.push_back(std::move(info));
}

const KernelInfo* KernelRegistry::find(std::string_view domain, std::string_view op_type,
                                       int64_t opset) const {
  const KernelInfo* best = nullptr;
  for (const KernelInfo& entry : entries_) {
    if (entry.op_type != op_type || entry.domain != domain || entry.since_opset > opset) continue;
    if (!best || entry.since_opset > best->since_opset) best = &entry;
  }
  return best;
}

std::vector<std::string> KernelRegistry::op_types() const {
  std::vector<std::string> names;
  for (const KernelInfo& entry : entries_) names.push_back(entry.op_type);
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

}  // namespace cleave
