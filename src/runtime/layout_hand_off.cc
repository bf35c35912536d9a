// The layouts values had where one executor hands them to another by name.
#include "runtime/layout_hand_off.h"

#include "runtime/node_runner.h"

namespace cleave {

LayoutHandOff::LayoutHandOff(const Graph& whole) {
  for (NodeId id : whole.node_ids()) {
    for (ValueId output : whole.node(id).outputs) {
      if (output != kNoValue && blocked_layout_allowed(whole, output))
        blocked_.insert(whole.value(output).name);
    }
  }
}

void LayoutHandOff::record(const std::string& name, const dnnl::memory::desc& layout) {
  std::lock_guard<std::mutex> lock(mutex_);
  layouts_.insert_or_assign(name, layout);
}

std::optional<dnnl::memory::desc> LayoutHandOff::layout_of(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = layouts_.find(name);
  if (it == layouts_.end()) return std::nullopt;
  return it->second;
}

Tensor to_layout(const Tensor& tensor, const dnnl::memory::desc& layout, dnnl::engine& engine,
                 dnnl::stream& stream) {
  const std::size_t floats = (layout.get_size() + sizeof(float) - 1) / sizeof(float);
  const Tensor storage = Tensor::allocate(DataType::kFloat, {static_cast<int64_t>(floats)});
  Tensor blocked = Tensor::view(DataType::kFloat, tensor.shape(), storage.storage());
  blocked.set_layout(layout);
  const dnnl::memory::dims dims(tensor.shape().begin(), tensor.shape().end());
  const std::vector<int64_t> strides = tensor.strides();
  const dnnl::memory::desc plain(dims, dnnl::memory::data_type::f32,
                                 dnnl::memory::dims(strides.begin(), strides.end()));
  dnnl::memory source(plain, engine, const_cast<void*>(tensor.raw()));
  dnnl::memory target(layout, engine, blocked.raw());
  dnnl::reorder(source, target).execute(stream, source, target);
  stream.wait();
  return blocked;
}

}  // namespace cleave
