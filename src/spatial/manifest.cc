// Manifest: segments and steps from the partitioned graph, JSON writing and checked reading.
#include "spatial/manifest.h"

#include <fmt/core.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "onnx/extract.h"
#include "support/json_file.h"
#include "support/limits.h"

namespace cleave {

SplitManifest make_manifest(const PartitionedGraph& split) {
  const Graph& g = split.graph;
  SplitManifest manifest;
  manifest.machines = split.machines;
  manifest.steps.resize(split.machines);
  for (ValueId in : g.inputs())
    manifest.inputs.push_back({g.value(in).name, g.value(in).dtype, g.value(in).shape.sizes()});
  for (ValueId out : g.outputs())
    manifest.outputs.push_back({g.value(out).name, g.value(out).dtype, g.value(out).shape.sizes()});
  std::map<NodeId, const SplitTransfer*> transfer_of;
  for (const SplitTransfer& t : split.transfers) transfer_of[t.slice] = &t;
  std::vector<std::vector<NodeId>> open(split.machines);
  std::vector<int> segments(split.machines, 0);
  auto close = [&](int m) {
    if (open[m].empty()) return;
    ManifestStep run;
    run.kind = ManifestStep::Kind::kRun;
    run.model = "m" + std::to_string(m) + "_s" + std::to_string(segments[m]++) + ".onnx";
    run.nodes = open[m];
    Graph sub = extract_subgraph(g, open[m]);
    for (ValueId v : sub.inputs()) run.inputs.push_back(sub.value(v).name);
    for (ValueId v : sub.outputs()) run.outputs.push_back(sub.value(v).name);
    manifest.steps[m].push_back(std::move(run));
    open[m].clear();
  };
  int tag = 0;
  for (NodeId id : g.topological_order()) {
    auto it = transfer_of.find(id);
    if (it == transfer_of.end()) {
      open[split.machine[id]].push_back(id);
      continue;
    }
    const SplitTransfer& t = *it->second;
    close(t.from);
    close(t.to);
    ManifestStep send;
    send.kind = ManifestStep::Kind::kSend;
    send.peer = t.to;
    send.tensor = g.value(t.source).name;
    send.region = t.region;
    send.name = g.value(t.piece).name;
    send.dtype = g.value(t.piece).dtype;
    send.shape = box_sizes(t.region);
    send.bytes = t.bytes;
    send.tag = tag++;
    ManifestStep recv = send;
    recv.kind = ManifestStep::Kind::kRecv;
    recv.peer = t.from;
    recv.tensor.clear();
    recv.region.clear();
    manifest.steps[t.from].push_back(send);
    manifest.steps[t.to].push_back(recv);
  }
  for (int m = 0; m < split.machines; ++m) close(m);
  return manifest;
}

std::string manifest_dtype_name(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat:
      return "float32";
    case DataType::kFloat16:
      return "float16";
    case DataType::kDouble:
      return "float64";
    case DataType::kInt8:
      return "int8";
    case DataType::kUInt8:
      return "uint8";
    case DataType::kInt32:
      return "int32";
    case DataType::kInt64:
      return "int64";
    case DataType::kBool:
      return "bool";
    default:
      throw Error("split manifest: unsupported tensor type " + std::string(dtype_name(dtype)));
  }
}

namespace {

// The largest byte count of one transfer (a pebibyte): far beyond any tensor, and small enough
// that element counts times element sizes cannot overflow on the way.
constexpr int64_t kMaxTransferBytes = int64_t{1} << 50;

DataType parse_dtype(const JsonField& field) {
  const std::string name = field.string();
  for (DataType t : {DataType::kFloat, DataType::kFloat16, DataType::kDouble, DataType::kInt8,
                     DataType::kUInt8, DataType::kInt32, DataType::kInt64, DataType::kBool})
    if (manifest_dtype_name(t) == name) return t;
  field.fail("one of float32, float16, float64, int8, uint8, int32, int64, bool");
}

nlohmann::json tensor_json(const ManifestTensor& t) {
  return {{"name", t.name}, {"dtype", manifest_dtype_name(t.dtype)}, {"shape", t.shape}};
}

std::vector<int64_t> shape_of(const JsonField& field) {
  std::vector<int64_t> shape;
  for (std::size_t d = 0; d < field.size(); ++d)
    shape.push_back(field.at(d).integer(0, kMaxTransferBytes));
  return shape;
}

std::vector<std::string> names_of(const JsonField& field) {
  std::vector<std::string> names;
  for (std::size_t i = 0; i < field.size(); ++i) names.push_back(field.at(i).string());
  return names;
}

ManifestTensor tensor_of(const JsonField& field) {
  return {field.at("name").string(), parse_dtype(field.at("dtype")), shape_of(field.at("shape"))};
}

// Bytes of `shape` elements of `dtype`, or -1 when that exceeds kMaxTransferBytes.
int64_t transfer_bytes(DataType dtype, const std::vector<int64_t>& shape) {
  int64_t bytes = static_cast<int64_t>(element_size(dtype));
  for (int64_t d : shape) {
    if (d != 0 && bytes > kMaxTransferBytes / d) return -1;
    bytes *= d;
  }
  return bytes;
}

ManifestStep run_step_of(const JsonField& field) {
  ManifestStep s;
  s.kind = ManifestStep::Kind::kRun;
  const JsonField model = field.at("model");
  s.model = model.string();
  if (s.model.empty() || s.model.find("..") != std::string::npos || s.model[0] == '/')
    model.fail("a file name inside the split folder");
  s.inputs = names_of(field.at("inputs"));
  s.outputs = names_of(field.at("outputs"));
  return s;
}

ManifestStep transfer_step_of(const JsonField& field, bool send, int machine, int machines) {
  ManifestStep s;
  s.kind = send ? ManifestStep::Kind::kSend : ManifestStep::Kind::kRecv;
  const JsonField peer = field.at(send ? "to" : "from");
  s.peer = static_cast<int>(peer.integer(0, machines - 1));
  if (s.peer == machine) peer.fail(fmt::format("a machine other than {} itself", machine));
  s.name = field.at("name").string();
  s.dtype = parse_dtype(field.at("dtype"));
  s.shape = shape_of(field.at("shape"));
  const JsonField bytes = field.at("bytes");
  s.bytes = bytes.integer(0, kMaxTransferBytes);
  s.tag = static_cast<int>(field.at("tag").integer(0, 1 << 30));
  if (send) {
    s.tensor = field.at("tensor").string();
    const JsonField region = field.at("region");
    if (region.size() != s.shape.size())
      region.fail(fmt::format("one [begin, end) per dimension of shape ({})", s.shape.size()));
    for (std::size_t d = 0; d < s.shape.size(); ++d) {
      const JsonField pair = region.at(d);
      if (pair.size() != 2) pair.fail("[begin, end)");
      const int64_t begin = pair.at(std::size_t{0}).integer(0, kMaxTransferBytes);
      const int64_t end = pair.at(1).integer(0, kMaxTransferBytes);
      if (end - begin != s.shape[d])
        pair.fail(fmt::format("[begin, end) with end - begin = shape[{}] = {}", d, s.shape[d]));
      s.region.push_back({begin, end});
    }
  }
  const int64_t expected = transfer_bytes(s.dtype, s.shape);
  if (expected != s.bytes) {
    bytes.fail(expected < 0 ? fmt::format("at most {} bytes", kMaxTransferBytes)
                            : fmt::format("{} (shape x element size of {})", expected,
                                          manifest_dtype_name(s.dtype)));
  }
  return s;
}

// Every tag names one send and one receive: between the same two machines, of the same value.
void check_transfers(const SplitManifest& m, const JsonField& steps) {
  struct Ends {
    const ManifestStep* send = nullptr;
    const ManifestStep* recv = nullptr;
    int send_machine = -1, recv_machine = -1;
  };
  std::map<int, Ends> by_tag;
  for (int r = 0; r < m.machines; ++r) {
    for (std::size_t k = 0; k < m.steps[r].size(); ++k) {
      const ManifestStep& s = m.steps[r][k];
      if (s.kind == ManifestStep::Kind::kRun) continue;
      const bool send = s.kind == ManifestStep::Kind::kSend;
      Ends& ends = by_tag[s.tag];
      const ManifestStep*& slot = send ? ends.send : ends.recv;
      if (slot) {
        steps.at(r).at(k).at("tag").fail(
            fmt::format("a tag no other {} uses", send ? "send" : "recv"));
      }
      slot = &s;
      (send ? ends.send_machine : ends.recv_machine) = r;
    }
  }
  for (const auto& [tag, ends] : by_tag) {
    if (!ends.send) {
      throw Error(fmt::format("{}: the recv with tag {} (machine {} from {}) has no matching send",
                              steps.where(), tag, ends.recv_machine, ends.recv->peer));
    }
    if (!ends.recv) {
      throw Error(fmt::format("{}: the send with tag {} (machine {} to {}) has no matching recv",
                              steps.where(), tag, ends.send_machine, ends.send->peer));
    }
    const ManifestStep& send = *ends.send;
    const ManifestStep& recv = *ends.recv;
    if (recv.peer != ends.send_machine || send.peer != ends.recv_machine ||
        send.name != recv.name || send.dtype != recv.dtype || send.shape != recv.shape) {
      throw Error(fmt::format(
          "{}: the send with tag {} (machine {} to {}) and its recv (machine {} from {}) disagree "
          "on the machines, the name, the dtype or the shape",
          steps.where(), tag, ends.send_machine, send.peer, ends.recv_machine, recv.peer));
    }
  }
}

}  // namespace

nlohmann::json manifest_to_json(const SplitManifest& m) {
  nlohmann::json json;
  json["format"] = "cleave-split";
  json["version"] = 1;
  json["model"] = m.model;
  json["fingerprint"] = m.fingerprint;
  json["machines"] = m.machines;
  json["inputs"] = nlohmann::json::array();
  for (const auto& t : m.inputs) json["inputs"].push_back(tensor_json(t));
  json["outputs"] = nlohmann::json::array();
  for (const auto& t : m.outputs) {
    auto j = tensor_json(t);
    j["machine"] = 0;
    json["outputs"].push_back(j);
  }
  json["steps"] = nlohmann::json::array();
  for (const auto& steps : m.steps) {
    nlohmann::json list = nlohmann::json::array();
    for (const ManifestStep& s : steps) {
      nlohmann::json j;
      if (s.kind == ManifestStep::Kind::kRun) {
        j = {{"op", "run"}, {"model", s.model}, {"inputs", s.inputs}, {"outputs", s.outputs}};
      } else {
        const bool send = s.kind == ManifestStep::Kind::kSend;
        j["op"] = send ? "send" : "recv";
        j[send ? "to" : "from"] = s.peer;
        if (send) {
          j["tensor"] = s.tensor;
          nlohmann::json region = nlohmann::json::array();
          for (const Interval& i : s.region) region.push_back({i.begin, i.end});
          j["region"] = region;
        }
        j["name"] = s.name;
        j["dtype"] = manifest_dtype_name(s.dtype);
        j["shape"] = s.shape;
        j["bytes"] = s.bytes;
        j["tag"] = s.tag;
      }
      list.push_back(j);
    }
    json["steps"].push_back(list);
  }
  return json;
}

SplitManifest manifest_from_json(const nlohmann::json& json, const std::string& origin) {
  const JsonField root(json, origin);
  const JsonField format = root.at("format");
  if (format.string() != "cleave-split") format.fail("\"cleave-split\"");
  root.at("version").integer(1, 1);
  SplitManifest m;
  m.model = root.at("model").string();
  m.fingerprint = root.at("fingerprint").string();
  m.machines = static_cast<int>(root.at("machines").integer(1, kMaxWorkers));
  const JsonField inputs = root.at("inputs");
  for (std::size_t i = 0; i < inputs.size(); ++i) m.inputs.push_back(tensor_of(inputs.at(i)));
  const JsonField outputs = root.at("outputs");
  // A split of nothing runs, computes nothing and leaves an empty output folder.
  if (outputs.size() == 0) outputs.fail("at least one output");
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const JsonField output = outputs.at(i);
    m.outputs.push_back(tensor_of(output));
    if (auto machine = output.find("machine")) machine->integer(0, 0);
  }
  const JsonField steps = root.at("steps");
  if (steps.size() != static_cast<std::size_t>(m.machines))
    steps.fail(fmt::format("{} step lists, one per machine", m.machines));
  m.steps.resize(m.machines);
  for (int r = 0; r < m.machines; ++r) {
    const JsonField list = steps.at(r);
    for (std::size_t k = 0; k < list.size(); ++k) {
      const JsonField step = list.at(k);
      const JsonField op = step.at("op");
      const std::string name = op.string();
      if (name == "run") {
        m.steps[r].push_back(run_step_of(step));
      } else if (name == "send" || name == "recv") {
        m.steps[r].push_back(transfer_step_of(step, name == "send", r, m.machines));
      } else {
        op.fail("\"run\", \"send\" or \"recv\"");
      }
    }
  }
  check_transfers(m, steps);
  return m;
}

SplitManifest read_manifest(const std::string& path) {
  return manifest_from_json(read_json_file(path, "split manifest"), path);
}

std::string file_fingerprint(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot read the model to fingerprint it");
  uint64_t h = 1469598103934665603ull;
  char buffer[1 << 16];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
    for (std::streamsize i = 0; i < in.gcount(); ++i) {
      h ^= static_cast<unsigned char>(buffer[i]);
      h *= 1099511628211ull;
    }
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return std::string("fnv1a64:") + hex;
}

SplitFolderFiles split_folder_files(const std::string& folder) {
  const auto file = [&](const char* name) {
    const std::filesystem::path path = std::filesystem::path(folder) / name;
    if (!std::filesystem::is_regular_file(path)) {
      throw Error(fmt::format("{}: not a split folder (no {}; write one with `cleave split`)",
                              folder, name));
    }
    return path.string();
  };
  return {file("manifest.json"), file("partitioned.onnx"), file("plan.json")};
}

void require_split_of(const SplitManifest& manifest, const std::string& folder,
                      const std::string& model) {
  const std::string fingerprint = file_fingerprint(model);
  if (fingerprint != manifest.fingerprint) {
    throw Error(fmt::format(
        "{}: the split was made from another model than {} (fingerprints differ: "
        "{} there, {} in the manifest)",
        folder, model, fingerprint, manifest.fingerprint.empty() ? "none" : manifest.fingerprint));
  }
}

}  // namespace cleave
