// Entry point of the `cleave` command: parses the subcommand and reports errors in one place.
#include <fmt/core.h>

#include <cstdio>
#include <exception>

#include "cli/commands.h"
#include "ir/graph.h"

int main(int argc, char** argv) {
  CLI::App app{"cleave: plan and run one neural-network model on many cores, devices and machines"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "cleave 0.1");
  cleave::cli::CommandAction action;
  cleave::cli::register_inspect(app, action);
  cleave::cli::register_gen(app, action);
  cleave::cli::register_extract(app, action);
  cleave::cli::register_convert(app, action);
  cleave::cli::register_run(app, action);
  cleave::cli::register_conformance(app, action);
  cleave::cli::register_plan(app, action);
  cleave::cli::register_profile(app, action);
  cleave::cli::register_bench(app, action);
  cleave::cli::register_optimize(app, action);
  cleave::cli::register_schedule(app, action);
  cleave::cli::register_export_tasks(app, action);
  cleave::cli::register_split(app, action);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    return action ? action() : 1;
  } catch (const cleave::Error& e) {
    fmt::print(stderr, "cleave: error: {}\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "cleave: internal error: {}\n", e.what());
    return 2;
  }
}
