// Which loaded weights a kernel no longer needs, and freeing them: one rule for every executor.
#include "runtime/kernels/packed_constants.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <utility>

#include "runtime/kernel.h"
#include "runtime/kernels/dnnl_util.h"

namespace cleave {

namespace {

// A packed copy of a loaded initializer, found again by the bytes it came from (the same
// object, alive: never an address that was freed and reused) and the two layouts.
struct SharedPack {
  std::weak_ptr<const std::vector<std::byte>> source;
  // The initializer the bytes were loaded for, found by once they went; the entry goes with
  // the copy, which the kernels of that graph's executor hold, so the address is not reused.
  const TensorData* owner = nullptr;
  dnnl::memory::desc from, to;
  std::weak_ptr<Buffer> packed;
};

// vgg's first classifier weight (392 MiB) peaked the whole run while both it and its packed
// copy were whole. Weights from this size on are packed in slices of kPackSliceBytes.
constexpr std::size_t kSlicedPackBytes = 32u << 20;
constexpr std::size_t kPackSliceBytes = 8u << 20;

// Hands back the whole pages of loaded bytes as slices of them are packed, in order. They
// would read as zeros afterwards, which nothing does: the executor frees them next
// (LoadedBytesGo). A page shared by two slices goes with the second.
class PageRelease {
 public:
  PageRelease(const std::byte* data, std::size_t size)
      : page_(static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE))),
        done_(round_up(reinterpret_cast<std::uintptr_t>(data))),
        end_(reinterpret_cast<std::uintptr_t>(data) + size) {}

  void operator()(const std::byte* slice, std::size_t size) {
    const std::uintptr_t to =
        std::min(end_, reinterpret_cast<std::uintptr_t>(slice) + size) / page_ * page_;
    if (to <= done_) return;
    // Advice only: where the system refuses it the pages stay until the bytes are freed.
    ::madvise(reinterpret_cast<void*>(done_), to - done_, MADV_DONTNEED);
    done_ = to;
  }

 private:
  std::uintptr_t round_up(std::uintptr_t address) const {
    return (address + page_ - 1) / page_ * page_;
  }

  std::uintptr_t page_;
  std::uintptr_t done_;  // Pages below this went.
  std::uintptr_t end_;
};

// The values of the innermost LoadedBytesGo of this thread.
thread_local const std::vector<ValueId>* loaded_bytes_go = nullptr;

std::mutex shared_packs_mutex;
std::vector<SharedPack> shared_packs;  // Guarded by shared_packs_mutex.

// The copy of `source` from `from` into `to`, while alive. Found for another graph's
// initializer sharing the bytes, it is remembered for `owner` too, which finds it by that once
// its bytes went (packed_copy_after_release).
std::shared_ptr<Buffer> find_shared_pack(
    const std::shared_ptr<const std::vector<std::byte>>& source, const TensorData* owner,
    const dnnl::memory::desc& from, const dnnl::memory::desc& to) {
  std::erase_if(shared_packs, [](const SharedPack& pack) { return pack.packed.expired(); });
  std::shared_ptr<Buffer> found;
  bool owner_known = false;
  for (const SharedPack& pack : shared_packs) {
    if (pack.source.lock() != source || pack.from != from || pack.to != to) continue;
    if (!found) found = pack.packed.lock();
    owner_known = owner_known || pack.owner == owner;
  }
  if (found && !owner_known) shared_packs.push_back({source, owner, from, to, found});
  return found;
}

// A loaded weight set aside (LoadedBytesAside): its bytes, and the packed copy it comes back
// from. Guarded by aside_mutex.
struct AsideWeight {
  std::byte* data = nullptr;
  std::size_t size = 0;
  std::shared_ptr<Buffer> packed;       // Held: it must outlive the last bring_back.
  std::shared_ptr<LayoutReorder> back;  // From the packed layout to the loaded one.
  dnnl::engine engine;
  int readers = 0;       // Preparations reading the bytes now.
  bool out = false;      // Its pages are handed back now.
  bool staying = false;  // A kernel reads it at run time: in memory from then on.
};

constexpr std::size_t kSmallestAside = 64u << 10;

std::mutex aside_mutex;
std::vector<AsideWeight> aside_weights;  // Guarded by aside_mutex.
std::atomic<int> asides_alive{0};
std::atomic<std::size_t> aside_bytes_out{0};

AsideWeight* find_aside(const std::byte* data) {
  for (AsideWeight& weight : aside_weights)
    if (weight.data == data) return &weight;
  return nullptr;
}

// The whole pages of the bytes go; they read as zeros until bring_back writes them again.
void hand_back(AsideWeight& weight) {
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<std::uintptr_t>(weight.data);
  const std::uintptr_t first = (begin + page - 1) / page * page;
  const std::uintptr_t last = (begin + weight.size) / page * page;
  if (last > first) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
  weight.out = true;
  aside_bytes_out += weight.size;
}

void bring_back(AsideWeight& weight) {
  dnnl::stream stream(weight.engine);
  weight.back->run(weight.packed->data(), weight.data, stream);
  stream.wait();
  weight.out = false;
  aside_bytes_out -= weight.size;
}

// A live packed copy of `source` made by a reorder between two blocked layouts of one data type
// (a Winograd transform's target is not blocked): it holds every value, in other places, so the
// reverse reorder writes the loaded bytes back bit for bit. Checking that by a round trip when
// setting aside cost wide_resnet50_2's first run 0.3-0.5 s more (255 MiB reordered and compared).
std::optional<SharedPack> restorable_pack(
    const std::shared_ptr<const std::vector<std::byte>>& source) {
  const std::lock_guard<std::mutex> lock(shared_packs_mutex);
  for (const SharedPack& pack : shared_packs) {
    if (pack.source.lock() != source || pack.packed.expired()) continue;
    if (pack.from.data_type() != pack.to.data_type() ||
        pack.from.data.format_kind != dnnl_blocked || pack.to.data.format_kind != dnnl_blocked ||
        pack.from.get_size() != source->size()) {
      continue;
    }
    return pack;
  }
  return std::nullopt;
}

}  // namespace

LoadedBytesGo::LoadedBytesGo(std::vector<ValueId> values)
    : values_(std::move(values)), outer_(loaded_bytes_go) {
  loaded_bytes_go = &values_;
}

LoadedBytesGo::~LoadedBytesGo() {
  loaded_bytes_go = outer_;
}

std::vector<std::size_t> inputs_packed_for_good(const Graph& graph, const Node& node,
                                                const Kernel* kernel) {
  const auto* packed = dynamic_cast<const PackedConstants*>(kernel);
  if (packed == nullptr) return {};
  for (ValueId input : node.inputs) {
    if (input != kNoValue && !graph.value(input).shape.is_static() &&
        !packed->keeps_packs_across_shapes())
      return {};
  }
  std::vector<std::size_t> result;
  for (std::size_t i = 0; i < node.inputs.size(); ++i) {
    const ValueId input = node.inputs[i];
    if (input == kNoValue || !graph.value(input).initializer) continue;
    if (graph.value(input).is_graph_output || packed->reads_at_run(i)) continue;
    result.push_back(i);
  }
  return result;
}

std::size_t free_loaded_weight(Graph& graph, ValueId value, Tensor& constant) {
  TensorData& data = *graph.value(value).initializer;
  if (!data.bytes) return 0;
  const std::size_t bytes = data.bytes->size();
  data.bytes.reset();
  constant = Tensor::borrow(data.dtype, data.dims, nullptr);
  return bytes;
}

std::shared_ptr<Buffer> pack_constant_input(const KernelContext& context, std::size_t input,
                                            const void* data, const dnnl::memory::desc& from,
                                            const dnnl::memory::desc& to, bool for_good) {
  const ValueId value = input < context.node.inputs.size() ? context.node.inputs[input] : kNoValue;
  // The graph's own TensorData (its address finds the copy once the bytes went).
  const TensorData* initializer = nullptr;
  if (value != kNoValue && context.graph.value(value).initializer)
    initializer = &*context.graph.value(value).initializer;
  std::shared_ptr<const std::vector<std::byte>> source = initializer ? initializer->bytes : nullptr;
  if (!source || static_cast<const void*>(source->data()) != data)
    return pack_constant(data, from, to, context.engine);
  {
    const std::lock_guard<std::mutex> lock(shared_packs_mutex);
    if (std::shared_ptr<Buffer> packed = find_shared_pack(source, initializer, from, to))
      return packed;
  }
  // Packed outside the lock (kernels prepare in parallel); a copy someone else made meanwhile
  // wins, and this one goes.
  const bool bytes_go = for_good && source->size() >= kSlicedPackBytes && loaded_bytes_go &&
                        std::count(loaded_bytes_go->begin(), loaded_bytes_go->end(), value) > 0;
  std::shared_ptr<Buffer> packed =
      bytes_go ? pack_constant_in_slices(data, from, to, context.engine, kPackSliceBytes,
                                         PageRelease(source->data(), source->size()))
               : pack_constant(data, from, to, context.engine);
  const std::lock_guard<std::mutex> lock(shared_packs_mutex);
  if (std::shared_ptr<Buffer> earlier = find_shared_pack(source, initializer, from, to))
    return earlier;
  shared_packs.push_back({source, initializer, from, to, packed});
  return packed;
}

std::optional<PackedCopy> packed_copy_after_release(const KernelContext& context, std::size_t input,
                                                    const dnnl::memory::desc& from) {
  const ValueId value = input < context.node.inputs.size() ? context.node.inputs[input] : kNoValue;
  if (value == kNoValue) return std::nullopt;
  const std::optional<TensorData>& initializer = context.graph.value(value).initializer;
  if (!initializer || initializer->bytes) return std::nullopt;
  const std::lock_guard<std::mutex> lock(shared_packs_mutex);
  for (const SharedPack& pack : shared_packs) {
    if (pack.owner != &*initializer || pack.from != from) continue;
    if (std::shared_ptr<Buffer> packed = pack.packed.lock()) return PackedCopy{packed, pack.to};
  }
  return std::nullopt;
}

LoadedBytesAside::LoadedBytesAside(const Graph& graph, const std::vector<ValueId>& values,
                                   long holders) {
  const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  for (ValueId value : values) {
    const std::optional<TensorData>& initializer = graph.value(value).initializer;
    if (!initializer || !initializer->bytes || initializer->bytes->size() < kSmallestAside ||
        initializer->bytes.use_count() != holders) {
      continue;
    }
    const std::shared_ptr<const std::vector<std::byte>>& source = initializer->bytes;
    const std::optional<SharedPack> pack = restorable_pack(source);
    if (!pack) continue;
    std::shared_ptr<Buffer> packed = pack->packed.lock();
    if (!packed) continue;
    // Made now, so that bringing the bytes back (in a destructor too) cannot fail to.
    std::shared_ptr<LayoutReorder> back;
    try {
      back = std::make_shared<LayoutReorder>(pack->to, pack->from, engine);
    } catch (const dnnl::error&) {
      continue;
    }
    const std::lock_guard<std::mutex> lock(aside_mutex);
    // Set aside already (another layout choice on the same bytes): it brings them back.
    auto* data = const_cast<std::byte*>(source->data());
    if (find_aside(data)) continue;
    AsideWeight& weight = aside_weights.emplace_back();
    weight.data = data;
    weight.size = source->size();
    weight.packed = std::move(packed);
    weight.back = std::move(back);
    weight.engine = engine;
    hand_back(weight);
    data_.push_back(data);
    bytes_ += weight.size;
    ++weights_;
  }
  if (!data_.empty()) ++asides_alive;
}

LoadedBytesAside::~LoadedBytesAside() {
  if (data_.empty()) return;
  const std::lock_guard<std::mutex> lock(aside_mutex);
  for (const std::byte* data : data_) {
    AsideWeight* weight = find_aside(data);
    if (weight && weight->out) bring_back(*weight);
  }
  std::erase_if(aside_weights, [&](const AsideWeight& weight) {
    return std::find(data_.begin(), data_.end(), weight.data) != data_.end();
  });
  --asides_alive;
}

LoadedBytesBack::LoadedBytesBack(const std::vector<const Tensor*>& inputs) {
  if (asides_alive.load() == 0) return;
  const std::lock_guard<std::mutex> lock(aside_mutex);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i]) continue;
    AsideWeight* weight = find_aside(static_cast<const std::byte*>(inputs[i]->raw()));
    if (!weight || weight->staying) continue;
    if (weight->out) bring_back(*weight);
    ++weight->readers;
    back_.emplace_back(i, weight->data);
  }
  again_.assign(back_.size(), false);
}

void LoadedBytesBack::kernel_made(const std::vector<std::size_t>& packed_for_good) {
  for (std::size_t k = 0; k < back_.size(); ++k) {
    again_[k] = std::count(packed_for_good.begin(), packed_for_good.end(), back_[k].first) > 0;
  }
}

LoadedBytesBack::~LoadedBytesBack() {
  if (back_.empty()) return;
  const std::lock_guard<std::mutex> lock(aside_mutex);
  for (std::size_t k = 0; k < back_.size(); ++k) {
    AsideWeight* weight = find_aside(back_[k].second);
    if (!weight) continue;
    --weight->readers;
    if (!again_[k]) weight->staying = true;
    if (weight->readers == 0 && !weight->staying && !weight->out) hand_back(*weight);
  }
}

std::size_t loaded_bytes_aside() {
  return aside_bytes_out.load();
}

}  // namespace cleave
