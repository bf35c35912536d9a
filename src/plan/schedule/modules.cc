// Transitive closure, cut vertices and bridges, k-edge-connected components, induced subgraphs.
#include "plan/schedule/modules.h"

#include <fmt/core.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <set>

#include "ir/graph.h"
#include "support/topological_order.h"

namespace cleave {
namespace {

// The graph with slices of one node collapsed: what the module structure is computed on.
struct GroupGraph {
  int groups = 0;
  std::vector<int> group_of_task;
  std::vector<std::vector<int>> members;
  std::set<std::pair<int, int>> edges;  // distinct (producer group, consumer group)
  bool batched = false;                 // some group has several slices
  std::vector<int> position;            // topological position of the group
};

GroupGraph group_graph(const TaskGraph& graph) {
  GroupGraph result;
  result.group_of_task = slice_groups(graph, &result.groups);
  result.members.resize(result.groups);
  for (std::size_t task = 0; task < graph.tasks.size(); ++task) {
    result.members[result.group_of_task[task]].push_back(static_cast<int>(task));
  }
  for (const auto& members : result.members) result.batched = result.batched || members.size() > 1;
  for (const auto& [from, to] : graph.edges) {
    const int a = result.group_of_task[from];
    const int b = result.group_of_task[to];
    if (a != b) result.edges.insert({a, b});
  }
  result.position.assign(result.groups, std::numeric_limits<int>::max());
  const std::vector<int> order = graph.topological_order();
  for (std::size_t i = 0; i < order.size(); ++i) {
    int& position = result.position[result.group_of_task[order[i]]];
    position = std::min(position, static_cast<int>(i));
  }
  return result;
}

// Bridges and articulation points of an undirected multigraph (edges by id, so parallel
// edges are not bridges), by an iterative depth-first search.
struct CutStructure {
  std::vector<bool> bridge;        // per edge id
  std::vector<bool> articulation;  // per vertex
};

CutStructure find_cuts(int vertices, const std::vector<std::pair<int, int>>& edges) {
  std::vector<std::vector<std::pair<int, int>>> adjacent(vertices);  // (neighbour, edge id)
  for (std::size_t id = 0; id < edges.size(); ++id) {
    adjacent[edges[id].first].push_back({edges[id].second, static_cast<int>(id)});
    adjacent[edges[id].second].push_back({edges[id].first, static_cast<int>(id)});
  }
  CutStructure cuts;
  cuts.bridge.assign(edges.size(), false);
  cuts.articulation.assign(vertices, false);
  std::vector<int> discovered(vertices, -1);
  std::vector<int> low(vertices, 0);
  int time = 0;
  struct Frame {
    int vertex;
    int parent_edge;
    std::size_t next = 0;
    int children = 0;
  };
  for (int root = 0; root < vertices; ++root) {
    if (discovered[root] >= 0) continue;
    std::vector<Frame> stack{{root, -1}};
    discovered[root] = low[root] = time++;
    while (!stack.empty()) {
      Frame& frame = stack.back();
      if (frame.next < adjacent[frame.vertex].size()) {
        const auto [neighbour, id] = adjacent[frame.vertex][frame.next++];
        if (id == frame.parent_edge) continue;
        if (discovered[neighbour] >= 0) {
          low[frame.vertex] = std::min(low[frame.vertex], discovered[neighbour]);
        } else {
          discovered[neighbour] = low[neighbour] = time++;
          ++frame.children;
          stack.push_back({neighbour, id});
        }
        continue;
      }
      const Frame done = frame;
      stack.pop_back();
      if (stack.empty()) {
        if (done.children > 1) cuts.articulation[done.vertex] = true;
        continue;
      }
      Frame& parent = stack.back();
      low[parent.vertex] = std::min(low[parent.vertex], low[done.vertex]);
      if (low[done.vertex] > discovered[parent.vertex]) cuts.bridge[done.parent_edge] = true;
      if (stack.size() > 1 && low[done.vertex] >= discovered[parent.vertex]) {
        cuts.articulation[parent.vertex] = true;
      }
    }
  }
  return cuts;
}

// Connected components of `vertices` under `edges` (union-find); per vertex its component.
std::vector<int> components(int vertices, const std::vector<std::pair<int, int>>& edges,
                            int* count) {
  std::vector<int> parent(vertices);
  std::iota(parent.begin(), parent.end(), 0);
  const std::function<int(int)> find = [&](int v) {
    while (parent[v] != v) v = parent[v] = parent[parent[v]];
    return v;
  };
  for (const auto& [a, b] : edges) parent[find(a)] = find(b);
  std::map<int, int> label;
  std::vector<int> component(vertices);
  for (int v = 0; v < vertices; ++v) {
    component[v] = label.emplace(find(v), static_cast<int>(label.size())).first->second;
  }
  *count = static_cast<int>(label.size());
  return component;
}

// Orders modules (given per group) so edges go forward: merges modules on cycles of the
// quotient graph, then sorts topologically (ties by earliest task).
std::vector<std::vector<int>> ordered_modules(const GroupGraph& groups,
                                              std::vector<int> module_of_group) {
  while (true) {
    int count = 0;
    {
      std::map<int, int> label;
      for (int& module : module_of_group) {
        module = label.emplace(module, static_cast<int>(label.size())).first->second;
      }
      count = static_cast<int>(label.size());
    }
    std::vector<std::set<int>> next(count);
    for (const auto& [a, b] : groups.edges) {
      if (module_of_group[a] != module_of_group[b])
        next[module_of_group[a]].insert(module_of_group[b]);
    }
    // Strongly connected components of the quotient (Tarjan, recursive: quotients are small).
    std::vector<int> index(count, -1), low(count, 0), scc(count, -1);
    std::vector<bool> on_stack(count, false);
    std::vector<int> stack;
    int counter = 0, scc_count = 0;
    const std::function<void(int)> visit = [&](int v) {
      index[v] = low[v] = counter++;
      stack.push_back(v);
      on_stack[v] = true;
      for (int w : next[v]) {
        if (index[w] < 0) {
          visit(w);
          low[v] = std::min(low[v], low[w]);
        } else if (on_stack[w]) {
          low[v] = std::min(low[v], index[w]);
        }
      }
      if (low[v] == index[v]) {
        while (true) {
          const int w = stack.back();
          stack.pop_back();
          on_stack[w] = false;
          scc[w] = scc_count;
          if (w == v) break;
        }
        ++scc_count;
      }
    };
    for (int v = 0; v < count; ++v) {
      if (index[v] < 0) visit(v);
    }
    if (scc_count == count) {
      // Acyclic: Kahn's order, earliest task first among the ready modules.
      std::vector<int> first(count, std::numeric_limits<int>::max());
      for (int group = 0; group < groups.groups; ++group) {
        first[module_of_group[group]] =
            std::min(first[module_of_group[group]], groups.position[group]);
      }
      std::vector<int64_t> priority(first.begin(), first.end());
      std::vector<std::vector<int>> successors(count);
      for (int v = 0; v < count; ++v) successors[v].assign(next[v].begin(), next[v].end());
      const std::vector<int> order = topological_order(successors, priority);
      std::vector<int> rank(count);
      for (int position = 0; position < count; ++position) rank[order[position]] = position;
      std::vector<std::vector<int>> modules(count);
      for (int group = 0; group < groups.groups; ++group) {
        for (int task : groups.members[group])
          modules[rank[module_of_group[group]]].push_back(task);
      }
      for (auto& module : modules) std::sort(module.begin(), module.end());
      return modules;
    }
    for (int& module : module_of_group) module = scc[module];
  }
}

void fill_module_of_task(ModuleSplit& split, std::size_t tasks) {
  split.module_of_task.assign(tasks, -1);
  for (std::size_t module = 0; module < split.modules.size(); ++module) {
    for (int task : split.modules[module]) split.module_of_task[task] = static_cast<int>(module);
  }
}

// Global minimum cut of a small weighted undirected graph (Stoer-Wagner, O(n^3)); returns
// its weight and one side.
std::pair<double, std::vector<int>> minimum_cut(std::vector<std::vector<double>> weight) {
  const int n = static_cast<int>(weight.size());
  std::vector<std::vector<int>> merged(n);
  for (int v = 0; v < n; ++v) merged[v] = {v};
  std::vector<bool> alive(n, true);
  double best = std::numeric_limits<double>::infinity();
  std::vector<int> best_side;
  for (int phase = n; phase > 1; --phase) {
    std::vector<double> attached(n, 0.0);
    std::vector<bool> added(n, false);
    int previous = -1, last = -1;
    for (int step = 0; step < phase; ++step) {
      int pick = -1;
      for (int v = 0; v < n; ++v) {
        if (alive[v] && !added[v] && (pick < 0 || attached[v] > attached[pick])) pick = v;
      }
      added[pick] = true;
      previous = last;
      last = pick;
      for (int v = 0; v < n; ++v) {
        if (alive[v] && !added[v]) attached[v] += weight[pick][v];
      }
    }
    if (attached[last] < best) {
      best = attached[last];
      best_side = merged[last];
    }
    merged[previous].insert(merged[previous].end(), merged[last].begin(), merged[last].end());
    for (int v = 0; v < n; ++v) {
      weight[previous][v] += weight[last][v];
      weight[v][previous] = weight[previous][v];
    }
    alive[last] = false;
  }
  return {best, best_side};
}

// Maximal k-edge-connected subgraphs by recursive minimum cuts, after peeling vertices of
// degree below k (they cannot be inside one). Per vertex, its component label.
std::vector<int> k_edge_connected_components(int vertices,
                                             const std::vector<std::pair<int, int>>& edges, int k) {
  std::vector<std::map<int, double>> adjacent(vertices);
  for (const auto& [a, b] : edges) {
    adjacent[a][b] += 1;
    adjacent[b][a] += 1;
  }
  std::vector<int> label(vertices, -1);
  int next_label = 0;
  std::vector<std::vector<int>> pending;
  {
    std::vector<int> all(vertices);
    std::iota(all.begin(), all.end(), 0);
    pending.push_back(all);
  }
  while (!pending.empty()) {
    std::vector<int> part = std::move(pending.back());
    pending.pop_back();
    if (part.size() == 1) {
      label[part[0]] = next_label++;
      continue;
    }
    std::set<int> inside(part.begin(), part.end());
    // Peel low-degree vertices.
    bool peeled = true;
    while (peeled && inside.size() > 1) {
      peeled = false;
      for (auto it = inside.begin(); it != inside.end();) {
        double degree = 0;
        for (const auto& [w, count] : adjacent[*it]) {
          if (inside.count(w)) degree += count;
        }
        if (degree < k) {
          label[*it] = next_label++;
          it = inside.erase(it);
          peeled = true;
        } else {
          ++it;
        }
      }
    }
    if (inside.empty()) continue;
    if (inside.size() == 1) {
      label[*inside.begin()] = next_label++;
      continue;
    }
    std::vector<int> members(inside.begin(), inside.end());
    std::map<int, int> local;
    for (std::size_t i = 0; i < members.size(); ++i) local[members[i]] = static_cast<int>(i);
    std::vector<std::vector<double>> weight(members.size(), std::vector<double>(members.size(), 0));
    std::vector<std::pair<int, int>> local_edges;
    for (std::size_t i = 0; i < members.size(); ++i) {
      for (const auto& [w, count] : adjacent[members[i]]) {
        const auto it = local.find(w);
        if (it == local.end()) continue;
        weight[i][it->second] = count;
        local_edges.push_back({static_cast<int>(i), it->second});
      }
    }
    int pieces = 0;
    const std::vector<int> piece =
        components(static_cast<int>(members.size()), local_edges, &pieces);
    if (pieces > 1) {
      std::vector<std::vector<int>> split(pieces);
      for (std::size_t i = 0; i < members.size(); ++i) split[piece[i]].push_back(members[i]);
      for (auto& part_of : split) pending.push_back(std::move(part_of));
      continue;
    }
    const auto [cut, side] = minimum_cut(weight);
    if (cut >= k) {
      for (int v : members) label[v] = next_label;
      ++next_label;
      continue;
    }
    std::vector<bool> in_side(members.size(), false);
    for (int i : side) in_side[i] = true;
    std::vector<int> one, other;
    for (std::size_t i = 0; i < members.size(); ++i)
      (in_side[i] ? one : other).push_back(members[i]);
    pending.push_back(std::move(one));
    pending.push_back(std::move(other));
  }
  return label;
}

}  // namespace

Reachability::Reachability(const TaskGraph& graph) {
  const std::size_t tasks = graph.tasks.size();
  words_ = (tasks + 63) / 64;
  rows_.assign(tasks * words_, 0);
  const auto successors = graph.successors();
  const std::vector<int> order = graph.topological_order();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const std::size_t task = static_cast<std::size_t>(*it);
    uint64_t* row = &rows_[task * words_];
    for (int next : successors[task]) {
      const uint64_t* next_row = &rows_[static_cast<std::size_t>(next) * words_];
      for (std::size_t w = 0; w < words_; ++w) row[w] |= next_row[w];
      row[static_cast<std::size_t>(next) / 64] |= uint64_t{1}
                                                  << (static_cast<std::size_t>(next) % 64);
    }
  }
}

std::vector<int> slice_groups(const TaskGraph& graph, int* group_count) {
  std::map<std::pair<int32_t, int32_t>, int> group_of_key;
  std::vector<std::set<int64_t>> begins;
  std::vector<int> group(graph.tasks.size());
  int count = 0;
  for (std::size_t task = 0; task < graph.tasks.size(); ++task) {
    const Task& info = graph.tasks[task];
    if (info.weight_group >= 0) {
      const auto [it, added] =
          group_of_key.emplace(std::make_pair(info.weight_group, info.node), count);
      if (added) {
        ++count;
        begins.emplace_back();
      }
      // Two tasks over the same samples are not slices of one node: keep them apart.
      if (begins[it->second].insert(info.batch_begin).second) {
        group[task] = it->second;
        continue;
      }
    }
    group[task] = count++;
    begins.emplace_back();
  }
  if (group_count != nullptr) *group_count = count;
  return group;
}

TaskGraph induced_subgraph(const TaskGraph& graph, const std::vector<int>& tasks) {
  TaskGraph sub;
  sub.machine = graph.machine;
  std::vector<int> local(graph.tasks.size(), -1);
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const int task = tasks[i];
    if (task < 0 || static_cast<std::size_t>(task) >= graph.tasks.size() || local[task] >= 0) {
      throw Error(fmt::format("induced_subgraph: task index {} is out of range or repeated", task));
    }
    local[task] = static_cast<int>(i);
    sub.tasks.push_back(graph.tasks[task]);
  }
  for (std::size_t edge = 0; edge < graph.edges.size(); ++edge) {
    const auto [from, to] = graph.edges[edge];
    if (local[from] < 0 || local[to] < 0) continue;
    sub.edges.push_back({local[from], local[to]});
    if (!graph.edge_bytes.empty()) sub.edge_bytes.push_back(graph.edge_bytes[edge]);
  }
  return sub;
}

ModuleSplit single_channel_modules(const TaskGraph& graph) {
  const GroupGraph groups = group_graph(graph);
  ModuleSplit split;
  split.channels = 1;
  const int g = groups.groups;
  if (g == 0) return split;
  // Undirected graph over groups plus a virtual source (g) and sink (g + 1).
  std::vector<std::pair<int, int>> edges(groups.edges.begin(), groups.edges.end());
  const std::size_t real_edges = edges.size();
  std::vector<int> indegree(g, 0), outdegree(g, 0);
  for (const auto& [a, b] : groups.edges) {
    ++outdegree[a];
    ++indegree[b];
  }
  int sources = 0, sinks = 0;
  for (int v = 0; v < g; ++v) {
    if (indegree[v] == 0) {
      edges.push_back({g, v});
      ++sources;
    }
    if (outdegree[v] == 0) {
      edges.push_back({v, g + 1});
      ++sinks;
    }
  }
  const CutStructure cuts = find_cuts(g + 2, edges);
  std::vector<bool> bridge_end(g, false);
  std::vector<std::pair<int, int>> bridges;
  for (std::size_t id = 0; id < real_edges; ++id) {
    if (!cuts.bridge[id]) continue;
    bridges.push_back(edges[id]);
    bridge_end[edges[id].first] = bridge_end[edges[id].second] = true;
  }
  std::vector<int> cut_vertices;
  for (int v = 0; v < g; ++v) {
    if (!cuts.articulation[v] || bridge_end[v]) continue;
    // The only input or output separates nothing but the virtual ends.
    if ((indegree[v] == 0 && sources == 1) || (outdegree[v] == 0 && sinks == 1)) continue;
    cut_vertices.push_back(v);
  }
  // Every cut separates its ancestors from its descendants, and the cuts are nested, so a
  // task's module is the number of cuts it lies after (a bridge's consumer and an
  // articulation point's descendants are after it; the point itself stays before, and the
  // next module starts with its copy).
  std::vector<std::vector<int>> next(g);
  for (const auto& [a, b] : groups.edges) next[a].push_back(b);
  const auto mark_after = [&](int first, bool include_first, std::vector<int>& count) {
    std::vector<bool> seen(g, false);
    std::vector<int> stack{first};
    seen[first] = true;
    while (!stack.empty()) {
      const int v = stack.back();
      stack.pop_back();
      if (v != first || include_first) ++count[v];
      for (int w : next[v]) {
        if (!seen[w]) {
          seen[w] = true;
          stack.push_back(w);
        }
      }
    }
  };
  std::vector<int> module_of_group(g, 0);
  for (const auto& [a, b] : bridges) mark_after(b, true, module_of_group);
  for (int v : cut_vertices) mark_after(v, false, module_of_group);
  const std::size_t modules = bridges.size() + cut_vertices.size() + 1;
  split.modules.assign(modules, {});
  for (int v = 0; v < g; ++v) {
    for (int task : groups.members[v]) split.modules[module_of_group[v]].push_back(task);
  }
  for (auto& module : split.modules) std::sort(module.begin(), module.end());
  if (std::any_of(split.modules.begin(), split.modules.end(),
                  [](const std::vector<int>& module) { return module.empty(); })) {
    throw Error("modules: internal error: a cut of the task graph left an empty module");
  }
  fill_module_of_task(split, graph.tasks.size());
  split.single_channel = !groups.batched && modules > 1;
  if (!split.single_channel) return split;
  split.joints.assign(modules - 1, {});
  for (const auto& [a, b] : bridges) {
    split.joints[module_of_group[a]] = {groups.members[a][0], groups.members[b][0]};
  }
  for (int v : cut_vertices) split.joints[module_of_group[v]] = {groups.members[v][0], -1};
  return split;
}

ModuleSplit multi_channel_modules(const TaskGraph& graph, int channels, int min_module_tasks) {
  if (channels < 1) {
    throw Error(fmt::format("modules: channel count must be at least 1, got {}", channels));
  }
  if (channels == 1) return single_channel_modules(graph);
  const GroupGraph groups = group_graph(graph);
  ModuleSplit split;
  split.channels = channels;
  const int g = groups.groups;
  if (g == 0) return split;
  const std::vector<std::pair<int, int>> edges(groups.edges.begin(), groups.edges.end());
  std::vector<int> module_of_group = k_edge_connected_components(g, edges, channels + 1);
  // Merge modules below the minimum size into the neighbour they share most edges with.
  const auto task_count = [&](int module) {
    std::size_t count = 0;
    for (int group = 0; group < g; ++group) {
      if (module_of_group[group] == module) count += groups.members[group].size();
    }
    return count;
  };
  const std::size_t minimum = static_cast<std::size_t>(std::max(1, min_module_tasks));
  while (true) {
    std::map<int, std::size_t> sizes;
    for (int group = 0; group < g; ++group)
      sizes[module_of_group[group]] += groups.members[group].size();
    if (sizes.size() <= 1) break;
    int smallest = -1;
    for (const auto& [module, size] : sizes) {
      if (size < minimum && (smallest < 0 || size < sizes[smallest])) smallest = module;
    }
    if (smallest < 0) break;
    std::map<int, int> shared;
    for (const auto& [a, b] : edges) {
      const int ma = module_of_group[a];
      const int mb = module_of_group[b];
      if (ma == smallest && mb != smallest) ++shared[mb];
      if (mb == smallest && ma != smallest) ++shared[ma];
    }
    int target = -1;
    for (const auto& [module, count] : shared) {
      if (target < 0 || count > shared[target] ||
          (count == shared[target] && task_count(module) < task_count(target))) {
        target = module;
      }
    }
    if (target < 0) {
      // Not connected to anything: join the smallest other module.
      for (const auto& [module, size] : sizes) {
        if (module != smallest && (target < 0 || size < sizes[target])) target = module;
      }
    }
    for (int& module : module_of_group) {
      if (module == smallest) module = target;
    }
  }
  split.modules = ordered_modules(groups, module_of_group);
  fill_module_of_task(split, graph.tasks.size());
  return split;
}

}  // namespace cleave
