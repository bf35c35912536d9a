// The engine's session: one model loaded once, prepared per input shape, run many times.
#pragma once

#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "frontend/load.h"
#include "ir/graph.h"
#include "pipeline/plan_and_run.h"

namespace cleave {

/// How a session loads, plans and runs its model.
struct SessionOptions {
  /// How the model is loaded. `load.shapes` fixes input dims once for every run; dims left
  /// symbolic are fixed per run by the shapes of the inputs given (load.require_static_inputs
  /// is not read).
  LoadOptions load;
  /// How each input shape is planned and run: a strategy ("auto" among them) or a plan file,
  /// threads, layouts, the auto check. `recipe.inputs` gives the sample inputs that the layout
  /// choice and the auto check time (seeded random values of the shape when empty).
  RunRecipe recipe;
  /// Input shapes kept prepared at once; past it the least recently run one is dropped.
  std::size_t max_prepared_shapes = 8;
};

/// One input shape made ready: the graph specialised to it, its plan and executor.
struct PreparedShape {
  InputShapes shapes;  ///< The dims the session fixed for it (symbolic inputs only).
  PreparedRun run;
  double prepare_seconds = 0;
  std::mutex mutex;  ///< Held while its executor runs: one run at a time per shape.
};

/// Something a session did besides running, for logs and profiles.
struct SessionEvent {
  std::string what;  ///< "prepared x=[4,3,224,224]"
  double seconds = 0;
};

/// A model loaded once: `load → specialise to an input shape → optimise → costs → plan → executor`
/// happens per input shape (cached), then runs reuse it. Every command that runs a model and the
/// Python module hold one. Runs may come from several threads at once: preparing is serialised,
/// and so are runs of one prepared shape.
class Session {
 public:
  /// Imports and verifies the model file, and fixes `options.load.shapes`; plans nothing yet.
  /// Errors name the file and the input or node concerned.
  Session(const std::string& path, SessionOptions options);
  /// The same for a model held in memory; `origin` names it in errors.
  static std::unique_ptr<Session> from_bytes(std::string_view bytes, const std::string& origin,
                                             SessionOptions options);

  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  /// The model as imported: its inputs and outputs as declared (symbolic dims kept, except
  /// those `load.shapes` fixed). Once a model whose inputs are all static is prepared, its
  /// weights' bytes and its nodes are gone from here (the executor holds its own graph); the
  /// inputs' and outputs' names, shapes and types and the model's metadata stay.
  const Graph& model() const { return model_; }
  const std::string& origin() const { return origin_; }
  /// The recipe of shapes prepared from now on (a command fits threads to the host first).
  RunRecipe& recipe() { return options_.recipe; }

  /// The dims a feed fixes: the shapes of the given inputs that the model leaves symbolic.
  /// Throws Error naming the input for an unknown name, a wrong rank or a contradicted dim.
  InputShapes shapes_of(const SampleInputs& inputs) const;
  /// The prepared run for these dims (from shapes_of), prepared now when not cached.
  std::shared_ptr<PreparedShape> prepare(const InputShapes& shapes);
  /// Runs one sample on the prepared run of its shapes; returns the graph outputs in order.
  /// Errors name the model.
  std::vector<Tensor> run(const SampleInputs& inputs);

  /// What the session did besides running, oldest first.
  std::vector<SessionEvent> events() const;
  /// Input shapes prepared now.
  std::size_t prepared_count() const;

 private:
  struct FromGraph {};
  Session(FromGraph, Graph model, std::string origin, SessionOptions options);
  void fix_load_shapes();

  std::string origin_;
  SessionOptions options_;
  Graph model_;
  bool every_input_static_ = false;
  mutable std::mutex mutex_;
  std::list<std::shared_ptr<PreparedShape>> prepared_;  // Most recently run first.
  std::vector<SessionEvent> events_;
};

/// "x=[4,3,224,224] y=[4]" for logs and errors.
std::string describe_shapes(const InputShapes& shapes);

}  // namespace cleave
