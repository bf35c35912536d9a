// The stream IR: filters with pop/peek/push rates, pipelines and split-joins (StreamIt's model).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace cleave {

enum class StreamKind { kFilter, kPipeline, kSplitJoin };

/// What a filter's work function does with the window of `peek` items it sees.
enum class FilterOp {
  kModel,      ///< Runs `graph` (loaded from `model`) on the window, pushes its outputs.
  kIdentity,   ///< Pushes the popped items unchanged (pop == peek == push).
  kSlice,      ///< Pushes window items [args[0], args[0] + push) (default begin 0).
  kConcat,     ///< Pushes one item: the `pop` popped items concatenated along axis args[0].
  kSeparator,  ///< Pops `pop` items and pushes those at the indices in `args` (drops the rest).
};

std::string_view filter_op_name(FilterOp op);
std::optional<FilterOp> parse_filter_op(std::string_view name);

/// The type of the items on a channel: every item is one tensor of this type and shape.
struct ItemType {
  DataType dtype = DataType::kFloat;
  std::vector<int64_t> shape;  ///< Static; empty for a scalar item.
  int64_t element_count() const;
  bool operator==(const ItemType&) const = default;
};
std::string print_item_type(const ItemType& type);  ///< "f32[2,80]"
/// Parses "f32[2,80]" or "f32[]"; throws Error naming `what`.
ItemType parse_item_type(std::string_view text, const std::string& what);

enum class SplitKind { kDuplicate, kRoundRobin };

struct Splitter {
  SplitKind kind = SplitKind::kDuplicate;
  std::vector<int64_t> weights;  ///< Round-robin only: items sent to each branch per firing.
};

struct Joiner {
  std::vector<int64_t> weights;  ///< Items taken from each branch per firing (round robin).
};

/// One node of the stream tree: a filter, a pipeline or a split-join, nested to any depth.
/// Names are unique within a program; schedules and errors refer to streams by name.
struct Stream {
  StreamKind kind = StreamKind::kFilter;
  std::string name;

  // Filter fields.
  int64_t pop = 0;
  int64_t peek = 0;
  int64_t push = 0;
  FilterOp op = FilterOp::kIdentity;
  std::vector<int64_t> args;            ///< Built-in op parameters (see FilterOp).
  std::string model;                    ///< ONNX path as written in the program file.
  std::shared_ptr<const Graph> graph;   ///< The work function of a kModel filter.
  std::optional<ItemType> input_item;   ///< Type of the items popped, where known.
  std::optional<ItemType> output_item;  ///< Type of the items pushed, where known.
  /// By reference (instead of replication): the items each firing pushes are also kept under
  /// this name until every filter reading it has read that firing's items.
  std::string publishes;
  /// By reference: an identity filter (pop == peek, any push) that drops what it pops and
  /// pushes the items published under this name by the publisher's firing of the same index.
  std::string reads;

  // Pipeline and split-join fields.
  std::vector<Stream> streams;  ///< Pipeline stages in order, or split-join branches.
  Splitter split;               ///< Split-join only.
  Joiner join;                  ///< Split-join only.

  bool is_filter() const { return kind == StreamKind::kFilter; }
};

/// A whole program: the root stream and where it came from (for messages).
struct StreamProgram {
  Stream root;
  std::string origin;  ///< File name, or "<builder>".
};

/// Every filter of the tree in depth-first order (pipeline order, branches left to right).
std::vector<const Stream*> collect_filters(const Stream& root);

/// Checks names are unique and non-empty, rates positive with peek >= pop, split-joins have
/// branches and weights matching their count, built-in ops' rates agree with the op, and
/// model filters' tensors agree with their rates and item types. Throws Error naming
/// `origin` and the stream.
void verify_stream(const Stream& root, const std::string& origin);

}  // namespace cleave
