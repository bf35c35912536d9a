// The schedule fired on item types: how large each ring's slots must be when types mix.
#include "codegen/stream_item_bytes.h"

#include <fmt/core.h>

#include <algorithm>
#include <deque>

namespace cleave {

namespace {

int64_t bytes_of(const ItemType& type) {
  return type.element_count() * static_cast<int64_t>(element_size(type.dtype));
}

// A model filter's items per firing, in push order: each output cut into its share.
std::vector<ItemType> model_pushes(const Stream& s) {
  const Graph& g = *s.graph;
  const int64_t per_output = s.push / static_cast<int64_t>(g.outputs().size());
  std::vector<ItemType> pushed;
  for (ValueId id : g.outputs()) {
    const Value& v = g.value(id);
    ItemType type{v.dtype, {v.shape.element_count() / per_output}};
    const std::vector<int64_t> sizes = v.shape.sizes();
    if (s.output_item) {
      type = *s.output_item;
    } else if (!sizes.empty() && sizes[0] == per_output) {
      type = ItemType{v.dtype, std::vector<int64_t>(sizes.begin() + 1, sizes.end())};
    }
    for (int64_t k = 0; k < per_output; ++k) pushed.push_back(type);
  }
  return pushed;
}

class TypeRun {
 public:
  TypeRun(const StreamGraph& flat, const std::string& origin)
      : flat_(flat),
        origin_(origin),
        fifo_(flat.channels.size()),
        largest_(flat.channels.size()),
        seen_(flat.channels.size()),
        uniform_(flat.channels.size(), true) {}

  void feed(const ItemType& type, int64_t count) {
    for (int64_t i = 0; i < count; ++i) push(flat_.input_channel, type);
  }

  void fire(int v) {
    const StreamNode& node = flat_.nodes[static_cast<std::size_t>(v)];
    if (node.kind == StreamNodeKind::kSplitter) {
      const Stream& sj = *node.stream;
      std::deque<ItemType>& in = fifo_[node.inputs[0]];
      if (sj.split.kind == SplitKind::kDuplicate) {
        for (int c : node.outputs) push(c, in.at(0));
        in.pop_front();
        return;
      }
      for (std::size_t b = 0; b < node.outputs.size(); ++b) {
        for (int64_t i = 0; i < sj.split.weights[b]; ++i) {
          push(node.outputs[b], in.at(0));
          in.pop_front();
        }
      }
      return;
    }
    if (node.kind == StreamNodeKind::kJoiner) {
      for (std::size_t b = 0; b < node.inputs.size(); ++b) {
        std::deque<ItemType>& in = fifo_[node.inputs[b]];
        for (int64_t i = 0; i < node.stream->join.weights[b]; ++i) {
          push(node.outputs[0], in.at(0));
          in.pop_front();
        }
      }
      return;
    }
    const Stream& s = *node.stream;
    std::deque<ItemType>& in = fifo_[node.inputs[0]];
    const int out = node.outputs[0];
    const int64_t begin = s.args.empty() ? 0 : s.args[0];
    switch (s.op) {
      case FilterOp::kIdentity:
        for (int64_t i = 0; i < s.pop; ++i) push(out, in.at(static_cast<std::size_t>(i)));
        break;
      case FilterOp::kSlice:
        for (int64_t i = 0; i < s.push; ++i) push(out, in.at(static_cast<std::size_t>(begin + i)));
        break;
      case FilterOp::kSeparator:
        for (int64_t index : s.args) push(out, in.at(static_cast<std::size_t>(index)));
        break;
      case FilterOp::kConcat: {
        ItemType joined = in.at(0);
        for (int64_t i = 1; i < s.pop; ++i) {
          if (!(in.at(static_cast<std::size_t>(i)) == joined)) {
            throw Error(fmt::format("codegen: {}: filter \"{}\" concatenates items of {} and {}",
                                    origin_, s.name, print_item_type(joined),
                                    print_item_type(in.at(static_cast<std::size_t>(i)))));
          }
        }
        if (joined.shape.empty()) joined.shape = {1};
        joined.shape[static_cast<std::size_t>(begin)] *= s.pop;
        push(out, joined);
        break;
      }
      case FilterOp::kModel:
        for (const ItemType& type : model_pushes(s)) push(out, type);
        break;
    }
    for (int64_t i = 0; i < s.pop; ++i) in.pop_front();
  }

  const std::vector<int64_t>& largest() const { return largest_; }
  /// The one type a channel carried, if it carried items of one type only.
  std::optional<ItemType> only(int c) const {
    return uniform_[c] ? seen_[c] : std::optional<ItemType>();
  }

 private:
  void push(int c, const ItemType& type) {
    largest_[c] = std::max(largest_[c], bytes_of(type));
    if (!seen_[c]) seen_[c] = type;
    uniform_[c] = uniform_[c] && *seen_[c] == type;
    if (c != flat_.output_channel) fifo_[c].push_back(type);
  }

  const StreamGraph& flat_;
  const std::string& origin_;
  std::vector<std::deque<ItemType>> fifo_;
  std::vector<int64_t> largest_;
  std::vector<std::optional<ItemType>> seen_;
  std::vector<bool> uniform_;
};

}  // namespace

std::vector<int64_t> channel_item_bytes(const StreamGraph& flat, const StreamSchedule& schedule,
                                        const ItemType& input_item,
                                        std::vector<std::optional<ItemType>>& items,
                                        const std::string& origin) {
  std::vector<int64_t> bytes(flat.channels.size(), 0);
  bool mixed = false;
  for (std::size_t c = 0; c < items.size(); ++c) {
    if (items[c]) {
      bytes[c] = bytes_of(*items[c]);
    } else {
      mixed = true;
    }
  }
  if (!mixed) return bytes;
  TypeRun run(flat, origin);
  run.feed(input_item, schedule.input_for_init);
  for (std::size_t v = 0; v < flat.nodes.size(); ++v) {
    for (int64_t k = 0; k < schedule.init[v]; ++k) run.fire(static_cast<int>(v));
  }
  for (int iteration = 0; iteration < 2; ++iteration) {
    run.feed(input_item, schedule.input_per_iteration);
    for (std::size_t v = 0; v < flat.nodes.size(); ++v) {
      for (int64_t k = 0; k < schedule.repetitions[v]; ++k) run.fire(static_cast<int>(v));
    }
  }
  for (std::size_t c = 0; c < items.size(); ++c) {
    if (items[c]) continue;
    bytes[c] = std::max<int64_t>(run.largest()[c], 1);
    items[c] = run.only(static_cast<int>(c));
  }
  return bytes;
}

}  // namespace cleave
