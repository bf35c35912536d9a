// Test helper: runs a prepared kernel once on given inputs, as the executor would.
#pragma once

#include <memory>
#include <vector>

#include "runtime/kernel.h"
#include "runtime/tensor.h"

namespace cleave {

/// Runs `kernel` on `inputs` and returns its first output in the layout the kernel chose.
inline Tensor run_kernel_in_its_layout(Kernel& kernel, const std::vector<const Tensor*>& inputs,
                                       dnnl::stream& stream) {
  const OutputSpec spec = kernel.output_specs().at(0);
  auto storage = std::make_shared<Buffer>(spec.layout ? spec.layout->get_size()
                                                      : plain_byte_size(spec.dtype, spec.shape));
  Tensor output = Tensor::view(spec.dtype, spec.shape, storage);
  output.set_layout(spec.layout);
  kernel.run(inputs, {&output}, stream);
  stream.wait();
  return output;
}

}  // namespace cleave
