// What `cleave stream` prints about a schedule, a converted model and a run, and a run's trace.
#pragma once

#include <string>
#include <vector>

#include "stream/executor.h"
#include "stream/from_graph.h"
#include "stream/schedule.h"
#include "stream/stages.h"
#include "stream/stream_ir.h"

namespace cleave {

/// The schedule as text: actors' repetitions and init firings, channel buffers, closed forms;
/// `seconds` is how long scheduling took.
std::string schedule_report(const StreamProgram& program, const StreamGraph& graph,
                            const StreamSchedule& schedule,
                            const std::vector<ClosedFormRates>& forms, double seconds);

/// One line on a model's conversion (live instructions, filters, replication), and one on
/// the readers `by_reference` placed.
std::string conversion_report(const StreamConversion& conversion, bool by_reference);

/// The stages' nodes, FLOPs and cut tensors, and with stage costs the cost table's prediction.
std::string stages_report(const StagedStream& staged, const std::string& costs);

/// What a run was asked to do, for its report.
struct StreamRunSetup {
  std::string origin;
  std::size_t items = 0;
  int workers = 1;
  std::string placement;
  std::string costs;
};

/// The run's report as JSON (throughput, latency, workers' evidence, the placement per actor).
std::string stream_run_json(const StreamRunSetup& setup, const StreamGraph& graph,
                            const StreamRunResult& result);
/// The same as text, one line per worker with the actors it ran.
std::string stream_run_text(const StreamRunSetup& setup, const StreamGraph& graph,
                            const StreamRunResult& result);

/// Writes every firing as a Chrome trace event to `path`, one row per worker.
void write_stream_trace(const std::string& path, const StreamGraph& graph,
                        const StreamRunResult& result);

}  // namespace cleave
