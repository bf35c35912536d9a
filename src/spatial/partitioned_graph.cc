// Builds the partitioned graph: slices per machine, assembled inputs, Slice/Concat for crops and
// joins.
#include "spatial/partitioned_graph.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <unordered_set>

#include "spatial/region.h"
#include "spatial/region_rules.h"

namespace cleave {

TensorData slice_tensor_data(const TensorData& data, const Box& box) {
  const std::size_t elem = element_size(data.dtype);
  if (elem == 0) throw Error("split: cannot slice a constant without data");
  const std::vector<int64_t> out_sizes = box_sizes(box);
  // A weight left in its file (a plan from sizes): the slice is sizes only too.
  if (!data.bytes) return TensorData{data.dtype, out_sizes, nullptr, nullptr};
  auto raw =
      std::make_shared<std::vector<std::byte>>(static_cast<std::size_t>(box_elements(box)) * elem);
  copy_box(data.bytes->data(), data.dims, elem, box, raw->data());
  return TensorData{data.dtype, out_sizes, std::move(raw), nullptr};
}

namespace {

struct Piece {
  Box box;  // in the tensor's global coordinates
  ValueId value = kNoValue;
  int from = -1;  // the machine sending it; -1: cut from what the reader holds
};

class Builder {
 public:
  Builder(const Graph& graph, const Partition& partition, const Regions& regions, JoinMode mode)
      : in_(graph), partition_(partition), regions_(regions), mode_(mode) {
    out_.graph.name = graph.name;
    out_.graph.opset_imports = graph.opset_imports;
    out_.graph.ir_version = graph.ir_version;
    out_.machines = partition.machines;
    local_.assign(graph.value_capacity(), std::vector<ValueId>(partition.machines, kNoValue));
    opset_ = graph.opset_imports.count("") ? graph.opset_imports.at("") : 17;
  }

  PartitionedGraph build() {
    for (ValueId in : in_.inputs()) {
      const Value& v = in_.value(in);
      ValueId id = out_.graph.add_input(v.name, v.dtype, v.shape);
      for (int m = 0; m < out_.machines; ++m) local_[in][m] = id;
    }
    for (NodeId id : in_.topological_order()) emit_node(id);
    std::vector<ValueId> outputs;
    for (ValueId v : in_.outputs()) {
      if (in_.value(v).is_graph_input) {
        outputs.push_back(local_[v][0]);
        continue;
      }
      auto sizes = static_sizes(in_, v);
      ValueId whole = assemble(v, 0, sizes ? full_box(*sizes) : regions_.held[v][0], -1);
      const Value& orig = in_.value(v);
      ValueId named = out_.graph.add_value(orig.name, orig.dtype, orig.shape);
      add_node("Identity", {whole}, {named}, {}, 0, -1);
      outputs.push_back(named);
    }
    out_.graph.set_outputs(outputs);
    remove_unread_slices();
    return std::move(out_);
  }

  // A slice whose result nobody reads (a machine's part that the others recomputed, a row a
  // stride skips) is dropped, with the pieces and transfers that only fed it.
  void remove_unread_slices() {
    Graph& g = out_.graph;
    for (bool changed = true; changed;) {
      changed = false;
      std::vector<NodeId> ids = g.node_ids();
      for (auto it = ids.rbegin(); it != ids.rend(); ++it) {
        const Node& n = g.node(*it);
        bool read = false;
        for (ValueId v : n.outputs)
          read = read || g.value(v).is_graph_output || !g.consumers(v).empty();
        if (read) continue;
        g.remove_node(*it);
        changed = true;
      }
    }
    std::erase_if(out_.transfers, [&](const SplitTransfer& t) { return g.node(t.slice).removed; });
  }

 private:
  NodeId add_node(const std::string& op, std::vector<ValueId> inputs, std::vector<ValueId> outputs,
                  std::vector<std::pair<std::string, Attribute>> attributes, int machine,
                  NodeId origin, std::string name = {}) {
    if (name.empty()) name = fresh(op);
    NodeId id =
        out_.graph.add_node(op, std::move(inputs), std::move(outputs), std::move(attributes), name);
    node_names_.insert(name);
    out_.machine.resize(id + 1, 0);
    out_.origin.resize(id + 1, -1);
    out_.machine[id] = machine;
    out_.origin[id] = origin;
    return id;
  }

  std::string fresh(const std::string& base) {
    std::string name;
    do {
      name = base + "#" + std::to_string(counter_++);
    } while (out_.graph.find_value(name) || node_names_.contains(name));
    return name;
  }

  ValueId new_value(const std::string& name, DataType dtype, const Box& box) {
    return out_.graph.add_value(out_.graph.find_value(name) ? fresh(name) : name, dtype,
                                Shape::of(box_sizes(box)));
  }

  ValueId constant(const std::string& name, TensorData data) {
    return out_.graph.add_initializer(fresh(name), std::move(data));
  }

  ValueId ints_constant(const std::string& name, const std::vector<int64_t>& values) {
    return constant(name, TensorData::from<int64_t>(DataType::kInt64,
                                                    {static_cast<int64_t>(values.size())}, values));
  }

  // The model's initializer, whole (shared by every machine) or cut to `box`.
  ValueId initializer(ValueId v, const Box& box) {
    const Value& orig = in_.value(v);
    const TensorData& data = *orig.initializer;
    const bool whole = box == full_box(data.dims);
    const std::string key = whole ? orig.name : orig.name + print_box(box);
    auto it = initializers_.find(key);
    if (it != initializers_.end()) return it->second;
    ValueId id = whole ? out_.graph.add_initializer(orig.name, data)
                       : out_.graph.add_initializer(fresh(orig.name + "@slice"),
                                                    slice_tensor_data(data, box));
    initializers_[key] = id;
    return id;
  }

  // A Slice node on `machine` cutting `region` (in its own coordinates) out of `source`.
  ValueId slice(ValueId source, const Box& region, int machine, const std::string& name) {
    const Value s = out_.graph.value(source);
    std::vector<int64_t> starts, ends, axes;
    const std::vector<int64_t> sizes = s.shape.sizes();
    for (std::size_t d = 0; d < region.size(); ++d) {
      if (region[d].begin == 0 && region[d].end == sizes[d]) continue;
      starts.push_back(region[d].begin);
      ends.push_back(region[d].end);
      axes.push_back(static_cast<int64_t>(d));
    }
    if (axes.empty()) {  // a whole tensor still gets a node, so that a transfer has a producer
      starts = {0};
      ends = {sizes.empty() ? 1 : sizes[0]};
      axes = {0};
    }
    ValueId out = new_value(name, s.dtype, region);
    if (opset_ >= 10) {
      add_node("Slice",
               {source, ints_constant("starts", starts), ints_constant("ends", ends),
                ints_constant("axes", axes)},
               {out}, {}, machine, -1);
    } else {
      add_node("Slice", {source}, {out},
               {{"starts", Attribute::of_ints(starts)},
                {"ends", Attribute::of_ints(ends)},
                {"axes", Attribute::of_ints(axes)}},
               machine, -1);
    }
    return out;
  }

  // Joins pieces tiling `box` with Concats on `machine`, cutting along whole slabs; nullopt when
  // the pieces do not form such a tiling.
  std::optional<ValueId> join(std::vector<Piece> pieces, const Box& box, int machine,
                              const std::string& name) {
    if (pieces.size() == 1) return pieces[0].value;
    for (std::size_t a = 0; a < box.size(); ++a) {
      std::set<int64_t> cuts;
      for (const Piece& p : pieces)
        if (p.box[a].begin > box[a].begin) cuts.insert(p.box[a].begin);
      std::vector<int64_t> valid;
      for (int64_t c : cuts) {
        bool ok = std::all_of(pieces.begin(), pieces.end(), [&](const Piece& p) {
          return p.box[a].end <= c || p.box[a].begin >= c;
        });
        if (ok) valid.push_back(c);
      }
      if (valid.empty()) continue;
      valid.insert(valid.begin(), box[a].begin);
      valid.push_back(box[a].end);
      std::vector<ValueId> parts;
      for (std::size_t k = 0; k + 1 < valid.size(); ++k) {
        Box slab = box;
        slab[a] = {valid[k], valid[k + 1]};
        std::vector<Piece> inside;
        for (const Piece& p : pieces)
          if (p.box[a].begin >= slab[a].begin && p.box[a].end <= slab[a].end) inside.push_back(p);
        auto part = join(inside, slab, machine, name);
        if (!part) return std::nullopt;
        parts.push_back(*part);
      }
      ValueId out = new_value(name, out_.graph.value(parts[0]).dtype, box);
      add_node("Concat", parts, {out}, {{"axis", Attribute::of_int(static_cast<int64_t>(a))}},
               machine, -1);
      return out;
    }
    return std::nullopt;
  }

  // Box `want` of model value `v` on machine `m`, from what m holds and pieces of the owners.
  ValueId assemble(ValueId v, int m, const Box& want, NodeId reader) {
    const std::string& name = in_.value(v).name;
    const Box& held = regions_.held[v][m];
    const bool has = regions_.present[v][m];
    if (has && held == want) {
      count_case(JoinCase::kSame, reader);
      return local_[v][m];
    }
    if (has && box_contains(held, want)) {
      count_case(JoinCase::kCrop, reader);
      return slice(local_[v][m], relative_box(want, held), m,
                   name + "@" + std::to_string(m) + "~crop");
    }
    count_case(has && !box_empty(held) && !box_contains(want, held) ? JoinCase::kFetchCrop
                                                                    : JoinCase::kFetch,
               reader);
    if (reader >= 0) syncing_ = true;
    for (bool split_local : {true, false}) {
      std::vector<Piece> pieces;
      for (int j = 0; j < out_.machines; ++j) {
        if (!regions_.present[v][j]) continue;
        Box part = intersect(want, regions_.owned[v][j]);
        if (box_empty(part)) continue;
        if (has && (j == m || box_contains(held, part))) {
          pieces.push_back({part, kNoValue, -1});
          continue;
        }
        // Fetch only the rows m does not hold (case "input larger than the output").
        if (split_local && has && !box_empty(intersect(part, held))) {
          const Box local = intersect(part, held);
          for (std::size_t a = 0; a < part.size(); ++a) {
            bool others_covered = true;
            for (std::size_t b = 0; b < part.size(); ++b)
              if (b != a && local[b] != part[b]) others_covered = false;
            if (!others_covered) continue;
            Box rest = part;
            if (local[a].begin == part[a].begin) {
              rest[a].begin = local[a].end;
            } else if (local[a].end == part[a].end) {
              rest[a].end = local[a].begin;
            } else {
              continue;
            }
            pieces.push_back({local, kNoValue, -1});
            part = rest;
            break;
          }
        }
        pieces.push_back({part, kNoValue, j});
      }
      if (pieces.empty() || !tiles(pieces, want)) continue;
      for (Piece& p : pieces) {
        if (p.from < 0) {
          p.value = slice_or_whole(local_[v][m], p.box, held, m, name + "@" + std::to_string(m));
          continue;
        }
        SplitTransfer t;
        t.from = p.from;
        t.to = m;
        t.source = local_[v][p.from];
        t.region = relative_box(p.box, regions_.held[v][p.from]);
        t.piece = slice(t.source, t.region, p.from,
                        name + "@" + std::to_string(p.from) + ">" + std::to_string(m));
        t.slice = out_.graph.value(t.piece).producer;
        t.bytes = box_elements(p.box) * static_cast<int64_t>(element_size(in_.value(v).dtype));
        out_.transfers.push_back(t);
        p.value = t.piece;
      }
      return *join(pieces, want, m, name + "@" + std::to_string(m) + "~join");
    }
    throw Error("split: cannot assemble " + print_box(want) + " of tensor '" + name +
                "' on machine " + std::to_string(m));
  }

  bool tiles(std::vector<Piece> pieces, const Box& box) {
    if (pieces.size() == 1) return pieces[0].box == box;
    for (std::size_t a = 0; a < box.size(); ++a) {
      std::set<int64_t> cuts;
      for (const Piece& p : pieces)
        if (p.box[a].begin > box[a].begin) cuts.insert(p.box[a].begin);
      std::vector<int64_t> valid{box[a].begin};
      for (int64_t c : cuts)
        if (std::all_of(pieces.begin(), pieces.end(),
                        [&](const Piece& p) { return p.box[a].end <= c || p.box[a].begin >= c; }))
          valid.push_back(c);
      if (valid.size() == 1) continue;
      valid.push_back(box[a].end);
      for (std::size_t k = 0; k + 1 < valid.size(); ++k) {
        Box slab = box;
        slab[a] = {valid[k], valid[k + 1]};
        std::vector<Piece> inside;
        for (const Piece& p : pieces)
          if (p.box[a].begin >= slab[a].begin && p.box[a].end <= slab[a].end) inside.push_back(p);
        if (inside.empty() || !tiles(inside, slab)) return false;
      }
      return true;
    }
    return false;
  }

  ValueId slice_or_whole(ValueId local, const Box& part, const Box& held, int m,
                         const std::string& name) {
    if (part == held) return local;
    return slice(local, relative_box(part, held), m, name + "~crop");
  }

  void count_case(JoinCase c, NodeId reader) {
    if (reader >= 0) ++out_.join_cases[static_cast<int>(c)];
  }

  // A global average or max pool whose input is split along H/W only: each machine pools the
  // part it owns (an average weighted by its share of the plane), sends that 1x1 partial to
  // machine 0, and machine 0 sums (or takes the maximum of) the partials, instead of gathering
  // the whole input. False when the pool does not fit that shape; emit_node then gathers.
  bool emit_cross_machine_reduction(NodeId id) {
    const Node& n = in_.node(id);
    const bool average = n.op_type == "GlobalAveragePool";
    if (mode_ != JoinMode::kOptimized || !(average || n.op_type == "GlobalMaxPool")) return false;
    if (n.inputs.size() != 1 || n.outputs.size() != 1) return false;
    const ValueId v = n.inputs[0];
    auto sizes = static_sizes(in_, v);
    if (!sizes || sizes->size() != 4 || in_.value(v).dtype != DataType::kFloat) return false;
    if (in_.value(v).producer < 0 || !regions_.present[n.outputs[0]][0]) return false;
    std::vector<int> parts;
    for (int j = 0; j < out_.machines; ++j) {
      if (!regions_.present[v][j]) continue;
      const Box& owned = regions_.owned[v][j];
      if (box_empty(owned)) continue;
      if (owned[0] != Interval{0, (*sizes)[0]} || owned[1] != Interval{0, (*sizes)[1]})
        return false;  // a split across channels: gathering is as cheap
      parts.push_back(j);
    }
    if (parts.size() < 2) return false;
    const double plane = static_cast<double>((*sizes)[2] * (*sizes)[3]);
    const Value& o = in_.value(n.outputs[0]);
    const Box one{{0, (*sizes)[0]}, {0, (*sizes)[1]}, {0, 1}, {0, 1}};
    std::vector<ValueId> partials;
    for (int j : parts) {
      const Box& owned = regions_.owned[v][j];
      ValueId piece = assemble(v, j, owned, j == 0 ? id : -1);
      const std::string tag = o.name + "@" + std::to_string(j) + "~partial";
      ValueId pooled = new_value(tag, o.dtype, one);
      add_node(n.op_type, {piece}, {pooled}, {}, j, id);
      if (average) {
        const float share =
            static_cast<float>(static_cast<double>(owned[2].size() * owned[3].size()) / plane);
        ValueId weighted = new_value(tag + "~share", o.dtype, one);
        add_node("Mul",
                 {pooled, constant("share", TensorData::from<float>(DataType::kFloat, {},
                                                                    std::vector<float>{share}))},
                 {weighted}, {}, j, id);
        pooled = weighted;
      }
      if (j != 0) {
        SplitTransfer t;
        t.from = j;
        t.to = 0;
        t.source = pooled;
        t.region = one;
        t.piece = slice(pooled, one, j, o.name + "@" + std::to_string(j) + ">0");
        t.slice = out_.graph.value(t.piece).producer;
        t.bytes = box_elements(one) * static_cast<int64_t>(element_size(o.dtype));
        out_.transfers.push_back(t);
        pooled = t.piece;
        syncing_ = true;
      }
      partials.push_back(pooled);
    }
    const std::string name = o.name + "@0";
    ValueId out =
        out_.graph.add_value(out_.graph.find_value(name) ? fresh(name) : name, o.dtype, o.shape);
    local_[n.outputs[0]][0] = out;
    const std::string base = n.name.empty() ? n.op_type : n.name;
    add_node(average ? "Sum" : "Max", partials, {out}, {}, 0, id,
             node_names_.contains(base + "@0") ? std::string{} : base + "@0");
    return true;
  }

  void emit_node(NodeId id) {
    const Node& n = in_.node(id);
    const LayerSplit& split = *partition_.layers.at(id);
    syncing_ = false;
    if (split.gathered && emit_cross_machine_reduction(id)) {
      ++out_.sync_points;
      return;
    }
    for (int m = 0; m < out_.machines; ++m) {
      if (!regions_.present[n.outputs[0]][m]) continue;
      const Box& box = regions_.held[n.outputs[0]][m];
      const RegionMap r = split.gathered ? whole_region(in_, id) : map_region(in_, id, box);
      if (!r.ok) throw Error("split: node " + in_.describe(id) + ": " + r.reason);
      std::vector<ValueId> inputs;
      std::size_t slots = n.inputs.size();
      if (!r.constant_inputs.empty())
        slots = std::max(slots, static_cast<std::size_t>(r.constant_inputs.rbegin()->first) + 1);
      for (std::size_t slot = 0; slot < slots; ++slot) {
        const ValueId v = slot < n.inputs.size() ? n.inputs[slot] : kNoValue;
        if (v != kNoValue && slot >= r.inputs.size() &&
            !r.constant_inputs.count(static_cast<int>(slot))) {
          // A region rule that names fewer inputs than the node reads cannot place the rest.
          throw Error(fmt::format("split: node {}: no region for input {} ('{}')", in_.describe(id),
                                  slot, in_.value(v).name));
        }
        if (r.constant_inputs.count(static_cast<int>(slot))) {
          const std::string base_name =
              v == kNoValue ? n.op_type + "_input" + std::to_string(slot) : in_.value(v).name;
          inputs.push_back(constant(base_name + "@" + std::to_string(m),
                                    r.constant_inputs.at(static_cast<int>(slot))));
        } else if (v == kNoValue) {
          inputs.push_back(kNoValue);
        } else if (!r.inputs[slot]) {
          continue;  // a Concat input this slice does not read
        } else if (in_.value(v).initializer) {
          inputs.push_back(initializer(v, *r.inputs[slot]));
        } else if (mode_ == JoinMode::kNaive && in_.value(v).producer >= 0) {
          auto sizes = static_sizes(in_, v);
          const Box whole = sizes ? full_box(*sizes) : regions_.held[v][0];
          ValueId all = assemble(v, m, whole, id);
          inputs.push_back(*r.inputs[slot] == whole
                               ? all
                               : slice(all, *r.inputs[slot], m,
                                       in_.value(v).name + "@" + std::to_string(m) + "~crop"));
        } else {
          inputs.push_back(assemble(v, m, *r.inputs[slot], id));
        }
      }
      std::vector<ValueId> outputs;
      for (std::size_t k = 0; k < n.outputs.size(); ++k) {
        const Value& o = in_.value(n.outputs[k]);
        const std::string name = o.name + "@" + std::to_string(m);
        ValueId out = split.gathered || k > 0
                          ? out_.graph.add_value(out_.graph.find_value(name) ? fresh(name) : name,
                                                 o.dtype, o.shape)
                          : new_value(name + (r.computed ? "~computed" : ""), o.dtype,
                                      r.computed && k == 0 ? *r.computed : box);
        local_[n.outputs[k]][m] = out;
        outputs.push_back(out);
      }
      auto attributes = n.attributes;
      for (auto& [key, value] : r.attributes) {
        auto it = std::find_if(attributes.begin(), attributes.end(),
                               [&](const auto& a) { return a.first == key; });
        if (it != attributes.end()) {
          it->second = value;
        } else {
          attributes.emplace_back(key, value);
        }
      }
      const std::string base = n.name.empty() ? n.op_type : n.name;
      NodeId made = add_node(n.op_type, inputs, outputs, attributes, m, id,
                             node_names_.contains(base + "@" + std::to_string(m))
                                 ? std::string{}
                                 : base + "@" + std::to_string(m));
      out_.graph.node(made).domain = n.domain;
      // The slice computed more rows than it holds (a Resize from where its grids line up).
      if (r.computed && !split.gathered)
        local_[n.outputs[0]][m] = slice(outputs[0], relative_box(box, *r.computed), m,
                                        in_.value(n.outputs[0]).name + "@" + std::to_string(m));
    }
    if (syncing_) ++out_.sync_points;
  }

  const Graph& in_;
  const Partition& partition_;
  const Regions& regions_;
  JoinMode mode_;
  PartitionedGraph out_;
  std::vector<std::vector<ValueId>> local_;  // [model value][machine] -> held value
  std::map<std::string, ValueId> initializers_;
  // Graph::find_node scans every node: a sub-graph of thousands of nodes named through it
  // took seconds per split (nothing is removed before the names are all given).
  std::unordered_set<std::string> node_names_;
  int64_t opset_ = 17;
  int counter_ = 0;
  bool syncing_ = false;
};

}  // namespace

PartitionedGraph build_partitioned_graph(const Graph& graph, const Partition& partition,
                                         const Regions& regions, JoinMode mode) {
  return Builder(graph, partition, regions, mode).build();
}

}  // namespace cleave
