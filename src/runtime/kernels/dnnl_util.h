// Shared helpers of the oneDNN kernels: descriptors, window geometry, primitives with scratchpads.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/kernel.h"
#include "runtime/tensor.h"

namespace cleave {

/// oneDNN's element type for a cleave type; throws UnsupportedError naming the node otherwise.
dnnl::memory::data_type dnnl_data_type(DataType type, const KernelContext& context);
dnnl::memory::dims to_dnnl_dims(std::span<const int64_t> shape);
/// Number of elements of a shape.
int64_t volume(std::span<const int64_t> shape);
/// Dense row-major descriptor; a rank-0 shape becomes {1}.
dnnl::memory::desc plain_desc(std::span<const int64_t> shape,
                              dnnl::memory::data_type type = dnnl::memory::data_type::f32);
/// Descriptor with the given dims in the layout oneDNN may choose (`format_tag::any`).
dnnl::memory::desc any_desc(std::span<const int64_t> shape,
                            dnnl::memory::data_type type = dnnl::memory::data_type::f32);
/// The layout a tensor's bytes are in: its blocked layout, or the plain one.
dnnl::memory::desc desc_of(const Tensor& tensor);
/// Whether every element of `shape` lies where the plain layout puts it (a layout that differs
/// only in the strides of unit dims, or the blocks of the only non-unit dim).
bool holds_plain_bytes(const dnnl::memory::desc& desc, std::span<const int64_t> shape);
/// The layout to record in an OutputSpec for a primitive's chosen output descriptor: none
/// when its bytes are where the plain layout puts them (so consumers see an ordinary tensor).
std::optional<dnnl::memory::desc> recorded_layout(const dnnl::memory::desc& desc,
                                                  std::span<const int64_t> shape);

/// The layout of blocked `x` with its element type changed to `type`, where every element has a
/// place of its own and no padding lies between them (channels-last, or channel blocks that
/// divide the channels): an elementwise map that reads the bytes in any order can then keep
/// the layout instead of reordering to plain. nullopt for a plain `x` or any other layout.
std::optional<dnnl::memory::desc> unpadded_layout_as(const KernelContext& context, const Tensor& x,
                                                     DataType type);

/// The same layout family as `example` (plain, channels-last, or 8/16-channel blocks) for
/// another shape of the same rank: what a concat's output should use so that its consumers see
/// the layout its producers wrote. nullopt when `example` is none of these.
std::optional<dnnl::memory::desc> same_layout_for(const dnnl::memory::desc& example,
                                                  std::span<const int64_t> shape);

/// Where `part`, the slice of `whole` that starts at `offset` along `axis`, lies inside `whole`:
/// the byte offset when part's bytes are one contiguous run of whole's bytes in the same order
/// (whole's dims before the axis are 1, both share blocking and strides, and the offset is a
/// multiple of the axis block), so a concat can be a memcpy or be skipped by letting producers
/// write there. `last` says the part ends whole's axis (its channel padding may then be shared).
std::optional<std::size_t> slice_byte_offset(const dnnl::memory::desc& part,
                                             const dnnl::memory::desc& whole, int axis,
                                             int64_t offset, bool last);

/// Attributes every primitive of cleave is created with: a user-managed scratchpad, so a
/// primitive can run on another thread than the one that created it.
dnnl::primitive_attr kernel_attr();

/// The implementation oneDNN picked ("brgconv:avx512_core", "ref:any"), for choices and tests.
std::string implementation_name(const dnnl::primitive_desc_base& descriptor);

/// Bytes of the scratchpad the calling thread keeps for the primitives it executes: the
/// largest any of them asked for (0 before the first).
std::size_t thread_scratchpad_bytes();

/// A primitive ready to run: its memory objects (bytes pointed at per run). Its scratchpad is
/// the executing thread's (thread_scratchpad_bytes), grown to its size when it runs.
class DnnlStep {
 public:
  DnnlStep() = default;
  DnnlStep(dnnl::primitive primitive, const dnnl::primitive_desc_base& descriptor,
           const dnnl::engine& engine);
  bool valid() const { return static_cast<bool>(primitive_); }
  /// Declares argument `arg` (DNNL_ARG_SRC, ...) with this layout.
  void declare(int arg, const dnnl::memory::desc& desc);
  /// Points argument `arg` at these bytes for the next execute().
  void set(int arg, const void* data);
  void execute(dnnl::stream& stream);
  /// implementation_name of the primitive's descriptor; empty for a default-made step.
  const std::string& implementation() const { return implementation_; }

 private:
  dnnl::primitive primitive_;
  dnnl::engine engine_;
  std::string implementation_;
  std::size_t scratchpad_bytes_ = 0;  ///< Taken from the executing thread's buffer per run.
  std::unordered_map<int, dnnl::memory> arguments_;
};

/// Converts a tensor between two layouts; when they are equal it is a plain copy.
class LayoutReorder {
 public:
  LayoutReorder() = default;
  LayoutReorder(const dnnl::memory::desc& from, const dnnl::memory::desc& to,
                const dnnl::engine& engine);
  /// Whether the layouts differ (a copy suffices when they do not).
  bool needed() const { return step_.valid(); }
  const dnnl::memory::desc& target() const { return to_; }
  void run(const void* from, void* to, dnnl::stream& stream);

 private:
  dnnl::memory::desc to_;
  DnnlStep step_;
};

/// Converts a constant tensor into a layout once, at preparation (packed weights).
std::shared_ptr<Buffer> pack_constant(const void* data, const dnnl::memory::desc& from,
                                      const dnnl::memory::desc& to, const dnnl::engine& engine);
/// Bytes of every pack_constant copy alive in this process now.
std::size_t packed_constant_bytes();

/// Spatial window geometry of a convolution or pooling, with ONNX's auto_pad and ceil_mode
/// rules applied.
struct WindowGeometry {
  std::vector<int64_t> kernel;
  std::vector<int64_t> strides;
  std::vector<int64_t> dilations;  ///< ONNX convention: 1 = dense.
  std::vector<int64_t> pads_begin;
  std::vector<int64_t> pads_end;  ///< As ONNX gave or auto_pad computed.
  std::vector<int64_t> output;
  /// Right padding oneDNN needs to produce `output` (ceil_mode can need more than pads_end).
  std::vector<int64_t> dnnl_pads_end;

  dnnl::memory::dims dnnl_dilations() const;  ///< oneDNN convention: 0 = dense.
};

/// Geometry of a window op over `input_spatial` with `kernel` (after kernel_shape checks),
/// reading strides, dilations, pads and auto_pad from the node.
WindowGeometry window_geometry(const KernelContext& context, std::span<const int64_t> input_spatial,
                               std::vector<int64_t> kernel, bool ceil_mode);

/// Whether output `index` of the node exists and is read (by a node or as a graph output);
/// unread optional outputs (MaxPool's Indices, LayerNormalization's Mean) need no computing.
bool output_used(const KernelContext& context, std::size_t index);

/// Normalises a possibly negative axis of a rank-`rank` tensor; throws Error when out of range.
int64_t normalized_axis(const KernelContext& context, int64_t axis, int64_t rank);

/// Wraps a kernel factory so that oneDNN errors become Errors naming the node.
std::function<std::unique_ptr<Kernel>(const KernelContext&)> guarded(
    std::function<std::unique_ptr<Kernel>(const KernelContext&)> factory);

/// Accepts blocked layouts at every input position.
inline bool any_input(std::size_t) {
  return true;
}
inline bool first_input(std::size_t input) {
  return input == 0;
}

}  // namespace cleave
