// Node runner: kernel lookup by op and opset, lazy preparation, output allocation from a pool.
#include "runtime/node_runner.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <new>

#include "runtime/intra_op_team.h"
#include "runtime/kernels/packed_constants.h"

namespace cleave {

namespace {

Tensor aliased_output(const Tensor& source, const OutputSpec& spec) {
  if (source.storage()) {
    auto offset = static_cast<std::size_t>(static_cast<const std::byte*>(source.raw()) -
                                           source.storage()->data());
    return Tensor::view(spec.dtype, spec.shape, source.storage(), offset);
  }
  return Tensor::borrow(spec.dtype, spec.shape, source.raw());
}

}  // namespace

int64_t opset_of(const Graph& graph, const Node& node) {
  std::string domain = node.domain == "ai.onnx" ? "" : node.domain;
  auto it = graph.opset_imports.find(domain);
  if (it != graph.opset_imports.end()) return it->second;
  return domain.empty() ? 17 : 1;
}

const KernelInfo& kernel_for(const Graph& graph, NodeId id) {
  const Node& node = graph.node(id);
  std::string domain = node.domain == "ai.onnx" ? "" : node.domain;
  int64_t opset = opset_of(graph, node);
  const KernelInfo* info = KernelRegistry::global().find(domain, node.op_type, opset);
  if (!info) {
    throw UnsupportedError(fmt::format("node {}: no kernel for op {}{} at opset {}",
                                       graph.describe(id), domain.empty() ? "" : domain + ".",
                                       node.op_type, opset));
  }
  return *info;
}

bool blocked_layout_allowed(const Graph& graph, ValueId value) {
  const Value& v = graph.value(value);
  if (v.is_graph_output || v.producer < 0) return false;
  return readers_take_blocked(graph, value);
}

bool readers_take_blocked(const Graph& graph, ValueId value) {
  const auto& users = graph.consumers(value);
  if (users.empty()) return false;
  for (NodeId user : users) {
    const Node& node = graph.node(user);
    std::string domain = node.domain == "ai.onnx" ? "" : node.domain;
    const KernelInfo* info =
        KernelRegistry::global().find(domain, node.op_type, opset_of(graph, node));
    if (!info) return false;
    for (std::size_t slot = 0; slot < node.inputs.size(); ++slot) {
      if (node.inputs[slot] == value && !info->accepts_blocked(slot)) return false;
    }
  }
  return true;
}

Tensor to_plain(const Tensor& tensor, dnnl::engine& engine, dnnl::stream& stream) {
  if (!tensor.is_blocked()) return tensor;
  // The reorder writes every element.
  Tensor plain = Tensor::allocate_uninitialised(tensor.dtype(), tensor.shape());
  dnnl::memory::dims dims(tensor.shape().begin(), tensor.shape().end());
  dnnl::memory::desc plain_desc(
      dims, dnnl::memory::data_type::f32,
      dnnl::memory::format_tag(tensor.rank() == 3   ? dnnl::memory::format_tag::abc
                               : tensor.rank() == 4 ? dnnl::memory::format_tag::abcd
                               : tensor.rank() == 5 ? dnnl::memory::format_tag::abcde
                               : tensor.rank() == 2 ? dnnl::memory::format_tag::ab
                                                    : dnnl::memory::format_tag::a));
  dnnl::memory source(*tensor.layout(), engine, const_cast<void*>(tensor.raw()));
  dnnl::memory target(plain_desc, engine, plain.raw());
  dnnl::reorder(source, target).execute(stream, source, target);
  stream.wait();
  return plain;
}

NodeRunner::NodeRunner(const Graph& graph, NodeId node, bool blocked_outputs_allowed,
                       ConvolutionFamily convolution_family, ClaimPool* claim_pool)
    : graph_(&graph),
      node_(node),
      info_(&kernel_for(graph, node)),
      blocked_outputs_allowed_(blocked_outputs_allowed),
      convolution_family_(convolution_family),
      claim_pool_(claim_pool),
      opset_(opset_of(graph, graph.node(node))) {}

bool NodeRunner::prepared_for(const std::vector<const Tensor*>& inputs) const {
  if (!kernel_ || inputs.size() != signature_.size()) return false;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const InputSignature& expected = signature_[i];
    const Tensor* input = inputs[i];
    if (!input) {
      if (expected.present) return false;
      continue;
    }
    if (!expected.present || input->dtype() != expected.dtype || input->shape() != expected.shape ||
        input->layout() != expected.layout) {
      return false;
    }
  }
  return true;
}

void NodeRunner::run(const std::vector<const Tensor*>& inputs, const std::vector<bool>& constant,
                     std::vector<Tensor>& outputs, BufferPool& pool, dnnl::engine& engine,
                     dnnl::stream& stream, int threads, const std::vector<Tensor>* placed) {
  const Node& node = graph_->node(node_);
  if (!prepared_for(inputs) || !kernel_->prepared_for_values(inputs)) {
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      if (!inputs[i]) continue;
      DataType type = inputs[i]->dtype();
      // Ops whose inputs differ in type (Reshape's int64 shape) list only their data type;
      // the first input decides whether the implementation covers the call.
      if (i == 0 &&
          std::find(info_->dtypes.begin(), info_->dtypes.end(), type) == info_->dtypes.end()) {
        throw UnsupportedError(fmt::format("node {}: {} input of type {} is not supported",
                                           graph_->describe(node_), node.op_type,
                                           dtype_name(type)));
      }
    }
    team_ = intra_op_team(node_work(node, inputs), threads);
    KernelContext context{*graph_,
                          node_,
                          node,
                          opset_,
                          inputs,
                          constant,
                          engine,
                          team_,
                          blocked_outputs_allowed_,
                          convolution_family_,
                          claim_pool_,
                          pack_product_weights_};
    try {
      // Weights the layout choice set aside are read here; the kernel may pack them for good.
      LoadedBytesBack loaded(inputs);
      const IntraOpTeamScope team(team_);
      kernel_ = info_->create(context);
      loaded.kernel_made(inputs_packed_for_good(*graph_, node, kernel_.get()));
    } catch (const UnsupportedError&) {
      throw;
    } catch (const Error& e) {
      // Kernels refuse shapes whose size overflows while they are made: name the node.
      const std::string message = e.what();
      if (message.starts_with("node ")) throw;
      throw Error(fmt::format("node {}: {}", graph_->describe(node_), message));
    }
    specs_ = kernel_->output_specs();
    signature_.assign(inputs.size(), InputSignature());
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      if (!inputs[i]) continue;
      signature_[i] = {true, inputs[i]->dtype(), inputs[i]->shape(), inputs[i]->layout()};
    }
    if (specs_.size() < node.outputs.size()) {
      throw Error(fmt::format("node {}: kernel made {} outputs, the node has {}",
                              graph_->describe(node_), specs_.size(), node.outputs.size()));
    }
  }
  outputs.resize(specs_.size());
  std::vector<Tensor*> output_pointers;
  output_pointers.reserve(specs_.size());
  for (std::size_t i = 0; i < specs_.size(); ++i) {
    const OutputSpec& spec = specs_[i];
    if (spec.alias_of >= 0) {
      outputs[i] = aliased_output(*inputs.at(spec.alias_of), spec);
      outputs[i].set_layout(spec.layout);  // A view may read the same bytes in another layout.
    } else if (placed && i < placed->size() && (*placed)[i].raw()) {
      outputs[i] = (*placed)[i];
    } else {
      // A shape too big to count or to allocate is the model's (or --shape's) doing: the
      // message names the node and the shape that made it.
      const auto failed = [&](std::string_view problem) {
        return Error(fmt::format("node {}: output {} of type {} and shape [{}]: {}",
                                 graph_->describe(node_), i, dtype_name(spec.dtype),
                                 fmt::join(spec.shape, ","), problem));
      };
      try {
        std::size_t bytes =
            spec.layout ? spec.layout->get_size() : plain_byte_size(spec.dtype, spec.shape);
        outputs[i] =
            Tensor::view(spec.dtype, spec.shape,
                         shaped_at_run_time_ ? pool.acquire_run_time(bytes) : pool.acquire(bytes));
      } catch (const UnsupportedError&) {
        throw;
      } catch (const Error& e) {
        throw failed(e.what());
      } catch (const std::bad_alloc&) {
        throw failed("out of memory");
      }
      outputs[i].set_layout(spec.layout);
    }
    output_pointers.push_back(&outputs[i]);
  }
  const IntraOpTeamScope team(team_);
  kernel_->run(inputs, output_pointers, stream);
}

}  // namespace cleave
