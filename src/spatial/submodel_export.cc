// Split folder contents: the sub-models, the partitioned model, its plan and the manifest.
#include "spatial/submodel_export.h"

#include "frontend/load.h"
#include "frontend/model_plan.h"
#include "onnx/atomic_file.h"
#include "onnx/extract.h"
#include "onnx/onnx_export.h"
#include "spatial/split_plan.h"

namespace cleave {

void write_split_folder(const SplitResult& result, AtomicFolder& out, const std::string& model,
                        const std::string& fingerprint) {
  SplitManifest manifest = result.manifest;
  manifest.model = model;
  manifest.fingerprint = fingerprint;
  for (const auto& steps : manifest.steps)
    for (const ManifestStep& s : steps)
      if (s.kind == ManifestStep::Kind::kRun)
        write_model_file(extract_submodel(result.partitioned.graph, s.nodes),
                         out.staging_path(s.model));
  const std::string partitioned = out.staging_path("partitioned.onnx");
  export_onnx(result.partitioned.graph, partitioned);
  // The plan is made for the graph `cleave run partitioned.onnx --no-optimize` will load, so
  // its fingerprint matches.
  LoadOptions load;
  load.optimize = false;
  Graph reloaded = load_model(partitioned, load);
  write_model_plan(out.staging_path("plan.json"),
                   split_plan(reloaded, result.partitioned, static_costs(reloaded),
                              cpu_machine(result.partitioned.machines, 1)),
                   reloaded);
  out.write_file("manifest.json", manifest_to_json(manifest).dump(1) + "\n");
}

}  // namespace cleave
