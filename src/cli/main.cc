// Entry point of the `cleave` command: parses the subcommand and reports errors in one place.
#include <fmt/core.h>

#include <cstdio>
#include <exception>

#include "cli/build_info.h"
#include "cli/commands.h"
#include "ir/graph.h"
#include "runtime/cpu_isa.h"
#include "runtime/wait_policy.h"
#include "support/describe_exception.h"
#include "support/process_memory.h"

int main(int argc, char** argv) {
  // First of all: it may start this program again with a bounded OpenMP spin count.
  cleave::apply_default_wait_policy(argv);
  cleave::return_large_frees_to_the_system();
  CLI::App app{"cleave: plan and run one neural-network model on many cores, devices and machines"};
  app.require_subcommand(1);
  app.set_version_flag("--version", cleave::cli::version_line,
                       "Print cleave's version, commit, oneDNN version, ISA and cores (more: "
                       "cleave info)");
  cleave::cli::CommandAction action;
  cleave::cli::register_inspect(app, action);
  cleave::cli::register_gen(app, action);
  cleave::cli::register_extract(app, action);
  cleave::cli::register_convert(app, action);
  cleave::cli::register_run(app, action);
  cleave::cli::register_run_split(app, action);
  cleave::cli::register_conformance(app, action);
  cleave::cli::register_plan(app, action);
  cleave::cli::register_profile(app, action);
  cleave::cli::register_bench(app, action);
  cleave::cli::register_optimize(app, action);
  cleave::cli::register_schedule(app, action);
  cleave::cli::register_export_tasks(app, action);
  cleave::cli::register_info(app, action);
  cleave::cli::register_stream(app, action);
  cleave::cli::register_codegen(app, action);
  cleave::cli::register_split(app, action);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    cleave::apply_isa_cap();  // Before oneDNN's first kernel; refuses a bad ONEDNN_MAX_CPU_ISA.
    return action ? action() : 1;
  } catch (const cleave::Error& e) {
    fmt::print(stderr, "cleave: error: {}\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    // Not a cleave::Error: still words a user can act on, never a library's codes.
    fmt::print(stderr, "cleave: error: {}\n", cleave::describe_exception(e));
    return 2;
  }
}
