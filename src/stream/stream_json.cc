// Reading and writing the JSON form of stream programs.
#include "stream/stream_json.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "pipeline/load.h"
#include "support/json_file.h"

namespace cleave {

namespace {

using nlohmann::json;

struct Reader {
  std::string origin;
  std::string base_dir;
  StreamLoadOptions options;
  std::vector<std::string> include_chain;  // canonical paths being read, for cycle checks

  [[noreturn]] void fail(const std::string& where, const std::string& why) const {
    throw Error(fmt::format("{}: {}: {}", origin, where, why));
  }

  const json& field(const json& object, const char* key, const std::string& where) const {
    const auto it = object.find(key);
    if (it == object.end()) fail(where, fmt::format("missing field \"{}\"", key));
    return *it;
  }

  int64_t positive(const json& value, const std::string& where, const char* key) const {
    if (!value.is_number_integer()) {
      fail(where, fmt::format("\"{}\" must be an integer, not {}", key, value.dump()));
    }
    const int64_t v = value.get<int64_t>();
    if (v <= 0) fail(where, fmt::format("\"{}\" must be positive, not {}", key, v));
    return v;
  }

  std::vector<int64_t> weights(const json& value, const std::string& where, const char* key) const {
    if (!value.is_array()) fail(where, fmt::format("\"{}\" must be a list of weights", key));
    std::vector<int64_t> out;
    for (const json& w : value) out.push_back(positive(w, where, key));
    return out;
  }

  std::string text(const json& value, const std::string& where, const char* key) const {
    if (!value.is_string()) fail(where, fmt::format("\"{}\" must be a string", key));
    return value.get<std::string>();
  }

  Stream filter(const json& body, const std::string& where) const {
    Stream s;
    s.kind = StreamKind::kFilter;
    s.name = text(field(body, "name", where), where, "name");
    const std::string at = fmt::format("filter \"{}\"", s.name);
    s.pop = positive(field(body, "pop", at), at, "pop");
    s.push = positive(field(body, "push", at), at, "push");
    s.peek = body.contains("peek") ? positive(body["peek"], at, "peek") : s.pop;
    const bool has_model = body.contains("model");
    const bool has_op = body.contains("op");
    if (has_model == has_op) fail(at, "needs exactly one of \"model\" and \"op\"");
    if (has_op) {
      const std::string op = text(body["op"], at, "op");
      const std::optional<FilterOp> parsed = parse_filter_op(op);
      if (!parsed || *parsed == FilterOp::kModel) {
        fail(at, fmt::format("unknown op \"{}\" (known: identity, slice, concat, separator)", op));
      }
      s.op = *parsed;
    } else {
      s.op = FilterOp::kModel;
      s.model = text(body["model"], at, "model");
    }
    if (body.contains("args")) {
      if (!body["args"].is_array()) fail(at, "\"args\" must be a list of integers");
      for (const json& a : body["args"]) {
        if (!a.is_number_integer()) fail(at, "\"args\" must be a list of integers");
        s.args.push_back(a.get<int64_t>());
      }
    }
    if (body.contains("input_item")) {
      s.input_item = parse_item_type(text(body["input_item"], at, "input_item"),
                                     fmt::format("{}: {}: input_item", origin, at));
    }
    if (body.contains("output_item")) {
      s.output_item = parse_item_type(text(body["output_item"], at, "output_item"),
                                      fmt::format("{}: {}: output_item", origin, at));
    }
    if (body.contains("publishes")) s.publishes = text(body["publishes"], at, "publishes");
    if (body.contains("reads")) s.reads = text(body["reads"], at, "reads");
    if (s.op == FilterOp::kModel && options.load_models) {
      const std::filesystem::path path = std::filesystem::path(base_dir) / s.model;
      try {
        LoadOptions load;
        load.fuse_activations = false;
        s.graph = std::make_shared<Graph>(load_model(path.string(), load));
      } catch (const Error& e) {
        fail(at, fmt::format("model \"{}\": {}", s.model, e.what()));
      }
    }
    return s;
  }

  Stream container(const json& body, StreamKind kind, const std::string& where) const {
    Stream s;
    s.kind = kind;
    s.name = text(field(body, "name", where), where, "name");
    const std::string at =
        fmt::format("{} \"{}\"", kind == StreamKind::kPipeline ? "pipeline" : "splitjoin", s.name);
    const json& streams = field(body, "streams", at);
    if (!streams.is_array()) fail(at, "\"streams\" must be a list");
    for (std::size_t i = 0; i < streams.size(); ++i) {
      s.streams.push_back(stream(streams[i], fmt::format("{} stream {}", at, i)));
    }
    if (kind == StreamKind::kSplitJoin) {
      const json& split = field(body, "split", at);
      if (split.is_string() && split.get<std::string>() == "duplicate") {
        s.split.kind = SplitKind::kDuplicate;
      } else if (split.is_object() && split.contains("roundrobin")) {
        s.split.kind = SplitKind::kRoundRobin;
        s.split.weights = weights(split["roundrobin"], at, "split");
      } else {
        fail(at, fmt::format("\"split\" must be \"duplicate\" or {{\"roundrobin\": [...]}}, not {}",
                             split.dump()));
      }
      const json& join = field(body, "join", at);
      if (!join.is_object() || !join.contains("roundrobin")) {
        fail(at, fmt::format("\"join\" must be {{\"roundrobin\": [...]}}, not {}", join.dump()));
      }
      s.join.weights = weights(join["roundrobin"], at, "join");
    }
    return s;
  }

  Stream stream(const json& value, const std::string& where) const {
    if (!value.is_object() || value.size() != 1) {
      fail(where,
           "a stream must be an object with one key: \"filter\", \"pipeline\", \"splitjoin\" or "
           "\"include\"");
    }
    // Not `*value.items().begin()`: that binds to a temporary proxy that dies at once.
    const auto first = value.begin();
    const std::string key = first.key();
    const json& body = first.value();
    if (key == "include") return include(text(body, where, "include"), where);
    if (!body.is_object()) fail(where, fmt::format("\"{}\" must be an object", key));
    if (key == "filter") return filter(body, where);
    if (key == "pipeline") return container(body, StreamKind::kPipeline, where);
    if (key == "splitjoin") return container(body, StreamKind::kSplitJoin, where);
    fail(where, fmt::format("unknown stream kind \"{}\"", key));
  }

  Stream include(const std::string& file, const std::string& where) const {
    const std::filesystem::path path = std::filesystem::path(base_dir) / file;
    std::error_code ec;
    const std::string canonical = std::filesystem::weakly_canonical(path, ec).string();
    for (const std::string& open : include_chain) {
      if (open == canonical) {
        fail(where, fmt::format("include of \"{}\" is cyclic (the program includes itself)",
                                path.string()));
      }
    }
    Reader inner{path.string(), path.parent_path().string(), options, include_chain};
    inner.include_chain.push_back(canonical);
    return inner.read_file();
  }

  Stream read_file() const { return stream(read_json_file(origin, "stream program"), "program"); }

  Stream parse(std::string_view text) const {
    return stream(parse_json_text(text, origin, "stream program"), "program");
  }
};

json to_json(const Stream& s) {
  if (s.is_filter()) {
    json body = {{"name", s.name}, {"pop", s.pop}, {"peek", s.peek}, {"push", s.push}};
    if (s.op == FilterOp::kModel) {
      body["model"] = s.model;
    } else {
      body["op"] = std::string(filter_op_name(s.op));
    }
    if (!s.args.empty()) body["args"] = s.args;
    if (s.input_item) body["input_item"] = print_item_type(*s.input_item);
    if (s.output_item) body["output_item"] = print_item_type(*s.output_item);
    if (!s.publishes.empty()) body["publishes"] = s.publishes;
    if (!s.reads.empty()) body["reads"] = s.reads;
    return {{"filter", body}};
  }
  json streams = json::array();
  for (const Stream& child : s.streams) streams.push_back(to_json(child));
  if (s.kind == StreamKind::kPipeline) {
    return {{"pipeline", {{"name", s.name}, {"streams", streams}}}};
  }
  json split = s.split.kind == SplitKind::kDuplicate ? json("duplicate")
                                                     : json{{"roundrobin", s.split.weights}};
  return {{"splitjoin",
           {{"name", s.name},
            {"split", split},
            {"streams", streams},
            {"join", {{"roundrobin", s.join.weights}}}}}};
}

}  // namespace

StreamProgram parse_stream_program(std::string_view text, const std::string& origin,
                                   const std::string& base_dir, const StreamLoadOptions& options) {
  Reader reader{origin, base_dir, options, {}};
  StreamProgram program{reader.parse(text), origin};
  if (options.verify) verify_stream(program.root, origin);
  return program;
}

StreamProgram load_stream_program(const std::string& path, const StreamLoadOptions& options) {
  std::error_code ec;
  const std::string canonical = std::filesystem::weakly_canonical(path, ec).string();
  Reader reader{path, std::filesystem::path(path).parent_path().string(), options, {canonical}};
  StreamProgram program{reader.read_file(), path};
  if (options.verify) verify_stream(program.root, path);
  return program;
}

std::string stream_to_json(const Stream& root, int indent) {
  return to_json(root).dump(indent);
}

}  // namespace cleave
