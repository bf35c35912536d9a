// Sequential executor: prepares kernels lazily, reuses buffers by liveness, reorders layouts.
#include "runtime/executor.h"

#include <fmt/core.h>
#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <new>

#include "ir/text.h"
#include "runtime/constant_tensor.h"

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

std::shared_ptr<Buffer> BufferPool::acquire(std::size_t bytes) {
  std::lock_guard lock(mutex_);
  handed_out_ += bytes;
  Entry* best = nullptr;
  for (Entry& entry : entries_) {
    // use_count 1: only the pool holds it, so no live tensor reads it any more.
    if (entry.buffer.use_count() == 1 && entry.buffer->size() >= bytes &&
        entry.free_after <= handed_out_ && (!best || entry.buffer->size() < best->buffer->size())) {
      best = &entry;
    }
  }
  if (best) return best->buffer;
  entries_.push_back({std::make_shared<Buffer>(bytes)});
  reserved_ += bytes;
  return entries_.back().buffer;
}

void BufferPool::hold_back(const Buffer& buffer, std::size_t bytes) {
  std::lock_guard lock(mutex_);
  for (Entry& entry : entries_) {
    if (entry.buffer.get() == &buffer) entry.free_after = handed_out_ + bytes;
  }
}

std::size_t BufferPool::reserved_bytes() const {
  std::lock_guard lock(mutex_);
  return reserved_;
}

std::string input_shape_signature(const std::map<std::string, Tensor>& inputs) {
  std::string signature;
  for (const auto& [name, tensor] : inputs) signature += name + ":" + tensor.describe() + ";";
  return signature;
}

bool place_outputs(const ConcatPlacement& placement, const std::vector<ValueId>& outputs,
                   const std::vector<OutputSpec>& specs,
                   std::vector<std::shared_ptr<Buffer>>& shared, BufferPool& pool,
                   std::vector<Tensor>& placed) {
  placed.assign(outputs.size(), Tensor());
  bool any = false;
  for (std::size_t i = 0; i < outputs.size() && i < specs.size(); ++i) {
    const std::optional<BufferSlot>& slot = placement.slots[outputs[i]];
    if (!slot) continue;
    std::shared_ptr<Buffer>& buffer = shared[slot->root];
    if (!buffer) buffer = pool.acquire(placement.root_bytes[slot->root]);
    placed[i] = Tensor::view(specs[i].dtype, specs[i].shape, buffer, slot->byte_offset);
    placed[i].set_layout(specs[i].layout);
    // The root's own tensor keeps the buffer alive from here; the pool may reuse it once that
    // tensor and every view inside it are gone. (A Concat that runs after its root then gets a
    // fresh buffer, and its kernel copies: correct, only not in place.)
    if (slot->root == outputs[i]) buffer.reset();
    any = true;
  }
  return any;
}

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
  Tensor plain = Tensor::allocate(tensor.dtype(), tensor.shape());
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
                       ConvolutionFamily convolution_family)
    : graph_(&graph),
      node_(node),
      info_(&kernel_for(graph, node)),
      blocked_outputs_allowed_(blocked_outputs_allowed),
      convolution_family_(convolution_family),
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
  if (!prepared_for(inputs)) {
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
    KernelContext context{*graph_,
                          node_,
                          node,
                          opset_,
                          inputs,
                          constant,
                          engine,
                          threads,
                          blocked_outputs_allowed_,
                          convolution_family_};
    try {
      kernel_ = info_->create(context);
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
        outputs[i] = Tensor::view(spec.dtype, spec.shape, pool.acquire(bytes));
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
  kernel_->run(inputs, output_pointers, stream);
}

void check_inputs(const Graph& graph, const std::map<std::string, Tensor>& inputs) {
  for (ValueId id : graph.inputs()) {
    const Value& v = graph.value(id);
    if (v.initializer) continue;
    auto it = inputs.find(v.name);
    if (it == inputs.end()) throw Error(fmt::format("graph input '{}' was not given", v.name));
    const Tensor& t = it->second;
    if (v.dtype != DataType::kUndefined && t.dtype() != v.dtype) {
      throw Error(fmt::format("input '{}': expected element type {}, got {}", v.name,
                              dtype_name(v.dtype), dtype_name(t.dtype())));
    }
    if (!v.shape.rank_known) continue;
    bool fits = t.rank() == v.shape.rank();
    for (std::size_t axis = 0; fits && axis < t.rank(); ++axis) {
      fits = !v.shape.dims[axis].is_known() || v.shape.dims[axis].size == t.dim(axis);
    }
    if (!fits) {
      throw Error(fmt::format("input '{}': expected shape {}, got {}", v.name,
                              print_type(v.dtype, v.shape), fmt::join(t.shape(), ",")));
    }
  }
  for (const auto& [name, tensor] : inputs) {
    auto id = graph.find_value(name);
    if (!id || !graph.value(*id).is_graph_input) {
      throw Error(fmt::format("'{}' is not an input of graph '{}'", name, graph.name));
    }
  }
}

Executor::Executor(const Graph& graph, ExecutorOptions options)
    : graph_(graph), options_(options), engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {
  order_ = graph_.topological_order();
  constants_.resize(graph_.value_capacity());
  for (ValueId id : graph_.initializers()) {
    constants_[id] = constant_tensor(graph_, id);
  }
  runners_.reserve(order_.size());
  for (NodeId id : order_) {
    bool blocked = options_.blocked_layouts;
    for (ValueId output : graph_.node(id).outputs)
      blocked = blocked && blocked_layout_allowed(graph_, output);
    runners_.push_back(std::make_unique<NodeRunner>(
        graph_, id, blocked,
        options_.blocked_layouts ? options_.convolution_family : ConvolutionFamily::kBlocked));
  }
  stats_.node_seconds.assign(graph_.node_capacity(), 0.0);
  producer_slot_.assign(graph_.value_capacity(), {0, 0});
  for (std::size_t position = 0; position < order_.size(); ++position) {
    const Node& node = graph_.node(order_[position]);
    for (std::size_t i = 0; i < node.outputs.size(); ++i) {
      if (node.outputs[i] != kNoValue) producer_slot_[node.outputs[i]] = {position, i};
    }
  }
}

void Executor::plan_in_place_concats() {
  placement_ = place_concat_inputs(graph_, [this](ValueId value) -> const OutputSpec* {
    const Value& v = graph_.value(value);
    if (v.producer < 0 || v.initializer) return nullptr;
    auto [position, output] = producer_slot_[value];
    const std::vector<OutputSpec>& specs = runners_[position]->specs();
    return output < specs.size() ? &specs[output] : nullptr;
  });
  stats_.concat_inputs_in_place = placement_.values_in_place;
}

std::vector<Tensor> Executor::run(const std::map<std::string, Tensor>& inputs) {
  check_inputs(graph_, inputs);
  // Placement follows from the kernels prepared for these input shapes; other shapes run
  // without it once, which prepares their kernels, and plan it again.
  std::string input_shapes = input_shape_signature(inputs);
  bool in_place =
      options_.in_place_concat && input_shapes == placement_inputs_ && !placement_.empty();
  std::vector<std::shared_ptr<Buffer>> shared_buffers;  // Per root ValueId, while filling.
  if (in_place) shared_buffers.resize(graph_.value_capacity());
  std::vector<Tensor> placed_outputs;
  omp_set_num_threads(std::max(1, options_.threads));
  std::vector<Tensor> values(graph_.value_capacity());
  std::vector<int> remaining_uses(graph_.value_capacity(), 0);
  for (NodeId id : order_) {
    for (ValueId input : graph_.node(id).inputs) {
      if (input != kNoValue) ++remaining_uses[input];
    }
  }
  for (const auto& [name, tensor] : inputs) values[*graph_.find_value(name)] = tensor;

  std::vector<const Tensor*> node_inputs;
  std::vector<bool> constant;
  std::vector<Tensor> node_outputs;
  for (std::size_t position = 0; position < order_.size(); ++position) {
    NodeId id = order_[position];
    const Node& node = graph_.node(id);
    node_inputs.clear();
    constant.clear();
    for (ValueId input : node.inputs) {
      if (input == kNoValue) {
        node_inputs.push_back(nullptr);
        constant.push_back(false);
      } else if (graph_.value(input).initializer) {
        node_inputs.push_back(&constants_[input]);
        constant.push_back(true);
      } else {
        node_inputs.push_back(&values[input]);
        constant.push_back(false);
      }
    }
    bool any_placed =
        in_place && place_outputs(placement_, node.outputs, runners_[position]->specs(),
                                  shared_buffers, pool_, placed_outputs);
    auto start = std::chrono::steady_clock::now();
    runners_[position]->run(node_inputs, constant, node_outputs, pool_, engine_, stream_,
                            options_.threads, any_placed ? &placed_outputs : nullptr);
    placed_outputs.clear();  // Its views would keep shared buffers from the pool.
    if (options_.collect_stats) {
      stream_.wait();
      stats_.node_seconds[id] +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    for (std::size_t i = 0; i < node.outputs.size(); ++i)
      values[node.outputs[i]] = std::move(node_outputs[i]);
    // Dropping the last reference returns a buffer to the pool for later nodes.
    for (ValueId input : node.inputs) {
      if (input != kNoValue && --remaining_uses[input] == 0 &&
          !graph_.value(input).is_graph_output) {
        values[input] = Tensor();
      }
    }
    for (ValueId output : node.outputs) {
      if (remaining_uses[output] == 0 && !graph_.value(output).is_graph_output)
        values[output] = Tensor();
    }
  }
  stream_.wait();
  std::vector<Tensor> outputs;
  for (ValueId id : graph_.outputs()) {
    const Tensor& value = graph_.value(id).initializer ? constants_[id] : values[id];
    outputs.push_back(to_plain(value, engine_, stream_));
  }
  stats_.peak_activation_bytes = pool_.reserved_bytes();
  ++stats_.runs;
  if (options_.in_place_concat && input_shapes != placement_inputs_) {
    plan_in_place_concats();
    placement_inputs_ = input_shapes;
  }
  return outputs;
}

std::vector<std::string> Executor::implementations() const {
  std::vector<std::string> result(graph_.node_capacity());
  for (std::size_t position = 0; position < order_.size(); ++position) {
    result[order_[position]] = runners_[position]->implementation();
  }
  return result;
}

void Executor::reset_stats() {
  stats_.node_seconds.assign(graph_.node_capacity(), 0.0);
  stats_.runs = 0;
}

}  // namespace cleave
