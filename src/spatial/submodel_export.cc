// Split folder writer: temporary sibling folder, every file written, then one rename.
#include "spatial/submodel_export.h"

#include <filesystem>
#include <random>

#include "onnx/atomic_file.h"
#include "onnx/extract.h"
#include "onnx/onnx_export.h"
#include "pipeline/load.h"
#include "pipeline/model_plan.h"
#include "spatial/split_plan.h"

namespace cleave {

void write_split_folder(const SplitResult& result, const std::string& dir, const std::string& model,
                        const std::string& fingerprint) {
  namespace fs = std::filesystem;
  const fs::path target = fs::absolute(fs::path(dir)).lexically_normal();
  const fs::path parent = target.parent_path();
  std::error_code ec;
  if (!fs::is_directory(parent, ec))
    throw Error(dir + ": the parent folder " + parent.string() + " does not exist");
  if (fs::exists(target, ec) && !fs::is_directory(target, ec))
    throw Error(dir + ": exists and is not a folder");
  std::random_device rd;
  const std::string suffix = std::to_string(rd());
  const fs::path tmp = parent / ("." + target.filename().string() + ".tmp-" + suffix);
  try {
    fs::create_directory(tmp);
    SplitManifest manifest = result.manifest;
    manifest.model = model;
    manifest.fingerprint = fingerprint;
    for (const auto& steps : manifest.steps)
      for (const ManifestStep& s : steps)
        if (s.kind == ManifestStep::Kind::kRun)
          write_model_file(extract_submodel(result.partitioned.graph, s.nodes),
                           (tmp / s.model).string());
    export_onnx(result.partitioned.graph, (tmp / "partitioned.onnx").string());
    // The plan is made for the graph `cleave run partitioned.onnx --no-optimize` will load, so
    // its fingerprint matches.
    LoadOptions load;
    load.optimize = false;
    Graph reloaded = load_model((tmp / "partitioned.onnx").string(), load);
    write_model_plan((tmp / "plan.json").string(),
                     split_plan(reloaded, result.partitioned, static_costs(reloaded),
                                cpu_machine(result.partitioned.machines, 1)),
                     reloaded);
    write_file_atomically((tmp / "manifest.json").string(),
                          manifest_to_json(manifest).dump(1) + "\n");
    const fs::path old = parent / ("." + target.filename().string() + ".old-" + suffix);
    const bool replace = fs::exists(target);
    if (replace) fs::rename(target, old);
    fs::rename(tmp, target);
    if (replace) fs::remove_all(old, ec);
  } catch (const fs::filesystem_error& e) {
    fs::remove_all(tmp, ec);
    throw Error(dir + ": cannot write the split folder: " + e.what());
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
}

}  // namespace cleave
