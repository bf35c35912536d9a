// The work functions of a stream's nodes: splitters, joiners, built-in filters and model filters.
#include "stream/node_work.h"

#include <fmt/core.h>

#include <cstring>
#include <map>

#include "ir/text.h"

namespace cleave {

namespace {

// A contiguous tensor of `shape` holding the items back to back: a view when they already
// lie back to back in one shared storage, else a copy.
Tensor gather(const std::vector<Item>& items, std::size_t first, std::size_t count, DataType dtype,
              const std::vector<int64_t>& shape) {
  // Items that sit side by side in one buffer (rows cut from one tensor) need no copy.
  bool adjacent = items[first]->storage() != nullptr && !items[first]->is_blocked();
  for (std::size_t i = first + 1; i < first + count && adjacent; ++i) {
    adjacent = items[i]->storage() == items[first]->storage() && !items[i]->is_blocked() &&
               static_cast<const std::byte*>(items[i]->raw()) ==
                   static_cast<const std::byte*>(items[i - 1]->raw()) + items[i - 1]->byte_size();
  }
  std::size_t total = 0;
  for (std::size_t i = first; i < first + count; ++i) total += items[i]->byte_size();
  int64_t elements = 1;
  for (int64_t d : shape) elements *= d;
  if (total != static_cast<std::size_t>(elements) * element_size(dtype)) {
    throw Error(fmt::format("{} items of {} bytes do not fill {}", count, total,
                            print_type(dtype, Shape::of(shape))));
  }
  if (adjacent) {
    const Tensor& t = *items[first];
    const auto offset =
        static_cast<std::size_t>(static_cast<const std::byte*>(t.raw()) - t.storage()->data());
    return Tensor::view(dtype, shape, t.storage(), offset);
  }
  Tensor out = Tensor::allocate(dtype, shape);
  auto* dst = static_cast<std::byte*>(out.raw());
  for (std::size_t i = first; i < first + count; ++i) {
    const std::size_t bytes = items[i]->byte_size();
    std::memcpy(dst, items[i]->raw(), bytes);
    dst += bytes;
  }
  return out;
}

// Cuts a plain tensor into `count` items of `shape`, as views of its storage when it has one.
std::vector<Item> scatter(const Tensor& whole, int64_t count, const std::vector<int64_t>& shape) {
  Tensor source = whole;
  if (!source.storage()) {
    source = Tensor::allocate(whole.dtype(), whole.shape());
    std::memcpy(source.raw(), whole.raw(), whole.byte_size());
  }
  const std::size_t item_bytes = source.byte_size() / static_cast<std::size_t>(count);
  const auto base = static_cast<std::size_t>(static_cast<const std::byte*>(source.raw()) -
                                             source.storage()->data());
  std::vector<Item> out;
  out.reserve(static_cast<std::size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    out.push_back(std::make_shared<const Tensor>(Tensor::view(
        source.dtype(), shape, source.storage(), base + static_cast<std::size_t>(i) * item_bytes)));
  }
  return out;
}

Item concat_items(const std::vector<Item>& items, int64_t axis) {
  const Tensor& first = *items.front();
  std::vector<int64_t> shape = first.shape();
  if (shape.empty()) shape = {1};
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= shape[d];
  for (std::size_t d = axis; d < shape.size(); ++d) inner *= shape[d];
  shape[axis] *= static_cast<int64_t>(items.size());
  Tensor out = Tensor::allocate(first.dtype(), shape);
  const std::size_t chunk = static_cast<std::size_t>(inner) * element_size(first.dtype());
  auto* dst = static_cast<std::byte*>(out.raw());
  for (int64_t o = 0; o < outer; ++o) {
    for (const Item& t : items) {
      std::memcpy(dst, static_cast<const std::byte*>(t->raw()) + o * chunk, chunk);
      dst += chunk;
    }
  }
  return std::make_shared<const Tensor>(std::move(out));
}

}  // namespace

ItemType item_of(const Tensor& t) {
  return ItemType{t.dtype(), t.shape()};
}

ItemType model_output_item(const Stream& s, const Value& v, int64_t per_output) {
  if (s.output_item) return *s.output_item;
  const std::vector<int64_t> sizes = v.shape.sizes();
  if (!sizes.empty() && sizes[0] == per_output) {
    return ItemType{v.dtype, std::vector<int64_t>(sizes.begin() + 1, sizes.end())};
  }
  return ItemType{v.dtype, {v.shape.element_count() / per_output}};
}

NodeWork::NodeWork(const StreamNode& node, std::shared_ptr<Executor> executor)
    : node_(node), executor_(std::move(executor)) {
  if (!executor_ && node.kind == StreamNodeKind::kFilter && node.stream->op == FilterOp::kModel) {
    executor_ = std::make_shared<Executor>(*node.stream->graph);
  }
}

std::vector<std::vector<Item>> NodeWork::fire(std::vector<std::vector<Item>>& windows) {
  std::vector<std::vector<Item>> out(node_.outputs.size());
  if (node_.kind == StreamNodeKind::kSplitter) {
    const Stream& sj = *node_.stream;
    if (sj.split.kind == SplitKind::kDuplicate) {
      for (auto& port : out) port.push_back(windows[0][0]);
    } else {
      std::size_t next = 0;
      for (std::size_t b = 0; b < out.size(); ++b) {
        out[b].reserve(sj.split.weights[b]);
        for (int64_t i = 0; i < sj.split.weights[b]; ++i) {
          out[b].push_back(std::move(windows[0][next++]));
        }
      }
    }
    return out;
  }
  if (node_.kind == StreamNodeKind::kJoiner) {
    for (auto& window : windows) {
      out[0].insert(out[0].end(), std::make_move_iterator(window.begin()),
                    std::make_move_iterator(window.end()));
    }
    return out;
  }
  const Stream& s = *node_.stream;
  std::vector<Item>& w = windows[0];
  switch (s.op) {
    case FilterOp::kIdentity:
      out[0].assign(std::make_move_iterator(w.begin()), std::make_move_iterator(w.begin() + s.pop));
      break;
    case FilterOp::kSlice: {
      const int64_t begin = s.args.empty() ? 0 : s.args[0];
      out[0].assign(w.begin() + begin, w.begin() + begin + s.push);
      break;
    }
    case FilterOp::kConcat:
      out[0].push_back(concat_items(w, s.args.empty() ? 0 : s.args[0]));
      break;
    case FilterOp::kSeparator:
      for (int64_t index : s.args) out[0].push_back(w[index]);
      break;
    case FilterOp::kModel:
      out[0] = run_model(s, w);
      break;
  }
  return out;
}

std::vector<Item> NodeWork::run_model(const Stream& s, const std::vector<Item>& window) {
  const Graph& g = executor_->graph();
  const std::size_t m = g.inputs().size();
  const std::size_t per_input = static_cast<std::size_t>(s.peek) / m;
  std::map<std::string, Tensor> inputs;
  for (std::size_t i = 0; i < m; ++i) {
    const Value& v = g.value(g.inputs()[i]);
    inputs[v.name] = gather(window, i * per_input, per_input, v.dtype, v.shape.sizes());
  }
  const std::vector<Tensor> results = executor_->run(inputs);
  const int64_t per_output = s.push / static_cast<int64_t>(results.size());
  std::vector<Item> items;
  items.reserve(static_cast<std::size_t>(s.push));
  for (std::size_t o = 0; o < results.size(); ++o) {
    const ItemType type = model_output_item(s, g.value(g.outputs()[o]), per_output);
    std::vector<Item> part = scatter(results[o], per_output, type.shape);
    items.insert(items.end(), part.begin(), part.end());
  }
  return items;
}

}  // namespace cleave
