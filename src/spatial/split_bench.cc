// Loads a split folder's partitioned graph and Plan for `cleave bench --split`, checked.
#include "spatial/split_bench.h"

#include <cmath>
#include <limits>

#include "frontend/load.h"
#include "spatial/manifest.h"
#include "spatial/submodel_export.h"

namespace cleave {

BenchedSplit load_benched_split(const std::string& dir, const std::string& model,
                                const std::vector<std::string>& shapes, bool cores_on_this_host) {
  const SplitFolderFiles files = split_folder_files(dir);
  SplitManifest manifest = read_manifest(files.manifest);
  require_split_of(manifest, dir, model);
  BenchedSplit out;
  // The graph plan.json was made for.
  out.graph = load_model(files.partitioned, partitioned_load_options(shapes));
  out.plan = read_model_plan(files.plan, out.graph, cores_on_this_host);
  out.machines = static_cast<int>(manifest.steps.size());
  return out;
}

double max_abs_difference(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return std::numeric_limits<double>::infinity();
  double worst = 0;
  for (std::size_t k = 0; k < a.size(); ++k) {
    if (a[k].shape() != b[k].shape()) return std::numeric_limits<double>::infinity();
    auto x = a[k].to_double_vector(), y = b[k].to_double_vector();
    for (std::size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::abs(x[i] - y[i]));
  }
  return worst;
}

}  // namespace cleave
