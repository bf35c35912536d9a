// `cleave codegen`'s options: what the command line sets, and where each option is declared.
#include "cli/codegen_options.h"

#include "cli/option_limits.h"
#include "frontend/model_plan.h"
#include "support/cpu_quota.h"

namespace cleave::cli {

void add_codegen_options(CLI::App* command, CodegenSettings& settings) {
  command->add_option("model", settings.model.model, "ONNX model file")->required();
  add_model_load_options(command, settings.model);
  command
      ->add_option("--lang", settings.lang,
                   "cpp (a program per worker), pytorch (threads and queues) or streamit (the "
                   "model as a stream graph, or --stream's program, in StreamIt builder form)")
      ->required()
      ->check(CLI::IsMember({"cpp", "pytorch", "streamit"}));
  command
      ->add_option("-o,--output", settings.output, "Folder to write (written whole or not at all)")
      ->required()
      ->check(path_given());
  command->add_option("--plan", settings.plan,
                      "A plan file (cleave plan -o) or 'auto'; default: sequential with --threads");
  command->add_option("--stream", settings.stream,
                      "A stream program (JSON) that runs MODEL in one of its filters, for "
                      "--lang streamit or cpp; for cpp also the StreamIt text (stream.cc) that "
                      "--lang streamit wrote, of a program or of MODEL's conversion");
  command
      ->add_option("--strategy", settings.strategy,
                   "Strategy for --plan auto (cloned plans become lc)")
      ->check(CLI::IsMember(model_strategies()))
      ->default_val("auto");
  add_costs_option(command, settings.costs);
  command
      ->add_option("--workers", settings.workers,
                   "Workers for --plan auto (default: the cores this process may use)")
      ->default_val(usable_cores())
      ->check(CLI::Range(1, 1024));
  command
      ->add_option("--threads-per-worker", settings.threads_per_worker,
                   "Intra-op threads per worker for --plan auto")
      ->default_val(1)
      ->check(CLI::Range(1, 1024));
  command->add_option("--threads", settings.threads, "Intra-op threads without --plan")
      ->default_val(1)
      ->check(CLI::Range(1, 1024));
  command
      ->add_option("--layouts", settings.layouts,
                   "C++ kernels' convolution layouts: auto (measured and cached, as cleave run), "
                   "blocked, winograd, channels-last, plain; give cleave run the same")
      ->check(CLI::IsMember({"auto", "blocked", "winograd", "channels-last", "plain"}))
      ->default_val("auto");
  command->add_option("--cleave-root", settings.cleave_root,
                      "cleave source folder the C++ build uses (default: this build's)");
  command->add_option(
      "--cleave-build", settings.cleave_build,
      "cleave build folder with cleave_codegen_runtime.cmake (default: this binary's)");
  command->add_option("--machine", settings.machine,
                      "With --ranks and --plan auto: a machine file whose devices are the ranks "
                      "(speeds, memories, links; replaces --workers), so the plan's prediction "
                      "prices the messages, rank 0's input hand-out and output gather included");
  command
      ->add_option("--samples", settings.samples,
                   "--lang cpp: samples a run streams through the worker threads (or, with "
                   "--ranks, the ranks), the plan's batch (--plan auto plans them: sequential, "
                   "data-parallel or pipelined stages; a plan file must be of this many)")
      ->default_val(1)
      ->check(integer_in(1, kMaxSamples));
  command->add_flag("--ranks", settings.ranks,
                    "--lang cpp: the plan's workers are MPI ranks; one source per rank with MPI "
                    "sends and receives, run with mpirun -np WORKERS");
  command->add_flag("--force", settings.force,
                    "Replace a non-empty output folder (never one holding an input)");
  command->add_flag("--json", settings.json, "Print the summary as JSON");
}

}  // namespace cleave::cli
