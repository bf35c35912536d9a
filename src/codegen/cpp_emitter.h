// The C++ generator: a plan as straight-line worker functions over a static arena.
#pragma once

#include <cstdint>
#include <string>

#include "codegen/worker_program.h"
#include "ir/graph.h"
#include "runtime/kernel.h"
#include "support/atomic_output.h"

namespace cleave {

struct CppCodegenOptions {
  std::string model_name = "model";
  /// The kernels' convolution family and layouts: `cleave run` with the same plan,
  /// `--layouts` and threads computes the same outputs bit for bit.
  ConvolutionFamily family = ConvolutionFamily::kBlocked;
  bool blocked_layouts = true;
  std::string cleave_root;   ///< cleave's source folder (headers), the CMake default.
  std::string cleave_build;  ///< cleave's build folder, the CMake default.
  /// Namespace of the generated tables and worker functions; folder (ending in '/') their
  /// sources go to; the weights file's name. A stream program embeds one such program per
  /// model filter, each under its own names.
  std::string code_namespace = "generated";
  std::string source_folder;
  std::string weights_file = "weights.bin";
  /// Only the tables, workers and weights: no C API, executable, CMakeLists.txt or README.
  bool tables_only = false;
  /// Stream programs: a model's conversion, whose channels may carry items of several types
  /// (as `cleave stream run` allows for a model and no program file).
  bool mixed_items = false;
};

struct CppCodegenSummary {
  int steps = 0;
  int channels = 0;
  std::size_t arena_bytes = 0;
  std::size_t unshared_bytes = 0;  ///< Activation bytes without reuse, for comparison.
  std::size_t weights_bytes = 0;
  int run_time_steps = 0;          ///< Steps run as `cleave run` runs a node, sized during the run.
  int concat_inputs_in_place = 0;  ///< Values written straight into a Concat's output.
};

/// Writes the C++ program of `graph` run by `program` into `out`: CMakeLists.txt, README.md,
/// model.h (C API), one worker_N.cc per worker, the tables, main.cc and weights.bin.
///
/// Output shapes, layouts and sizes are found by preparing every kernel once here (seeded
/// random inputs, each worker's thread count), so the arena offsets are constants of the
/// generated code, except those of run-time steps (run_time_nodes), whose outputs are sized
/// during each run. Throws Error for graph inputs that are not float (the C API passes float
/// buffers) or an output that no node computes.
CppCodegenSummary emit_cpp(const Graph& graph, const WorkerProgram& program,
                           const CppCodegenOptions& options, AtomicFolder& out);

/// The CMake lines after `project()`: C++20, Release unless a build type is given, then those
/// that include cleave's code-generation runtime (BUILD/cleave_codegen_runtime.cmake, cache
/// variables CLEAVE_ROOT and CLEAVE_BUILD defaulting to `options`' folders): targets
/// `cleave_codegen_runtime` and, for rank programs, `cleave_rank_runtime`.
std::string cmake_cleave_library(const CppCodegenOptions& options);
/// Throws Error naming `root` unless it is cleave's source folder: the generated CMake takes
/// the headers the programs include (src/codegen_runtime/static_program.h) from there.
void require_cleave_root(const std::string& root);

/// The graph as the generated program embeds it: its text form with initializer data left
/// out (the weights file holds it). Throws Error when the text does not read back as the
/// same graph.
std::string graph_text_without_weights(const Graph& graph);

/// A C++ string literal holding `text`.
std::string cpp_string_literal(const std::string& text);

}  // namespace cleave
