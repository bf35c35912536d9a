// The subcommands of the `cleave` CLI; each lives in its own <name>_command.cc.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace cleave::cli {

/// A subcommand's body; returns the process exit code. Errors are thrown as cleave::Error.
using CommandAction = std::function<int()>;

/// Each register_* adds one subcommand to `app` and stores what it runs in `action`
/// (set when the subcommand was chosen on the command line).
void register_inspect(CLI::App& app, CommandAction& action);
void register_gen(CLI::App& app, CommandAction& action);
void register_extract(CLI::App& app, CommandAction& action);
void register_convert(CLI::App& app, CommandAction& action);
void register_run(CLI::App& app, CommandAction& action);
void register_run_split(CLI::App& app, CommandAction& action);
void register_conformance(CLI::App& app, CommandAction& action);
void register_plan(CLI::App& app, CommandAction& action);
void register_profile(CLI::App& app, CommandAction& action);
void register_bench(CLI::App& app, CommandAction& action);
void register_optimize(CLI::App& app, CommandAction& action);
void register_schedule(CLI::App& app, CommandAction& action);
void register_export_tasks(CLI::App& app, CommandAction& action);
void register_info(CLI::App& app, CommandAction& action);
void register_stream(CLI::App& app, CommandAction& action);
void register_codegen(CLI::App& app, CommandAction& action);
void register_split(CLI::App& app, CommandAction& action);

}  // namespace cleave::cli
