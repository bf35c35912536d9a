// Reading and writing the JSON form of stream programs.
#include "stream/stream_json.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "frontend/load.h"
#include "support/json_file.h"
#include "support/limits.h"

namespace cleave {

namespace {

using nlohmann::json;

// Every value is read through JsonField, so each message names the file and the field path
// ("p.json: pipeline.streams[2].filter.pop: expected an integer from 1 to 1048576, got 0").
struct Reader {
  std::string origin;
  std::string base_dir;
  StreamLoadOptions options;
  std::vector<std::string> include_chain;  // canonical paths being read, for cycle checks

  static int64_t rate(const JsonField& value) { return value.integer(1, kMaxStreamRate); }

  static std::vector<int64_t> weights(const JsonField& value) {
    std::vector<int64_t> out;
    for (std::size_t i = 0; i < value.size(); ++i) out.push_back(rate(value.at(i)));
    return out;
  }

  Stream filter(const JsonField& body) const {
    Stream s;
    s.kind = StreamKind::kFilter;
    s.name = body.at("name").string();
    s.pop = rate(body.at("pop"));
    s.push = rate(body.at("push"));
    const std::optional<JsonField> peek = body.find("peek");
    s.peek = peek ? rate(*peek) : s.pop;
    const std::optional<JsonField> model = body.find("model");
    const std::optional<JsonField> op = body.find("op");
    if (model.has_value() == op.has_value()) {
      throw Error(fmt::format("{}: expected exactly one of \"model\" and \"op\"", body.where()));
    }
    if (op) {
      const std::string name = op->string();
      const std::optional<FilterOp> parsed = parse_filter_op(name);
      if (!parsed || *parsed == FilterOp::kModel) {
        op->fail("one of identity, slice, concat, separator");
      }
      s.op = *parsed;
    } else {
      s.op = FilterOp::kModel;
      s.model = model->string();
    }
    if (const std::optional<JsonField> args = body.find("args")) {
      for (std::size_t i = 0; i < args->size(); ++i) {
        s.args.push_back(args->at(i).integer(0, kMaxStreamRate));
      }
    }
    if (const std::optional<JsonField> item = body.find("input_item")) {
      s.input_item = parse_item_type(item->string(), item->where());
    }
    if (const std::optional<JsonField> item = body.find("output_item")) {
      s.output_item = parse_item_type(item->string(), item->where());
    }
    if (const std::optional<JsonField> name = body.find("publishes")) s.publishes = name->string();
    if (const std::optional<JsonField> name = body.find("reads")) s.reads = name->string();
    if (s.op == FilterOp::kModel && options.load_models) {
      const std::filesystem::path path = std::filesystem::path(base_dir) / s.model;
      try {
        LoadOptions load;
        load.fuse_activations = false;
        s.graph = std::make_shared<Graph>(load_model(path.string(), load));
      } catch (const Error& e) {
        throw Error(fmt::format("{}: filter \"{}\": model \"{}\": {}", model->where(), s.name,
                                s.model, e.what()));
      }
    }
    return s;
  }

  Stream container(const JsonField& body, StreamKind kind, int64_t depth) const {
    Stream s;
    s.kind = kind;
    s.name = body.at("name").string();
    const JsonField streams = body.at("streams");
    const std::size_t count = streams.size();
    if (count > 0 && depth >= kMaxStreamDepth) {
      throw Error(fmt::format(
          "{}: {} \"{}\": streams nest deeper than {} levels (pipelines, split-joins and "
          "includes together), the most a program may have",
          origin, kind == StreamKind::kPipeline ? "pipeline" : "splitjoin", s.name,
          kMaxStreamDepth));
    }
    for (std::size_t i = 0; i < count; ++i) s.streams.push_back(stream(streams.at(i), depth + 1));
    if (kind == StreamKind::kSplitJoin) {
      const JsonField split = body.at("split");
      if (split.json().is_string() && split.json().get<std::string>() == "duplicate") {
        s.split.kind = SplitKind::kDuplicate;
      } else if (split.json().is_object() && split.json().contains("roundrobin")) {
        s.split.kind = SplitKind::kRoundRobin;
        s.split.weights = weights(split.at("roundrobin"));
      } else {
        split.fail("\"duplicate\" or {\"roundrobin\": [weights]}");
      }
      const JsonField join = body.at("join");
      if (!join.json().is_object() || !join.json().contains("roundrobin")) {
        join.fail("{\"roundrobin\": [weights]}");
      }
      s.join.weights = weights(join.at("roundrobin"));
    }
    return s;
  }

  // `depth`: how many streams and includes enclose this one (the root is at 1).
  Stream stream(const JsonField& value, int64_t depth) const {
    if (!value.json().is_object() || value.json().size() != 1) {
      value.fail("an object with one key: \"filter\", \"pipeline\", \"splitjoin\" or \"include\"");
    }
    // Not `*value.items().begin()`: that binds to a temporary proxy that dies at once.
    const std::string key = value.json().begin().key();
    const JsonField body = value.at(key);
    if (key == "include") return include(body, depth);
    body.expect_object();
    if (key == "filter") return filter(body);
    if (key == "pipeline") return container(body, StreamKind::kPipeline, depth);
    if (key == "splitjoin") return container(body, StreamKind::kSplitJoin, depth);
    throw Error(fmt::format(
        "{}: unknown stream kind \"{}\" (expected filter, pipeline, splitjoin or include)",
        value.where(), key));
  }

  Stream include(const JsonField& file, int64_t depth) const {
    const std::filesystem::path path = std::filesystem::path(base_dir) / file.string();
    if (depth >= kMaxStreamDepth) {
      throw Error(fmt::format(
          "{}: include of \"{}\": streams nest deeper than {} levels (pipelines, split-joins "
          "and includes together), the most a program may have",
          file.where(), path.string(), kMaxStreamDepth));
    }
    std::error_code ec;
    const std::string canonical = std::filesystem::weakly_canonical(path, ec).string();
    for (const std::string& open : include_chain) {
      if (open == canonical) {
        throw Error(fmt::format("{}: include of \"{}\" is cyclic (the program includes itself)",
                                file.where(), path.string()));
      }
    }
    Reader inner{path.string(), path.parent_path().string(), options, include_chain};
    inner.include_chain.push_back(canonical);
    return inner.read_file(depth + 1);
  }

  Stream read_file(int64_t depth = 1) const {
    const json document = read_json_file(origin, "stream program");
    return stream(JsonField(document, origin), depth);
  }

  Stream parse(std::string_view text) const {
    const json document = parse_json_text(text, origin, "stream program");
    return stream(JsonField(document, origin), 1);
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
  // Names from StreamIt text or ONNX files need not be UTF-8: written with U+FFFD, not thrown.
  return to_json(root).dump(indent, ' ', false, json::error_handler_t::replace);
}

}  // namespace cleave
