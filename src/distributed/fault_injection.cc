// CLEAVE_FAULT: reading the test hook and acting on it.
#include "distributed/fault_injection.h"

#include <fmt/core.h>

#include <csignal>
#include <cstdlib>
#include <sstream>

#include "ir/graph.h"

namespace cleave {

FaultInjection FaultInjection::from_environment(int this_rank) {
  FaultInjection fault;
  const char* text = std::getenv("CLEAVE_FAULT");
  if (!text || !*text) return fault;
  std::stringstream parts(text);
  std::string part;
  int rank = -1;
  while (std::getline(parts, part, ',')) {
    auto equals = part.find('=');
    std::string key = part.substr(0, equals);
    std::string value = equals == std::string::npos ? "" : part.substr(equals + 1);
    try {
      if (key == "rank") {
        rank = std::stoi(value);
      } else if (key == "run") {
        fault.run = std::stoll(value);
      } else if (key == "task") {
        fault.task = std::stoi(value);
      } else if (key == "action") {
        fault.action = value;
      } else {
        throw Error("");
      }
    } catch (const std::exception&) {
      throw Error(
          fmt::format("CLEAVE_FAULT '{}': bad field '{}' (expected "
                      "rank=R,run=K,task=T,action=kill|stop|bad-dtype|bad-shape|short)",
                      text, part));
    }
  }
  if (fault.action != "kill" && fault.action != "stop" && fault.action != "bad-dtype" &&
      fault.action != "bad-shape" && fault.action != "short") {
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
