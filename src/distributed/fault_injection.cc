// CLEAVE_FAULT: reading the test hook and acting on it.
#include "distributed/fault_injection.h"

#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <csignal>
#include <cstdlib>
#include <limits>
#include <set>

#include "ir/graph.h"

namespace cleave {

namespace {

constexpr const char* kFaultForm =
    "rank=R,run=K,task=T,action=kill|stop|bad-dtype|bad-shape|short|bad-split[,message=M]";

// The whole of `value` as an integer in [0, maximum]: "1abc", "", "+1" or "1e3" are no number.
int64_t fault_number(const std::string& text, const std::string& key, const std::string& value,
                     int64_t maximum) {
  int64_t number = -1;
  const char* end = value.data() + value.size();
  const auto [stop, error] = std::from_chars(value.data(), end, number);
  if (value.empty() || error != std::errc() || stop != end || number < 0 || number > maximum) {
    throw Error(fmt::format("CLEAVE_FAULT '{}': {}: expected an integer from 0 to {}, got '{}'",
                            text, key, maximum, value));
  }
  return number;
}

}  // namespace

FaultInjection FaultInjection::from_environment(int this_rank) {
  FaultInjection fault;
  const char* variable = std::getenv("CLEAVE_FAULT");
  if (!variable || !*variable) return fault;
  const std::string text(variable);
  std::set<std::string> seen;
  int rank = -1;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const std::size_t comma = std::min(text.find(',', begin), text.size());
    const std::string part = text.substr(begin, comma - begin);
    begin = comma + 1;
    const std::size_t equals = part.find('=');
    const std::string key = part.substr(0, equals);
    if (equals == std::string::npos ||
        (key != "rank" && key != "run" && key != "task" && key != "action" && key != "message")) {
      throw Error(
          fmt::format("CLEAVE_FAULT '{}': bad field '{}' (expected {})", text, part, kFaultForm));
    }
    if (!seen.insert(key).second)
      throw Error(fmt::format("CLEAVE_FAULT '{}': {} is given twice", text, key));
    const std::string value = part.substr(equals + 1);
    if (key == "rank") {
      rank = static_cast<int>(fault_number(text, key, value, std::numeric_limits<int>::max()));
    } else if (key == "run") {
      fault.run = fault_number(text, key, value, std::numeric_limits<int64_t>::max());
    } else if (key == "message") {
      fault.message = fault_number(text, key, value, std::numeric_limits<int64_t>::max());
    } else if (key == "task") {
      fault.task =
          static_cast<int>(fault_number(text, key, value, std::numeric_limits<int>::max()));
    } else {
      fault.action = value;
    }
  }
  if (!seen.count("rank") || !seen.count("action")) {
    throw Error(
        fmt::format("CLEAVE_FAULT '{}': needs rank and action (expected {})", text, kFaultForm));
  }
  if (fault.action != "kill" && fault.action != "stop" && fault.action != "bad-dtype" &&
      fault.action != "bad-shape" && fault.action != "short" && fault.action != "bad-split") {
    throw Error(fmt::format("CLEAVE_FAULT '{}': unknown action '{}'", text, fault.action));
  }
  if (rank == this_rank) fault.rank = rank;
  return fault;
}

void FaultInjection::before_task(int64_t current_run, int slot) const {
  if (rank < 0 || current_run != run || slot != task) return;
  if (action == "kill") std::raise(SIGKILL);
  if (action == "stop") std::raise(SIGSTOP);
}

void FaultInjection::corrupt(MessageHeader& header, std::size_t& payload_bytes) {
  if (rank < 0 || corrupted || header.run < run) return;
  if (action == "bad-dtype" || action == "bad-shape" || action == "short") {
    if (message > 0) {
      --message;
      return;
    }
  }
  if (action == "bad-dtype") {
    header.dtype = static_cast<int32_t>(header.dtype == static_cast<int32_t>(DataType::kInt32)
                                            ? DataType::kFloat
                                            : DataType::kInt32);
  } else if (action == "bad-shape") {
    if (header.rank > 0) header.dims[header.rank - 1] += 1;
  } else if (action == "short") {
    payload_bytes = payload_bytes >= 4 ? payload_bytes - 4 : 0;
  } else {
    return;
  }
  corrupted = true;
}

}  // namespace cleave
