// A plan as the code generators see it: per worker, the graph nodes it runs in order.
#pragma once

#include <string>
#include <vector>

#include "frontend/model_plan.h"
#include "ir/graph.h"

namespace cleave {

/// One task of a plan: a node run for one sample of the stream.
struct SampleTask {
  NodeId node = -1;
  int sample = 0;
};

struct WorkerProgram {
  int workers = 1;
  int threads_per_worker = 1;
  std::string strategy;
  /// The fields below up to `remote_readers` are sample 0's: every sample runs the same nodes
  /// in the same order on its workers (a renaming of sample 0's), so one arena layout serves
  /// them all.
  std::vector<std::vector<NodeId>> order;  ///< Per worker, its nodes in execution order.
  std::vector<int> worker_of_node;         ///< Per NodeId; -1 for nodes no task runs.
  std::vector<int> position_of_node;       ///< Per NodeId: index into its worker's order.
  std::vector<std::vector<int>> cores;     ///< Per worker, the CPU cores the plan gives it.
  /// Per ValueId, the workers other than the producer's that read it (sorted, unique).
  std::vector<std::vector<int>> remote_readers;
  /// The samples the plan runs (its batch): a stream through the workers when above 1.
  int samples = 1;
  /// Per worker, its tasks in the plan's order, each sample's before the next sample's.
  std::vector<std::vector<SampleTask>> stream_order;
  /// Per sample, per NodeId: the worker that runs the node for that sample.
  std::vector<std::vector<int>> sample_worker;
};

/// Checks that the plan runs every live node of `graph` exactly once per sample (cloned
/// plans and tasks of several samples are refused, naming the task) and derives each worker's
/// node order and the values that cross workers. A plan of several samples (pipelined stages,
/// data-parallel, sequential) must also have each worker run its samples one after another and
/// every sample run as sample 0 does up to which workers run it (hyperclusters, which
/// interleave samples, are refused naming the worker and tasks).
WorkerProgram worker_program(const Graph& graph, const ModelPlan& plan);

/// Samples first + stride * k for k < count: how a generated loop walks a worker's samples
/// or a channel's.
struct SampleSteps {
  int first = 0;
  int stride = 1;
  int count = 0;
};

/// Sample `first + stride * index` as C++ source ("k", "1 + 2 * k"), for a variable `index`.
std::string sample_expression(const SampleSteps& steps, const std::string& index);

/// The evenly spaced samples `samples` (ascending) are, or Error saying whose (`what`) are not.
SampleSteps sample_steps(const std::vector<int>& samples, const std::string& what);

/// The samples worker `w` runs and the nodes it runs for each, which the generated loop over
/// its samples repeats: every sample must run the same nodes in the same order on it (pipelined
/// stages: its stage; data-parallel: the whole model) and its samples must be evenly spaced;
/// otherwise Error naming the worker and the samples.
SampleSteps worker_samples(const Graph& graph, const WorkerProgram& program, int w,
                           std::vector<NodeId>& nodes);

/// A name usable as a C++ or Python identifier: other characters become '_', a leading digit
/// gets a '_' before it, and an empty name becomes "_".
std::string identifier_for(const std::string& name);

}  // namespace cleave
