// Each kernel file's registration of its ops (beside its kernels), by op family; the kernel
// registry calls them in this order.
#pragma once

#include "runtime/kernel.h"

namespace cleave {

// nn/: convolutions, pooling, normalizations, sampling, recurrent layers, detection (NMS).
void register_conv_kernels(KernelRegistry& registry);
void register_pool_kernels(KernelRegistry& registry);
void register_norm_kernels(KernelRegistry& registry);
void register_quantized_conv_kernels(KernelRegistry& registry);
void register_sampling_kernels(KernelRegistry& registry);
void register_recurrent_kernels(KernelRegistry& registry);
void register_detection_kernels(KernelRegistry& registry);

// math/: matrix products, Einsum, softmax and Hardmax, reductions, losses, Det, n-gram counts.
void register_matmul_kernels(KernelRegistry& registry);
void register_einsum_kernels(KernelRegistry& registry);
void register_softmax_kernels(KernelRegistry& registry);
void register_reduce_kernels(KernelRegistry& registry);
void register_loss_kernels(KernelRegistry& registry);
void register_linalg_kernels(KernelRegistry& registry);
void register_ngram_kernels(KernelRegistry& registry);
// math/: int8 quantization and the int8 matrix products.
void register_quantize_kernels(KernelRegistry& registry);
void register_quantized_matmul_kernels(KernelRegistry& registry);
void register_quantized_add_kernels(KernelRegistry& registry);
void register_byte_table_kernels(KernelRegistry& registry);
void register_quantized_concat_kernels(KernelRegistry& registry);

// control/: If, Loop and Scan, whose bodies run on a nested executor.
void register_control_flow_kernels(KernelRegistry& registry);

// tensor/: Concat.
void register_concat_kernels(KernelRegistry& registry);

namespace elementwise {
// math/: unary, binary arithmetic, comparisons and logic; tensor/: casts.
void register_unary_kernels(KernelRegistry& registry);
void register_binary_kernels(KernelRegistry& registry);
void register_logic_kernels(KernelRegistry& registry);
void register_cast_kernels(KernelRegistry& registry);
}  // namespace elementwise

namespace shape {
// tensor/: views, shape-computed sources, element moves, indexing, ordering, resizing.
void register_view_kernels(KernelRegistry& registry);
void register_source_kernels(KernelRegistry& registry);
void register_layout_kernels(KernelRegistry& registry);
void register_index_kernels(KernelRegistry& registry);
void register_order_kernels(KernelRegistry& registry);
void register_resize_kernels(KernelRegistry& registry);
// tensor/: outputs whose shapes follow input values (NonZero, Compress, Unique).
void register_select_kernels(KernelRegistry& registry);
}  // namespace shape

}  // namespace cleave
