// A program matches a model when one of its model filters names the same ONNX file (or bytes).
#include "codegen/stream_model_check.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "ir/graph.h"

namespace cleave {

namespace {

namespace fs = std::filesystem;

bool same_file(const fs::path& a, const fs::path& b) {
  std::error_code error;
  if (fs::equivalent(a, b, error)) return true;
  if (fs::file_size(a, error) != fs::file_size(b, error) || error) return false;
  std::ifstream x(a, std::ios::binary), y(b, std::ios::binary);
  std::ostringstream xs, ys;
  xs << x.rdbuf();
  ys << y.rdbuf();
  return x && y && xs.str() == ys.str();
}

}  // namespace

void check_program_runs_model(const StreamProgram& program, const std::string& program_path,
                              const std::string& model_path) {
  for (const Stream* filter : collect_filters(program.root)) {
    // The emitters give every filter its own input; a value passed by reference would be
    // read from nowhere.
    if (!filter->publishes.empty() || !filter->reads.empty()) {
      throw Error(
          fmt::format("codegen: {}: filter \"{}\" passes a value by reference (\"{}\": \"{}\", as "
                      "`cleave stream --no-replicate` writes); the code generators take replicated "
                      "programs only: convert without --no-replicate",
                      program_path, filter->name, filter->publishes.empty() ? "reads" : "publishes",
                      filter->publishes.empty() ? filter->reads : filter->publishes));
    }
  }
  const fs::path base = fs::path(program_path).parent_path();
  std::vector<std::string> models;
  for (const Stream* filter : collect_filters(program.root)) {
    if (filter->op != FilterOp::kModel) continue;
    if (same_file(base / filter->model, model_path)) return;
    models.push_back("\"" + filter->model + "\"");
  }
  throw Error(fmt::format(
      "codegen: {}: no model filter of this program runs {} (its models: {}); a program for "
      "another model is refused",
      program_path, model_path,
      models.empty() ? std::string("none") : fmt::format("{}", fmt::join(models, ", "))));
}

}  // namespace cleave
