// Kahn's algorithm with a priority among ready nodes, and a backward walk that names a cycle.
#include "support/topological_order.h"

#include <algorithm>
#include <queue>
#include <utility>

namespace cleave {

std::vector<int> topological_order(const std::vector<std::vector<int>>& successors,
                                   const std::vector<int64_t>& priority,
                                   const std::vector<bool>& included) {
  const std::size_t count = successors.size();
  auto is_included = [&](std::size_t node) { return included.empty() || included[node]; };
  std::vector<int> pending(count, 0);
  for (std::size_t node = 0; node < count; ++node) {
    if (!is_included(node)) continue;
    for (int next : successors[node]) ++pending[next];
  }
  using Entry = std::pair<int64_t, int>;  // (priority, node): smallest first
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> ready;
  auto push = [&](int node) { ready.emplace(priority.empty() ? node : priority[node], node); };
  for (std::size_t node = 0; node < count; ++node) {
    if (is_included(node) && pending[node] == 0) push(static_cast<int>(node));
  }
  std::vector<int> order;
  order.reserve(count);
  while (!ready.empty()) {
    const int node = ready.top().second;
    ready.pop();
    order.push_back(node);
    for (int next : successors[node]) {
      if (--pending[next] == 0) push(next);
    }
  }
  return order;
}

std::vector<int> find_cycle(const std::vector<std::vector<int>>& predecessors,
                            const std::vector<int>& order, const std::vector<bool>& included) {
  const std::size_t count = predecessors.size();
  std::vector<bool> blocked(count, false);
  for (std::size_t node = 0; node < count; ++node)
    blocked[node] = included.empty() || included[node];
  for (int node : order) blocked[node] = false;
  auto first_blocked = std::find(blocked.begin(), blocked.end(), true);
  if (first_blocked == blocked.end()) return {};

  // Every blocked node waits on a blocked predecessor (else Kahn would have placed it), so
  // walking backwards must repeat a node: the walk from the repeat is a cycle.
  int current = static_cast<int>(first_blocked - blocked.begin());
  std::vector<int> position(count, -1);
  std::vector<int> walk;
  while (current >= 0 && position[current] < 0) {
    position[current] = static_cast<int>(walk.size());
    walk.push_back(current);
    int previous = -1;
    for (int candidate : predecessors[current]) {
      if (blocked[candidate]) {
        previous = candidate;
        break;
      }
    }
    current = previous;
  }
  if (current < 0) return {};  // inconsistent input: a blocked node without blocked producer
  std::vector<int> cycle(walk.begin() + position[current], walk.end());
  std::reverse(cycle.begin(), cycle.end());  // walked backwards; report producer -> consumer
  std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()), cycle.end());
  return cycle;
}

}  // namespace cleave
