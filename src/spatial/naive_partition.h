// The naive partitioner (thesis §3.3): every layer's output split across machines, last layer
// first.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "spatial/shape_map.h"

namespace cleave {

/// The direction a layer's output is split in.
enum class SplitDim { kH, kW, kC, kHW, kNone };

/// "h", "w", "c", "hw", "none"; nullopt for anything else.
std::optional<SplitDim> parse_split_dim(std::string_view text);
std::string_view split_dim_name(SplitDim dim);

/// One layer's entry of a configuration file: its direction and per-machine shares.
struct LayerConfig {
  std::optional<SplitDim> dim;
  std::vector<double> shares;  ///< Empty: the default shares.
};

struct SplitOptions {
  int machines = 2;
  SplitDim dim = SplitDim::kH;
  /// Relative machine speeds: each machine's share of a split layer. Empty: equal shares.
  std::vector<double> speeds;
  /// Per node name, overrides of the default (validated by validate_layer_configs).
  std::map<std::string, LayerConfig> layers;
};

/// How one node's output is divided.
struct LayerSplit {
  std::vector<int> axes;   ///< Axes of output 0 that are split; empty when gathered.
  bool gathered = false;   ///< Computed whole on machine 0: a synchronisation point.
  std::string reason;      ///< Why it is gathered.
  std::vector<Box> owned;  ///< Per machine, the part of output 0 it owns (a partition).
};

/// Per NodeId (tombstones and unsplit nodes hold nullopt only when removed).
struct Partition {
  int machines = 1;
  std::vector<std::optional<LayerSplit>> layers;
};

/// Eq. 3.1 generalised: `length` indices divided in proportion to `shares` (floors, then the
/// remainder one at a time round-robin from machine 0), in whole units of `granularity`.
std::vector<Interval> split_extent(int64_t length, const std::vector<double>& shares,
                                   int64_t granularity = 1);
/// Rows and columns of the H×W grid for n machines (rows >= columns, as square as possible).
std::pair<int, int> grid_shape(int machines);

/// Checks a configuration against the graph: every layer name exists and every share list has
/// one positive entry per machine. Throws Error naming the layer.
void validate_layer_configs(const Graph& graph, const SplitOptions& options);
/// Reads a per-layer configuration file ({"layers": {"name": {"dim": "h", "shares": [..]}}});
/// shares are checked with require_shares (support/limits.h). Errors name the file and field.
std::map<std::string, LayerConfig> read_layer_configs(const std::string& path);
/// `--speeds` text: exactly `machines` comma-separated numbers (no empty item) that pass
/// require_shares (support/limits.h).
std::vector<double> parse_speeds(const std::string& text, int machines);

/// Splits every node's output along the requested direction (Eq. 3.1), checking with the
/// region rules that each slice can be computed; a node that cannot is gathered on machine 0,
/// with the reason. Needs static shapes; a node whose shapes are unknown is gathered.
Partition naive_partition(const Graph& graph, const SplitOptions& options);

}  // namespace cleave
