// `cleave codegen`'s options: what the command line sets, and where each option is declared.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "cli/model_task_graph.h"

namespace cleave::cli {

/// Everything `cleave codegen` reads from its command line.
struct CodegenSettings {
  ModelSettings model;
  std::string lang;
  std::string output;
  std::string plan;    ///< Empty: the sequential plan with --threads.
  std::string stream;  ///< A stream program file (--lang streamit or cpp).
  std::string strategy = "auto";
  std::string costs = "profile";
  std::string machine;  ///< --ranks --plan auto: the ranks' devices and links (a machine file).
  std::string layouts = "auto";
  int workers = 2;
  int threads_per_worker = 1;
  int threads = 1;
  int samples = 1;     ///< --samples: a stream of samples through the workers or ranks.
  bool ranks = false;  ///< --ranks: the plan's workers are MPI ranks.
  bool force = false;
  bool json = false;
  std::string cleave_root;
  std::string cleave_build;
};

/// Declares every option of `cleave codegen` on `command`, bound to `settings`.
void add_codegen_options(CLI::App* command, CodegenSettings& settings);

}  // namespace cleave::cli
