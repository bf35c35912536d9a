// Static scheduling of stream programs: balance equations, init schedule, buffer sizes.
#include "stream/schedule.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <numeric>

#include "support/limits.h"

namespace cleave {

namespace {

// Checked int64 arithmetic: the balance equations multiply rates along the whole program.
int64_t mul(int64_t a, int64_t b, const std::string& origin) {
  int64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out)) {
    throw Error(fmt::format("{}: repetition counts overflow 64 bits ({} x {})", origin, a, b));
  }
  return out;
}

int64_t add(int64_t a, int64_t b, const std::string& origin) {
  int64_t out = 0;
  if (__builtin_add_overflow(a, b, &out)) {
    throw Error(fmt::format("{}: item counts overflow 64 bits ({} + {})", origin, a, b));
  }
  return out;
}

std::optional<int64_t> mul_opt(std::optional<int64_t> a, std::optional<int64_t> b) {
  int64_t out = 0;
  if (!a || !b || __builtin_mul_overflow(*a, *b, &out)) return std::nullopt;
  return out;
}

// A positive rational kept in lowest terms.
struct Rational {
  int64_t num = 0;
  int64_t den = 1;
};

Rational make_rational(int64_t num, int64_t den) {
  const int64_t g = std::gcd(num, den);
  return {num / g, den / g};
}

class Flattener {
 public:
  StreamGraph graph;

  int new_channel(int from, int from_port) {
    graph.channels.push_back(StreamChannel{{}, from, from_port, -1, 0});
    return static_cast<int>(graph.channels.size()) - 1;
  }

  int add_node(StreamNode node, std::vector<int> inputs) {
    const int id = static_cast<int>(graph.nodes.size());
    for (std::size_t port = 0; port < inputs.size(); ++port) {
      graph.channels[inputs[port]].to = id;
      graph.channels[inputs[port]].to_port = static_cast<int>(port);
    }
    node.inputs = std::move(inputs);
    graph.nodes.push_back(std::move(node));
    return id;
  }

  // Builds `s` reading channel `in`; returns the channel it writes.
  int build(const Stream& s, int in) {
    if (s.is_filter()) {
      StreamNode node{StreamNodeKind::kFilter, s.name, &s, {}, {}, {s.pop}, {s.peek}, {s.push}};
      const int id = add_node(std::move(node), {in});
      return attach_outputs(id, 1)[0];
    }
    if (s.kind == StreamKind::kPipeline) {
      int channel = in;
      for (const Stream& child : s.streams) channel = build(child, channel);
      return channel;
    }
    const std::size_t branches = s.streams.size();
    StreamNode split{StreamNodeKind::kSplitter, s.name + ".split", &s, {}, {}, {}, {}, {}};
    if (s.split.kind == SplitKind::kDuplicate) {
      split.pop = {1};
      split.peek = {1};
      split.push.assign(branches, 1);
    } else {
      const int64_t total =
          std::accumulate(s.split.weights.begin(), s.split.weights.end(), int64_t{0});
      split.pop = {total};
      split.peek = {total};
      split.push = s.split.weights;
    }
    const int split_id = add_node(std::move(split), {in});
    const std::vector<int> outs = attach_outputs(split_id, branches);
    std::vector<int> joined;
    for (std::size_t i = 0; i < branches; ++i) joined.push_back(build(s.streams[i], outs[i]));
    const int64_t total = std::accumulate(s.join.weights.begin(), s.join.weights.end(), int64_t{0});
    StreamNode join{StreamNodeKind::kJoiner, s.name + ".join", &s,     {}, {},
                    s.join.weights,          s.join.weights,   {total}};
    const int join_id = add_node(std::move(join), joined);
    return attach_outputs(join_id, 1)[0];
  }

  std::vector<int> attach_outputs(int node, std::size_t count) {
    std::vector<int> outs;
    for (std::size_t port = 0; port < count; ++port) {
      outs.push_back(new_channel(node, static_cast<int>(port)));
    }
    graph.nodes[node].outputs = outs;
    return outs;
  }
};

std::string end_name(const StreamGraph& g, int node, const char* fallback) {
  return node < 0 ? fallback : g.nodes[node].name;
}

[[noreturn]] void inconsistent(const StreamGraph& g, const std::vector<Rational>& reps,
                               const StreamChannel& c, const std::string& origin) {
  const StreamNode& to = g.nodes[c.to];
  const StreamNode& from = g.nodes[c.from];
  if (to.kind == StreamNodeKind::kJoiner) {
    // Say what each branch delivers per firing of the splitter, against the weights.
    std::vector<std::string> delivered;
    for (int in : to.inputs) {
      const StreamChannel& branch = g.channels[in];
      const Rational r = reps[branch.from];
      const int64_t push = g.nodes[branch.from].push[branch.from_port];
      delivered.push_back(r.den == 1 ? fmt::format("{}", r.num * push)
                                     : fmt::format("{}/{}", r.num * push, r.den));
    }
    throw Error(fmt::format(
        "{}: splitjoin \"{}\": round-robin joiner weights [{}] cannot match its branches, which "
        "push [{}] items per firing of the first filter; no steady state exists",
        origin, to.stream->name, fmt::join(to.pop, ", "), fmt::join(delivered, ", ")));
  }
  throw Error(fmt::format(
      "{}: inconsistent rates on channel {}: \"{}\" pushes {} and \"{}\" pops {} per firing, "
      "which no repetition counts balance",
      origin, c.name, from.name, from.push[c.from_port], to.name, to.pop[c.to_port]));
}

std::optional<ClosedFormRates> closed_forms(const Stream& s, std::vector<ClosedFormRates>& out) {
  ClosedFormRates rates{s.name, {}, {}, {}};
  if (s.is_filter()) {
    rates.pop = s.pop;
    rates.peek = s.peek;
    rates.push = s.push;
  } else {
    std::vector<std::optional<ClosedFormRates>> children;
    bool all = true;
    for (const Stream& child : s.streams) {
      children.push_back(closed_forms(child, out));
      all = all && children.back() && children.back()->peek && children.back()->push;
    }
    if (all && s.kind == StreamKind::kPipeline) {
      std::optional<int64_t> peek = 1, push = 1;
      for (const auto& c : children) {
        peek = mul_opt(peek, c->peek);  // Eq. 2.1
        push = mul_opt(push, c->push);  // Eq. 2.2
      }
      rates.peek = peek;
      rates.push = push;
      // Eq. 2.3; none when the product overflows, like the others.
      if (const std::optional<int64_t> product = mul_opt(peek, children[0]->pop)) {
        rates.pop = *product / *children[0]->peek;
      }
    } else if (all && s.split.kind == SplitKind::kDuplicate) {
      std::optional<int64_t> l = 1;
      int64_t weight_sum = 0;
      for (std::size_t i = 0; i < children.size() && l; ++i) {
        const std::optional<int64_t> term = mul_opt(s.join.weights[i], children[i]->peek);
        if (!term) {
          l.reset();
          break;
        }
        l = mul_opt(*l / std::gcd(*l, *term), *term);  // Eq. 2.4
        weight_sum += s.join.weights[i];
      }
      if (l) {
        rates.peek = l;
        rates.pop = l;
        const std::optional<int64_t> push = mul_opt(l, children[0]->push);
        if (push) rates.push = mul_opt(*push / *children[0]->peek, weight_sum);  // Eq. 2.5
      }
    }
  }
  out.push_back(rates);
  return rates;
}

}  // namespace

StreamGraph flatten_stream(const Stream& root) {
  Flattener f;
  const int in = f.new_channel(-1, 0);
  f.graph.input_channel = in;
  f.graph.output_channel = f.build(root, in);
  for (StreamChannel& c : f.graph.channels) {
    c.name = end_name(f.graph, c.from, "input") + "->" + end_name(f.graph, c.to, "output");
  }
  return std::move(f.graph);
}

StreamSchedule schedule_stream(const StreamGraph& g, const std::string& origin) {
  const std::size_t n = g.nodes.size();
  if (n == 0) throw Error(fmt::format("{}: the program has no filters", origin));
  // Nodes are in topological order, so every node's rate follows from an earlier producer;
  // the other inputs of a joiner then check the branches agree.
  std::vector<Rational> reps(n);
  reps[0] = {1, 1};
  for (std::size_t v = 1; v < n; ++v) {
    const StreamNode& node = g.nodes[v];
    for (std::size_t port = 0; port < node.inputs.size(); ++port) {
      const StreamChannel& c = g.channels[node.inputs[port]];
      const Rational& from = reps[c.from];
      // reps[v] = reps[from] * push / pop, reduced at each step so it stays small.
      const Rational a = make_rational(g.nodes[c.from].push[c.from_port], node.pop[port]);
      const Rational b = make_rational(from.num, a.den);
      const Rational d = make_rational(a.num, from.den);
      const Rational r = make_rational(mul(b.num, d.num, origin), mul(b.den, d.den, origin));
      if (port == 0) {
        reps[v] = r;
      } else if (r.num != reps[v].num || r.den != reps[v].den) {
        inconsistent(g, reps, c, origin);
      }
    }
  }
  int64_t den_lcm = 1;
  for (const Rational& r : reps) den_lcm = mul(den_lcm / std::gcd(den_lcm, r.den), r.den, origin);
  StreamSchedule s;
  s.repetitions.resize(n);
  int64_t num_gcd = 0;
  for (std::size_t v = 0; v < n; ++v) {
    s.repetitions[v] = mul(reps[v].num, den_lcm / reps[v].den, origin);
    num_gcd = std::gcd(num_gcd, s.repetitions[v]);
  }
  for (int64_t& r : s.repetitions) r /= num_gcd;

  // Init: walk backwards so each producer fires enough to fill its consumers' peek windows
  // and to feed the consumers' own init firings.
  s.init.assign(n, 0);
  s.initial_items.assign(g.channels.size(), 0);
  for (std::size_t i = n; i-- > 0;) {
    const StreamNode& node = g.nodes[i];
    int64_t fire = 0;
    for (std::size_t port = 0; port < node.outputs.size(); ++port) {
      const StreamChannel& c = g.channels[node.outputs[port]];
      if (c.to < 0) continue;
      const StreamNode& to = g.nodes[c.to];
      const int64_t need = add(mul(s.init[c.to], to.pop[c.to_port], origin),
                               to.peek[c.to_port] - to.pop[c.to_port], origin);
      const int64_t push = node.push[port];
      fire = std::max(fire, need / push + (need % push != 0 ? 1 : 0));
    }
    s.init[i] = fire;
  }
  s.buffers.assign(g.channels.size(), 0);
  for (std::size_t ci = 0; ci < g.channels.size(); ++ci) {
    const StreamChannel& c = g.channels[ci];
    if (c.from < 0) {
      const StreamNode& to = g.nodes[c.to];
      s.initial_items[ci] = to.peek[0] - to.pop[0];
      s.input_for_init = add(mul(s.init[c.to], to.pop[0], origin), s.initial_items[ci], origin);
      s.input_per_iteration = mul(s.repetitions[c.to], to.pop[0], origin);
      s.buffers[ci] = add(s.initial_items[ci], s.input_per_iteration, origin);
      continue;
    }
    const int64_t push = g.nodes[c.from].push[c.from_port];
    const int64_t produced_in_init = mul(s.init[c.from], push, origin);
    const int64_t per_iteration = mul(s.repetitions[c.from], push, origin);
    if (c.to < 0) {
      s.output_per_iteration = per_iteration;
      s.buffers[ci] = std::max(produced_in_init, per_iteration);
      continue;
    }
    s.initial_items[ci] =
        produced_in_init - mul(s.init[c.to], g.nodes[c.to].pop[c.to_port], origin);
    s.buffers[ci] = std::max(produced_in_init, add(s.initial_items[ci], per_iteration, origin));
  }
  return s;
}

int64_t iteration_firings(const StreamSchedule& schedule, const std::string& origin) {
  int64_t total = 0;
  for (int64_t r : schedule.repetitions) total = add(total, r, origin);
  return total;
}

void require_bounded_iteration(const StreamSchedule& schedule, const std::string& origin) {
  const int64_t firings = iteration_firings(schedule, origin);
  if (firings <= kMaxIterationFirings) return;
  throw Error(fmt::format(
      "{}: one steady-state iteration fires the actors {} times and needs {} input items; a "
      "run takes at most {} firings per iteration (rates whose ratios share no factor, such "
      "as prime pops in a pipeline, multiply)",
      origin, firings, schedule.input_per_iteration, kMaxIterationFirings));
}

std::vector<ClosedFormRates> closed_form_rates(const Stream& root) {
  std::vector<ClosedFormRates> out;
  closed_forms(root, out);
  return out;
}

std::string schedule_to_json(const StreamGraph& g, const StreamSchedule& s,
                             const std::vector<ClosedFormRates>& closed) {
  using nlohmann::ordered_json;
  ordered_json reps = ordered_json::object(), init = ordered_json::object(),
               buffers = ordered_json::object(), initial = ordered_json::object(),
               forms = ordered_json::object();
  for (std::size_t v = 0; v < g.nodes.size(); ++v) {
    reps[g.nodes[v].name] = s.repetitions[v];
    init[g.nodes[v].name] = s.init[v];
  }
  for (std::size_t c = 0; c < g.channels.size(); ++c) {
    buffers[g.channels[c].name] = s.buffers[c];
    initial[g.channels[c].name] = s.initial_items[c];
  }
  for (const ClosedFormRates& r : closed) {
    if (!r.peek || !r.push || !r.pop) {
      forms[r.name] = nullptr;
    } else {
      forms[r.name] = {{"pop", *r.pop}, {"peek", *r.peek}, {"push", *r.push}};
    }
  }
  ordered_json out = {{"repetitions", reps},
                      {"init", init},
                      {"buffers", buffers},
                      {"initial_items", initial},
                      {"input_per_iteration", s.input_per_iteration},
                      {"output_per_iteration", s.output_per_iteration},
                      {"input_for_init", s.input_for_init},
                      {"closed_forms", forms}};
  return out.dump(2);
}

}  // namespace cleave
