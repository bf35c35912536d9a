// procs_running from /proc/stat; the process's threads from /proc/self/task.
#include "support/system_load.h"

#include <filesystem>
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

int process_threads() {
  std::error_code error;
  int count = 0;
  for (std::filesystem::directory_iterator task("/proc/self/task", error), end;
       !error && task != end; task.increment(error))
    ++count;
  return error ? -1 : count;
}

}  // namespace cleave
