// The lambda-style builder of stream programs.
#include "stream/builder.h"

namespace cleave {

Stream& StreamBuilder::add(Stream stream) {
  parent_->streams.push_back(std::move(stream));
  return parent_->streams.back();
}

Stream& StreamBuilder::filter(std::string name, FilterOp op, int64_t pop, int64_t peek,
                              int64_t push, std::vector<int64_t> args) {
  Stream s;
  s.kind = StreamKind::kFilter;
  s.name = std::move(name);
  s.op = op;
  s.pop = pop;
  s.peek = peek;
  s.push = push;
  s.args = std::move(args);
  return add(std::move(s));
}

Stream& StreamBuilder::model(std::string name, int64_t pop, int64_t peek, int64_t push,
                             std::shared_ptr<const Graph> graph) {
  Stream& s = filter(std::move(name), FilterOp::kModel, pop, peek, push);
  s.graph = std::move(graph);
  return s;
}

Stream& StreamBuilder::pipeline(std::string name, const std::function<void(StreamBuilder&)>& body) {
  return add(make_pipeline(std::move(name), body));
}

Stream& StreamBuilder::splitjoin(std::string name, Splitter split, Joiner join,
                                 const std::function<void(StreamBuilder&)>& body) {
  return add(make_splitjoin(std::move(name), std::move(split), std::move(join), body));
}

Stream make_pipeline(std::string name, const std::function<void(StreamBuilder&)>& body) {
  Stream s;
  s.kind = StreamKind::kPipeline;
  s.name = std::move(name);
  StreamBuilder builder(s);
  body(builder);
  return s;
}

Stream make_splitjoin(std::string name, Splitter split, Joiner join,
                      const std::function<void(StreamBuilder&)>& body) {
  Stream s;
  s.kind = StreamKind::kSplitJoin;
  s.name = std::move(name);
  s.split = std::move(split);
  s.join = std::move(join);
  StreamBuilder builder(s);
  body(builder);
  return s;
}

}  // namespace cleave
