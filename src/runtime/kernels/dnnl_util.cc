// Shared helpers of the oneDNN kernels, and the entry point registering all of them.
#include "runtime/kernels/dnnl_util.h"

#include <fmt/core.h>
#include <fmt/format.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <optional>

#include "runtime/kernels/packed_constants.h"

#include "runtime/kernels/winograd_weights.h"
#include "support/page_memory.h"

namespace cleave {

namespace {

// Bytes of the pack_constant copies alive (freed as their last kernel goes).
std::atomic<std::size_t> live_packed_bytes{0};
std::atomic<std::size_t> bytes_packed_in_slices{0};

constexpr std::size_t kPage = 4096;
constexpr std::size_t kHugePage = std::size_t{2} << 20;

std::size_t mapped_length(std::size_t bytes) {
  return (bytes + kPage - 1) / kPage * kPage;
}

// A packed copy of 2 MiB or more is mapped on its own, 2 MiB aligned, its whole huge pages
// advised as such (THP "madvise" mode): its first touch faults once per 2 MiB instead of once
// per 4 KiB. On the virtual machine measured (docs/results/heldout-speed.md) a 4 KiB fault cost
// about 40 us (150-200 ms per 16 MiB, 6 ms in huge pages), and retinanet's 322 MiB of Winograd
// weights were most of its first run. The tail past the last whole huge page stays in small
// pages, so the resident memory is what is written, as before. Zeroed (fresh pages), but not
// resident until written: pack_constant_in_slices relies on that.
std::byte* map_huge(std::size_t bytes) {
  const std::size_t length = mapped_length(bytes);
  void* raw =
      mmap(nullptr, length + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) throw Error(fmt::format("out of memory packing {} bytes", bytes));
  const auto start = reinterpret_cast<std::uintptr_t>(raw);
  const std::uintptr_t aligned = (start + kHugePage - 1) / kHugePage * kHugePage;
  if (aligned > start) munmap(raw, aligned - start);
  const std::size_t after = start + kHugePage - aligned;
  if (after > 0) munmap(reinterpret_cast<void*>(aligned + length), after);
  auto* data = reinterpret_cast<std::byte*>(aligned);
  advise_huge_pages(data, length);
  return data;
}

// Zeroed storage for a packed copy, counted in live_packed_bytes while it lives.
std::shared_ptr<Buffer> packed_buffer(std::size_t bytes) {
  live_packed_bytes += bytes;
  if (bytes < kHugePage) {
    return std::shared_ptr<Buffer>(new Buffer(bytes), [](Buffer* buffer) {
      live_packed_bytes -= buffer->size();
      delete buffer;
    });
  }
  return std::shared_ptr<Buffer>(Buffer::borrowed(map_huge(bytes), bytes).release(),
                                 [](Buffer* buffer) {
                                   live_packed_bytes -= buffer->size();
                                   munmap(buffer->data(), mapped_length(buffer->size()));
                                   delete buffer;
                                 });
}

std::vector<int64_t> spatial_attribute(const KernelContext& context, std::string_view key,
                                       std::size_t count, int64_t fallback) {
  std::vector<int64_t> values = context.node.ints_attribute(key);
  if (values.empty()) return std::vector<int64_t>(count, fallback);
  if (values.size() != count) {
    throw Error(fmt::format("{}: attribute '{}' has {} values, expected {} (one per spatial axis)",
                            context.where(), key, values.size(), count));
  }
  return values;
}

int64_t ceil_div(int64_t a, int64_t b) {
  return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}

// How pack_constant_in_slices cuts a constant: along `axis`, `rows` at a time (a multiple of
// the target's block on that axis), a row being `source_row_bytes` apart in the source and
// a block of rows `target_block_bytes` apart in the target.
struct Slicing {
  int axis = 0;
  int64_t rows = 0;
  int64_t block = 1;
  int64_t source_row_bytes = 0;
  int64_t target_block_bytes = 0;
};

std::optional<Slicing> slicing_for(const dnnl::memory::desc& from, const dnnl::memory::desc& to,
                                   std::size_t slice_bytes) {
  const dnnl_memory_desc_t& source = from.data;
  const dnnl_memory_desc_t& target = to.data;
  if (source.format_kind != dnnl_blocked || target.format_kind != dnnl_blocked) return {};
  if (source.format_desc.blocking.inner_nblks != 0 || source.offset0 != 0 || target.offset0 != 0)
    return {};
  const int rank = source.ndims;
  if (rank < 1 || target.ndims != rank) return {};
  for (int d = 0; d < rank; ++d) {
    if (target.padded_dims[d] != target.dims[d] || target.padded_offsets[d] != 0) return {};
  }
  // The axis of the largest stride: its slices are contiguous if the source is dense.
  Slicing slicing;
  const dnnl_dims_t& strides = source.format_desc.blocking.strides;
  for (int d = 1; d < rank; ++d) {
    if (strides[d] > strides[slicing.axis]) slicing.axis = d;
  }
  const int64_t element = static_cast<int64_t>(dnnl_data_type_size(source.data_type));
  int64_t count = 1;
  for (int d = 0; d < rank; ++d) count *= source.dims[d];
  if (static_cast<std::size_t>(count * element) != to.get_size()) return {};  // Gaps, unwritten.
  const int64_t extent = source.dims[slicing.axis];
  slicing.source_row_bytes = strides[slicing.axis] * element;
  if (static_cast<std::size_t>(slicing.source_row_bytes * extent) != from.get_size()) return {};
  const dnnl_blocking_desc_t& blocking = target.format_desc.blocking;
  for (int b = 0; b < blocking.inner_nblks; ++b) {
    if (blocking.inner_idxs[b] == slicing.axis) slicing.block *= blocking.inner_blks[b];
  }
  slicing.target_block_bytes = blocking.strides[slicing.axis] * element;
  const int64_t wanted = static_cast<int64_t>(slice_bytes) / slicing.source_row_bytes;
  slicing.rows = std::max<int64_t>(1, wanted / slicing.block) * slicing.block;
  if (slicing.rows >= extent || extent % slicing.block != 0) return {};
  return slicing;
}

}  // namespace

dnnl::memory::data_type dnnl_data_type(DataType type, const KernelContext& context) {
  switch (type) {
    case DataType::kFloat:
      return dnnl::memory::data_type::f32;
    case DataType::kInt32:
      return dnnl::memory::data_type::s32;
    case DataType::kInt8:
      return dnnl::memory::data_type::s8;
    case DataType::kUInt8:
    case DataType::kBool:
      return dnnl::memory::data_type::u8;
    case DataType::kFloat16:
      return dnnl::memory::data_type::f16;
    case DataType::kBFloat16:
      return dnnl::memory::data_type::bf16;
    default:
      throw UnsupportedError(fmt::format("{}: element type {} is not supported by oneDNN",
                                         context.where(), dtype_name(type)));
  }
}

dnnl::memory::dims to_dnnl_dims(std::span<const int64_t> shape) {
  if (shape.empty()) return {1};
  return dnnl::memory::dims(shape.begin(), shape.end());
}

int64_t volume(std::span<const int64_t> shape) {
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  return count;
}

dnnl::memory::desc plain_desc(std::span<const int64_t> shape, dnnl::memory::data_type type) {
  dnnl::memory::dims dims = to_dnnl_dims(shape);
  dnnl::memory::dims strides(dims.size(), 1);
  for (std::size_t i = dims.size(); i-- > 1;)
    strides[i - 1] = strides[i] * std::max<int64_t>(dims[i], 1);
  return dnnl::memory::desc(dims, type, strides);
}

dnnl::memory::desc any_desc(std::span<const int64_t> shape, dnnl::memory::data_type type) {
  return dnnl::memory::desc(to_dnnl_dims(shape), type, dnnl::memory::format_tag::any);
}

dnnl::memory::desc desc_of(const Tensor& tensor) {
  if (tensor.layout()) return *tensor.layout();
  // Only oneDNN-representable types reach the kernels that call this.
  dnnl::memory::data_type type = dnnl::memory::data_type::f32;
  if (tensor.dtype() == DataType::kInt32) type = dnnl::memory::data_type::s32;
  if (tensor.dtype() == DataType::kInt8) type = dnnl::memory::data_type::s8;
  if (tensor.dtype() == DataType::kUInt8 || tensor.dtype() == DataType::kBool) {
    type = dnnl::memory::data_type::u8;
  }
  return plain_desc(tensor.shape(), type);
}

bool holds_plain_bytes(const dnnl::memory::desc& desc, std::span<const int64_t> shape) {
  if (desc == plain_desc(shape, desc.data_type())) return true;
  const dnnl_memory_desc_t& raw = desc.data;
  if (raw.format_kind != dnnl_blocked || raw.offset0 != 0) return false;
  const dnnl_blocking_desc_t& blocking = raw.format_desc.blocking;
  if (blocking.inner_nblks != 0) {
    // Blocks of the only non-unit dim, unpadded, one after the other (16-channel blocks of a
    // [1, C, 1, 1] pooled vector): element i is at i.
    int blocked_dim = blocking.inner_idxs[0];
    for (int i = 0; i < raw.ndims; ++i) {
      if (raw.padded_dims[i] != raw.dims[i] || (i != blocked_dim && raw.dims[i] != 1)) {
        return false;
      }
    }
    return blocking.inner_nblks == 1 && blocking.strides[blocked_dim] == blocking.inner_blks[0];
  }
  // Layouts that differ from plain only in the strides of unit dims (nhwc of [N, C, 1, 1]).
  dnnl::memory::desc plain = plain_desc(shape, desc.data_type());
  for (int i = 0; i < raw.ndims; ++i) {
    if (raw.padded_dims[i] != raw.dims[i]) return false;
    if (raw.dims[i] != 1 && blocking.strides[i] != plain.data.format_desc.blocking.strides[i]) {
      return false;
    }
  }
  return true;
}

std::optional<dnnl::memory::desc> recorded_layout(const dnnl::memory::desc& desc,
                                                  std::span<const int64_t> shape) {
  // Blocks stay recorded even where their bytes happen to be plain: a convolution told that
  // its [1, C, 1, 1] input is blocked picks its blocked kernel, told plain, channels-last.
  if (desc.data.format_kind == dnnl_blocked && desc.data.format_desc.blocking.inner_nblks != 0) {
    return desc;
  }
  if (holds_plain_bytes(desc, shape)) return std::nullopt;
  return desc;
}

std::optional<dnnl::memory::desc> unpadded_layout_as(const KernelContext& context, const Tensor& x,
                                                     DataType type) {
  if (!x.is_blocked()) return std::nullopt;
  dnnl::memory::desc desc = *x.layout();
  const dnnl_memory_desc_t& raw = desc.data;
  if (raw.format_kind != dnnl_blocked || raw.offset0 != 0 || raw.extra.flags != 0) {
    return std::nullopt;
  }
  for (int i = 0; i < raw.ndims; ++i) {
    if (raw.padded_dims[i] != raw.dims[i]) return std::nullopt;
  }
  desc.data.data_type = static_cast<dnnl_data_type_t>(dnnl_data_type(type, context));
  // Dense: no gaps between the elements either.
  if (desc.get_size() != plain_byte_size(type, x.shape())) return std::nullopt;
  return desc;
}

std::optional<dnnl::memory::desc> same_layout_for(const dnnl::memory::desc& example,
                                                  std::span<const int64_t> shape) {
  using Tag = dnnl::memory::format_tag;
  std::vector<Tag> candidates;
  switch (example.dims().size()) {
    case 3:
      candidates = {Tag::abc, Tag::acb, Tag::aBc16b, Tag::aBc8b};
      break;
    case 4:
      candidates = {Tag::abcd, Tag::acdb, Tag::aBcd16b, Tag::aBcd8b};
      break;
    case 5:
      candidates = {Tag::abcde, Tag::acdeb, Tag::aBcde16b, Tag::aBcde8b};
      break;
    default:
      return std::nullopt;
  }
  for (Tag tag : candidates) {
    if (dnnl::memory::desc(example.dims(), example.data_type(), tag) == example) {
      return dnnl::memory::desc(to_dnnl_dims(shape), example.data_type(), tag);
    }
  }
  return std::nullopt;
}

std::optional<std::size_t> slice_byte_offset(const dnnl::memory::desc& part,
                                             const dnnl::memory::desc& whole, int axis,
                                             int64_t offset, bool last) {
  const dnnl_memory_desc_t& p = part.data;
  const dnnl_memory_desc_t& w = whole.data;
  if (p.format_kind != dnnl_blocked || w.format_kind != dnnl_blocked) return std::nullopt;
  if (p.ndims != w.ndims || p.data_type != w.data_type || axis < 0 || axis >= p.ndims)
    return std::nullopt;
  if (p.offset0 != 0 || w.offset0 != 0 || p.extra.flags != 0 || w.extra.flags != 0)
    return std::nullopt;
  const dnnl_blocking_desc_t& pb = p.format_desc.blocking;
  const dnnl_blocking_desc_t& wb = w.format_desc.blocking;
  if (pb.inner_nblks != wb.inner_nblks) return std::nullopt;
  int64_t axis_block = 1;
  for (int i = 0; i < pb.inner_nblks; ++i) {
    if (pb.inner_blks[i] != wb.inner_blks[i] || pb.inner_idxs[i] != wb.inner_idxs[i])
      return std::nullopt;
    if (pb.inner_idxs[i] == axis) axis_block *= pb.inner_blks[i];
  }
  for (int d = 0; d < p.ndims; ++d) {
    if (p.padded_offsets[d] != 0 || w.padded_offsets[d] != 0) return std::nullopt;
    if (d < axis) {
      // Only a single outer index keeps every slice one contiguous run.
      if (p.padded_dims[d] != 1 || w.padded_dims[d] != 1) return std::nullopt;
      continue;
    }
    if (pb.strides[d] != wb.strides[d]) return std::nullopt;
    if (d > axis && (p.dims[d] != w.dims[d] || p.padded_dims[d] != w.padded_dims[d]))
      return std::nullopt;
  }
  if (offset % axis_block != 0 || offset + p.dims[axis] > w.dims[axis]) return std::nullopt;
  // Inner padding of the axis belongs to the part only when nothing follows it.
  if (last ? p.padded_dims[axis] != w.padded_dims[axis] - offset
           : p.padded_dims[axis] != p.dims[axis])
    return std::nullopt;
  auto element = static_cast<std::size_t>(dnnl::memory::data_type_size(part.data_type()));
  auto axis_stride = static_cast<std::size_t>(pb.strides[axis]);
  // The axis must be the outermost dim in memory, else the part interleaves with its siblings.
  std::size_t extent = static_cast<std::size_t>(p.padded_dims[axis] / axis_block) * axis_stride;
  if (extent * element != part.get_size()) return std::nullopt;
  std::size_t start = static_cast<std::size_t>(offset / axis_block) * axis_stride * element;
  if (start + part.get_size() > whole.get_size()) return std::nullopt;
  return start;
}

dnnl::primitive_attr kernel_attr() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

std::string implementation_name(const dnnl::primitive_desc_base& descriptor) {
  const char* name = nullptr;
  dnnl_primitive_desc_query(descriptor.get(), dnnl_query_impl_info_str, 0, &name);
  return name ? name : "";
}

namespace {

// The scratchpad of the primitives this thread executes. A primitive needs its scratchpad only
// while it runs, and a thread runs one primitive at a time, so one buffer per thread of the
// largest size asked serves them all; a buffer per primitive held GoogLeNet's 50 Winograd
// convolutions' 72 MiB of scratchpads at once where the largest is 15 MiB.
thread_local std::unique_ptr<Buffer> thread_scratchpad;

std::byte* scratchpad_for(std::size_t bytes) {
  if (!thread_scratchpad || thread_scratchpad->size() < bytes) {
    thread_scratchpad.reset();  // The old one goes before the new one is taken.
    // Not zeroed: a primitive may book more than it touches (AVX-512 Winograd F(4x4, 3x3)
    // books room for transformed weights that inference never writes: fcn_resnet50's head
    // 144 MiB), and zeroing made all of it resident. oneDNN's own scratchpads are not zeroed
    // either.
    thread_scratchpad = std::make_unique<Buffer>(bytes, Buffer::Fill::kUninitialised);
  }
  return thread_scratchpad->data();
}

}  // namespace

std::size_t thread_scratchpad_bytes() {
  return thread_scratchpad ? thread_scratchpad->size() : 0;
}

DnnlStep::DnnlStep(dnnl::primitive primitive, const dnnl::primitive_desc_base& descriptor,
                   const dnnl::engine& engine)
    : primitive_(std::move(primitive)),
      engine_(engine),
      implementation_(implementation_name(descriptor)) {
  dnnl::memory::desc scratchpad = descriptor.scratchpad_desc();
  scratchpad_bytes_ = scratchpad.get_size();
  if (scratchpad_bytes_ > 0) {
    arguments_.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(scratchpad, engine_, DNNL_MEMORY_NONE));
  }
}

void DnnlStep::declare(int arg, const dnnl::memory::desc& desc) {
  arguments_.insert_or_assign(arg, dnnl::memory(desc, engine_, DNNL_MEMORY_NONE));
}

void DnnlStep::set(int arg, const void* data) {
  arguments_.at(arg).set_data_handle(const_cast<void*>(data));
}

void DnnlStep::execute(dnnl::stream& stream) {
  if (scratchpad_bytes_ > 0) {
    arguments_.at(DNNL_ARG_SCRATCHPAD).set_data_handle(scratchpad_for(scratchpad_bytes_));
  }
  try {
    primitive_.execute(stream, arguments_);
  } catch (const dnnl::error& e) {
    throw Error(fmt::format("oneDNN primitive failed: {}", e.what()));
  }
}

LayoutReorder::LayoutReorder(const dnnl::memory::desc& from, const dnnl::memory::desc& to,
                             const dnnl::engine& engine)
    : to_(to) {
  if (from == to) return;
  dnnl::reorder::primitive_desc descriptor(engine, from, engine, to, kernel_attr());
  step_ = DnnlStep(dnnl::reorder(descriptor), descriptor, engine);
  step_.declare(DNNL_ARG_FROM, from);
  step_.declare(DNNL_ARG_TO, to);
}

void LayoutReorder::run(const void* from, void* to, dnnl::stream& stream) {
  if (!step_.valid()) {
    if (from != to) std::memcpy(to, from, to_.get_size());
    return;
  }
  step_.set(DNNL_ARG_FROM, from);
  step_.set(DNNL_ARG_TO, to);
  step_.execute(stream);
}

std::shared_ptr<Buffer> pack_constant(const void* data, const dnnl::memory::desc& from,
                                      const dnnl::memory::desc& to, const dnnl::engine& engine) {
  std::shared_ptr<Buffer> packed = packed_buffer(to.get_size());
  if (data && transform_winograd_weights(static_cast<const float*>(data), from, to, packed->data()))
    return packed;
  dnnl::stream stream(engine);
  LayoutReorder(from, to, engine).run(data, packed->data(), stream);
  stream.wait();
  return packed;
}

std::shared_ptr<Buffer> pack_constant_in_slices(
    const void* data, const dnnl::memory::desc& from, const dnnl::memory::desc& to,
    const dnnl::engine& engine, std::size_t slice_bytes,
    const std::function<void(const std::byte*, std::size_t)>& consumed) {
  const std::optional<Slicing> slicing =
      from == to ? std::nullopt : slicing_for(from, to, slice_bytes);
  if (!slicing) return pack_constant(data, from, to, engine);
  const dnnl::memory::dims dims = from.dims();
  const int axis = slicing->axis;
  // Every primitive is made before any slice is packed: a refusal leaves the source whole.
  dnnl::memory::dims slice_dims = dims, offsets(dims.size(), 0);
  slice_dims[axis] = slicing->rows;
  LayoutReorder whole_slice(from.submemory_desc(slice_dims, offsets),
                            to.submemory_desc(slice_dims, offsets), engine);
  const int64_t last_rows = dims[axis] % slicing->rows;
  LayoutReorder last_slice;
  if (last_rows != 0) {
    slice_dims[axis] = last_rows;
    last_slice = LayoutReorder(from.submemory_desc(slice_dims, offsets),
                               to.submemory_desc(slice_dims, offsets), engine);
  }
  // A copy of this size is a mapping of its own, not resident before the slices write it: the
  // whole source and the whole copy are never both resident.
  std::shared_ptr<Buffer> packed = packed_buffer(to.get_size());
  const auto* source = static_cast<const std::byte*>(data);
  dnnl::stream stream(engine);
  for (int64_t first = 0; first < dims[axis]; first += slicing->rows) {
    const int64_t rows = std::min(slicing->rows, dims[axis] - first);
    LayoutReorder& step = rows == slicing->rows ? whole_slice : last_slice;
    const std::byte* slice = source + first * slicing->source_row_bytes;
    step.run(slice, packed->data() + (first / slicing->block) * slicing->target_block_bytes,
             stream);
    stream.wait();
    consumed(slice, static_cast<std::size_t>(rows * slicing->source_row_bytes));
  }
  bytes_packed_in_slices += from.get_size();
  return packed;
}

std::size_t constant_bytes_packed_in_slices() {
  return bytes_packed_in_slices;
}

std::size_t packed_constant_bytes() {
  return live_packed_bytes;
}

dnnl::memory::dims WindowGeometry::dnnl_dilations() const {
  dnnl::memory::dims result;
  for (int64_t d : dilations) result.push_back(d - 1);
  return result;
}

WindowGeometry window_geometry(const KernelContext& context, std::span<const int64_t> input_spatial,
                               std::vector<int64_t> kernel, bool ceil_mode) {
  const std::size_t n = input_spatial.size();
  WindowGeometry g;
  g.kernel = std::move(kernel);
  g.strides = spatial_attribute(context, "strides", n, 1);
  g.dilations = spatial_attribute(context, "dilations", n, 1);
  std::vector<int64_t> pads = spatial_attribute(context, "pads", 2 * n, 0);
  g.pads_begin.assign(pads.begin(), pads.begin() + n);
  g.pads_end.assign(pads.begin() + n, pads.end());
  std::string auto_pad = context.node.string_attribute("auto_pad", "NOTSET");
  if (auto_pad.empty()) auto_pad = "NOTSET";
  for (std::size_t i = 0; i < n; ++i) {
    if (g.kernel[i] < 1 || g.strides[i] < 1 || g.dilations[i] < 1 || g.pads_begin[i] < 0 ||
        g.pads_end[i] < 0) {
      throw Error(
          fmt::format("{}: kernel [{}], strides [{}], dilations [{}] must be positive and "
                      "pads [{}] non-negative",
                      context.where(), fmt::join(g.kernel, ","), fmt::join(g.strides, ","),
                      fmt::join(g.dilations, ","), fmt::join(pads, ",")));
    }
  }
  g.output.resize(n);
  g.dnnl_pads_end.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    int64_t extent = (g.kernel[i] - 1) * g.dilations[i] + 1;
    int64_t in = input_spatial[i];
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      g.output[i] = ceil_div(in, g.strides[i]);
      int64_t total = std::max<int64_t>(0, (g.output[i] - 1) * g.strides[i] + extent - in);
      g.pads_begin[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      g.pads_end[i] = total - g.pads_begin[i];
    } else if (auto_pad == "VALID") {
      g.pads_begin[i] = g.pads_end[i] = 0;
      g.output[i] = in >= extent ? (in - extent) / g.strides[i] + 1 : 0;
    } else if (auto_pad == "NOTSET") {
      int64_t span = in + g.pads_begin[i] + g.pads_end[i] - extent;
      if (span < 0) {
        g.output[i] = 0;
      } else if (ceil_mode) {
        g.output[i] = ceil_div(span, g.strides[i]) + 1;
        // A last window starting in the end padding would see no input (PyTorch, ORT).
        if ((g.output[i] - 1) * g.strides[i] >= in + g.pads_begin[i]) --g.output[i];
      } else {
        g.output[i] = span / g.strides[i] + 1;
      }
    } else {
      throw Error(
          fmt::format("{}: auto_pad '{}' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID",
                      context.where(), auto_pad));
    }
    if (g.output[i] < 1) {
      throw Error(
          fmt::format("{}: window of extent {} does not fit spatial axis {} of size {} "
                      "(pads {} + {})",
                      context.where(), extent, i, in, g.pads_begin[i], g.pads_end[i]));
    }
    int64_t needed = (g.output[i] - 1) * g.strides[i] + extent - in - g.pads_begin[i];
    g.dnnl_pads_end[i] = std::max(g.pads_end[i], needed);
  }
  return g;
}

bool output_used(const KernelContext& context, std::size_t index) {
  if (index >= context.node.outputs.size() || context.node.outputs[index] == kNoValue) return false;
  ValueId value = context.node.outputs[index];
  return context.graph.value(value).is_graph_output || !context.graph.consumers(value).empty();
}

int64_t normalized_axis(const KernelContext& context, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1)) {
    throw Error(
        fmt::format("{}: axis {} is out of range for rank {}", context.where(), axis, rank));
  }
  return axis < 0 ? axis + rank : axis;
}

std::function<std::unique_ptr<Kernel>(const KernelContext&)> guarded(
    std::function<std::unique_ptr<Kernel>(const KernelContext&)> factory) {
  return [factory = std::move(factory)](const KernelContext& context) -> std::unique_ptr<Kernel> {
    try {
      return factory(context);
    } catch (const dnnl::error& e) {
      throw UnsupportedError(fmt::format("{}: oneDNN has no implementation for this case ({})",
                                         context.where(), e.what()));
    }
  };
}

}  // namespace cleave
