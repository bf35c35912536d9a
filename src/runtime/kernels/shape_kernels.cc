// Registers every plain C++ shape and index kernel of the runtime.
#include "runtime/kernel.h"
#include "runtime/kernels/tensor/common.h"

namespace cleave {

void register_shape_kernels(KernelRegistry& registry) {
  shape::register_view_kernels(registry);
  shape::register_source_kernels(registry);
  shape::register_layout_kernels(registry);
  shape::register_index_kernels(registry);
  shape::register_order_kernels(registry);
  shape::register_resize_kernels(registry);
}

}  // namespace cleave
