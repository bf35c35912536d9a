// Rewritten weights recorded as how to make them (deferred_weights.h).
#include "passes/deferred_weights.h"

#include <utility>

#include "passes/pass.h"

namespace cleave {

// One input of a rewrite: bytes held (small weights, or read for another pass), an earlier
// rewrite, or a weight of the file by name; none of them for an absent input.
struct DeferredSource {
  std::optional<TensorData> held;
  std::shared_ptr<const DeferredRewrite> rewritten;
  std::string file_weight;
};

struct DeferredRewrite {
  std::vector<DeferredSource> inputs;
  WeightRewrite rewrite;
};

namespace {

// The live DeferredWeights' records on this thread; null when none lives.
thread_local std::map<std::string, std::shared_ptr<const DeferredRewrite>>* active = nullptr;

TensorData make(const DeferredRewrite& rewrite, const FileWeightReader& read) {
  std::vector<TensorData> inputs;
  inputs.reserve(rewrite.inputs.size());
  for (const DeferredSource& source : rewrite.inputs) {
    if (source.held) {
      inputs.push_back(*source.held);
    } else if (source.rewritten) {
      inputs.push_back(make(*source.rewritten, read));
    } else if (!source.file_weight.empty()) {
      inputs.push_back(read(source.file_weight));
    } else {
      inputs.emplace_back();
    }
  }
  return rewrite.rewrite(inputs);
}

void collect_file_weights(const DeferredRewrite& rewrite, std::vector<std::string>& names) {
  for (const DeferredSource& source : rewrite.inputs) {
    if (source.rewritten) collect_file_weights(*source.rewritten, names);
    if (!source.held && !source.rewritten && !source.file_weight.empty())
      names.push_back(source.file_weight);
  }
}

}  // namespace

DeferredWeights::DeferredWeights() {
  if (active) throw Error("deferred weights: one recording per thread at a time");
  active = &recorded_;
}

DeferredWeights::~DeferredWeights() {
  active = nullptr;
}

void DeferredWeights::clear() {
  recorded_.clear();
}

std::vector<std::string> DeferredWeights::names() const {
  std::vector<std::string> names;
  for (const auto& entry : recorded_) names.push_back(entry.first);
  return names;
}

std::vector<std::string> DeferredWeights::file_weights_of(const std::string& name) const {
  std::vector<std::string> names;
  if (const auto found = recorded_.find(name); found != recorded_.end())
    collect_file_weights(*found->second, names);
  return names;
}

std::optional<TensorData> DeferredWeights::bytes_of(const std::string& name,
                                                    const FileWeightReader& read) const {
  const auto found = recorded_.find(name);
  if (found == recorded_.end()) return std::nullopt;
  return make(*found->second, read);
}

bool deferring_weights() {
  return active != nullptr;
}

std::shared_ptr<const DeferredRewrite> defer_rewrite(const Graph& graph,
                                                     const std::vector<ValueId>& inputs,
                                                     WeightRewrite rewrite) {
  if (!active) {
    for (ValueId value : inputs) note_unread_weight_need(graph, value);
    return nullptr;
  }
  auto made = std::make_shared<DeferredRewrite>();
  made->rewrite = std::move(rewrite);
  for (ValueId value : inputs) {
    DeferredSource& source = made->inputs.emplace_back();
    if (value == kNoValue || !graph.value(value).initializer) continue;
    const Value& v = graph.value(value);
    if (v.initializer->has_data()) {
      source.held = *v.initializer;
    } else if (const auto found = active->find(v.name); found != active->end()) {
      source.rewritten = found->second;
    } else {
      source.file_weight = v.name;
    }
  }
  return made;
}

void record_deferred_weight(const Graph& graph, ValueId value,
                            std::shared_ptr<const DeferredRewrite> rewrite) {
  if (!active || !rewrite) throw Error("deferred weights: a rewrite recorded with none open");
  (*active)[graph.value(value).name] = std::move(rewrite);
}

}  // namespace cleave
