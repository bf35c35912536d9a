// Split folder contents: the sub-models, the partitioned model, its plan and the manifest.
#include "spatial/submodel_export.h"

#include "frontend/load.h"
#include "frontend/model_plan.h"
#include "onnx/atomic_file.h"
#include "onnx/extract.h"
#include "onnx/onnx_export.h"
#include "spatial/split_plan.h"

namespace cleave {

LoadOptions partitioned_load_options(const std::vector<std::string>& shapes) {
  LoadOptions load;
  load.shapes = parse_input_shapes(shapes);
  load.optimize = false;  // No pass may rewrite the nodes the plan places.
  load.fuse_exported_forms = true;
  return load;
}

void write_partitioned_graph(const PartitionedGraph& split, const std::string& onnx_path,
                             const std::string& plan_path) {
  export_onnx(split.graph, onnx_path);
  // The plan is made for the graph the runners load, so its fingerprint matches.
  Graph reloaded = load_model(onnx_path, partitioned_load_options());
  ModelPlan plan =
      split_plan(reloaded, split, static_costs(reloaded), cpu_machine(split.machines, 1));
  // `cleave run partitioned.onnx --no-optimize --plan plan.json` loads the file as above only
  // when the plan says so (plan_fuses_exported_forms).
  plan.plan.notes[kModelLoadNote] = kExportedFormsFused;
  write_model_plan(plan_path, plan, reloaded);
}

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
  write_partitioned_graph(result.partitioned, out.staging_path("partitioned.onnx"),
                          out.staging_path("plan.json"));
  out.write_file("manifest.json", manifest_to_json(manifest).dump(1) + "\n");
}

}  // namespace cleave
