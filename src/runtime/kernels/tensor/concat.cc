// Concat of any element type: oneDNN for blocked float inputs, plain copies otherwise.
#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "runtime/kernels/dnnl_util.h"
#include "runtime/kernels/registration.h"
#include "runtime/kernels/staging.h"

namespace cleave {

namespace {

using dnnl::memory;

class ConcatKernel : public Kernel {
 public:
  explicit ConcatKernel(const KernelContext& context) {
    std::vector<const Tensor*> parts;
    for (std::size_t i = 0; i < context.inputs.size(); ++i) parts.push_back(&context.input(i));
    if (parts.empty())
      throw Error(fmt::format("{}: Concat needs at least one input", context.where()));
    const Tensor& first = *parts[0];
    if (first.rank() == 0) throw Error(fmt::format("{}: Concat of scalars", context.where()));
    const Attribute* axis_attribute = context.node.attribute("axis");
    if (!axis_attribute)
      throw Error(fmt::format("{}: attribute 'axis' is required", context.where()));
    auto rank = static_cast<int64_t>(first.rank());
    axis_ = normalized_axis(context, context.node.int_attribute("axis", 0), rank);
    spec_.dtype = first.dtype();
    spec_.shape = first.shape();
    spec_.shape[axis_] = 0;
    bool any_blocked = false;
    for (const Tensor* part : parts) {
      bool fits = part->rank() == first.rank() && part->dtype() == first.dtype();
      for (int64_t a = 0; fits && a < rank; ++a) fits = a == axis_ || part->dim(a) == first.dim(a);
      if (!fits) {
        throw Error(
            fmt::format("{}: inputs {} and {} differ in type, rank or a dim other than axis {}",
                        context.where(), first.describe(), part->describe(), axis_));
      }
      spec_.shape[axis_] += part->dim(axis_);
      any_blocked = any_blocked || part->is_blocked();
    }
    element_size_ = element_size(first.dtype());
    inner_ = volume(std::span<const int64_t>(spec_.shape).subspan(axis_ + 1));
    outer_ = volume(std::span<const int64_t>(spec_.shape).first(axis_));
    if (any_blocked) prepare_blocked(context, parts);
  }

  // With part reorders the concat primitive is never run: name what runs instead, so that
  // `--stats` does not report oneDNN's `ref:any` concat for jit reorders.
  std::string implementation() const override {
    if (part_steps_.empty()) return step_.implementation();
    std::vector<std::string> names;
    for (const DnnlStep& step : part_steps_) {
      if (std::find(names.begin(), names.end(), step.implementation()) == names.end())
        names.push_back(step.implementation());
    }
    return fmt::format("reorders {}", fmt::join(names, "+"));
  }
  std::vector<OutputSpec> output_specs() const override { return {spec_}; }

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
           dnnl::stream& stream) override {
    if (!slice_offsets_.empty()) {
      auto* out = static_cast<std::byte*>(outputs[0]->raw());
      for (std::size_t k = 0; k < slice_offsets_.size(); ++k) {
        const Tensor& input = *inputs[slice_inputs_[k]];
        // The executor may already have let the producer write into this slice.
        if (input.raw() == out + slice_offsets_[k]) continue;
        std::memcpy(out + slice_offsets_[k], input.raw(), input.byte_size());
      }
      return;
    }
    if (step_.valid()) {
      int argument = 0;
      for (std::size_t i = 0; i < inputs.size(); ++i) {
        if (inputs[i]->element_count() == 0) continue;
        step_.set(DNNL_ARG_MULTIPLE_SRC + argument++, inputs[i]->raw());
      }
      void* destination = output_bytes_ > 0 ? staging_buffer(StagingSlot::kOutput, output_bytes_)
                                            : outputs[0]->raw();
      if (!part_steps_.empty()) {
        for (std::size_t k = 0; k < part_steps_.size(); ++k) {
          part_steps_[k].set(DNNL_ARG_FROM, inputs[part_inputs_[k]]->raw());
          part_steps_[k].set(DNNL_ARG_TO, destination);
          part_steps_[k].execute(stream);
        }
      } else {
        step_.set(DNNL_ARG_DST, destination);
        step_.execute(stream);
      }
      if (output_bytes_ > 0) output_reorder_.run(destination, outputs[0]->raw(), stream);
      return;
    }
    auto* out = static_cast<std::byte*>(outputs[0]->raw());
    std::size_t row = static_cast<std::size_t>(spec_.shape[axis_] * inner_) * element_size_;
    std::size_t offset = 0;
    for (const Tensor* input : inputs) {
      std::size_t chunk = static_cast<std::size_t>(input->dim(axis_) * inner_) * element_size_;
      if (chunk == 0) continue;
      const auto* in = static_cast<const std::byte*>(input->raw());
      if (outer_ == 1 && in == out + offset) {  // Produced in place by the executor.
        offset += chunk;
        continue;
      }
      for (int64_t o = 0; o < outer_; ++o)
        std::memcpy(out + o * row + offset, in + o * chunk, chunk);
      offset += chunk;
    }
  }

 private:
  void prepare_blocked(const KernelContext& context, const std::vector<const Tensor*>& parts) {
    std::vector<memory::desc> sources;
    for (const Tensor* part : parts) {
      if (part->element_count() != 0) sources.push_back(desc_of(*part));
    }
    if (volume(spec_.shape) == 0) return;
    memory::desc plain = plain_desc(spec_.shape, sources[0].data_type());
    // oneDNN's own choice for an `any` concat output can be a layout no other primitive
    // reads fast (Bacd16b); keep the inputs' layout instead when they all share one.
    memory::desc destination = plain;
    if (context.blocked_outputs_allowed) {
      std::optional<memory::desc> shared = same_layout_for(sources[0], spec_.shape);
      for (const memory::desc& source : sources) {
        std::optional<memory::desc> mine = same_layout_for(source, spec_.shape);
        if (!mine || !shared || *mine != *shared) shared.reset();
      }
      // Mixed layouts (DenseNet joins a plain input with channels-last convolution outputs):
      // take the layout that most of the input bytes are in, so that they need no conversion.
      if (!shared) {
        std::size_t best_bytes = 0;
        for (const memory::desc& candidate : sources) {
          std::optional<memory::desc> layout = same_layout_for(candidate, spec_.shape);
          if (!layout) continue;
          std::size_t bytes = 0;
          for (const memory::desc& source : sources) {
            if (same_layout_for(source, spec_.shape) == layout) bytes += source.get_size();
          }
          if (bytes > best_bytes) {
            best_bytes = bytes;
            shared = layout;
          }
        }
      }
      if (shared) destination = *shared;
    }
    dnnl::concat::primitive_desc descriptor;
    try {
      descriptor = dnnl::concat::primitive_desc(destination, static_cast<int>(axis_), sources,
                                                context.engine, kernel_attr());
    } catch (const dnnl::error&) {
      // Blocks that do not line up along the axis: fall back to a plain output.
      destination = plain;
      descriptor = dnnl::concat::primitive_desc(destination, static_cast<int>(axis_), sources,
                                                context.engine, kernel_attr());
    }
    if (context.blocked_outputs_allowed || !recorded_layout(descriptor.dst_desc(), spec_.shape)) {
      prepare_slice_copies(parts, descriptor.dst_desc());
    }
    step_ = DnnlStep(dnnl::concat(descriptor), descriptor, context.engine);
    for (std::size_t i = 0; i < sources.size(); ++i) {
      step_.declare(DNNL_ARG_MULTIPLE_SRC + static_cast<int>(i), sources[i]);
    }
    step_.declare(DNNL_ARG_DST, descriptor.dst_desc());
    if (implementation_name(descriptor).starts_with("ref")) {
      prepare_part_reorders(context, parts, descriptor.dst_desc());
    }
    std::optional<memory::desc> layout = recorded_layout(descriptor.dst_desc(), spec_.shape);
    if (layout && !context.blocked_outputs_allowed) {
      output_bytes_ = descriptor.dst_desc().get_size();
      output_reorder_ = LayoutReorder(descriptor.dst_desc(), plain, context.engine);
      layout.reset();
    }
    spec_.layout = layout;
  }

  // With one outer index and the output's layout on every input, each input is one contiguous
  // run of the output: oneDNN's simple concat moved 1.7 GB/s there (SqueezeNet's fire joins),
  // memcpy several times that.
  void prepare_slice_copies(const std::vector<const Tensor*>& parts,
                            const memory::desc& destination) {
    std::vector<std::size_t> offsets;
    std::vector<std::size_t> indices;
    int64_t offset = 0;
    for (std::size_t i = 0; i < parts.size(); ++i) {
      if (parts[i]->element_count() == 0) continue;
      bool last = offset + parts[i]->dim(axis_) == spec_.shape[axis_];
      std::optional<std::size_t> start =
          slice_byte_offset(desc_of(*parts[i]), destination, static_cast<int>(axis_), offset, last);
      if (!start) return;
      offsets.push_back(*start);
      indices.push_back(i);
      offset += parts[i]->dim(axis_);
    }
    slice_offsets_ = std::move(offsets);
    slice_inputs_ = std::move(indices);
  }

  // oneDNN 2.6 concatenates inputs of differing layouts with reference code (DenseNet spent
  // 13 ms of 85 there); a jit reorder of each input into its slice of the output does the same.
  void prepare_part_reorders(const KernelContext& context, const std::vector<const Tensor*>& parts,
                             const memory::desc& destination) {
    std::vector<DnnlStep> steps;
    std::vector<std::size_t> indices;
    memory::dims offsets(spec_.shape.size(), 0);
    try {
      for (std::size_t i = 0; i < parts.size(); ++i) {
        if (parts[i]->element_count() == 0) continue;
        const memory::desc source = desc_of(*parts[i]);
        const memory::desc slice = destination.submemory_desc(source.dims(), offsets);
        dnnl::reorder::primitive_desc descriptor(context.engine, source, context.engine, slice,
                                                 kernel_attr());
        if (implementation_name(descriptor).starts_with("ref")) return;
        DnnlStep step(dnnl::reorder(descriptor), descriptor, context.engine);
        step.declare(DNNL_ARG_FROM, source);
        step.declare(DNNL_ARG_TO, slice);
        steps.push_back(std::move(step));
        indices.push_back(i);
        offsets[axis_] += parts[i]->dim(axis_);
      }
    } catch (const dnnl::error&) {
      return;  // A slice that splits a channel block: keep the concat primitive.
    }
    part_steps_ = std::move(steps);
    part_inputs_ = std::move(indices);
  }

  OutputSpec spec_;
  std::vector<std::size_t> slice_offsets_;  // Byte offset in the output of each slice copy.
  std::vector<std::size_t> slice_inputs_;   // Input index of each slice copy.
  std::vector<DnnlStep> part_steps_;
  std::vector<std::size_t> part_inputs_;  // Input index of each part step.
  int64_t axis_ = 0;
  int64_t inner_ = 1, outer_ = 1;
  std::size_t element_size_ = 4;
  DnnlStep step_;
  std::size_t output_bytes_ = 0;  // Staged output (staging_buffer); 0: written in place.
  LayoutReorder output_reorder_;
};

}  // namespace

void register_concat_kernels(KernelRegistry& registry) {
  KernelInfo concat;
  concat.op_type = "Concat";
  concat.accepts_blocked = any_input;
  concat.dtypes = {DataType::kFloat,   DataType::kInt32,  DataType::kInt64,  DataType::kBool,
                   DataType::kUInt8,   DataType::kInt8,   DataType::kDouble, DataType::kFloat16,
                   DataType::kInt16,   DataType::kUInt16, DataType::kUInt32, DataType::kUInt64,
                   DataType::kBFloat16};
  concat.create = guarded([](const KernelContext& context) -> std::unique_ptr<Kernel> {
    return std::make_unique<ConcatKernel>(context);
  });
  registry.add(concat);
}

}  // namespace cleave
