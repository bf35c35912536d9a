// The command line of a generated C++ program: `cleave run`'s options over a StaticProgram.
#include <fmt/core.h>
#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "codegen_runtime/program_args.h"
#include "codegen_runtime/program_main.h"
#include "ir/text.h"
#include "runtime/npy.h"
#include "runtime/random_inputs.h"
#include "runtime/wait_policy.h"
#include "support/atomic_output.h"
#include "support/timing.h"

namespace cleave {

ProgramMainOptions parse_program_options(int argc, char** argv, bool ranks, bool& help) {
  ProgramMainOptions options;
  std::vector<std::string> input_specs;
  ProgramArgs args(argc, argv);
  while (args.next()) {
    const std::string& arg = args.option();
    if (args.is_help()) {
      help = true;
    } else if (arg == "--input") {
      input_specs.push_back(args.value());
    } else if (arg == "--output-dir") {
      options.output_dir = args.value();
    } else if (arg == "--weights") {
      options.weights = args.value();
    } else if (arg == "--warmup") {
      options.warmup = static_cast<int>(args.integer(0));
    } else if (arg == "--repeat") {
      options.repeat = static_cast<int>(args.integer(1));
    } else if (arg == "--seed") {
      options.seed = static_cast<uint64_t>(args.integer(0));
    } else if (arg == "--json") {
      options.json = true;
    } else if (!ranks && arg == "--fixed-threads") {
      options.fixed_threads = true;
    } else if (ranks && arg == "--rank-timeout") {
      options.rank_timeout = args.seconds();
    } else {
      args.unknown();
    }
  }
  options.inputs = input_file_specs(input_specs);
  return options;
}

std::string program_usage(const std::string& name, bool ranks) {
  return fmt::format(
      "usage: {}{} [--input NAME=F.npy]... [--output-dir D] [--warmup N] [--repeat R]\n"
      "          [--seed S] [--json] [--weights FILE]{}\n"
      "Runs the generated model once per --repeat (after --warmup untimed runs) and prints its\n"
      "latency. Inputs not given are seeded random values, the same as `cleave run --seed S`.\n"
      "--weights defaults to the weights file next to the executable.{}\n",
      ranks ? "mpirun -np N " : "", name,
      ranks ? " [--rank-timeout S]"
            : " [--fixed-threads]\n"
              "Each worker runs with fewer intra-op threads than the plan's while other processes\n"
              "hold the cores; --fixed-threads (or CLEAVE_FIXED_THREADS set) keeps the plan's.",
      ranks ? "\nEvery rank runs its part of the plan; rank 0 reads the inputs, gathers the\n"
              "outputs and reports. --rank-timeout (default 60 s) bounds each wait for a peer."
            : "");
}

std::size_t process_peak_rss_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<std::size_t>(usage.ru_maxrss) * 1024;
}

std::vector<Tensor> program_inputs(const StaticProgramTables& tables,
                                   const ProgramMainOptions& options) {
  const Graph graph = parse_graph(tables.graph_text);
  std::map<std::string, Tensor> random = random_inputs(graph, options.seed);
  std::vector<Tensor> inputs;
  for (int i = 0; i < tables.graph_input_count; ++i) {
    const StaticValue& value = tables.values[tables.graph_inputs[i]];
    const std::vector<int64_t> dims(value.dims, value.dims + value.rank);
    auto given = options.inputs.find(value.name);
    Tensor tensor = given == options.inputs.end() ? random.at(value.name) : read_npy(given->second);
    if (static_cast<int>(tensor.dtype()) != value.dtype || tensor.shape() != dims) {
      throw Error(fmt::format("input '{}': expected {}[{}], got {}", value.name,
                              dtype_name(static_cast<DataType>(value.dtype)), fmt::join(dims, ","),
                              tensor.describe()));
    }
    inputs.push_back(std::move(tensor));
  }
  for (const auto& [name, file] : options.inputs) {
    bool known = false;
    for (int i = 0; i < tables.graph_input_count; ++i)
      known = known || name == tables.values[tables.graph_inputs[i]].name;
    if (!known) throw Error(fmt::format("'{}' is not an input of the model", name));
  }
  return inputs;
}

std::vector<Tensor> program_output_buffers(const StaticProgramTables& tables) {
  std::vector<Tensor> outputs;
  for (int i = 0; i < tables.graph_output_count; ++i) {
    const StaticValue& value = tables.values[tables.graph_outputs[i]];
    outputs.push_back(Tensor::allocate(static_cast<DataType>(value.dtype),
                                       std::vector<int64_t>(value.dims, value.dims + value.rank)));
  }
  return outputs;
}

int report_program_run(const StaticProgramTables& tables, const ProgramMainOptions& options,
                       const std::vector<Tensor>& outputs, const std::vector<double>& latencies,
                       std::size_t baseline_rss, const nlohmann::json& extra,
                       const std::vector<std::vector<Tensor>>& sample_outputs) {
  nlohmann::json report;
  report["model"] = tables.model_name;
  report["latency_ms"] = {{"min", *std::min_element(latencies.begin(), latencies.end())},
                          {"median", median_of(latencies)},
                          {"runs", latencies}};
  report["workers"] = tables.workers;
  report["threads_per_worker"] = tables.threads_per_worker;
  report["arena_bytes"] = tables.arena_bytes;
  report["peak_rss_bytes"] = process_peak_rss_bytes();
  report["baseline_rss_bytes"] = baseline_rss;
  // As `cleave run --output-dir`: the files join the folder whole or not at all.
  std::optional<AtomicFolder> folder;
  if (!options.output_dir.empty())
    folder.emplace(options.output_dir, FolderRules{FolderRules::Existing::kMerge, {}});
  nlohmann::json output_list = nlohmann::json::array();
  for (int i = 0; i < tables.graph_output_count; ++i) {
    const std::string name = tables.values[tables.graph_outputs[i]].name;
    nlohmann::json entry = {{"name", name}, {"type", outputs[i].describe()}};
    if (folder) {
      const std::string file_name = file_name_for(name) + ".npy";
      write_npy(folder->staging_path(file_name), outputs[i]);
      entry["file"] = (std::filesystem::path(options.output_dir) / file_name).string();
    }
    output_list.push_back(entry);
  }
  const bool stream = sample_outputs.size() > 1;
  for (std::size_t sample = 0; folder && stream && sample < sample_outputs.size(); ++sample) {
    for (int i = 0; i < tables.graph_output_count; ++i) {
      const std::string name = tables.values[tables.graph_outputs[i]].name;
      write_npy(folder->staging_path(fmt::format("sample_{}/{}.npy", sample, file_name_for(name))),
                sample_outputs[sample][static_cast<std::size_t>(i)]);
    }
  }
  if (folder) folder->commit();
  report["outputs"] = output_list;
  if (stream) {
    report["samples"] = sample_outputs.size();
    report["throughput_samples_per_s"] =
        static_cast<double>(sample_outputs.size()) / (median_of(latencies) / 1e3);
  }
  report.update(extra);
  if (options.json) {
    fmt::print("{}\n", report.dump(2));
    return 0;
  }
  fmt::print("model      {}\n", tables.model_name);
  fmt::print(
      "latency    min {:.3f} ms, median {:.3f} ms over {} run(s), {} {}(s) x {} "
      "thread(s)\n",
      report["latency_ms"]["min"].get<double>(), report["latency_ms"]["median"].get<double>(),
      options.repeat, tables.workers, extra.contains("ranks") ? "rank" : "worker",
      tables.threads_per_worker);
  const int folded_onto =
      extra.contains("threads") ? extra["threads"].get<int>() : std::max(1, tables.workers);
  if (extra.contains("ran_threads_per_worker") &&
      (extra["ran_threads_per_worker"].get<int>() != tables.threads_per_worker ||
       folded_onto < tables.workers)) {
    fmt::print(
        "threads    ran with {} per worker{}: {} other runnable thread(s) on {} core(s) "
        "(--fixed-threads keeps the plan's)\n",
        extra["ran_threads_per_worker"].get<int>(),
        folded_onto < tables.workers
            ? fmt::format(", the {} workers folded onto {} core(s)", tables.workers, folded_onto)
            : "",
        extra["host_load"]["other_runnable"].get<int>(), extra["host_load"]["cores"].get<int>());
  }
  if (stream) {
    fmt::print(
        "stream     {} sample(s) a run: {:.1f} samples/s{}{}\n", sample_outputs.size(),
        report["throughput_samples_per_s"].get<double>(),
        extra.contains("sample_latency_ms")
            ? fmt::format(", per-sample latency median {:.3f} ms",
                          extra["sample_latency_ms"]["median"].get<double>())
            : "",
        folder ? fmt::format(", each sample's outputs in {}/sample_K", options.output_dir) : "");
  }
  fmt::print("memory     arena {:.2f} MiB, process peak RSS {:.1f} MiB\n",
             tables.arena_bytes / 1048576.0, process_peak_rss_bytes() / 1048576.0);
  for (const auto& entry : output_list) {
    fmt::print("output     {} {}{}\n", entry["name"].get<std::string>(),
               entry["type"].get<std::string>(),
               entry.contains("file") ? " -> " + entry["file"].get<std::string>() : "");
  }
  return 0;
}

nlohmann::json sample_latency_json(const std::vector<double>& seconds) {
  std::vector<double> ms;
  for (double value : seconds) ms.push_back(value * 1e3);
  return {{"median", ms.empty() ? 0.0 : median_of(ms)},
          {"max", ms.empty() ? 0.0 : *std::max_element(ms.begin(), ms.end())},
          {"per_sample", ms}};
}

PlanThreads program_threads(const StaticProgramTables& tables, bool fixed, const HostLoad& load) {
  if (fixed) return {std::max(1, tables.workers), std::max(1, tables.threads_per_worker)};
  return plan_threads_for(tables.workers, tables.threads_per_worker, load);
}

namespace {

int run_main(const StaticProgramTables& tables, const ProgramMainOptions& options) {
  const std::size_t baseline_rss = process_peak_rss_bytes();
  StaticProgram program(tables,
                        options.weights.empty() ? default_weights_path(tables) : options.weights);
  const std::vector<Tensor> inputs = program_inputs(tables, options);
  std::vector<const void*> input_pointers;
  for (const Tensor& input : inputs) input_pointers.push_back(input.raw());
  std::vector<Tensor> outputs = program_output_buffers(tables);
  std::vector<void*> output_pointers;
  for (int i = 0; i < tables.graph_output_count; ++i) {
    // An output shaped at run time is read from the program after the run.
    const bool run_time = tables.values[tables.graph_outputs[i]].kind == StaticValue::kRunTime;
    output_pointers.push_back(run_time ? nullptr : outputs[i].raw());
  }
  nlohmann::json extra = nlohmann::json::object();
  const std::vector<double> latencies = time_program_runs(
      program, tables, options, input_pointers.data(), output_pointers.data(), extra);
  for (int i = 0; i < tables.graph_output_count; ++i)
    if (!output_pointers[i]) outputs[i] = program.output(i);
  return report_program_run(tables, options, outputs, latencies, baseline_rss, extra);
}

}  // namespace

std::string default_weights_path(const StaticProgramTables& tables) {
  std::error_code error;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) return tables.weights_file;
  return (exe.parent_path() / tables.weights_file).string();
}

int static_program_main(const StaticProgramTables& tables, int argc, char** argv) {
  // The same bounded OpenMP spin as the cleave command: with libgomp's default, a 2-thread run
  // collapses whenever another process holds a core (docs/results/load.md).
  apply_default_wait_policy(argv);
  const std::string name = argc > 0 ? std::filesystem::path(argv[0]).filename().string() : "model";
  try {
    bool help = false;
    ProgramMainOptions options = parse_program_options(argc, argv, false, help);
    if (help) {
      fmt::print("{}", program_usage(name, false));
      return 0;
    }
    return run_main(tables, options);
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}: error: {}\n", name, e.what());
    return 1;
  }
}

}  // namespace cleave
