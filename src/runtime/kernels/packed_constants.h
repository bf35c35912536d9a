// Kernels that pack a constant input into a copy of their own, so its owner may free it.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "ir/graph.h"
#include "runtime/tensor.h"

namespace cleave {

class Kernel;
struct KernelContext;

/// Implemented (beside Kernel) by kernels whose preparation may pack a constant input (an
/// initializer) into a copy of the kernel's own (Conv, Gemm/MatMul weights).
class PackedConstants {
 public:
  /// False where preparation packed constant input `input` and run() never reads the given one
  /// again, so its owner may free it (an MPI rank's loaded weights).
  virtual bool reads_at_run(std::size_t input) const = 0;
  /// True where the kernel, prepared again for other input shapes, takes over the packed
  /// copies of the kernel it replaces (packed_copy_after_release) and never reads the
  /// constants it packed again: they may then go though an input shape is known only at run
  /// time (a row count).
  virtual bool keeps_packs_across_shapes() const { return false; }

 protected:
  ~PackedConstants() = default;
};

/// The inputs of `node` that are initializers which `kernel`, prepared for it, packed into a
/// copy of its own and never reads again: none unless the kernel packs constants and either
/// every input shape is static (the kernel is then never prepared again) or it keeps its packs
/// across shapes. Graph outputs are left out (an executor hands them out as they are). The
/// executors free an initializer once every read of it is listed here.
std::vector<std::size_t> inputs_packed_for_good(const Graph& graph, const Node& node,
                                                const Kernel* kernel);

/// Frees initializer `value`'s loaded bytes in `graph` (memory comes back once no other copy
/// of the graph shares them) and leaves `constant`, the executor's tensor of it, its shape
/// without data, so that a kernel prepared again fails rather than reads freed memory.
/// Returns the bytes freed (0 when they were gone already).
std::size_t free_loaded_weight(Graph& graph, ValueId value, Tensor& constant);

/// Packs `data`, constant input `input` of the node being prepared, from layout `from` into
/// `to` (pack_constant), sharing one copy among the kernels that pack the same loaded
/// initializer into the same layout while any of them lives: a weight that several nodes read
/// (a detector's head, run on every level of its feature pyramid) is then held packed once.
/// `data` other than the initializer's own bytes (a derived weight) is packed unshared.
/// `for_good`: the kernel never reads `data` again (PackedConstants::reads_at_run is false for
/// it); where the executor also frees the bytes next (LoadedBytesGo) and they are large, they
/// are packed in slices and each slice's pages are handed back once packed.
std::shared_ptr<Buffer> pack_constant_input(const KernelContext& context, std::size_t input,
                                            const void* data, const dnnl::memory::desc& from,
                                            const dnnl::memory::desc& to, bool for_good = false);

/// While alive, the preparations this thread runs may hand back the pages of these
/// initializers' loaded bytes as they pack them for good (pack_constant_input): the executor
/// frees the bytes right after the preparation, no other node reads them and no other graph
/// copy shares them, so the loaded and the packed copy are never both whole in memory.
class LoadedBytesGo {
 public:
  explicit LoadedBytesGo(std::vector<ValueId> values);
  ~LoadedBytesGo();
  LoadedBytesGo(const LoadedBytesGo&) = delete;
  LoadedBytesGo& operator=(const LoadedBytesGo&) = delete;

 private:
  std::vector<ValueId> values_;
  const std::vector<ValueId>* outer_;
};

/// pack_constant in slices along the dimension whose slices lie contiguous in `from` (the rows
/// of a Gemm's weight as stored), each slice `slice_bytes` of the source or a little more,
/// calling `consumed(begin, size)` with each slice's source bytes once they are packed: the
/// caller may hand those pages back. The packed bytes equal pack_constant's. Where the layouts
/// do not allow it (a source with blocks, a target with padding or without a plain block
/// structure, a single slice), it is pack_constant and `consumed` is never called.
std::shared_ptr<Buffer> pack_constant_in_slices(
    const void* data, const dnnl::memory::desc& from, const dnnl::memory::desc& to,
    const dnnl::engine& engine, std::size_t slice_bytes,
    const std::function<void(const std::byte*, std::size_t)>& consumed);
/// Source bytes that pack_constant_in_slices packed slice by slice in this process so far.
std::size_t constant_bytes_packed_in_slices();

/// While alive, the loaded bytes of some initializers are out of memory (their whole pages
/// handed back to the system), each restorable bit for bit from a packed copy that this object
/// holds: the layout choice's rounds keep blocked's packed weights and one other family's alive
/// at a time, and without this the loaded bytes beside them (which the executor made afterwards
/// packs from) were a third copy. A node prepared meanwhile (NodeRunner) brings back the weights
/// it reads (LoadedBytesBack) and hands them back again where its kernel packed them for good;
/// the destructor brings every one back, so nothing outside the object's life sees the change.
class LoadedBytesAside {
 public:
  /// Sets aside initializers `values` of `graph` (ids as in it) whose bytes (at least 64 KiB)
  /// are shared by exactly `holders` references, so that no graph copy other than the caller's
  /// knows them (another thread's session would read zeros), and have a live packed copy
  /// (pack_constant_input) made by a reorder between blocked layouts of one data type, which
  /// the reverse reorder turns back into them bit for bit. Pass only initializers that no
  /// kernel alive reads at run time (Executor::weights_packed_for_good).
  LoadedBytesAside(const Graph& graph, const std::vector<ValueId>& values, long holders);
  ~LoadedBytesAside();
  LoadedBytesAside(const LoadedBytesAside&) = delete;
  LoadedBytesAside& operator=(const LoadedBytesAside&) = delete;
  /// Loaded bytes set aside when made (brought back for good since or not).
  std::size_t bytes() const { return bytes_; }
  /// How many initializers were set aside when made.
  std::size_t weights() const { return weights_; }

 private:
  std::size_t bytes_ = 0;
  std::size_t weights_ = 0;
  std::vector<const std::byte*> data_;  // The sources set aside, found again in the registry.
};

/// Brings back, for a kernel being prepared, the set-aside loaded bytes (LoadedBytesAside)
/// among `inputs`; kernel_made() names those the kernel packed for good, which are handed back
/// again when this goes. The others stay in memory from then on (the kernel reads them at run
/// time). Costs nothing while no LoadedBytesAside is alive.
class LoadedBytesBack {
 public:
  explicit LoadedBytesBack(const std::vector<const Tensor*>& inputs);
  ~LoadedBytesBack();
  LoadedBytesBack(const LoadedBytesBack&) = delete;
  LoadedBytesBack& operator=(const LoadedBytesBack&) = delete;
  /// The input positions whose bytes the prepared kernel never reads again.
  void kernel_made(const std::vector<std::size_t>& packed_for_good);

 private:
  std::vector<std::pair<std::size_t, const std::byte*>> back_;  // Input position, source.
  std::vector<bool> again_;
};

/// Loaded bytes set aside (LoadedBytesAside) and not in memory now, in this process.
std::size_t loaded_bytes_aside();

/// A packed copy of a loaded initializer, and its layout.
struct PackedCopy {
  std::shared_ptr<Buffer> bytes;
  dnnl::memory::desc layout;
};

/// Once constant input `input`'s loaded bytes went (free_loaded_weight), the copy that
/// pack_constant_input made of them from layout `from` while a kernel still holds it: what a
/// node prepared again for other shapes (a row count known only at run time) packs from, the
/// kernel it replaces being alive until then. nullopt while the bytes are loaded, or when no
/// such copy is alive.
std::optional<PackedCopy> packed_copy_after_release(const KernelContext& context, std::size_t input,
                                                    const dnnl::memory::desc& from);

}  // namespace cleave
