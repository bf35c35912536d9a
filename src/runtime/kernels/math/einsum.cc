// Einsum on any equation (ellipsis, diagonals, implicit outputs), as one loop over the labels.
// The optimizer lowers two-operand contractions to MatMul first (passes/einsum_lowering.h);
// this kernel is what runs the rest, and everything under --no-optimize.
#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <string>
#include <type_traits>
#include <vector>

#include "runtime/kernels/elementwise.h"
#include "runtime/kernels/registration.h"
#include "runtime/kernels/tensor/common.h"

namespace cleave {

namespace {

constexpr int kLetters = 52;  // a-z, A-Z; ellipsis dims get the labels after these.

int letter_label(char c) {
  return std::islower(static_cast<unsigned char>(c)) ? c - 'a' : 26 + c - 'A';
}

char label_letter(int label) {
  return label < 26 ? static_cast<char>('a' + label) : static_cast<char>('A' + label - 26);
}

// One term of the equation as labels; `ellipsis` is where "..." stands (-1: nowhere).
struct Term {
  std::vector<int> letters;
  int ellipsis = -1;
};

Term parse_term(const KernelContext& context, const std::string& text) {
  Term term;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '.') {
      if (term.ellipsis >= 0 || text.compare(i, 3, "...") != 0) {
        throw Error(fmt::format("{}: equation term '{}' has a '.' that is not one '...'",
                                context.where(), text));
      }
      term.ellipsis = static_cast<int>(term.letters.size());
      i += 2;
    } else if (std::isalpha(static_cast<unsigned char>(c))) {
      term.letters.push_back(letter_label(c));
    } else {
      throw Error(fmt::format("{}: equation term '{}' has '{}', expected letters and '...'",
                              context.where(), text, c));
    }
  }
  return term;
}

// The equation resolved against the input shapes: per input, the label of each axis; the
// output's labels; every label's size.
struct Contraction {
  std::vector<std::vector<int>> input_labels;
  std::vector<int> output_labels;
  std::vector<int64_t> sizes;  // Per label; -1 for a label nowhere.
};

Contraction resolve(const KernelContext& context, const std::string& equation) {
  std::string text;
  for (char c : equation) {
    if (!std::isspace(static_cast<unsigned char>(c))) text += c;
  }
  const std::size_t arrow = text.find("->");
  const std::string left = text.substr(0, arrow);
  std::vector<Term> terms;
  for (std::size_t start = 0;;) {
    const std::size_t comma = left.find(',', start);
    terms.push_back(parse_term(context, left.substr(start, comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != context.inputs.size()) {
    throw Error(fmt::format("{}: equation '{}' has {} input term(s) for {} input(s)",
                            context.where(), equation, terms.size(), context.inputs.size()));
  }
  // Ellipsis dims are right-aligned across inputs and broadcast as numpy does.
  std::size_t ellipsis_rank = 0;
  for (std::size_t i = 0; i < terms.size(); ++i) {
    const std::size_t rank = context.input(i).rank();
    if (rank < terms[i].letters.size() ||
        (terms[i].ellipsis < 0 && rank != terms[i].letters.size())) {
      throw Error(fmt::format("{}: input {} has rank {}, its equation term names {} axes",
                              context.where(), i, rank, terms[i].letters.size()));
    }
    ellipsis_rank = std::max(ellipsis_rank, rank - terms[i].letters.size());
  }
  Contraction c;
  c.sizes.assign(kLetters + ellipsis_rank, -1);
  std::array<int, kLetters> uses{};
  for (std::size_t i = 0; i < terms.size(); ++i) {
    const Tensor& x = context.input(i);
    const Term& term = terms[i];
    const std::size_t own_ellipsis = x.rank() - term.letters.size();
    std::vector<int> labels;
    for (std::size_t k = 0; k <= term.letters.size(); ++k) {
      if (static_cast<int>(k) == term.ellipsis) {
        for (std::size_t e = 0; e < own_ellipsis; ++e) {
          labels.push_back(kLetters + static_cast<int>(ellipsis_rank - own_ellipsis + e));
        }
      }
      if (k < term.letters.size()) labels.push_back(term.letters[k]);
    }
    for (std::size_t axis = 0; axis < labels.size(); ++axis) {
      const int label = labels[axis];
      const int64_t size = x.dim(axis);
      int64_t& known = c.sizes[static_cast<std::size_t>(label)];
      if (label < kLetters) {
        if (known >= 0 && known != size) {
          throw Error(fmt::format("{}: label '{}' is {} in input {} but {} before", context.where(),
                                  label_letter(label), size, i, known));
        }
        known = size;
      } else if (known < 0 || known == 1) {
        known = size;
      } else if (size != 1 && size != known) {
        throw Error(fmt::format("{}: the '...' dims of input {} do not broadcast ({} against {})",
                                context.where(), i, size, known));
      }
    }
    for (int letter : term.letters) ++uses[static_cast<std::size_t>(letter)];
    c.input_labels.push_back(std::move(labels));
  }
  if (arrow != std::string::npos) {
    const Term out = parse_term(context, text.substr(arrow + 2));
    for (std::size_t k = 0; k <= out.letters.size(); ++k) {
      if (static_cast<int>(k) == out.ellipsis) {
        for (std::size_t e = 0; e < ellipsis_rank; ++e) {
          c.output_labels.push_back(kLetters + static_cast<int>(e));
        }
      }
      if (k == out.letters.size()) break;
      const int letter = out.letters[k];
      if (uses[static_cast<std::size_t>(letter)] == 0 ||
          std::count(out.letters.begin(), out.letters.end(), letter) != 1) {
        throw Error(fmt::format("{}: output term of '{}' names a label no input has, or twice",
                                context.where(), equation));
      }
      c.output_labels.push_back(letter);
    }
  } else {
    // Implicit output: the ellipsis dims, then the letters used once, in ASCII order.
    for (std::size_t e = 0; e < ellipsis_rank; ++e) {
      c.output_labels.push_back(kLetters + static_cast<int>(e));
    }
    std::vector<char> once;
    for (int letter = 0; letter < kLetters; ++letter) {
      if (uses[static_cast<std::size_t>(letter)] == 1) once.push_back(label_letter(letter));
    }
    std::sort(once.begin(), once.end());
    for (char letter : once) c.output_labels.push_back(letter_label(letter));
  }
  return c;
}

template <typename T>
void contract(const Contraction& c, const std::vector<const Tensor*>& inputs, Tensor& output,
              int threads) {
  // The loop runs over the output's labels, then over the summed ones.
  std::vector<int> summed;
  for (std::size_t label = 0; label < c.sizes.size(); ++label) {
    if (c.sizes[label] >= 0 && std::find(c.output_labels.begin(), c.output_labels.end(),
                                         static_cast<int>(label)) == c.output_labels.end()) {
      summed.push_back(static_cast<int>(label));
    }
  }
  // Per input and label, the element stride (0 where the label is absent or broadcast);
  // repeated labels (a diagonal) add their strides.
  const std::size_t operand_count = inputs.size();
  std::vector<std::vector<int64_t>> strides(operand_count, std::vector<int64_t>(c.sizes.size(), 0));
  for (std::size_t i = 0; i < operand_count; ++i) {
    const std::vector<int64_t> dense = shape::row_major_strides(inputs[i]->shape());
    for (std::size_t axis = 0; axis < c.input_labels[i].size(); ++axis) {
      if (inputs[i]->dim(axis) == 1) continue;
      strides[i][static_cast<std::size_t>(c.input_labels[i][axis])] += dense[axis];
    }
  }
  std::vector<int64_t> summed_sizes;
  int64_t summed_count = 1;
  for (int label : summed) {
    summed_sizes.push_back(c.sizes[static_cast<std::size_t>(label)]);
    summed_count *= summed_sizes.back();
  }
  const std::vector<int64_t>& out_shape = output.shape();
  T* out = output.data<T>();
  using Accumulator = std::conditional_t<std::is_floating_point_v<T>, double, T>;
  elementwise::parallel_for(
      output.element_count(), threads,
      [&](int64_t begin, int64_t end) {
        std::vector<int64_t> base(operand_count);
        std::vector<int64_t> index(summed.size());
        for (int64_t flat = begin; flat < end; ++flat) {
          std::fill(base.begin(), base.end(), 0);
          int64_t rest = flat;
          for (std::size_t axis = out_shape.size(); axis-- > 0;) {
            const int64_t at = rest % out_shape[axis];
            rest /= out_shape[axis];
            const auto label = static_cast<std::size_t>(c.output_labels[axis]);
            for (std::size_t i = 0; i < operand_count; ++i) base[i] += at * strides[i][label];
          }
          Accumulator sum = 0;
          std::fill(index.begin(), index.end(), 0);
          for (int64_t s = 0; s < summed_count; ++s) {
            Accumulator term = 1;
            for (std::size_t i = 0; i < operand_count; ++i) {
              int64_t offset = base[i];
              for (std::size_t k = 0; k < summed.size(); ++k) {
                offset += index[k] * strides[i][static_cast<std::size_t>(summed[k])];
              }
              term *= static_cast<Accumulator>(inputs[i]->data<T>()[offset]);
            }
            sum += term;
            for (std::size_t k = summed.size(); k-- > 0;) {
              if (++index[k] < summed_sizes[k]) break;
              index[k] = 0;
            }
          }
          out[flat] = static_cast<T>(sum);
        }
      },
      1);
}

std::unique_ptr<Kernel> create_einsum(const KernelContext& context) {
  if (context.inputs.empty())
    throw Error(fmt::format("{}: Einsum needs an input", context.where()));
  const DataType dtype = context.input(0).dtype();
  for (std::size_t i = 1; i < context.inputs.size(); ++i) {
    if (context.input(i).dtype() != dtype) {
      throw Error(fmt::format("{}: input {} is {}, input 0 is {}", context.where(), i,
                              dtype_name(context.input(i).dtype()), dtype_name(dtype)));
    }
  }
  const std::string equation = context.node.string_attribute("equation", "");
  Contraction c = resolve(context, equation);
  // The loop visits every combination of labels once: refuse a count past int64's range.
  int64_t combinations = 1;
  for (int64_t size : c.sizes) {
    if (size > 0 && __builtin_mul_overflow(combinations, size, &combinations)) {
      throw Error(fmt::format("{}: equation '{}' spans more label combinations than int64 counts",
                              context.where(), equation));
    }
  }
  std::vector<int64_t> shape;
  for (int label : c.output_labels) shape.push_back(c.sizes[static_cast<std::size_t>(label)]);
  const int threads = context.threads;
  return shape::make_kernel(
      context, {OutputSpec{dtype, shape, std::nullopt, -1}},
      [c = std::move(c), dtype, threads](const std::vector<const Tensor*>& inputs,
                                         const std::vector<Tensor*>& outputs) {
        switch (dtype) {
          case DataType::kFloat:
            contract<float>(c, inputs, *outputs[0], threads);
            break;
          case DataType::kDouble:
            contract<double>(c, inputs, *outputs[0], threads);
            break;
          case DataType::kInt32:
            contract<int32_t>(c, inputs, *outputs[0], threads);
            break;
          default:
            contract<int64_t>(c, inputs, *outputs[0], threads);
            break;
        }
      });
}

}  // namespace

void register_einsum_kernels(KernelRegistry& registry) {
  shape::add_kernel(registry, "Einsum", create_einsum,
                    {DataType::kFloat, DataType::kDouble, DataType::kInt32, DataType::kInt64});
}

}  // namespace cleave
