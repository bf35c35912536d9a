// The small runtime a generated C++ program links against: fixed tables in, straight-line runs.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace cleave {

class StaticProgram;
class Tensor;
struct PlanThreads;

/// Where one value of a generated program lives. All fields are generation-time constants.
struct StaticValue {
  /// kRunTime: written by a run-time step (a node with a sub-graph, an output shaped by the
  /// values it reads, or a node downstream of one): its shape is known only during the run,
  /// so it lives in a buffer sized then, not in the arena (`offset` is unused; `dims` and
  /// `bytes` are those of the generator's preparing run, for comments only).
  enum Kind : int { kActivation = 0, kConstant = 1, kGraphInput = 2, kRunTime = 3 };
  const char* name;  ///< The value's name in the graph text.
  int kind;          ///< Kind.
  int64_t offset;    ///< Bytes into the arena (activations, inputs) or the weights file.
  int64_t bytes;     ///< Planned bytes (a blocked layout's padded size included).
  int dtype;         ///< ONNX element type (1 = float).
  int rank;
  const int64_t* dims;  ///< `rank` dims.
  int alias_of;         ///< Value index whose bytes it shares (Reshape, Flatten), or -1.
};

/// One node of the plan, run by one worker. A step whose outputs are kRunTime values is a
/// run-time step: it runs as `cleave run`'s executor runs a node (the same runner, prepared
/// again whenever its input shapes or shape-deciding values change, outputs in buffers of
/// the size the run needs).
struct StaticStep {
  const char* node;    ///< The node's display name, for messages.
  const char* output;  ///< Name of its first output: finds the node in the graph text.
  int worker;
  int inputs_begin;  ///< Into StaticProgramTables::step_values; -1 entries are omitted inputs.
  int inputs_end;
  int outputs_begin;
  int outputs_end;
};

using StaticWorkerFunction = void (*)(StaticProgram&);

/// Everything cleave's generator fixed for one program.
struct StaticProgramTables {
  const char* model_name;
  const char* graph_text;    ///< The optimized graph, initializer data left out.
  const char* weights_file;  ///< File name of the weights, found next to the executable.
  int64_t weights_bytes;
  const char* convolution_family;  ///< "blocked", "winograd" or "channels-last".
  int blocked_layouts;             ///< 0: every kernel writes plain row-major outputs.
  int workers;
  int threads_per_worker;
  const int* worker_cores;  ///< workers x threads_per_worker CPU numbers to pin to (-1: none).
  const StaticValue* values;
  int value_count;
  const StaticStep* steps;
  int step_count;
  const int* step_values;
  int channel_count;
  const int* graph_inputs;  ///< Value indices, in graph input order.
  int graph_input_count;
  const int* graph_outputs;  ///< Value indices, in graph output order.
  int graph_output_count;
  int64_t arena_bytes;
  const StaticWorkerFunction* worker_functions;  ///< One per worker.
};

/// A generated program at run time: the weights memory-mapped, one arena, one kernel per step
/// prepared on the first run (on its worker's thread, with its thread count), worker 0 on the
/// caller's thread and persistent pinned threads for the others, and one ready flag per channel
/// (folded onto fewer cores than workers: see set_threads).
class StaticProgram {
 public:
  /// Maps `weights_path` and parses the graph text; throws Error naming the file when the
  /// weights are missing or of another size.
  /// `worker_threads` false: no threads are started and only run_worker_here() runs steps
  /// (a rank program, whose ranks each run one worker).
  StaticProgram(const StaticProgramTables& tables, const std::string& weights_path,
                bool worker_threads = true);
  ~StaticProgram();
  StaticProgram(const StaticProgram&) = delete;
  StaticProgram& operator=(const StaticProgram&) = delete;

  /// The cores the workers compute on at once (`threads.threads`) and the intra-op threads
  /// per worker, in place of the tables' counts: valid only before the first run, which
  /// prepares the kernels with them and pins the workers unless folded (a program's main
  /// lowers them while other processes hold the cores, as `cleave run --plan` does). Folded
  /// onto one core, the caller runs every worker's steps itself, each worker's in its order;
  /// onto more, the workers share that many permits (WorkerPermits). Throws Error naming a
  /// step when the steps cannot be put in one order.
  void set_threads(const PlanThreads& threads);

  /// One run: copies the inputs (graph input order) into the arena, runs every worker's
  /// function, copies the outputs (graph output order) out. Buffers hold the planned bytes
  /// of each value; a null one is not written (read the output with output()). A kRunTime
  /// output's size is known only after the run: its buffer must be null, else Error naming it.
  /// Throws Error naming the step when a kernel fails; the first run also throws when a prepared
  /// kernel disagrees with the generated shapes or sizes (a program generated on another CPU or
  /// oneDNN version).
  void run(const void* const* inputs, void* const* outputs);

  /// The parts of run() for a caller that runs one worker itself (a rank of a rank program):
  /// the inputs copied into the arena, `function` (worker `worker`'s steps) on this thread with
  /// the worker's OpenMP threads, the outputs copied out (plain, graph output order).
  void set_inputs(const void* const* inputs);
  void run_worker_here(int worker, const std::function<void()>& function);
  void get_outputs(void* const* outputs);
  /// Graph output `index` alone, as get_outputs copies it.
  void get_output(int index, void* buffer);
  /// Graph output `index` of the last run, plain; valid until the next run.
  const Tensor& output(int index) const;
  /// The tensor of value `index` (a rank program binds received values to its messages).
  Tensor& value(int index);
  /// Where activation `index` lives in the arena (its planned bytes), or null for constants,
  /// graph inputs, run-time values and views.
  void* arena_place(int index);

  /// Called from generated worker functions only.
  void step(int index);
  void send(int channel);
  void receive(int channel);

  const StaticProgramTables& tables() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The CPUs worker `worker` is pinned to: the tables' cores, else (as the thread executor) the
/// allowed CPUs worker x threads_per_worker.. in turn.
std::vector<int> static_worker_cores(const StaticProgramTables& tables, int worker);

/// The weights file next to the running executable (the table's file name there).
std::string default_weights_path(const StaticProgramTables& tables);

/// The generated executable's main: the options of `cleave run` (--input NAME=F.npy,
/// --output-dir, --warmup, --repeat, --json, --seed) plus --weights; prints the same latency
/// line. Returns the exit code; errors print "NAME: error: ..." and return 1.
int static_program_main(const StaticProgramTables& tables, int argc, char** argv);

}  // namespace cleave
