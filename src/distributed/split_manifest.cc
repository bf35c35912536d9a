// A split folder's manifest for the ranks: the one reader, then sub-model paths confined.
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

SplitManifest read_split_manifest(const std::string& folder) {
  const std::string file = (fs::path(folder) / "manifest.json").string();
  // Every field and every transfer is checked by the one manifest reader; what the ranks add is
  // that a sub-model cannot be read from outside the folder.
  SplitManifest manifest = read_manifest(file);
  for (int m = 0; m < manifest.machines; ++m) {
    for (std::size_t i = 0; i < manifest.steps[m].size(); ++i) {
      ManifestStep& step = manifest.steps[m][i];
      if (step.kind != ManifestStep::Kind::kRun) continue;
      step.model = confined_path(folder, step.model, fmt::format("{}: steps[{}][{}]", file, m, i));
    }
  }
  return manifest;
}

}  // namespace cleave
