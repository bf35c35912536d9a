// `cleave info`: the build, oneDNN's version, the instruction set in use and the cores.
#include <fmt/core.h>

#include <nlohmann/json.hpp>

#include "cli/build_info.h"
#include "cli/commands.h"
#include "cost/hand_off_calibration.h"
#include "distributed/send_cost.h"

namespace cleave::cli {

void register_info(CLI::App& app, CommandAction& action) {
  auto* command = app.add_subcommand(
      "info",
      "Print cleave's version and build, oneDNN's version, the instruction set in use "
      "(ONEDNN_MAX_CPU_ISA caps it), the CPU, its cores and the OpenMP threads: what a bug "
      "report needs");
  auto json = std::make_shared<bool>(false);
  auto hand_off = std::make_shared<bool>(false);
  auto send_cost = std::make_shared<bool>(false);
  command->add_flag("--json", *json, "Print one JSON object instead of lines");
  command->add_flag("--hand-off", *hand_off,
                    "Also the host's hand-off costs between worker threads that plans are priced "
                    "with: cached with the peak rates, else measured now (well under a second)");
  command->add_flag("--send-cost", *send_cost,
                    "Only cleave's own cost per message a rank sends (header, datatype, posting "
                    "and MPI's part), measured on its hand-off between ranks 0 and 1: run under "
                    "`mpirun -np 2`; the link model's send_seconds (bench/distributed/"
                    "link_machine.py)");
  command->callback([&action, json, hand_off, send_cost] {
    action = [json, hand_off, send_cost] {
      if (*send_cost) return print_send_cost(*json);
      if (*json) {
        nlohmann::json info = build_info_json();
        if (*hand_off) info["hand_off"] = host_hand_off_json();
        fmt::print("{}\n", info.dump(2));
      } else {
        fmt::print("{}", build_info_text());
        if (*hand_off) {
          const HostLinks links = host_links_from_json(host_hand_off_json(), "host hand-off");
          fmt::print("{:<15} {}\n", "hand-off:", host_links_text(links));
        }
      }
      return 0;
    };
  });
}

}  // namespace cleave::cli
