// `cleave stream run`'s driver: a model cut into stages runs through the Session; a stream
// program (or a model converted filter by filter) is planned and executed by run_stream.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pipeline/stream_model.h"
#include "stream/stream_io.h"
#include "support/atomic_output.h"

namespace cleave {

/// What `cleave stream run` was asked to do (its options).
struct StreamRunSettings {
  std::string program;  ///< A stream program file or an ONNX model.
  StreamInputFiles inputs;
  StreamSourceOptions source;  ///< How a model becomes a program (stages, shapes, ...).
  int workers = 1;
  int64_t capacity_factor = 2;
  std::string placement = "balanced";
  std::string costs = "measured";
  std::vector<std::string> fission;
  std::string trace_file;  ///< Empty: no trace.
};

/// The run's report, as `--json` and as text print it.
struct StreamRunReport {
  std::string json;
  std::string text;
};

/// Runs the items through the program and writes the trace and (into `output_folder`, may be
/// null, committed here) output.npy. A model with `source.stages` > 0 and no fission is a
/// Session's pipeline plan: one loader, the stage executor, the pipeline's trace writer; its
/// report adds the run report's fields (run_report.h) to the stream report's.
StreamRunReport run_stream_settings(const StreamRunSettings& settings, AtomicFolder* output_folder);

}  // namespace cleave
