// Manifest: segments and steps from the partitioned graph, JSON writing and checked reading.
#include "spatial/manifest.h"

#include <cstdio>
#include <fstream>
#include <map>
#include <set>

#include "onnx/extract.h"
#include "support/json_file.h"

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

DataType parse_dtype(const std::string& name, const std::string& where) {
  for (DataType t : {DataType::kFloat, DataType::kFloat16, DataType::kDouble, DataType::kInt8,
                     DataType::kUInt8, DataType::kInt32, DataType::kInt64, DataType::kBool})
    if (manifest_dtype_name(t) == name) return t;
  throw Error(where + ": unknown dtype \"" + name + "\"");
}

nlohmann::json tensor_json(const ManifestTensor& t) {
  return {{"name", t.name}, {"dtype", manifest_dtype_name(t.dtype)}, {"shape", t.shape}};
}

[[noreturn]] void bad(const std::string& where, const std::string& what,
                      const nlohmann::json& got) {
  throw Error(where + ": expected " + what + ", got " + got.dump());
}

const nlohmann::json& field(const nlohmann::json& obj, const char* key, const std::string& where) {
  if (!obj.is_object() || !obj.contains(key))
    throw Error(where + ": missing field \"" + key + "\"");
  return obj.at(key);
}

std::string string_field(const nlohmann::json& obj, const char* key, const std::string& where) {
  const auto& v = field(obj, key, where);
  if (!v.is_string()) bad(where + "." + key, "a string", v);
  return v.get<std::string>();
}

int64_t int_field(const nlohmann::json& obj, const char* key, const std::string& where, int64_t lo,
                  int64_t hi) {
  const auto& v = field(obj, key, where);
  if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi)
    bad(where + "." + key, "an integer in " + std::to_string(lo) + ".." + std::to_string(hi), v);
  return v.get<int64_t>();
}

std::vector<int64_t> shape_field(const nlohmann::json& obj, const char* key,
                                 const std::string& where) {
  const auto& v = field(obj, key, where);
  if (!v.is_array()) bad(where + "." + key, "an array of sizes", v);
  std::vector<int64_t> s;
  for (const auto& d : v) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0)
      bad(where + "." + key, "non-negative integer sizes", v);
    s.push_back(d.get<int64_t>());
  }
  return s;
}

std::vector<std::string> names_field(const nlohmann::json& obj, const char* key,
                                     const std::string& where) {
  const auto& v = field(obj, key, where);
  if (!v.is_array()) bad(where + "." + key, "an array of names", v);
  std::vector<std::string> s;
  for (const auto& d : v) {
    if (!d.is_string()) bad(where + "." + key, "an array of names", v);
    s.push_back(d.get<std::string>());
  }
  return s;
}

ManifestTensor tensor_from(const nlohmann::json& j, const std::string& where) {
  return {string_field(j, "name", where), parse_dtype(string_field(j, "dtype", where), where),
          shape_field(j, "shape", where)};
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
  if (!json.is_object()) throw Error(origin + ": expected a JSON object");
  if (string_field(json, "format", origin) != "cleave-split")
    throw Error(origin + ": format: expected \"cleave-split\"");
  if (int_field(json, "version", origin, 1, 1) != 1) throw Error(origin + ": version");
  SplitManifest m;
  m.model = string_field(json, "model", origin);
  m.fingerprint = string_field(json, "fingerprint", origin);
  m.machines = static_cast<int>(int_field(json, "machines", origin, 1, 1 << 16));
  for (const char* key : {"inputs", "outputs"}) {
    const auto& list = field(json, key, origin);
    if (!list.is_array()) bad(origin + "." + key, "an array", list);
    for (std::size_t i = 0; i < list.size(); ++i) {
      auto t = tensor_from(list[i], origin + "." + key + "[" + std::to_string(i) + "]");
      (std::string(key) == "inputs" ? m.inputs : m.outputs).push_back(t);
    }
  }
  const auto& steps = field(json, "steps", origin);
  if (!steps.is_array() || static_cast<int>(steps.size()) != m.machines)
    bad(origin + ".steps", "one step list per machine", steps.is_array() ? steps.size() : 0);
  std::map<int, std::pair<const ManifestStep*, const ManifestStep*>> by_tag;
  m.steps.resize(m.machines);
  for (int r = 0; r < m.machines; ++r) {
    if (!steps[r].is_array())
      bad(origin + ".steps[" + std::to_string(r) + "]", "an array", steps[r]);
    for (std::size_t k = 0; k < steps[r].size(); ++k) {
      const std::string where =
          origin + ".steps[" + std::to_string(r) + "][" + std::to_string(k) + "]";
      const auto& j = steps[r][k];
      ManifestStep s;
      const std::string op = string_field(j, "op", where);
      if (op == "run") {
        s.kind = ManifestStep::Kind::kRun;
        s.model = string_field(j, "model", where);
        if (s.model.empty() || s.model.find("..") != std::string::npos || s.model[0] == '/')
          bad(where + ".model", "a file name inside the split folder", j["model"]);
        s.inputs = names_field(j, "inputs", where);
        s.outputs = names_field(j, "outputs", where);
      } else if (op == "send" || op == "recv") {
        const bool send = op == "send";
        s.kind = send ? ManifestStep::Kind::kSend : ManifestStep::Kind::kRecv;
        s.peer = static_cast<int>(int_field(j, send ? "to" : "from", where, 0, m.machines - 1));
        if (s.peer == r) throw Error(where + ": a machine cannot send to itself");
        s.name = string_field(j, "name", where);
        s.dtype = parse_dtype(string_field(j, "dtype", where), where);
        s.shape = shape_field(j, "shape", where);
        s.bytes = int_field(j, "bytes", where, 0, int64_t{1} << 50);
        s.tag = static_cast<int>(int_field(j, "tag", where, 0, 1 << 30));
        if (send) {
          s.tensor = string_field(j, "tensor", where);
          const auto& region = field(j, "region", where);
          if (!region.is_array() || region.size() != s.shape.size())
            bad(where + ".region", "one [begin, end) per dimension of shape", region);
          for (std::size_t d = 0; d < region.size(); ++d) {
            const auto& p = region[d];
            if (!p.is_array() || p.size() != 2 || !p[0].is_number_integer() ||
                !p[1].is_number_integer() || p[0].get<int64_t>() < 0 ||
                p[1].get<int64_t>() - p[0].get<int64_t>() != s.shape[d])
              bad(where + ".region[" + std::to_string(d) + "]",
                  "[begin, end) with end - begin = shape[" + std::to_string(d) + "]", p);
            s.region.push_back({p[0].get<int64_t>(), p[1].get<int64_t>()});
          }
        }
        int64_t count = 1;
        for (int64_t d : s.shape) count *= d;
        if (s.bytes != count * static_cast<int64_t>(element_size(s.dtype)))
          bad(where + ".bytes", "shape × element size", j["bytes"]);
      } else {
        bad(where + ".op", "\"run\", \"send\" or \"recv\"", j["op"]);
      }
      m.steps[r].push_back(std::move(s));
    }
  }
  for (int r = 0; r < m.machines; ++r) {
    for (const ManifestStep& s : m.steps[r]) {
      if (s.kind == ManifestStep::Kind::kRun) continue;
      auto& slot = by_tag[s.tag];
      (s.kind == ManifestStep::Kind::kSend ? slot.first : slot.second) = &s;
    }
  }
  for (const auto& [tag, pair] : by_tag) {
    if (!pair.first || !pair.second)
      throw Error(origin + ": transfer tag " + std::to_string(tag) + " has a " +
                  (pair.first ? "send" : "recv") + " without its partner");
    if (pair.first->name != pair.second->name || pair.first->bytes != pair.second->bytes)
      throw Error(origin + ": transfer tag " + std::to_string(tag) +
                  ": the send and the recv disagree on name or bytes");
  }
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

}  // namespace cleave
