// Static schedules of stream programs: repetition vector, initialisation, channel buffers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "stream/stream_ir.h"

namespace cleave {

enum class StreamNodeKind { kFilter, kSplitter, kJoiner };

/// One actor of the flattened stream graph: a filter, or the splitter / joiner of a
/// split-join (named "<splitjoin>.split" and "<splitjoin>.join").
struct StreamNode {
  StreamNodeKind kind = StreamNodeKind::kFilter;
  std::string name;
  const Stream* stream = nullptr;  ///< The filter, or the split-join of a splitter/joiner.
  std::vector<int> inputs;         ///< Channel per input port.
  std::vector<int> outputs;        ///< Channel per output port.
  std::vector<int64_t> pop;        ///< Per input port.
  std::vector<int64_t> peek;       ///< Per input port.
  std::vector<int64_t> push;       ///< Per output port.
};

/// A FIFO between two actors; -1 stands for the program's input or output.
struct StreamChannel {
  std::string name;  ///< "producer->consumer" (the ends are "input"/"output").
  int from = -1;
  int from_port = 0;
  int to = -1;
  int to_port = 0;
};

/// The stream tree flattened into actors and channels (a DAG, since there are no loops).
struct StreamGraph {
  std::vector<StreamNode> nodes;  ///< In a topological order.
  std::vector<StreamChannel> channels;
  int input_channel = -1;   ///< Channel fed by the program input.
  int output_channel = -1;  ///< Channel read as the program output.
};

StreamGraph flatten_stream(const Stream& root);

struct StreamSchedule {
  std::vector<int64_t> repetitions;    ///< Per node: firings per steady-state iteration.
  std::vector<int64_t> init;           ///< Per node: firings before the steady state.
  std::vector<int64_t> buffers;        ///< Per channel: items it must hold.
  std::vector<int64_t> initial_items;  ///< Per channel: items left on it after init.
  int64_t input_per_iteration = 0;     ///< Program input items one steady-state iteration pops.
  int64_t output_per_iteration = 0;    ///< Program output items it pushes.
  int64_t input_for_init = 0;          ///< Program input items the init schedule consumes.
};

/// Solves the balance equations exactly (rationals with overflow checks) for the minimal
/// positive integer repetition vector, then the init schedule that fills every peek window.
/// Inconsistent rates and joiner weights that cannot match their branches are Errors naming
/// `origin`, the streams and their rates.
StreamSchedule schedule_stream(const StreamGraph& graph, const std::string& origin);

/// Firings of one steady-state iteration, all actors together (an Error on overflow).
int64_t iteration_firings(const StreamSchedule& schedule, const std::string& origin);

/// Throws Error naming `origin`, the firings and the input items one steady-state iteration
/// needs when it takes more than kMaxIterationFirings firings: such a program cannot finish
/// an iteration in memory (12 concat filters with prime pops need 7.4e12 items).
void require_bounded_iteration(const StreamSchedule& schedule, const std::string& origin);

/// The thesis's closed-form rates of a stream (Eqs. 2.1-2.5): filters their own rates,
/// pipelines products of peeks and pushes, duplicate split-joins an LCM; round-robin
/// split-joins have no closed form there (nullopt).
struct ClosedFormRates {
  std::string name;
  std::optional<int64_t> pop, peek, push;
};
std::vector<ClosedFormRates> closed_form_rates(const Stream& root);

/// The schedule as JSON: {"repetitions": {...}, "init": {...}, "buffers": {...}, ...}.
std::string schedule_to_json(const StreamGraph& graph, const StreamSchedule& schedule,
                             const std::vector<ClosedFormRates>& closed_forms);

}  // namespace cleave
