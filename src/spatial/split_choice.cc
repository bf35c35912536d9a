// The split `cleave split` keeps: each split dim tried, the seconds search checked against the
// terms one, machines' memory respected; and the report of the split kept.
#include "spatial/split_choice.h"

#include <fmt/core.h>

#include "spatial/memory_fit.h"

namespace cleave {

SplitChoice choose_split(const Graph& graph, SplitModelOptions& options,
                         const std::vector<SplitDim>& dims, bool search, SearchObjective objective,
                         const CostTable* costs, const Machine* machine) {
  const auto user_layers = options.split.layers;
  options.costs = costs;
  SplitChoice choice;
  std::optional<SplitResult>& best = choice.best;
  for (SplitDim dim : dims) {
    options.split.dim = dim;
    if (search)
      options.split.layers =
          searched_layer_configs(graph, options, user_layers, 10, objective, costs);
    SplitResult r = split_model(graph, options);
    SplitOptions made_with = options.split;
    ++choice.splits_built;
    if (objective == SearchObjective::kSeconds) {
      // The chain DP prices each layer's compute and what it receives; the split's list
      // schedule (fusion, joins, every op) is the final judge. The terms objective's shares
      // are split too and kept when predicted faster, so the seconds search is never worse
      // than terms on the same machine file; the report says which was kept.
      SplitModelOptions terms = options;
      terms.split.layers = searched_layer_configs(graph, options, user_layers, 10);
      SplitResult t = split_model(graph, terms);
      ++choice.splits_built;
      const double chain_s = r.report.optimized.predicted_seconds;
      const double terms_s = t.report.optimized.predicted_seconds;
      choice.searches.push_back({{"dim", std::string(split_dim_name(dim))},
                                 {"chain_predicted_seconds", chain_s},
                                 {"terms_predicted_seconds", terms_s},
                                 {"kept", terms_s < chain_s ? "terms" : "chain"}});
      if (terms_s < chain_s) {
        r = std::move(t);
        made_with = terms.split;
      }
    }
    choice.tried.emplace_back(std::string(split_dim_name(dim)),
                              r.report.optimized.predicted_seconds);
    // The machine file's memory_bytes bounds each machine's weights (C splits slice them).
    choice.over_memory.push_back(
        machine ? weights_over_memory(r.report.optimized.weight_bytes, *machine) : "");
    if (!choice.over_memory.back().empty()) continue;
    if (!best || r.report.optimized.predicted_seconds < best->report.optimized.predicted_seconds) {
      best = std::move(r);
      choice.best_split = std::move(made_with);
    }
  }
  return choice;
}

std::string split_choice_text(const SplitChoice& choice, const std::string& output) {
  const SplitResult& best = *choice.best;
  std::string out;
  for (const std::string& line : best.report.log) out += fmt::format("{}\n", line);
  for (const auto& c : choice.searches)
    out += fmt::format(
        "seconds search ({}): chain optimum predicted {:.3f} ms, terms optimum {:.3f} ms; "
        "kept {}\n",
        c["dim"].get<std::string>(), c["chain_predicted_seconds"].get<double>() * 1e3,
        c["terms_predicted_seconds"].get<double>() * 1e3, c["kept"].get<std::string>());
  const SplitStats& n = best.report.naive;
  const SplitStats& s = best.report.optimized;
  out += fmt::format(
      "bytes transferred: naive {} -> optimised {} ({:.2f}x fewer); transfers {} -> {}\n",
      n.transfer_bytes, s.transfer_bytes,
      s.transfer_bytes ? double(n.transfer_bytes) / double(s.transfer_bytes) : 0.0, n.transfers,
      s.transfers);
  out += fmt::format("sync points: naive {} -> optimised {}; redundant output elements {}\n",
                     n.sync_points, s.sync_points, s.redundant_elements);
  for (std::size_t m = 0; m < s.weight_bytes.size(); ++m)
    out += fmt::format("machine {}: weights {} bytes, peak activations {} bytes\n", m,
                       s.weight_bytes[m], s.peak_activation_bytes[m]);
  out += fmt::format("whole model: {} bytes; predicted {:.3f} ms split vs {:.3f} ms whole\n",
                     best.report.whole_model_peak_bytes, s.predicted_seconds * 1e3,
                     best.report.whole_model_seconds * 1e3);
  for (const GatherNote& g : best.report.gathers)
    out += fmt::format("gathered on machine 0: {}: {}\n", g.node, g.reason);
  out += fmt::format("wrote {}\n", output);
  return out;
}

}  // namespace cleave
