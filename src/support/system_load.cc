// procs_running from /proc/stat.
#include "support/system_load.h"

#include <fstream>
#include <string>

namespace cleave {

int procs_running() {
  std::ifstream stat("/proc/stat");
  std::string key;
  while (stat >> key) {
    if (key == "procs_running") {
      int count = -1;
      stat >> count;
      return count;
    }
    stat.ignore(1 << 20, '\n');
  }
  return -1;
}

}  // namespace cleave
