// `cleave split`'s driver: checks, load, the split choice, the folder written whole, the report.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace cleave {

/// What `cleave split` (and Python's cleave.split) was asked to do.
struct ModelSplitSettings {
  std::string model;
  int nodes = 0;
  std::string dim = "h";
  std::string speeds;
  bool speeds_given = false;
  std::string config;
  std::string machine;
  bool search = false;
  std::string objective = "terms";
  std::string costs = "analytical";
  std::vector<std::string> shapes;
  std::string output;
  std::string dot;
  std::string svg;
  bool no_fuse = false;
  bool force = false;
  double link_gbits = 1;
  int fuse_depth = 0;
};

/// What a split wrote: the report (as `--json` prints it) and its text form.
struct ModelSplit {
  nlohmann::json report;
  std::string text;
};

/// Checks every option and output first, loads the model, chooses the split (shares, search,
/// dims) and writes the folder (whole or not at all) and the pictures. Errors name the option,
/// file or node.
ModelSplit split_model_to_folder(const ModelSplitSettings& settings);

}  // namespace cleave
