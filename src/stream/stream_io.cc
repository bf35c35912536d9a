// The items a stream run reads from .npy files and the stacked output it writes.
#include "stream/stream_io.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>

#include "runtime/npy.h"
#include "support/error.h"

namespace cleave {

namespace {

// The items of one npy file: its leading axis counts them. They are views of the file's
// buffer, so rows that follow each other need no copy when a filter reads them together.
std::vector<Tensor> items_of(const std::string& file) {
  const Tensor all = read_npy(file);
  if (all.rank() == 0 || all.dim(0) == 0) {
    throw Error(fmt::format("{}: needs a leading axis of items, got {}", file, all.describe()));
  }
  std::vector<int64_t> shape(all.shape().begin() + 1, all.shape().end());
  const std::size_t bytes = all.byte_size() / static_cast<std::size_t>(all.dim(0));
  std::vector<Tensor> items;
  for (int64_t i = 0; i < all.dim(0); ++i) {
    if (all.storage()) {
      const auto base = static_cast<std::size_t>(static_cast<const std::byte*>(all.raw()) -
                                                 all.storage()->data());
      items.push_back(Tensor::view(all.dtype(), shape, all.storage(), base + i * bytes));
    } else {
      Tensor t = Tensor::allocate(all.dtype(), shape);
      std::memcpy(t.raw(), static_cast<const std::byte*>(all.raw()) + i * bytes, bytes);
      items.push_back(std::move(t));
    }
  }
  return items;
}

// --inputs DIR: every NAME.npy in the folder; a model needs one per graph input and no more.
std::map<std::string, std::string> files_in(const std::string& dir, const Graph* graph) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    throw Error(fmt::format("stream run: --inputs {}: not a folder", dir));
  }
  std::map<std::string, std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.is_regular_file() && entry.path().extension() == ".npy") {
      files[entry.path().stem().string()] = entry.path().string();
    }
  }
  if (graph) {
    std::vector<std::string> names;
    for (ValueId id : graph->inputs()) {
      const std::string& name = graph->value(id).name;
      names.push_back(name);
      if (!files.count(name)) {
        throw Error(fmt::format("stream run: --inputs {}: missing {}.npy for graph input \"{}\"",
                                dir, name, name));
      }
    }
    for (const auto& [name, file] : files) {
      if (std::find(names.begin(), names.end(), name) == names.end()) {
        throw Error(fmt::format("stream run: --inputs {}: {} names no graph input (inputs: {})",
                                dir, file, fmt::join(names, ", ")));
      }
    }
  } else if (files.size() != 1) {
    throw Error(fmt::format(
        "stream run: --inputs {}: a stream program has one input, the folder has {} .npy files",
        dir, files.size()));
  }
  return files;
}

}  // namespace

std::vector<Tensor> stream_input_items(const StreamInputFiles& o, const std::string& program,
                                       const Graph* graph) {
  if (o.specs.empty() == o.folder.empty()) {
    throw Error("stream run: give the inputs either as --input NAME=FILE.npy or as --inputs DIR");
  }
  std::map<std::string, std::string> files;
  if (!o.folder.empty()) files = files_in(o.folder, graph);
  for (const auto& [name, file] : input_file_specs(o.specs)) files[name] = file;
  std::vector<std::vector<Tensor>> per_input;
  if (graph) {
    for (ValueId id : graph->inputs()) {
      const std::string& name = graph->value(id).name;
      const auto it = files.find(name);
      if (it == files.end()) {
        throw Error(fmt::format("stream run: {}: no --input {}=FILE.npy for graph input \"{}\"",
                                program, name, name));
      }
      per_input.push_back(items_of(it->second));
    }
  } else {
    if (files.size() != 1) {
      throw Error("stream run: give the program's input once, as --input NAME=FILE.npy");
    }
    per_input.push_back(items_of(files.begin()->second));
  }
  const int64_t available = static_cast<int64_t>(per_input[0].size());
  const int64_t count = o.items > 0 ? o.items : available;
  std::vector<Tensor> items;
  items.reserve(static_cast<std::size_t>(count) * per_input.size());
  for (int64_t i = 0; i < count; ++i) {
    for (const auto& input : per_input) items.push_back(input[i % input.size()]);
  }
  return items;
}

void stage_stream_outputs(AtomicFolder& folder, const StreamRunResult& r) {
  if (r.outputs.empty()) return;
  std::vector<int64_t> shape = r.outputs[0].shape();
  shape.insert(shape.begin(), static_cast<int64_t>(r.outputs.size()));
  Tensor all = Tensor::allocate(r.outputs[0].dtype(), shape);
  auto* dst = static_cast<std::byte*>(all.raw());
  for (const Tensor& t : r.outputs) {
    std::memcpy(dst, t.raw(), t.byte_size());
    dst += t.byte_size();
  }
  write_npy(folder.staging_path("output.npy"), all);
}

}  // namespace cleave
