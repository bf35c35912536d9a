// `cleave stream`: schedule, print and run stream programs (filters, pipelines, split-joins).
#include <fmt/core.h>

#include <chrono>
#include <memory>
#include <optional>

#include "analysis/graph_dot.h"
#include "cli/commands.h"
#include "cli/model_task_graph.h"
#include "cli/option_limits.h"
#include "onnx/atomic_file.h"
#include "pipeline/stream_model.h"
#include "pipeline/stream_run.h"
#include "stream/placement.h"
#include "stream/report.h"
#include "stream/schedule.h"
#include "stream/stream_dot.h"
#include "stream/stream_json.h"
#include "stream/stream_planner.h"
#include "stream/stream_text.h"

namespace cleave::cli {

namespace {

struct StreamCommandOptions {
  std::string program;
  bool json = false;
  bool text = false;
  std::vector<std::string> inputs;
  int64_t items = 0;
  int workers = 1;
  int64_t capacity_factor = 2;
  std::string output_dir;
  std::string dot;
  std::string svg;
  std::vector<std::string> fission;
  bool by_reference = false;
  std::string inputs_dir;
  int stages = 0;
  std::string costs = "flops";
  std::string placement = "balanced";
  std::string trace;
  std::vector<std::string> shapes;
};

StreamSourceOptions source_options(const StreamCommandOptions& o) {
  return {o.by_reference, o.stages, o.costs, parse_input_shapes(o.shapes)};
}

int run_schedule(const StreamCommandOptions& o) {
  // A program file's models are not needed for its rates; a model is converted first.
  const StreamProgram program =
      is_stream_model(o.program) ? load_stream_source(o.program, source_options(o)).program
                                 : load_stream_program(o.program, StreamLoadOptions{false, true});
  const auto start = std::chrono::steady_clock::now();
  const StreamGraph graph = flatten_stream(program.root);
  const StreamSchedule schedule = schedule_stream(graph, program.origin);
  const std::vector<ClosedFormRates> forms = closed_form_rates(program.root);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (o.json) {
    fmt::print("{}\n", schedule_to_json(graph, schedule, forms));
    return 0;
  }
  fmt::print("{}", schedule_report(program, graph, schedule, forms, seconds));
  return 0;
}

int run_print(const StreamCommandOptions& o) {
  for (const std::string& picture : {o.dot, o.svg})
    if (!picture.empty()) require_file_target(picture);
  const StreamSource loaded = load_stream_source(o.program, source_options(o));
  const Stream& root = loaded.program.root;
  if (!o.dot.empty()) write_file_atomically(o.dot, stream_to_dot(root));
  if (!o.svg.empty()) render_dot(stream_to_dot(root), "svg", o.svg);
  if (o.json) {
    fmt::print("{}\n", stream_to_json(root));
    return 0;
  }
  if (loaded.conversion) {
    fmt::print("{}\n{}", print_instructions(loaded.conversion->instructions), print_stream(root));
    fmt::print("{}", conversion_report(*loaded.conversion, o.by_reference));
  } else if (loaded.staged) {
    fmt::print("{}{}", print_stream(root), stages_report(*loaded.staged, o.costs));
  } else {
    fmt::print("{}", print_stream(root));
  }
  return 0;
}

int run_run(const StreamCommandOptions& o) {
  // Outputs checked before the work; output.npy joins the folder only once it is complete.
  std::optional<AtomicFolder> output_folder;
  if (!o.output_dir.empty()) {
    std::vector<std::string> read = {o.program};
    for (const std::string& spec : o.inputs) read.push_back(spec.substr(spec.find('=') + 1));
    output_folder.emplace(o.output_dir, FolderRules{FolderRules::Existing::kMerge, read});
  }
  if (!o.trace.empty()) require_file_target(o.trace);
  const StreamRunSettings settings{o.program,
                                   StreamInputFiles{o.inputs, o.inputs_dir, o.items},
                                   source_options(o),
                                   o.workers,
                                   o.capacity_factor,
                                   o.placement,
                                   o.costs,
                                   o.fission,
                                   o.trace};
  const StreamRunReport report =
      run_stream_settings(settings, output_folder ? &*output_folder : nullptr);
  fmt::print("{}", o.json ? report.json + "\n" : report.text);
  return 0;
}

}  // namespace

void register_stream(CLI::App& app, CommandAction& action) {
  auto options = std::make_shared<StreamCommandOptions>();
  CLI::App* command = app.add_subcommand(
      "stream",
      "Stream programs (StreamIt filters, pipelines, split-joins; docs/formats.md \"Stream "
      "programs\"): print one, or use the `schedule` and `run` subcommands");
  command->add_option("program", options->program,
                      "Stream program JSON file to print, or an ONNX model to convert to a "
                      "stream (prints its SSA instructions, the stream and the replication)");
  command->add_flag("--json", options->json, "Print the program as JSON");
  command->add_flag("--text", options->text, "Print the program as StreamIt-like text (default)");
  command->add_option("--dot", options->dot, "Also write the stream as Graphviz DOT to this file")
      ->check(path_given());
  command->add_option("--svg", options->svg, "Also render the stream as SVG to this file")
      ->check(path_given());
  command
      ->add_option("--stages", options->stages,
                   "Converting a model: cut it into K contiguous stages balanced by FLOPs, one "
                   "filter each, instead of one filter per node")
      ->check(CLI::Range(0, 1000000));
  command
      ->add_option("--costs", options->costs,
                   "With --stages: balance stages by flops (default) or by a cost table: "
                   "profile, static or analytical")
      ->check(CLI::IsMember({"flops", "profile", "static", "analytical"}));
  command->add_flag("--no-replicate", options->by_reference,
                    "Converting a model: keep a node that two split-joins share once and pass its "
                    "value by reference instead of replicating it");
  add_shape_option(command, options->shapes);
  command->require_subcommand(0, 1);

  CLI::App* schedule = command->add_subcommand(
      "schedule",
      "Static schedule: steady-state repetitions from the balance equations, the init "
      "schedule that fills peek windows, channel buffer sizes, and the thesis's closed forms");
  schedule
      ->add_option("program", options->program,
                   "Stream program JSON file, or an ONNX model (converted first)")
      ->required();
  add_shape_option(schedule, options->shapes);
  schedule->add_flag("--json", options->json,
                     "Print {\"repetitions\", \"init\", \"buffers\", ...} as JSON");
  schedule->callback([&action, options] { action = [options] { return run_schedule(*options); }; });

  CLI::App* run = command->add_subcommand(
      "run",
      "Stream items through a program on worker threads (stages and branches software-"
      "pipelined over bounded channels); reports throughput, latency and worker busy shares");
  run->add_option("program", options->program,
                  "Stream program JSON file, or an ONNX model (converted first)")
      ->required();
  run->add_option("--input", options->inputs,
                  "NAME=FILE.npy: the input items, one per entry of the leading axis (a model: "
                  "one per graph input)");
  run->add_option("--inputs", options->inputs_dir,
                  "DIR holding NAME.npy per graph input (a program: its one input file), "
                  "instead of --input");
  run->add_option("--items", options->items,
                  "How many items to feed (the file's items are repeated); default: all of them")
      ->check(integer_in(1, kMaxStreamItems));
  run->add_option("--workers", options->workers, "Worker threads")
      ->check(integer_in(1, kMaxWorkers))
      ->capture_default_str();
  run->add_option("--capacity-factor", options->capacity_factor,
                  "Channel capacity as a multiple of the schedule's buffer size")
      ->check(integer_in(1, kMaxCapacityFactor))
      ->capture_default_str();
  run->add_option("--output-dir", options->output_dir,
                  "Write the output items stacked as DIR/output.npy")
      ->check(path_given());
  run->add_option("--fission", options->fission,
                  "NAME=COPIES:GRANULARITY: split the row-wise model filter NAME into COPIES "
                  "round-robin copies of GRANULARITY rows each (repeatable)");
  run->add_flag("--json", options->json, "Print the report as JSON");
  run->add_option("--stages", options->stages,
                  "Converting a model: K contiguous stages balanced by FLOPs, one filter each")
      ->check(CLI::Range(0, 1000000));
  run->add_option("--costs", options->costs,
                  "What the placement (and --stages) balance: measured (default: each model "
                  "filter fired before the run; stages cut by FLOPs), flops (nominal 1 ns per "
                  "FLOP), or a cost table: profile, static or analytical")
      ->check(CLI::IsMember({"measured", "flops", "profile", "static", "analytical"}));
  run->add_option("--placement", options->placement,
                  "How filters are placed on the workers: balanced (default: steady-state cost "
                  "and channel hand-offs balanced, best simulated throughput), greedy (the old "
                  "longest-first, no hand-offs) or contiguous (runs of consecutive filters)")
      ->check(CLI::IsMember(stream_planner_names()))
      ->capture_default_str();
  run->add_option("--trace", options->trace,
                  "Write every firing (worker, start, end) as a Chrome trace to this file")
      ->check(path_given());
  run->add_flag("--no-replicate", options->by_reference,
                "Converting a model: pass shared values by reference instead of replicating "
                "their nodes");
  add_shape_option(run, options->shapes);
  run->callback([&action, options, run] {
    if (run->count("--costs") == 0) options->costs = "measured";
    action = [options] { return run_run(*options); };
  });

  command->callback([&action, options, command] {
    if (command->get_subcommands().empty()) {
      if (options->program.empty()) throw CLI::RequiredError("program");
      action = [options] { return run_print(*options); };
    }
  });
}

}  // namespace cleave::cli
