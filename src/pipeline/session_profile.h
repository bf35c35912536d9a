// A session's profile: its preparations and runs as one Chrome trace (as ONNX Runtime writes).
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "pipeline/session.h"

namespace cleave {

/// Records what a Session does from its creation on: each input shape it prepares (which
/// shapes, how long, which plan) and each run, with the tasks of the run on their workers'
/// rows (chrome_trace_json of the executor's trace). Thread-safe: runs may come from several
/// threads.
class SessionProfiler {
 public:
  SessionProfiler();
  /// Watches the shape's executor and records its preparation. Once per shape, between its
  /// runs (its mutex held).
  void watch(PreparedShape& shape);
  /// Records one call of Session::run from `start` to `end` ("model_run").
  void record_run(std::chrono::steady_clock::time_point start,
                  std::chrono::steady_clock::time_point end);
  /// The profile so far: Chrome trace-event JSON.
  std::string json() const;
  /// Writes json() to `path` atomically.
  void write(const std::string& path) const;

  struct State;  ///< Shared with the observers it adds to executors (defined in the .cc).

 private:
  std::shared_ptr<State> state_;
};

}  // namespace cleave
