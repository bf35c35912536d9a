// `run-split`: a split folder's checks, then its partitioned graph and plan on the rank driver.
#include "pipeline/split_run.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "ir/text.h"
#include "pipeline/rank_run.h"
#include "pipeline/run_report.h"
#include "runtime/npy.h"
#include "runtime/random_inputs.h"
#include "spatial/manifest.h"
#include "spatial/submodel_export.h"
#include "support/error.h"

namespace cleave {

namespace {

// What the run reads (the folder's files, --input files, --model), so that no output replaces
// it.
std::vector<std::string> files_read(const SplitRunSettings& settings) {
  const std::filesystem::path folder(settings.folder);
  std::vector<std::string> files = {(folder / "manifest.json").string(),
                                    (folder / "partitioned.onnx").string(),
                                    (folder / "plan.json").string(), settings.model};
  for (const std::string& spec : settings.inputs) files.push_back(spec.substr(spec.find('=') + 1));
  return files;
}

// The checks before the partitioned graph is loaded: a split folder, its manifest well formed,
// for as many machines as ranks, made from --model.
SplitManifest checked_manifest(const SplitRunSettings& settings, int ranks) {
  SplitManifest manifest = read_manifest(split_folder_files(settings.folder).manifest);
  if (manifest.machines != ranks) {
    throw Error(
        fmt::format("{}: the split is for {} machines, but {} ranks were started (run it "
                    "with mpirun -np {})",
                    settings.folder, manifest.machines, ranks, manifest.machines));
  }
  if (!settings.model.empty()) require_split_of(manifest, settings.folder, settings.model);
  return manifest;
}

std::string region_text(const Box& region) {
  std::vector<std::string> parts;
  for (const auto& [begin, end] : region) parts.push_back(fmt::format("{}:{}", begin, end));
  return fmt::format("{}", fmt::join(parts, ","));
}

// The partitioned graph must be the split the manifest describes (the manifest is what --model
// was checked against): its inputs and outputs, and every value the manifest moves, of the
// manifest's type and holding the region it cuts.
void check_partitioned_graph(const Graph& graph, const SplitManifest& manifest,
                             const std::string& origin) {
  const auto disagree = [&](const std::string& what) {
    return Error(
        fmt::format("{}: {} (manifest.json and partitioned.onnx disagree; make the split again)",
                    origin, what));
  };
  const auto check_ends = [&](const std::vector<ValueId>& ids,
                              const std::vector<ManifestTensor>& listed, const char* kind) {
    for (const ManifestTensor& tensor : listed) {
      const std::optional<ValueId> id = graph.find_value(tensor.name);
      const bool listed_here = id && std::find(ids.begin(), ids.end(), *id) != ids.end();
      if (!listed_here)
        throw disagree(
            fmt::format("the manifest's {} '{}' is not one of the graph's", kind, tensor.name));
      const Value& value = graph.value(*id);
      if (value.dtype != tensor.dtype ||
          (value.shape.is_static() && value.shape.sizes() != tensor.shape)) {
        throw disagree(fmt::format("{} '{}' is {}, but the manifest's {}s say {}[{}]", kind,
                                   tensor.name, print_type(value.dtype, value.shape), kind,
                                   manifest_dtype_name(tensor.dtype),
                                   fmt::join(tensor.shape, ",")));
      }
    }
  };
  check_ends(graph.inputs(), manifest.inputs, "input");
  check_ends(graph.outputs(), manifest.outputs, "output");
  for (const auto& steps : manifest.steps) {
    for (const ManifestStep& send : steps) {
      if (send.kind != ManifestStep::Kind::kSend) continue;
      const std::optional<ValueId> id = graph.find_value(send.tensor);
      if (!id)
        throw disagree(fmt::format("the manifest sends '{}' (tag {}), which the graph lacks",
                                   send.tensor, send.tag));
      const Value& value = graph.value(*id);
      bool holds = value.shape.rank_known && value.shape.rank() == send.region.size();
      for (std::size_t d = 0; holds && d < send.region.size(); ++d) {
        const Dim& dim = value.shape.dims[d];
        holds = !dim.is_known() || send.region[d].end <= dim.size;
      }
      if (value.dtype != send.dtype || !holds) {
        throw disagree(
            fmt::format("'{}' is {}, but the manifest sends it (tag {}) as {} region [{}]",
                        send.tensor, print_type(value.dtype, value.shape), send.tag,
                        manifest_dtype_name(send.dtype), region_text(send.region)));
      }
    }
  }
}

// Rank 0's inputs of stream sample `sample`: --input files, checked against the split's inputs,
// and seeded random values for the others (the values `cleave run --seed` makes for the whole
// model's sample `sample`).
std::map<std::string, Tensor> split_inputs(const SplitRunSettings& settings,
                                           const SplitManifest& manifest, int sample) {
  std::map<std::string, Tensor> given;
  for (const auto& [name, file] : input_file_specs(settings.inputs)) given[name] = read_npy(file);
  std::map<std::string, Tensor> inputs;
  for (std::size_t index = 0; index < manifest.inputs.size(); ++index) {
    const ManifestTensor& input = manifest.inputs[index];
    auto found = given.find(input.name);
    if (found != given.end()) {
      if (found->second.dtype() != input.dtype || found->second.shape() != input.shape) {
        throw Error(fmt::format("--input {}: {} given, the split expects {}[{}]", input.name,
                                found->second.describe(), dtype_name(input.dtype),
                                fmt::join(input.shape, ",")));
      }
      inputs[input.name] = found->second;
      continue;
    }
    Value value;
    value.name = input.name;
    value.dtype = input.dtype;
    value.shape = Shape::of(input.shape);
    const uint64_t seed = settings.seed + static_cast<uint64_t>(sample);
    inputs[input.name] = random_tensor(value, seed * 1000003 + index);
  }
  return inputs;
}

// The report run-split has always printed, from the rank driver's.
nlohmann::json split_report(const SplitRunSettings& settings, const nlohmann::json& run) {
  nlohmann::json report;
  report["split"] = settings.folder;
  for (const char* key : {"ranks", "threads_per_rank", "threads_requested"}) report[key] = run[key];
  report["layouts"] = settings.layouts;
  report["latency_ms"] = run["latency_ms"];
  for (const char* key : {"samples", "throughput_samples_per_s", "sample_latency_ms"})
    report[key] = run[key];
  nlohmann::json ranks = nlohmann::json::array();
  for (const nlohmann::json& rank : run["per_rank"]) {
    nlohmann::json entry;
    for (const char* key :
         {"rank", "host", "bytes_sent", "bytes_received", "messages_sent", "messages_received",
          "peak_rss_bytes", "threads", "host_other_runnable"})
      entry[key] = rank[key];
    ranks.push_back(entry);
  }
  report["per_rank"] = ranks;
  report["outputs"] = run["outputs"];
  if (run.contains("trace_file")) report["trace_file"] = run["trace_file"];
  return report;
}

void print_split_report(const SplitRunSettings& settings, const nlohmann::json& report,
                        const std::string& threads_line) {
  RunReportText text;
  text.heading = fmt::format("split      {}\n", settings.folder);
  text.threads = fmt::format("{} rank(s) x {} thread(s)", report["ranks"].get<int>(),
                             report["threads_per_rank"].get<int>());
  if (!threads_line.empty()) text.before_plan.push_back(threads_line + "\n");
  text.before_plan.push_back(fmt::format(
      "stream     {} sample(s): {:.1f} samples/s, per-sample latency median {:.3f} ms\n",
      report["samples"].get<int>(), report["throughput_samples_per_s"].get<double>(),
      report["sample_latency_ms"]["median"].get<double>()));
  for (const auto& entry : report["per_rank"]) {
    text.before_plan.push_back(fmt::format(
        "rank {:<5} sent {:.2f} MiB in {} messages, peak RSS {:.1f} MiB\n",
        entry["rank"].get<int>(), entry["bytes_sent"].get<double>() / 1048576.0,
        entry["messages_sent"].get<double>(), entry["peak_rss_bytes"].get<double>() / 1048576.0));
  }
  fmt::print("{}", run_report_text(report, text));
}

}  // namespace

int run_split_on_ranks(const SplitRunSettings& settings) {
  const std::filesystem::path folder(settings.folder);
  RankRunSettings ranks;
  ranks.model = (folder / "partitioned.onnx").string();
  ranks.plan = (folder / "plan.json").string();
  // The graph plan.json was made for (write_split_folder, partitioned_load_options).
  const LoadOptions load = partitioned_load_options();
  ranks.optimize = load.optimize;
  ranks.fuse_exported_forms = load.fuse_exported_forms;
  ranks.layouts = settings.layouts;
  ranks.threads = settings.threads;
  ranks.fixed_threads = settings.fixed_threads;
  ranks.warmup = settings.warmup;
  ranks.repeat = settings.repeat;
  ranks.samples = settings.samples;
  ranks.output_dir = settings.output_dir;
  ranks.files_read = files_read(settings);
  ranks.trace_file = settings.trace_file;
  ranks.rank_timeout_seconds = settings.rank_timeout_seconds;
  // Set on every rank before the graph loads; rank 0 makes the inputs from it.
  auto manifest = std::make_shared<SplitManifest>();
  ranks.before_load = [&settings, manifest](int started) {
    *manifest = checked_manifest(settings, started);
  };
  ranks.loaded = [manifest, origin = ranks.model](const Graph& graph) {
    check_partitioned_graph(graph, *manifest, origin);
  };
  ranks.inputs = [&settings, manifest](const Graph&, int sample) {
    return split_inputs(settings, *manifest, sample);
  };
  const RankRunResult result = run_plan_on_ranks(ranks);
  if (!result.reported) return result.exit_code;
  const nlohmann::json report = split_report(settings, result.report);
  if (settings.json) {
    fmt::print("{}\n", report.dump(2));
  } else {
    print_split_report(settings, report, result.threads_line);
  }
  return 0;
}

}  // namespace cleave
