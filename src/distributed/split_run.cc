// Running a spatial split's manifest on MPI ranks: sub-models, region sends, early receives.
#include "distributed/split_run.h"

#include <fmt/core.h>
#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "distributed/message.h"
#include "distributed/mpi_session.h"
#include "distributed/rank_sync.h"
#include "distributed/split_manifest.h"
#include "frontend/load.h"
#include "ir/text.h"
#include "runtime/executor.h"
#include "runtime/npy.h"
#include "runtime/random_inputs.h"
#include "spatial/region.h"
#include "support/atomic_output.h"
#include "support/limits.h"
#include "support/timing.h"

namespace cleave {

namespace {

using Clock = std::chrono::steady_clock;

// What the run reads (the manifest, --input files, --model), so that no output replaces it.
std::vector<std::string> files_read(const SplitRunSettings& settings) {
  std::vector<std::string> files = {
      (std::filesystem::path(settings.folder) / "manifest.json").string(), settings.model};
  for (const std::string& spec : settings.inputs) files.push_back(spec.substr(spec.find('=') + 1));
  return files;
}

struct Prepared {
  SplitManifest manifest;
  // Per step of this rank (run steps only), held by the executor contract as `run` holds it.
  std::vector<std::unique_ptr<ExecutorInterface>> executors;
  std::vector<std::vector<std::string>> run_outputs;  // Per step: the sub-model's output names.
  std::map<std::string, Tensor> inputs;
  uint64_t hash = 0;
  // Per step: the values no later step of this rank reads, dropped once it is done, so a rank
  // holds only live values (and each executor's pool gets its output buffers back).
  std::vector<std::vector<std::string>> dead_after;
  // Per send and receive step: its message buffer, kept from run to run (a fresh one would be
  // zeroed and page-faulted on every run).
  std::vector<std::shared_ptr<Buffer>> message_buffers;
  RankThreads threads;                        // Intra-op threads this rank runs with, and why.
  std::optional<AtomicFolder> output_folder;  // Rank 0's --output-dir, checked before the work.
};

// Which values of this rank's steps die after each step: a value's last reader (or its
// producer, when nothing reads it), except the outputs, which the run returns.
std::vector<std::vector<std::string>> dead_after_steps(
    const std::vector<ManifestStep>& steps,
    const std::vector<std::vector<std::string>>& run_outputs,
    const std::vector<ManifestTensor>& outputs) {
  std::map<std::string, std::size_t> last;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const ManifestStep& step = steps[i];
    if (step.kind == ManifestStep::Kind::kRun) {
      for (const std::string& name : step.inputs) last[name] = i;
      for (const std::string& name : run_outputs[i]) last[name] = i;
    } else if (step.kind == ManifestStep::Kind::kSend) {
      last[step.tensor] = i;
    } else {
      last[step.name] = i;
    }
  }
  for (const ManifestTensor& output : outputs) last.erase(output.name);
  std::vector<std::vector<std::string>> dead(steps.size());
  for (const auto& [name, step] : last) dead[step].push_back(name);
  return dead;
}

// Each output of run step `index`'s sub-model `graph` must be what the manifest says it is: a
// graph output's dtype and shape, or for a value this rank sends later, the send's dtype and a
// shape that holds the region. Checked before any run, since a wrong one gives garbage, not an
// error (the bytes are sent and written as the manifest's type).
void check_step_outputs(const Graph& graph, const SplitManifest& manifest,
                        const std::vector<ManifestStep>& steps, std::size_t index) {
  const std::string& model = steps[index].model;
  for (ValueId id : graph.outputs()) {
    const Value& value = graph.value(id);
    const std::string type = print_type(value.dtype, value.shape);
    for (const ManifestTensor& output : manifest.outputs) {
      if (output.name != value.name) continue;
      if (value.dtype != output.dtype ||
          (value.shape.is_static() && value.shape.sizes() != output.shape)) {
        throw Error(fmt::format(
            "{}: output '{}' is {}, but the manifest's outputs say {}[{}] (manifest.json "
            "and the sub-model disagree; make the split again)",
            model, value.name, type, manifest_dtype_name(output.dtype),
            fmt::join(output.shape, ",")));
      }
    }
    for (std::size_t k = index + 1; k < steps.size(); ++k) {
      const ManifestStep& send = steps[k];
      if (send.kind != ManifestStep::Kind::kSend || send.tensor != value.name) continue;
      bool holds = value.shape.rank_known && value.shape.rank() == send.region.size();
      for (std::size_t d = 0; holds && d < send.region.size(); ++d) {
        const Dim& dim = value.shape.dims[d];
        holds = !dim.is_known() || send.region[d].end <= dim.size;
      }
      if (value.dtype != send.dtype || !holds) {
        std::vector<std::string> region;
        for (const auto& [begin, end] : send.region)
          region.push_back(fmt::format("{}:{}", begin, end));
        throw Error(fmt::format(
            "{}: output '{}' is {}, but the manifest sends it (tag {}) as {} region [{}] "
            "(manifest.json and the sub-model disagree; make the split again)",
            model, value.name, type, send.tag, manifest_dtype_name(send.dtype),
            fmt::join(region, ",")));
      }
    }
  }
}

void prepare(const SplitRunSettings& settings, const MpiSession& session, Prepared& prepared) {
  // Rank 0's outputs are checked first, so a bad target stops every rank before any work.
  if (session.rank() == 0 && !settings.output_dir.empty())
    prepared.output_folder.emplace(
        settings.output_dir, FolderRules{FolderRules::Existing::kMerge, files_read(settings)});
  prepared.manifest = read_split_manifest(settings.folder);
  const SplitManifest& manifest = prepared.manifest;
  if (manifest.machines != session.size()) {
    throw Error(
        fmt::format("{}: the split is for {} machines, but {} ranks were started (run it "
                    "with mpirun -np {})",
                    settings.folder, manifest.machines, session.size(), manifest.machines));
  }
  if (!settings.model.empty()) {
    const std::string fingerprint = file_fingerprint(settings.model);
    if (fingerprint != manifest.fingerprint) {
      throw Error(
          fmt::format("{}: the split was made from another model than {} (fingerprint {} "
                      "there, {} in the manifest)",
                      settings.folder, settings.model, fingerprint, manifest.fingerprint));
    }
  }
  const auto& steps = manifest.steps[session.rank()];
  prepared.executors.resize(steps.size());
  prepared.run_outputs.resize(steps.size());
  prepared.message_buffers.resize(steps.size());
  // The sub-models run one after another: one pool, so activations take the memory of the
  // values live at the peak rather than every sub-model's own peak added up.
  const BufferPool pool(/*plan_runs=*/false);
  const std::optional<ConvolutionFamily> family = parse_convolution_family(settings.layouts);
  if (!family) throw Error(fmt::format("--layouts '{}': unknown family", settings.layouts));
  prepared.threads =
      choose_rank_threads(settings.threads, settings.fixed_threads, session.ranks_on_host());
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].kind != ManifestStep::Kind::kRun) continue;
    LoadOptions load;
    Graph graph = load_model(steps[i].model, load);
    for (ValueId output : graph.outputs())
      prepared.run_outputs[i].push_back(graph.value(output).name);
    for (const std::string& name : steps[i].outputs) {
      if (std::find(prepared.run_outputs[i].begin(), prepared.run_outputs[i].end(), name) ==
          prepared.run_outputs[i].end()) {
        throw Error(
            fmt::format("{}: the manifest expects output '{}', which the sub-model does "
                        "not have",
                        steps[i].model, name));
      }
    }
    check_step_outputs(graph, manifest, steps, i);
    ExecutorOptions options;
    options.threads = prepared.threads.threads;
    options.convolution_family = *family;
    options.pool = pool;
    prepared.executors[i] = std::make_unique<Executor>(graph, options);
  }
  prepared.dead_after = dead_after_steps(steps, prepared.run_outputs, manifest.outputs);
  // Every rank reads the same input files or makes the same seeded values (as `cleave run`
  // does for the whole model), so no input needs sending.
  std::map<std::string, Tensor> given;
  for (const auto& [name, file] : input_file_specs(settings.inputs)) given[name] = read_npy(file);
  for (std::size_t index = 0; index < manifest.inputs.size(); ++index) {
    const ManifestTensor& input = manifest.inputs[index];
    auto found = given.find(input.name);
    if (found != given.end()) {
      if (found->second.dtype() != input.dtype || found->second.shape() != input.shape) {
        throw Error(fmt::format("--input {}: {} given, the split expects {}[{}]", input.name,
                                found->second.describe(), dtype_name(input.dtype),
                                fmt::join(input.shape, ",")));
      }
      prepared.inputs[input.name] = found->second;
      continue;
    }
    Value value;
    value.name = input.name;
    value.dtype = input.dtype;
    value.shape = Shape::of(input.shape);
    prepared.inputs[input.name] = random_tensor(value, settings.seed * 1000003 + index);
  }
  std::ifstream manifest_file(std::filesystem::path(settings.folder) / "manifest.json");
  std::stringstream text;
  text << manifest_file.rdbuf();
  prepared.hash = hash_text(text.str());
}

// One run of this rank's steps; returns the tensors by name (rank 0: the outputs among them).
std::map<std::string, Tensor> run_steps(Prepared& prepared, const MpiSession& session,
                                        const SplitRunSettings& settings, int64_t run,
                                        RankFigures& figures) {
  const auto& steps = prepared.manifest.steps[session.rank()];
  std::map<std::string, Tensor> values = prepared.inputs;
  // Every receive is posted now, into a buffer of the size the manifest says. The caller holds
  // no value of an earlier run, so no tensor still views these buffers.
  std::vector<MPI_Request> receives(steps.size(), MPI_REQUEST_NULL);
  std::vector<std::shared_ptr<Buffer>>& buffers = prepared.message_buffers;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].kind != ManifestStep::Kind::kRecv) continue;
    const std::size_t bytes = kMessagePrefixBytes + static_cast<std::size_t>(steps[i].bytes);
    if (!buffers[i] || buffers[i]->size() != bytes) buffers[i] = std::make_shared<Buffer>(bytes);
    int code = MPI_Irecv(buffers[i]->data(), static_cast<int>(bytes), MPI_BYTE, steps[i].peer,
                         steps[i].tag, session.comm(), &receives[i]);
    if (code != MPI_SUCCESS) throw Error("MPI_Irecv failed: " + mpi_error_text(code));
  }
  struct Sent {
    MPI_Request request = MPI_REQUEST_NULL;
    std::size_t step = 0;
  };
  std::vector<Sent> sends;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const ManifestStep& step = steps[i];
    const std::string where = fmt::format("machine {} step {}", session.rank(), i);
    if (step.kind == ManifestStep::Kind::kRun) {
      std::map<std::string, Tensor> inputs;
      for (const std::string& name : step.inputs) {
        auto found = values.find(name);
        if (found == values.end())
          throw Error(
              fmt::format("{}: input '{}' of {} does not exist yet", where, name, step.model));
        inputs[name] = found->second;
      }
      std::vector<Tensor> outputs = prepared.executors[i]->run(inputs);
      for (std::size_t k = 0; k < outputs.size(); ++k)
        values[prepared.run_outputs[i][k]] = std::move(outputs[k]);
    } else if (step.kind == ManifestStep::Kind::kSend) {
      auto found = values.find(step.tensor);
      if (found == values.end())
        throw Error(fmt::format("{}: tensor '{}' to send does not exist yet", where, step.tensor));
      MessageHeader header = make_header(step.tag, run, step.dtype, step.shape);
      Sent sent;
      sent.step = i;
      // The region goes straight into the message after its header.
      std::shared_ptr<Buffer>& buffer = buffers[i];
      const std::size_t bytes = kMessagePrefixBytes + header.payload_bytes;
      if (!buffer || buffer->size() != bytes) buffer = std::make_shared<Buffer>(bytes);
      std::memcpy(buffer->data(), &header, sizeof header);
      copy_region(found->second, step.region, buffer->data() + kMessagePrefixBytes, where);
      int code = MPI_Isend(buffer->data(), static_cast<int>(buffer->size()), MPI_BYTE, step.peer,
                           step.tag, session.comm(), &sent.request);
      if (code != MPI_SUCCESS) throw Error("MPI_Isend failed: " + mpi_error_text(code));
      figures.bytes_sent += static_cast<double>(buffer->size());
      figures.messages_sent += 1;
      sends.push_back(std::move(sent));
    } else {
      MPI_Status status = wait_until(
          receives[i], deadline_after(settings.rank_timeout_seconds),
          [&] {
            return fmt::format("'{}' from rank {} (tag {}) at {}", step.name, step.peer, step.tag,
                               where);
          },
          settings.rank_timeout_seconds);
      int count = 0;
      MPI_Get_count(&status, MPI_BYTE, &count);
      MessageHeader header;
      std::memcpy(&header, buffers[i]->data(), sizeof header);
      MessageExpectation expect;
      expect.channel = step.tag;
      expect.run = run;
      expect.dtype = step.dtype;
      expect.shape = step.shape;
      expect.what = fmt::format("'{}' from rank {}", step.name, step.peer);
      check_message(header, static_cast<std::size_t>(count), expect);
      values[step.name] = Tensor::view(step.dtype, step.shape, buffers[i], kMessagePrefixBytes);
      figures.bytes_received += count;
      figures.messages_received += 1;
    }
    for (const std::string& name : prepared.dead_after[i]) values.erase(name);
  }
  for (Sent& sent : sends) {
    const ManifestStep& step = steps[sent.step];
    wait_until(
        sent.request, deadline_after(settings.rank_timeout_seconds),
        [&] {
          return fmt::format("rank {} to take '{}' (tag {})", step.peer, step.name, step.tag);
        },
        settings.rank_timeout_seconds);
  }
  return values;
}

}  // namespace

int run_split_on_ranks(const SplitRunSettings& settings) {
  if (settings.repeat < 1) throw Error("--repeat must be at least 1");
  require_timeout_seconds("--rank-timeout", settings.rank_timeout_seconds);
  MpiSession session;
  const int rank = session.rank();
  Prepared prepared;
  const auto prepare_here = [&] {
    prepare(settings, session, prepared);
    return prepared.hash;
  };
  if (!prepare_on_every_rank(session, prepare_here, settings.rank_timeout_seconds)) {
    return 1;
  }
  omp_set_num_threads(prepared.threads.threads);
  std::vector<double> latencies;
  std::map<std::string, Tensor> values;
  RankFigures figures;
  try {
    for (int i = 0; i < settings.warmup + settings.repeat; ++i) {
      barrier(session, settings.rank_timeout_seconds, "every rank to start the next repeat");
      figures = RankFigures();
      values.clear();  // The last run's tensors view buffers this run receives into.
      auto start = Clock::now();
      values = run_steps(prepared, session, settings, i, figures);
      if (i >= settings.warmup)
        latencies.push_back(
            std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    }
  } catch (const std::exception& e) {
    abort_ranks(session.comm(), rank, e.what());
  }
  figures.peak_rss_bytes = static_cast<double>(peak_rss_bytes());
  figures.threads = prepared.threads.threads;
  figures.host_other_runnable =
      prepared.threads.sampled ? prepared.threads.host_load.other_runnable : -1;
  std::strncpy(figures.host, session.host().c_str(), sizeof figures.host - 1);
  std::vector<RankFigures> all;
  try {
    all = gather_figures(session, figures, settings.rank_timeout_seconds);
  } catch (const std::exception& e) {
    abort_ranks(session.comm(), rank, e.what());
  }
  if (rank != 0) return 0;

  nlohmann::json report;
  report["split"] = settings.folder;
  report["ranks"] = session.size();
  report["threads_per_rank"] = prepared.threads.threads;
  report["threads_requested"] = settings.threads;
  report["layouts"] = settings.layouts;
  std::vector<double> sorted = latencies;
  std::sort(sorted.begin(), sorted.end());
  report["latency_ms"] = {
      {"min", sorted.front()}, {"median", median_of(latencies)}, {"runs", latencies}};
  nlohmann::json ranks = nlohmann::json::array();
  for (int r = 0; r < session.size(); ++r) {
    const RankFigures& f = all[static_cast<std::size_t>(r)];
    ranks.push_back(
        {{"rank", r},
         {"host", std::string(f.host, strnlen(f.host, sizeof f.host))},
         {"bytes_sent", f.bytes_sent},
         {"bytes_received", f.bytes_received},
         {"messages_sent", f.messages_sent},
         {"messages_received", f.messages_received},
         {"peak_rss_bytes", f.peak_rss_bytes},
         {"threads", f.threads},
         {"host_other_runnable",
          f.host_other_runnable < 0 ? nlohmann::json() : nlohmann::json(f.host_other_runnable)}});
  }
  report["per_rank"] = ranks;
  // Every output checked present before the first file is written.
  std::vector<std::pair<std::string, Tensor>> outputs;
  for (const ManifestTensor& output : prepared.manifest.outputs) {
    auto found = values.find(output.name);
    if (found == values.end()) {
      throw Error(fmt::format("{}: output '{}' is not on rank 0 after its last step",
                              settings.folder, output.name));
    }
    outputs.emplace_back(output.name, found->second);
  }
  nlohmann::json output_list = nlohmann::json::array();
  for (const auto& [name, tensor] : outputs) {
    nlohmann::json entry = {{"name", name}, {"type", tensor.describe()}};
    if (prepared.output_folder) {
      const std::string file_name = file_name_for(name) + ".npy";
      write_npy(prepared.output_folder->staging_path(file_name), tensor);
      entry["file"] = (std::filesystem::path(settings.output_dir) / file_name).string();
    }
    output_list.push_back(entry);
  }
  if (prepared.output_folder) prepared.output_folder->commit();
  report["outputs"] = output_list;
  if (settings.json) {
    fmt::print("{}\n", report.dump(2));
    return 0;
  }
  fmt::print("split      {}\n", settings.folder);
  fmt::print(
      "latency    min {:.3f} ms, median {:.3f} ms over {} run(s), {} rank(s) x {} thread(s)\n",
      sorted.front(), median_of(latencies), settings.repeat, session.size(),
      prepared.threads.threads);
  if (prepared.threads.threads != settings.threads) {
    fmt::print("{}\n",
               rank_threads_line(prepared.threads, settings.threads, session.ranks_on_host()));
  }
  for (const auto& entry : ranks) {
    fmt::print("rank {:<5} sent {:.2f} MiB in {} messages, peak RSS {:.1f} MiB\n",
               entry["rank"].get<int>(), entry["bytes_sent"].get<double>() / 1048576.0,
               entry["messages_sent"].get<double>(),
               entry["peak_rss_bytes"].get<double>() / 1048576.0);
  }
  for (const auto& entry : output_list) {
    fmt::print("output     {} {}{}\n", entry["name"].get<std::string>(),
               entry["type"].get<std::string>(),
               entry.contains("file") ? " -> " + entry["file"].get<std::string>() : "");
  }
  return 0;
}

}  // namespace cleave
