// `cleave info`: the build, oneDNN's version, the instruction set in use and the cores.
#include <fmt/core.h>

#include <nlohmann/json.hpp>

#include "cli/build_info.h"
#include "cli/commands.h"

namespace cleave::cli {

void register_info(CLI::App& app, CommandAction& action) {
  auto* command = app.add_subcommand(
      "info",
      "Print cleave's version and build, oneDNN's version, the instruction set in use "
      "(ONEDNN_MAX_CPU_ISA caps it), the CPU, its cores and the OpenMP threads: what a bug "
      "report needs");
  auto json = std::make_shared<bool>(false);
  command->add_flag("--json", *json, "Print one JSON object instead of lines");
  command->callback([&action, json] {
    action = [json] {
      if (*json) {
        fmt::print("{}\n", build_info_json().dump(2));
      } else {
        fmt::print("{}", build_info_text());
      }
      return 0;
    };
  });
}

}  // namespace cleave::cli
