// Kahn's topological order and the cycle that stops it, for every graph cleave orders.
#pragma once

#include <cstdint>
#include <vector>

namespace cleave {

/// Kahn's algorithm over the nodes 0..n-1 of a graph given by each node's successors. Among
/// ready nodes the one with the smallest `priority` (the index when `priority` is empty; ties
/// by index) goes first, so the order is deterministic. Nodes with `included[i] == false` are
/// left out (an empty `included` includes all); an included node's successors must be included.
/// On a cycle the order is shorter than the included nodes: it holds those not on or behind one.
std::vector<int> topological_order(const std::vector<std::vector<int>>& successors,
                                   const std::vector<int64_t>& priority = {},
                                   const std::vector<bool>& included = {});

/// One cycle among the included nodes that `order` (a topological_order result) left out, as
/// node indices from producer to consumer, starting at its smallest index; empty when `order`
/// has every included node. `predecessors[i]` lists node i's predecessors; the walk follows
/// the first unplaced one, so list preferred edges first.
std::vector<int> find_cycle(const std::vector<std::vector<int>>& predecessors,
                            const std::vector<int>& order, const std::vector<bool>& included = {});

}  // namespace cleave
