// The PyTorch generator: a plan as a readable torch module, one method per worker (Ramiel's form).
#pragma once

#include <string>

#include "codegen/worker_program.h"
#include "ir/graph.h"
#include "support/atomic_output.h"

namespace cleave {

struct PytorchCodegenSummary {
  int nodes = 0;
  int channels = 0;  ///< Values passed between workers through queues.
  std::size_t weights_bytes = 0;
};

/// Writes model.py (class Model: __init__ loads the weights; forward() is the sequential
/// version; worker_N(inputs, ch) runs worker N's nodes in the plan's order, ch.put / ch.get
/// for every value crossing workers; ThreadRunner and ProcessRunner start the workers),
/// run.py, weights.bin + weights.json and README.md into `out`. Throws Error naming the
/// first node whose op has no mapping, before anything is added.
PytorchCodegenSummary emit_pytorch(const Graph& graph, const WorkerProgram& program,
                                   const std::string& model_name, AtomicFolder& out);

}  // namespace cleave
