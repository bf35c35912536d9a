// Test helpers: run a prepared kernel once on given inputs, as the executor would, and prepare
// a one-node graph's kernel by hand on given (possibly blocked) tensors.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "ir/text.h"
#include "runtime/kernel.h"
#include "runtime/kernels/dnnl_util.h"
#include "runtime/node_runner.h"
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

// Prepares and runs the single node of `text` on given (possibly blocked) tensors.
class DirectKernel {
 public:
  explicit DirectKernel(std::string_view text) : graph_(parse_graph(text)) {}

  // A blocked copy (nChw16c unless told) of a plain 4-D float tensor.
  Tensor blocked(const Tensor& plain,
                 dnnl::memory::format_tag tag = dnnl::memory::format_tag::nChw16c) {
    const dnnl::memory::dims dims(plain.shape().begin(), plain.shape().end());
    const dnnl::memory::desc layout(dims, dnnl::memory::data_type::f32, tag);
    auto storage = std::make_shared<Buffer>(layout.get_size());
    LayoutReorder(plain_desc(plain.shape()), layout, engine_)
        .run(plain.raw(), storage->data(), stream_);
    Tensor t = Tensor::view(DataType::kFloat, plain.shape(), storage);
    t.set_layout(layout);
    return t;
  }

  std::unique_ptr<Kernel> prepare(const std::vector<const Tensor*>& inputs,
                                  std::vector<bool> constant, bool blocked_outputs_allowed,
                                  int threads = 1) {
    const NodeId node = graph_.node_ids().at(0);
    KernelContext context{graph_,  node,    graph_.node(node),      17, inputs, std::move(constant),
                          engine_, threads, blocked_outputs_allowed};
    const KernelInfo* info = KernelRegistry::global().find("", graph_.node(node).op_type, 17);
    EXPECT_NE(info, nullptr);
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i] && inputs[i]->is_blocked()) {
        EXPECT_TRUE(info->accepts_blocked(i));
      }
    }
    return info->create(context);
  }

  // Runs a prepared kernel and returns its output in the layout the kernel chose.
  Tensor run_in_layout(Kernel& kernel, const std::vector<const Tensor*>& inputs) {
    return run_kernel_in_its_layout(kernel, inputs, stream_);
  }

  // Runs a prepared kernel and returns its output, converted to plain.
  Tensor run(Kernel& kernel, const std::vector<const Tensor*>& inputs) {
    return to_plain(run_in_layout(kernel, inputs), engine_, stream_);
  }

 private:
  Graph graph_;
  dnnl::engine engine_{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream_{engine_};
};

}  // namespace cleave
