// N-gram counting over integer tokens: TfIdfVectorizer (TF, IDF and TFIDF weighting).
#include <fmt/core.h>

#include <algorithm>
#include <map>

#include "runtime/kernels/registration.h"
#include "runtime/kernels/tensor/common.h"

namespace cleave {

namespace {

enum class Weighting { kTf, kIdf, kTfIdf };

struct NgramTable {
  int64_t min_length = 1, max_length = 1, max_skip = 0, outputs = 0;
  Weighting weighting = Weighting::kTf;
  std::map<std::vector<int64_t>, int64_t> index;  // N-gram → output position.
  std::vector<float> weights;                     // Per output position; empty: all 1.
};

NgramTable ngram_table(const KernelContext& context) {
  const Node& node = context.node;
  NgramTable table;
  table.min_length = node.int_attribute("min_gram_length", 1);
  table.max_length = node.int_attribute("max_gram_length", 1);
  table.max_skip = node.int_attribute("max_skip_count", 0);
  std::string mode = node.string_attribute("mode", "TF");
  table.weighting = mode == "IDF"     ? Weighting::kIdf
                    : mode == "TFIDF" ? Weighting::kTfIdf
                                      : Weighting::kTf;
  if ((mode != "TF" && mode != "IDF" && mode != "TFIDF") || table.min_length < 1 ||
      table.max_length < table.min_length || table.max_skip < 0) {
    throw Error(fmt::format(
        "{}: expected mode TF, IDF or TFIDF and 1 <= min_gram_length <= max_gram_length, got "
        "mode '{}', lengths {} to {}, max_skip_count {}",
        context.where(), mode, table.min_length, table.max_length, table.max_skip));
  }
  if (node.attribute("pool_strings") != nullptr) {
    throw UnsupportedError(
        fmt::format("{}: pool_strings (string tokens) are not supported", context.where()));
  }
  std::vector<int64_t> pool = node.ints_attribute("pool_int64s");
  std::vector<int64_t> starts = node.ints_attribute("ngram_counts");
  std::vector<int64_t> positions = node.ints_attribute("ngram_indexes");
  // Pool section i holds the (i + 1)-grams, from starts[i] to the next section.
  std::size_t gram = 0;
  for (std::size_t section = 0; section < starts.size(); ++section) {
    auto length = static_cast<int64_t>(section + 1);
    int64_t end =
        section + 1 < starts.size() ? starts[section + 1] : static_cast<int64_t>(pool.size());
    if (starts[section] < 0 || end > static_cast<int64_t>(pool.size()) || end < starts[section] ||
        (end - starts[section]) % length != 0) {
      throw Error(fmt::format("{}: ngram_counts do not split pool_int64s of {} into n-grams",
                              context.where(), pool.size()));
    }
    for (int64_t at = starts[section]; at < end; at += length, ++gram) {
      if (gram >= positions.size() || positions[gram] < 0) {
        throw Error(
            fmt::format("{}: ngram_indexes should give a position to each of the pool's "
                        "n-grams",
                        context.where()));
      }
      table.index[std::vector<int64_t>(pool.begin() + at, pool.begin() + at + length)] =
          positions[gram];
      table.outputs = std::max(table.outputs, positions[gram] + 1);
    }
  }
  if (const Attribute* weights = node.attribute("weights")) {
    table.weights.assign(static_cast<std::size_t>(table.outputs), 1.0f);
    for (std::size_t g = 0; g < weights->floats.size() && g < positions.size(); ++g) {
      table.weights[positions[g]] = weights->floats[g];
    }
  }
  return table;
}

// Counts one row's n-grams into `out` and applies the weighting.
void count_row(const NgramTable& table, const std::vector<int64_t>& tokens, int64_t begin,
               int64_t length, float* out) {
  std::vector<int64_t> gram;
  for (int64_t start = 0; start < length; ++start) {
    for (int64_t n = table.min_length; n <= table.max_length; ++n) {
      // A unigram has no gaps: it is counted once, not once per skip.
      int64_t skips = n == 1 ? 0 : table.max_skip;
      for (int64_t skip = 0; skip <= skips; ++skip) {
        int64_t last = start + (n - 1) * (skip + 1);
        if (last >= length) break;
        gram.clear();
        for (int64_t k = 0; k < n; ++k) gram.push_back(tokens[begin + start + k * (skip + 1)]);
        auto found = table.index.find(gram);
        if (found != table.index.end()) out[found->second] += 1;
      }
    }
  }
  for (int64_t i = 0; i < table.outputs; ++i) {
    float weight = table.weights.empty() ? 1.0f : table.weights[i];
    if (table.weighting == Weighting::kIdf) out[i] = out[i] > 0 ? weight : 0;
    if (table.weighting == Weighting::kTfIdf) out[i] *= weight;
  }
}

std::unique_ptr<Kernel> create_tfidf(const KernelContext& context) {
  const Tensor& x = context.input(0);
  if (x.rank() != 1 && x.rank() != 2) {
    throw Error(
        fmt::format("{}: the input should be [C] or [N, C], is {}", context.where(), x.describe()));
  }
  NgramTable table = ngram_table(context);
  int64_t rows = x.rank() == 2 ? x.dim(0) : 1;
  int64_t length = x.dim(x.rank() - 1);
  std::vector<int64_t> shape = {table.outputs};
  if (x.rank() == 2) shape.insert(shape.begin(), rows);
  return shape::make_kernel(
      context, {OutputSpec{DataType::kFloat, shape, std::nullopt, -1}},
      [=](const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) {
        std::vector<int64_t> tokens = inputs[0]->to_int64_vector();
        float* out = outputs[0]->data<float>();
        std::fill(out, out + rows * table.outputs, 0.0f);
        for (int64_t r = 0; r < rows; ++r) {
          count_row(table, tokens, r * length, length, out + r * table.outputs);
        }
      });
}

}  // namespace

void register_ngram_kernels(KernelRegistry& registry) {
  shape::add_kernel(registry, "TfIdfVectorizer", create_tfidf,
                    {DataType::kInt32, DataType::kInt64});
}

}  // namespace cleave
