// What every bug report needs: cleave's build, oneDNN's version, the ISA and the cores.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace cleave::cli {

/// The instruction set in use: oneDNN's effective ISA, the CPU's own, the cap, cleave's vector
/// path and the channel block of the blocked layouts.
nlohmann::json isa_json();

/// The build and the machine: version, commit (when the build knew it), build type, compiler,
/// oneDNN version, isa_json(), CPU model, cores and OpenMP threads.
nlohmann::json build_info_json();

/// build_info_json() as aligned "name: value" lines.
std::string build_info_text();

/// One line for `cleave --version`: version, commit, oneDNN, effective ISA.
std::string version_line();

}  // namespace cleave::cli
