// Split manifests: parsing, path confinement to the folder, and consistency of the transfers.
#include "distributed/split_manifest.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

namespace cleave {

namespace fs = std::filesystem;

namespace {

// A sub-model path must name a file inside the folder: no absolute path, nothing that climbs
// out of it (also through a symbolic link).
std::string confined_path(const std::string& folder, const std::string& relative,
                          const std::string& where) {
  fs::path path(relative);
  if (relative.empty() || path.is_absolute()) {
    throw Error(
        fmt::format("{}: model '{}' must be a path relative to the split folder", where, relative));
  }
  fs::path root = fs::weakly_canonical(fs::path(folder));
  fs::path full = fs::weakly_canonical(root / path);
  auto [root_end, full_it] = std::mismatch(root.begin(), root.end(), full.begin(), full.end());
  if (root_end != root.end() || full == root) {
    throw Error(
        fmt::format("{}: model '{}' lies outside the split folder {}", where, relative, folder));
  }
  return full.string();
}

}  // namespace

RankSplitManifest read_split_manifest(const std::string& folder) {
  const std::string file = (fs::path(folder) / "manifest.json").string();
  // Every field and every transfer is checked by the one manifest reader; here the sub-model
  // paths are confined to the folder and the steps take the ranks' form.
  const SplitManifest read = read_manifest(file);
  RankSplitManifest manifest;
  manifest.folder = folder;
  manifest.model = read.model;
  manifest.fingerprint = read.fingerprint;
  manifest.machines = read.machines;
  for (const ManifestTensor& t : read.inputs) manifest.inputs.push_back({t.name, t.dtype, t.shape});
  for (const ManifestTensor& t : read.outputs)
    manifest.outputs.push_back({t.name, t.dtype, t.shape});
  for (int m = 0; m < read.machines; ++m) {
    std::vector<SplitStep>& steps = manifest.steps.emplace_back();
    for (std::size_t i = 0; i < read.steps[m].size(); ++i) {
      const ManifestStep& s = read.steps[m][i];
      SplitStep step;
      if (s.kind == ManifestStep::Kind::kRun) {
        step.kind = SplitStep::Kind::kRun;
        step.model = confined_path(folder, s.model, fmt::format("{}: steps[{}][{}]", file, m, i));
        step.inputs = s.inputs;
        step.outputs = s.outputs;
      } else {
        step.kind =
            s.kind == ManifestStep::Kind::kSend ? SplitStep::Kind::kSend : SplitStep::Kind::kRecv;
        step.peer = s.peer;
        step.tensor = s.tensor;
        for (const Interval& interval : s.region)
          step.region.emplace_back(interval.begin, interval.end);
        step.name = s.name;
        step.dtype = s.dtype;
        step.shape = s.shape;
        step.bytes = s.bytes;
        step.tag = s.tag;
      }
      steps.push_back(std::move(step));
    }
  }
  return manifest;
}

}  // namespace cleave
