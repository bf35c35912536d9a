// Gemm and MatMul on oneDNN's matmul primitive: transposes, broadcasting, pre-packed weights,
// and a MatMul's fused bias and activation.
#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <optional>
#include <string>
#include <utility>

#include "runtime/claim_pool.h"
#include "runtime/kernels/dnnl_util.h"
#include "runtime/kernels/packed_constants.h"
#include "runtime/kernels/registration.h"

namespace cleave {

namespace {

using dnnl::memory;

// oneDNN's sgemm (`gemm:jit`, the matmul of CPUs without AVX-512) packs the weights' rows with
// the stride they are stored at. A row of 512, 1024, 2048 or 3072 floats maps the rows it
// packs together onto the same cache sets: under AVX2, 128x256 by 256x2048 took 2.3 ms against
// 1.3 ms with 16 floats of padding after each row, and no shape measured got slower padded
// (docs/results/isa.md). So constant weights packed for that path get the padding.
std::optional<memory::desc> padded_sgemm_weights(const dnnl::matmul::primitive_desc& descriptor,
                                                 bool constant_weights) {
  if (!constant_weights) return std::nullopt;
  const memory::desc chosen = descriptor.weights_desc();
  const memory::dims dims = chosen.dims();
  const auto rank = dims.size();
  if (rank < 2 || dims[rank - 1] % 128 != 0) return std::nullopt;
  for (std::size_t i = 0; i + 2 < rank; ++i) {
    if (dims[i] != 1) return std::nullopt;  // Batched weights keep oneDNN's layout.
  }
  if (implementation_name(descriptor).find("gemm") == std::string::npos) return std::nullopt;
  memory::dims strides(rank, 0);
  strides[rank - 1] = 1;
  strides[rank - 2] = dims[rank - 1] + 16;
  for (std::size_t i = rank - 2; i-- > 0;) strides[i] = strides[i + 1] * dims[i + 1];
  return memory::desc(dims, memory::data_type::f32, strides);
}

// A matmul of at least this many flops is cut into row parts on a host whose cores other
// processes hold, as convolutions are (depthwise_split.h's claimed parts, the same floor).
constexpr double kMinClaimedFlops = 20e6;

/// One oneDNN matmul with its operand layouts; weights packed once when constant.
class MatmulKernel : public Kernel, public PackedConstants {
 public:
  struct Operands {
    memory::desc source, weights, destination;
    std::optional<memory::desc> addend;  // Broadcast C added after scaling (Gemm, MatMul bias).
    float scale = 1.0f;                  // Gemm's alpha.
    std::optional<dnnl::algorithm> activation;  // Applied last (a fused MatMul's).
  };

  MatmulKernel(const KernelContext& context, const Operands& operands,
               std::vector<int64_t> output_shape, int64_t reduced_size)
      : engine_(context.engine) {
    spec_.shape = std::move(output_shape);
    const bool pack = context.constant[1] && reduced_size != 0 && context.pack_product_weights;
    if (pack) take_over_pack(context, operands.weights);
    if (volume(spec_.shape) == 0) {
      empty_ = true;
      return;
    }
    zero_fill_ = reduced_size == 0;  // A sum over nothing: zeros (plus Gemm's C).
    if (zero_fill_ && operands.activation) {
      throw UnsupportedError(
          fmt::format("{}: a fused activation on a MatMul over an empty "
                      "inner dimension is not supported",
                      context.where()));
    }
    if (operands.addend) addend_dims_ = operands.addend->dims();
    if (zero_fill_) return;
    const dnnl::primitive_attr attr = attributes(operands, operands.addend);
    std::optional<dnnl::matmul::primitive_desc> descriptor;
    if (packed_) descriptor = with_packed_weights(operands, attr);
    if (!descriptor) {
      const memory::desc weights =
          pack ? memory::desc(operands.weights.dims(), memory::data_type::f32,
                              memory::format_tag::any)
               : operands.weights;
      descriptor = dnnl::matmul::primitive_desc(
          dnnl::matmul::desc(operands.source, weights, operands.destination), attr, engine_);
      if (std::optional<memory::desc> padded = padded_sgemm_weights(*descriptor, pack)) {
        descriptor = dnnl::matmul::primitive_desc(
            dnnl::matmul::desc(operands.source, *padded, operands.destination), attr, engine_);
      }
    }
    step_ = DnnlStep(dnnl::matmul(*descriptor), *descriptor, engine_);
    step_.declare(DNNL_ARG_SRC, descriptor->src_desc());
    step_.declare(DNNL_ARG_WEIGHTS, descriptor->weights_desc());
    step_.declare(DNNL_ARG_DST, descriptor->dst_desc());
    if (operands.addend)
      step_.declare(DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, *operands.addend);
    if (pack && !packed_) {
      packed_ = pack_constant_input(context, 1, loaded_weights(context), operands.weights,
                                    descriptor->weights_desc(), /*for_good=*/true);
      packed_layout_ = descriptor->weights_desc();
      unpacked_.reset();
    }
    if (context.claim_pool) split_rows(context, operands, descriptor->weights_desc(), reduced_size);
  }

  std::string implementation() const override {
    if (parts_.empty() || !claim_pool_) return step_.implementation();
    return fmt::format("{} in {} row parts claimed by {} threads", step_.implementation(),
                       parts_.size(), claim_pool_->threads());
  }
  bool reads_at_run(std::size_t input) const override {  // PackedConstants
    return input != 1 || !packed_;
  }
  bool keeps_packs_across_shapes() const override {  // PackedConstants
    return packed_ && weights_.dims().size() == 2;
  }
  std::vector<OutputSpec> output_specs() const override { return {spec_}; }

  /// Gemm's beta: the addend input is scaled by it first (into a kernel-owned buffer).
  void set_addend(int input, float beta, const KernelContext& context) {
    addend_input_ = input;
    beta_ = beta;
    if (beta != 1.0f) {
      const Tensor& c = context.input(input);
      scaled_addend_ =
          std::make_shared<Buffer>(static_cast<std::size_t>(c.element_count()) * sizeof(float));
      if (context.constant[input]) {
        scale_into(c, *scaled_addend_);
        addend_scaled_once_ = true;
      }
    }
  }

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
           dnnl::stream& stream) override {
    if (empty_) return;
    const void* addend = nullptr;
    if (addend_input_ >= 0) {
      addend = inputs[addend_input_]->raw();
      if (scaled_addend_) {
        if (!addend_scaled_once_) scale_into(*inputs[addend_input_], *scaled_addend_);
        addend = scaled_addend_->data();
      }
    }
    if (zero_fill_) {
      fill_with_addend(static_cast<const float*>(addend), outputs[0]->data<float>());
      return;
    }
    if (!parts_.empty()) {
      run_parts(static_cast<const float*>(inputs[0]->raw()),
                packed_ ? packed_->data() : inputs[1]->raw(), outputs[0]->data<float>(),
                static_cast<const float*>(addend));
      return;
    }
    step_.set(DNNL_ARG_SRC, inputs[0]->raw());
    step_.set(DNNL_ARG_WEIGHTS, packed_ ? packed_->data() : inputs[1]->raw());
    step_.set(DNNL_ARG_DST, outputs[0]->raw());
    if (addend) step_.set(DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, addend);
    step_.execute(stream);
  }

 private:
  // A run of the rows of A and of the output, computed by one thread.
  struct RowPart {
    DnnlStep step;
    dnnl::stream stream;
    int64_t first_row = 0;
    bool row_addend = false;  // The addend has a row per output row, so it is sliced too.
  };

  // A node prepared again for other shapes (a row count known only at run time), its loaded
  // weights gone, keeps the packed copy of the kernel it replaces: one copy, never packed from
  // the loaded bytes again (keeps_packs_across_shapes). Held even while the output is empty.
  void take_over_pack(const KernelContext& context, const memory::desc& weights) {
    weights_ = weights;
    if (context.input(1).raw() != nullptr) return;
    if (std::optional<PackedCopy> copy = packed_copy_after_release(context, 1, weights)) {
      packed_ = std::move(copy->bytes);
      packed_layout_ = copy->layout;
    }
  }

  // The primitive for these rows reading the packed copy taken over. Where no implementation
  // takes that layout for these shapes, the weights are unpacked from it and packed afresh.
  std::optional<dnnl::matmul::primitive_desc> with_packed_weights(
      const Operands& operands, const dnnl::primitive_attr& attr) {
    try {
      return dnnl::matmul::primitive_desc(
          dnnl::matmul::desc(operands.source, packed_layout_, operands.destination), attr, engine_);
    } catch (const dnnl::error&) {
      unpacked_ = pack_constant(packed_->data(), packed_layout_, operands.weights, engine_);
      packed_.reset();
      return std::nullopt;
    }
  }

  // The loaded bytes of the weights, or those unpacked from the copy taken over.
  const void* loaded_weights(const KernelContext& context) const {
    if (unpacked_) return unpacked_->data();
    const void* data = context.input(1).raw();
    if (data == nullptr) {
      throw Error(
          fmt::format("{}: the loaded weights {} were freed after packing and no packed "
                      "copy was handed over to prepare the node again",
                      context.where(), context.input(1).describe()));
    }
    return data;
  }

  static dnnl::primitive_attr attributes(const Operands& operands,
                                         const std::optional<memory::desc>& addend) {
    dnnl::primitive_attr attr = kernel_attr();
    if (operands.scale != 1.0f) attr.set_output_scales(0, {operands.scale});
    dnnl::post_ops ops;
    if (addend) ops.append_binary(dnnl::algorithm::binary_add, *addend);
    if (operands.activation) ops.append_eltwise(1.0f, *operands.activation, 0.0f, 0.0f);
    if (ops.len() > 0) attr.set_post_ops(ops);
    return attr;
  }

  // With every core held (KernelContext::claim_pool), a one-matrix product of enough flops is
  // cut into runs of rows, 2 per claiming thread, each a 1-thread primitive on the same packed
  // weights: a thread waiting for a core then holds up only the part it has begun.
  void split_rows(const KernelContext& context, const Operands& operands,
                  const memory::desc& weights, int64_t reduced_size) {
    const memory::dims dims = operands.source.dims();
    if (dims.size() != 2 || operands.source.data.format_kind != dnnl_blocked) return;
    const int64_t rows = dims[0], columns = operands.destination.dims()[1];
    const double flops = 2.0 * static_cast<double>(rows) * static_cast<double>(reduced_size) *
                         static_cast<double>(columns);
    const int64_t wanted = std::min<int64_t>(2 * context.claim_pool->threads(), rows);
    if (flops < kMinClaimedFlops || wanted < 2) return;
    const int64_t per_part = (rows + wanted - 1) / wanted;
    source_row_stride_ = operands.source.data.format_desc.blocking.strides[0];
    const memory::dims source_strides = {source_row_stride_,
                                         operands.source.data.format_desc.blocking.strides[1]};
    const bool row_addend = operands.addend && operands.addend->dims()[0] == rows && rows > 1;
    for (int64_t first = 0; first < rows; first += per_part) {
      const int64_t count = std::min(per_part, rows - first);
      std::optional<memory::desc> addend = operands.addend;
      if (row_addend) {
        addend = memory::desc({count, operands.addend->dims()[1]}, memory::data_type::f32,
                              memory::format_tag::ab);
      }
      const memory::desc source({count, dims[1]}, memory::data_type::f32, source_strides);
      const memory::desc destination({count, columns}, memory::data_type::f32,
                                     memory::format_tag::ab);
      dnnl::matmul::primitive_desc part(dnnl::matmul::desc(source, weights, destination),
                                        attributes(operands, addend), engine_);
      RowPart row_part{DnnlStep(dnnl::matmul(part), part, engine_), dnnl::stream(engine_), first,
                       row_addend};
      row_part.step.declare(DNNL_ARG_SRC, source);
      row_part.step.declare(DNNL_ARG_WEIGHTS, weights);
      row_part.step.declare(DNNL_ARG_DST, destination);
      if (addend)
        row_part.step.declare(DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, *addend);
      parts_.push_back(std::move(row_part));
    }
    addend_columns_ = operands.addend ? operands.addend->dims()[1] : 0;
    columns_ = columns;
    claim_pool_ = context.claim_pool;
    failures_.resize(parts_.size());
  }

  void run_parts(const float* source, const void* weights, float* destination,
                 const float* addend) {
    claim_pool_->run(static_cast<int>(parts_.size()), [&](int index) {
      RowPart& part = parts_[index];
      try {
        part.step.set(DNNL_ARG_SRC, source + part.first_row * source_row_stride_);
        part.step.set(DNNL_ARG_WEIGHTS, weights);
        part.step.set(DNNL_ARG_DST, destination + part.first_row * columns_);
        if (addend) {
          part.step.set(DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1,
                        part.row_addend ? addend + part.first_row * addend_columns_ : addend);
        }
        part.step.execute(part.stream);
        part.stream.wait();
      } catch (...) {
        failures_[index] = std::current_exception();  // Exceptions must not leave a thread.
      }
    });
    for (std::exception_ptr& failure : failures_) {
      if (failure) std::rethrow_exception(std::exchange(failure, nullptr));
    }
  }

  void scale_into(const Tensor& c, Buffer& target) const {
    const float* from = c.data<float>();
    auto* to = reinterpret_cast<float*>(target.data());
    for (int64_t i = 0; i < c.element_count(); ++i) to[i] = beta_ * from[i];
  }

  // K == 0: the product is all zeros, so the output is just the broadcast addend (or zeros).
  void fill_with_addend(const float* addend, float* out) const {
    int64_t rows = spec_.shape.size() >= 2 ? spec_.shape[spec_.shape.size() - 2] : 1;
    int64_t count = volume(spec_.shape);
    int64_t columns = spec_.shape.empty() ? 1 : spec_.shape.back();
    for (int64_t i = 0; i < count; ++i) {
      float value = 0.0f;
      if (addend) {
        int64_t row = (i / columns) % rows, column = i % columns;
        int64_t addend_row = addend_dims_[0] == 1 ? 0 : row;
        int64_t addend_column = addend_dims_[1] == 1 ? 0 : column;
        value = addend[addend_row * addend_dims_[1] + addend_column];
      }
      out[i] = value;
    }
  }

  dnnl::engine engine_;
  OutputSpec spec_;
  bool empty_ = false;
  bool zero_fill_ = false;
  DnnlStep step_;
  std::shared_ptr<Buffer> packed_;
  memory::desc weights_;              // The weights' loaded layout (logical dims).
  memory::desc packed_layout_;        // packed_'s layout.
  std::shared_ptr<Buffer> unpacked_;  // Weights unpacked from a copy taken over (rare).
  int addend_input_ = -1;
  float beta_ = 1.0f;
  std::shared_ptr<Buffer> scaled_addend_;
  bool addend_scaled_once_ = false;
  memory::dims addend_dims_;
  std::vector<RowPart> parts_;
  std::vector<std::exception_ptr> failures_;  ///< One per part.
  ClaimPool* claim_pool_ = nullptr;
  int64_t source_row_stride_ = 0, columns_ = 0, addend_columns_ = 0;
};

// The oneDNN algorithm for a fused MatMul's `activation` attribute; nullopt when absent.
std::optional<dnnl::algorithm> fused_activation(const KernelContext& context) {
  std::string activation = context.node.string_attribute("activation", "");
  if (activation.empty()) return std::nullopt;
  if (activation == "Relu") return dnnl::algorithm::eltwise_relu;
  if (activation == "Gelu") return dnnl::algorithm::eltwise_gelu_erf;
  throw UnsupportedError(
      fmt::format("{}: fused activation '{}' is not supported on MatMul (Relu, Gelu are)",
                  context.where(), activation));
}

std::unique_ptr<Kernel> create_gemm(const KernelContext& context) {
  const Tensor& a = context.input(0);
  const Tensor& b = context.input(1);
  if (a.rank() != 2 || b.rank() != 2) {
    throw Error(fmt::format("{}: A {} and B {} must be matrices", context.where(), a.describe(),
                            b.describe()));
  }
  bool transpose_a = context.node.int_attribute("transA", 0) != 0;
  bool transpose_b = context.node.int_attribute("transB", 0) != 0;
  float alpha = context.node.float_attribute("alpha", 1.0f);
  float beta = context.node.float_attribute("beta", 1.0f);
  int64_t m = transpose_a ? a.dim(1) : a.dim(0);
  int64_t k = transpose_a ? a.dim(0) : a.dim(1);
  int64_t k_b = transpose_b ? b.dim(1) : b.dim(0);
  int64_t n = transpose_b ? b.dim(0) : b.dim(1);
  if (k != k_b) {
    throw Error(fmt::format("{}: A {} (transA={}) and B {} (transB={}) disagree on the inner size",
                            context.where(), a.describe(), transpose_a, b.describe(), transpose_b));
  }
  MatmulKernel::Operands operands;
  operands.source = memory::desc({m, k}, memory::data_type::f32,
                                 transpose_a ? memory::dims{1, m} : memory::dims{k, 1});
  operands.weights = memory::desc({k, n}, memory::data_type::f32,
                                  transpose_b ? memory::dims{1, k} : memory::dims{n, 1});
  operands.destination = plain_desc(std::vector<int64_t>{m, n});
  operands.scale = alpha;
  bool add_c = context.has_input(2) && beta != 0.0f;
  if (add_c) {
    const Tensor& c = context.input(2);
    std::vector<int64_t> c_dims = c.shape();
    if (c_dims.size() > 2) {
      throw Error(fmt::format("{}: C {} has more than 2 dims", context.where(), c.describe()));
    }
    while (c_dims.size() < 2) c_dims.insert(c_dims.begin(), 1);
    if ((c_dims[0] != 1 && c_dims[0] != m) || (c_dims[1] != 1 && c_dims[1] != n)) {
      throw Error(fmt::format("{}: C {} does not broadcast to the output [{},{}]", context.where(),
                              c.describe(), m, n));
    }
    operands.addend = plain_desc(c_dims);
  }
  auto kernel = std::make_unique<MatmulKernel>(context, operands, std::vector<int64_t>{m, n}, k);
  if (add_c) kernel->set_addend(2, beta, context);
  return kernel;
}

std::unique_ptr<Kernel> create_matmul(const KernelContext& context) {
  const Tensor& a = context.input(0);
  const Tensor& b = context.input(1);
  if (a.rank() == 0 || b.rank() == 0) {
    throw Error(fmt::format("{}: MatMul operands {} and {} must not be scalars", context.where(),
                            a.describe(), b.describe()));
  }
  // numpy: a 1-D A is a row (its M dim dropped from the result), a 1-D B a column.
  std::vector<int64_t> a_shape = a.shape(), b_shape = b.shape();
  bool a_vector = a_shape.size() == 1, b_vector = b_shape.size() == 1;
  if (a_vector) a_shape.insert(a_shape.begin(), 1);
  if (b_vector) b_shape.push_back(1);
  std::size_t rank = std::max(a_shape.size(), b_shape.size());
  if (rank > DNNL_MAX_NDIMS) {
    throw UnsupportedError(fmt::format("{}: MatMul of rank {} is beyond oneDNN's {}",
                                       context.where(), rank, DNNL_MAX_NDIMS));
  }
  while (a_shape.size() < rank) a_shape.insert(a_shape.begin(), 1);
  while (b_shape.size() < rank) b_shape.insert(b_shape.begin(), 1);
  int64_t m = a_shape[rank - 2], k = a_shape[rank - 1], n = b_shape[rank - 1];
  if (b_shape[rank - 2] != k) {
    throw Error(fmt::format("{}: A {} and B {} disagree on the inner size", context.where(),
                            a.describe(), b.describe()));
  }
  std::vector<int64_t> batch;
  bool b_shared = true;  // B's batch dims are all 1: one weight matrix for every row of A.
  for (std::size_t i = 0; i + 2 < rank; ++i) {
    if (a_shape[i] != b_shape[i] && a_shape[i] != 1 && b_shape[i] != 1) {
      throw Error(fmt::format("{}: batch dims of A {} and B {} do not broadcast", context.where(),
                              a.describe(), b.describe()));
    }
    batch.push_back(a_shape[i] == 1 ? b_shape[i] : a_shape[i]);
    b_shared = b_shared && b_shape[i] == 1;
  }
  std::vector<int64_t> output_shape = batch;
  if (!a_vector) output_shape.push_back(m);
  if (!b_vector) output_shape.push_back(n);

  MatmulKernel::Operands operands;
  operands.activation = fused_activation(context);
  bool with_bias = context.has_input(2);
  if (with_bias) {
    // Written by the MatMul epilogue fusion: a bias of B's column count, added to every row.
    const Tensor& bias = context.input(2);
    if (bias.dtype() != DataType::kFloat || !b_shared || b_vector || bias.element_count() != n ||
        (bias.rank() > 0 && bias.shape().back() != n)) {
      throw Error(fmt::format("{}: fused bias {} must hold one value per column of B {} ({})",
                              context.where(), bias.describe(), b.describe(), n));
    }
    operands.addend = plain_desc(std::vector<int64_t>{1, n});
  }
  if (b_shared) {
    // Stacking A's batch into rows makes one large GEMM, which oneDNN runs best.
    int64_t rows = volume(std::span<const int64_t>(a_shape).first(rank - 1));
    operands.source = plain_desc(std::vector<int64_t>{rows, k});
    operands.weights = plain_desc(std::vector<int64_t>{k, n});
    operands.destination = plain_desc(std::vector<int64_t>{rows, n});
  } else {
    std::vector<int64_t> out_full = batch;
    out_full.push_back(m);
    out_full.push_back(n);
    operands.source = plain_desc(a_shape);
    operands.weights = plain_desc(b_shape);
    operands.destination = plain_desc(out_full);
  }
  auto kernel = std::make_unique<MatmulKernel>(context, operands, output_shape, k);
  if (with_bias) kernel->set_addend(2, 1.0f, context);
  return kernel;
}

}  // namespace

void register_matmul_kernels(KernelRegistry& registry) {
  KernelInfo gemm;
  gemm.op_type = "Gemm";
  gemm.create = guarded(create_gemm);
  registry.add(gemm);

  KernelInfo matmul;
  matmul.op_type = "MatMul";
  matmul.create = guarded(create_matmul);
  registry.add(matmul);
}

}  // namespace cleave
