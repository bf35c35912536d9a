// The naive partitioner: even or speed-proportional output splits, checked by the region rules.
#include "spatial/naive_partition.h"

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>

#include "spatial/region_rules.h"
#include "support/json_file.h"

namespace cleave {

std::optional<SplitDim> parse_split_dim(std::string_view text) {
  if (text == "h") return SplitDim::kH;
  if (text == "w") return SplitDim::kW;
  if (text == "c") return SplitDim::kC;
  if (text == "hw") return SplitDim::kHW;
  if (text == "none") return SplitDim::kNone;
  return std::nullopt;
}

std::string_view split_dim_name(SplitDim dim) {
  switch (dim) {
    case SplitDim::kH:
      return "h";
    case SplitDim::kW:
      return "w";
    case SplitDim::kC:
      return "c";
    case SplitDim::kHW:
      return "hw";
    case SplitDim::kNone:
      return "none";
  }
  return "?";
}

std::vector<Interval> split_extent(int64_t length, const std::vector<double>& shares,
                                   int64_t granularity) {
  const std::size_t n = shares.size();
  const int64_t g = std::max<int64_t>(1, granularity);
  const int64_t units = (length + g - 1) / g;
  const double total = std::accumulate(shares.begin(), shares.end(), 0.0);
  std::vector<int64_t> count(n);
  int64_t given = 0;
  for (std::size_t i = 0; i < n; ++i) {
    count[i] = static_cast<int64_t>(std::floor(static_cast<double>(units) * shares[i] / total));
    given += count[i];
  }
  for (std::size_t i = 0; given < units; i = (i + 1) % n, ++given) ++count[i];
  std::vector<Interval> out;
  int64_t at = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const int64_t end = std::min(length, (at + count[i]) * g);
    out.push_back({std::min(length, at * g), end});
    at += count[i];
  }
  return out;
}

std::pair<int, int> grid_shape(int machines) {
  int cols = 1;
  for (int c = 1; c * c <= machines; ++c)
    if (machines % c == 0) cols = c;
  return {machines / cols, cols};
}

void validate_layer_configs(const Graph& graph, const SplitOptions& options) {
  for (const auto& [name, config] : options.layers) {
    if (!graph.find_node(name))
      throw Error("layer config: no node named \"" + name + "\" in the model");
    if (!config.shares.empty()) {
      if (static_cast<int>(config.shares.size()) != options.machines)
        throw Error("layer config: \"" + name + "\".shares: expected " +
                    std::to_string(options.machines) + " shares (one per machine), got " +
                    std::to_string(config.shares.size()));
      for (double s : config.shares)
        if (!(s > 0) || !std::isfinite(s))
          throw Error("layer config: \"" + name + "\".shares: expected positive numbers");
    }
  }
}

std::map<std::string, LayerConfig> read_layer_configs(const std::string& path) {
  const nlohmann::json json = read_json_file(path, "layer configuration");
  if (!json.is_object() || !json.contains("layers") || !json["layers"].is_object())
    throw Error(path + ": expected an object with a \"layers\" object");
  for (const auto& [key, _] : json.items())
    if (key != "layers") throw Error(path + ": unknown field \"" + key + "\"");
  std::map<std::string, LayerConfig> layers;
  for (const auto& [name, entry] : json["layers"].items()) {
    const std::string where = path + ": layers.\"" + name + "\"";
    if (!entry.is_object()) throw Error(where + ": expected an object");
    LayerConfig config;
    for (const auto& [key, value] : entry.items()) {
      if (key == "dim") {
        auto dim = value.is_string() ? parse_split_dim(value.get<std::string>()) : std::nullopt;
        if (!dim) throw Error(where + ".dim: expected \"h\", \"w\", \"c\", \"hw\" or \"none\"");
        config.dim = dim;
      } else if (key == "shares") {
        if (!value.is_array() || value.empty())
          throw Error(where + ".shares: expected a non-empty array of positive numbers");
        for (const auto& s : value) {
          if (!s.is_number() || !(s.get<double>() > 0))
            throw Error(where + ".shares: expected positive numbers, got " + s.dump());
          config.shares.push_back(s.get<double>());
        }
      } else {
        throw Error(where + ": unknown field \"" + key + "\" (expected dim, shares)");
      }
    }
    layers[name] = config;
  }
  return layers;
}

namespace {

LayerSplit gathered(int machines, const std::vector<int64_t>& sizes, std::string reason) {
  LayerSplit s;
  s.gathered = true;
  s.reason = std::move(reason);
  s.owned.assign(machines, Box(sizes.size(), Interval{0, 0}));
  s.owned[0] = full_box(sizes);
  return s;
}

}  // namespace

Partition naive_partition(const Graph& graph, const SplitOptions& options) {
  if (options.machines < 1) throw Error("split: expected at least one machine");
  validate_layer_configs(graph, options);
  std::vector<double> speeds = options.speeds;
  if (speeds.empty()) speeds.assign(options.machines, 1.0);
  if (static_cast<int>(speeds.size()) != options.machines)
    throw Error("split: expected one speed per machine");
  Partition p;
  p.machines = options.machines;
  p.layers.resize(graph.node_capacity());
  for (NodeId id : graph.topological_order()) {
    const Node& n = graph.node(id);
    auto os = static_sizes(graph, n.outputs.at(0));
    std::vector<int64_t> sizes = os ? *os : std::vector<int64_t>{};
    SplitDim dim = options.dim;
    std::vector<double> shares = speeds;
    auto config = options.layers.find(n.name);
    if (config != options.layers.end()) {
      if (config->second.dim) dim = *config->second.dim;
      if (!config->second.shares.empty()) shares = config->second.shares;
    }
    bool all_known = os.has_value();
    for (ValueId v : n.outputs) all_known = all_known && static_sizes(graph, v).has_value();
    if (!all_known) {
      p.layers[id] = gathered(p.machines, sizes, "output shape not known");
      continue;
    }
    if (p.machines == 1 || dim == SplitDim::kNone) {
      p.layers[id] =
          gathered(p.machines, sizes, p.machines == 1 ? "one machine" : "configured none");
      continue;
    }
    std::vector<int> axes;
    if (sizes.size() == 4) {
      axes = dim == SplitDim::kH   ? std::vector<int>{2}
             : dim == SplitDim::kW ? std::vector<int>{3}
             : dim == SplitDim::kC ? std::vector<int>{1}
                                   : std::vector<int>{2, 3};
    } else if (sizes.size() == 2) {
      axes = {1};  // features of a matrix (Gemm, MatMul and what follows them)
    } else {
      p.layers[id] = gathered(p.machines, sizes,
                              "rank-" + std::to_string(sizes.size()) + " output is not split");
      continue;
    }
    LayerSplit split;
    split.axes = axes;
    split.owned.assign(p.machines, full_box(sizes));
    if (axes.size() == 1) {
      auto parts = split_extent(sizes[axes[0]], shares, split_granularity(graph, id, axes[0]));
      for (int m = 0; m < p.machines; ++m) split.owned[m][axes[0]] = parts[m];
    } else {
      // Tiles are a product of row and column intervals, so a machine's area can only follow
      // its speed when the speeds do (rows x columns); the row and column sums of the speeds
      // give each row its height and each column its width, exact in that case.
      auto [rows, cols] = grid_shape(p.machines);
      std::vector<double> row_share(rows, 0.0), col_share(cols, 0.0);
      for (int m = 0; m < p.machines; ++m) {
        const double share = shares.empty() ? 1.0 : shares[m];
        row_share[m / cols] += share;
        col_share[m % cols] += share;
      }
      auto hs = split_extent(sizes[2], row_share, split_granularity(graph, id, 2));
      auto ws = split_extent(sizes[3], col_share, split_granularity(graph, id, 3));
      for (int m = 0; m < p.machines; ++m) {
        split.owned[m][2] = hs[m / cols];
        split.owned[m][3] = ws[m % cols];
      }
    }
    int busy = 0;
    std::string why;
    for (int m = 0; m < p.machines && why.empty(); ++m) {
      if (box_empty(split.owned[m])) continue;
      ++busy;
      RegionMap r = map_region(graph, id, split.owned[m]);
      if (!r.ok) why = r.reason;
    }
    if (why.empty() && busy < 2) why = "output too small to split along the requested axis";
    if (!why.empty() && (n.op_type == "GlobalAveragePool" || n.op_type == "GlobalMaxPool") &&
        axes != std::vector<int>{1})
      why =
          "global pooling along H/W: each machine pools the part of the input it owns and "
          "machine 0 joins the partials (the input is gathered only where it is not split)";
    p.layers[id] = why.empty() ? split : gathered(p.machines, sizes, why);
  }
  return p;
}

}  // namespace cleave
