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

/// --lang cpp or pytorch: `graph` run by `plan`, with the plan beside it, written into `out`
/// and committed. Returns the summary `cleave codegen --json` prints (without "seconds").
nlohmann::json codegen_plan(const CodegenRequest& request, const Graph& graph,
                            const ModelPlan& plan, AtomicFolder& out);

}  // namespace cleave
