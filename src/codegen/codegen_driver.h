// What `cleave codegen` writes for each language: a stream as StreamIt or C++, a plan as C++ or
// PyTorch.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "codegen/stream_cpp_emitter.h"
#include "codegen/streamit_emitter.h"
#include "frontend/model_plan.h"
#include "ir/graph.h"
#include "support/atomic_output.h"

namespace cleave {

/// What to write, from where (the options of `cleave codegen` the drivers read).
struct CodegenRequest {
  std::string model;   ///< The ONNX model file.
  std::string lang;    ///< cpp, pytorch or streamit.
  std::string output;  ///< The folder written.
  std::string stream;  ///< A stream program file, or empty.
  std::string layouts = "auto";
  bool ranks = false;  ///< The plan's workers are MPI ranks.
  int samples = 1;     ///< Samples a run streams through the workers or ranks (the plan's batch).
  std::string cleave_root;
  std::string cleave_build;
};

/// --lang streamit: the --stream program, or the model (`load_graph`) converted to a stream,
/// written into `out` and committed.
StreamitCodegenSummary codegen_streamit(const CodegenRequest& request,
                                        const std::function<Graph()>& load_graph,
                                        AtomicFolder& out);

/// --stream with --lang cpp: the program's static schedule over ring buffers, written into
/// `out` and committed.
StreamCppSummary codegen_stream_cpp(const CodegenRequest& request, AtomicFolder& out);

/// Where the plan to generate comes from: none (sequential on `threads`), "auto" (planned), or
/// a plan file.
struct CodegenPlanSource {
  std::string plan;  ///< Empty, "auto" or a plan file.
  std::string costs = "profile";
  ModelPlanOptions auto_options;  ///< For "auto": strategy, workers, threads, machine.
  int threads = 1;                ///< Without a plan: the sequential plan's threads.
};

/// The plan code is generated for. Without one: sequential on `threads`, static costs. "auto":
/// `auto_options` planned with `costs` (plan_with_costs), one task per node, and with
/// `request.ranks` one rank per worker (a machine file's devices as the ranks, so the one
/// simulator prices rank 0's hand-out and gather as `cleave plan --machine` does; without a
/// machine file, `workers` ranks linked as a split's messages are priced, use_split_links, and
/// the plan's note "link_model" says so). A file: read against `graph`; for ranks its cores
/// name other machines' cores. `request.samples` is the plan's batch: "auto" plans that many
/// samples (sequential, data-parallel or pipelined stages: each worker runs its samples one
/// after another), and a file of another batch is refused (Error naming it and its batch), as
/// is, for --lang cpp, one the generators cannot take (a hypercluster's interleaved samples, a
/// worker whose samples run different steps: Error naming the file and the plans to make).
ModelPlan plan_to_generate(const CodegenRequest& request, const Graph& graph,
                           const CodegenPlanSource& source,
                           const std::function<void(const std::string&)>& progress);

/// --lang cpp or pytorch: `graph` run by `plan`, with the plan beside it, written into `out`
/// and committed. Returns the summary `cleave codegen --json` prints (without "seconds").
nlohmann::json codegen_plan(const CodegenRequest& request, const Graph& graph,
                            const ModelPlan& plan, AtomicFolder& out);

}  // namespace cleave
