// The single-process manifest interpreter (what an MPI rank does, all ranks in one loop).
#include "spatial/manifest_runner.h"

#include <memory>

#include "onnx/onnx_import.h"
#include "runtime/executor.h"
#include "spatial/region.h"

namespace cleave {

SubmodelLoader folder_loader(const std::string& folder) {
  return [folder](const std::string& model) {
    ImportOptions options;
    options.infer_shapes = false;
    return import_onnx(folder + "/" + model, options);
  };
}

std::map<std::string, Tensor> run_manifest(const SplitManifest& manifest,
                                           const SubmodelLoader& load,
                                           const std::map<std::string, Tensor>& inputs) {
  const int machines = manifest.machines;
  std::vector<std::map<std::string, Tensor>> env(machines);
  for (const ManifestTensor& t : manifest.inputs) {
    auto it = inputs.find(t.name);
    if (it == inputs.end()) throw Error("split run: missing model input '" + t.name + "'");
    for (auto& e : env) e[t.name] = it->second;
  }
  std::map<int, Tensor> mailbox;
  std::vector<std::size_t> pc(machines, 0);
  std::map<std::string, std::unique_ptr<Executor>> executors;
  auto where = [](int m, std::size_t k) {
    return "split run: machine " + std::to_string(m) + " step " + std::to_string(k);
  };
  for (bool progress = true; progress;) {
    progress = false;
    for (int m = 0; m < machines; ++m) {
      const auto& steps = manifest.steps[m];
      while (pc[m] < steps.size()) {
        const ManifestStep& s = steps[pc[m]];
        if (s.kind == ManifestStep::Kind::kRecv) {
          auto it = mailbox.find(s.tag);
          if (it == mailbox.end()) break;  // waits for the sender
          if (it->second.shape() != s.shape)
            throw Error(where(m, pc[m]) + ": received " + it->second.describe() + " for '" +
                        s.name + "'");
          env[m][s.name] = std::move(it->second);
          mailbox.erase(it);
        } else if (s.kind == ManifestStep::Kind::kSend) {
          auto it = env[m].find(s.tensor);
          if (it == env[m].end())
            throw Error(where(m, pc[m]) + ": sends '" + s.tensor + "', which it does not have");
          mailbox[s.tag] = copy_region(it->second, s.region, where(m, pc[m]));
        } else {
          auto& executor = executors[s.model];
          if (!executor) executor = std::make_unique<Executor>(load(s.model));
          std::map<std::string, Tensor> feed;
          for (const std::string& name : s.inputs) {
            auto it = env[m].find(name);
            if (it == env[m].end())
              throw Error(where(m, pc[m]) + ": " + s.model + " reads '" + name +
                          "', which the machine does not have");
            feed[name] = it->second;
          }
          std::vector<Tensor> results = executor->run(feed);
          const Graph& sub = executor->graph();
          for (std::size_t k = 0; k < results.size(); ++k)
            env[m][sub.value(sub.outputs()[k]).name] = std::move(results[k]);
        }
        ++pc[m];
        progress = true;
      }
    }
  }
  for (int m = 0; m < machines; ++m)
    if (pc[m] < manifest.steps[m].size())
      throw Error(where(m, pc[m]) + ": waits for a transfer that never comes (deadlock)");
  std::map<std::string, Tensor> outputs;
  for (const ManifestTensor& t : manifest.outputs) {
    auto it = env[0].find(t.name);
    if (it == env[0].end()) throw Error("split run: machine 0 lacks output '" + t.name + "'");
    outputs[t.name] = it->second;
  }
  return outputs;
}

}  // namespace cleave
