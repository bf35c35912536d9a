// Reading the CPU's model name and family from /proc/cpuinfo.
#include "runtime/cpu_model.h"

#include <fstream>

namespace cleave {

CpuModel cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  CpuModel model;
  auto value = [](const std::string& text) {
    const std::size_t colon = text.find(':');
    return colon == std::string::npos || colon + 2 > text.size() ? std::string()
                                                                 : text.substr(colon + 2);
  };
  while (std::getline(in, line) && (model.name.empty() || model.family.empty())) {
    if (model.name.empty() && line.rfind("model name", 0) == 0) model.name = value(line);
    if (model.family.empty() && line.rfind("cpu family", 0) == 0) model.family = value(line);
  }
  return model;
}

}  // namespace cleave
