// Property test: seeded random stream programs of bounded size are read, scheduled (balanced)
// and run (the item count a sequential run predicts); random mutations of them are Errors.
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "stream/executor.h"
#include "stream/schedule.h"
#include "stream/stream_json.h"
#include "test_models.h"

namespace cleave {
namespace {

// Items out per item in, in lowest terms.
struct Gain {
  int64_t num = 1;
  int64_t den = 1;
};

Gain times(Gain a, Gain b) {
  const int64_t num = a.num * b.num, den = a.den * b.den;
  const int64_t g = std::gcd(num, den);
  return {num / g, den / g};
}

class Generator {
 public:
  explicit Generator(unsigned seed) : rng_(seed) {}

  // A random stream; `gain` receives its items out per item in. Concat changes the item type,
  // so it stays outside split-joins, whose branches must join items of one type.
  Stream stream(int depth, bool in_splitjoin, Gain& gain) {
    const int kind = depth >= 3 ? 0 : pick(0, 3);
    if (kind <= 1) return filter(in_splitjoin, gain);
    if (kind == 2) {
      Stream p = container(StreamKind::kPipeline);
      gain = {1, 1};
      for (int i = pick(1, 3); i > 0; --i) {
        Gain g;
        p.streams.push_back(stream(depth + 1, in_splitjoin, g));
        gain = times(gain, g);
      }
      return p;
    }
    Stream sj = container(StreamKind::kSplitJoin);
    const int branches = pick(1, 3);
    sj.split.kind = pick(0, 1) ? SplitKind::kDuplicate : SplitKind::kRoundRobin;
    std::vector<Gain> delivered;  // per branch: items it pushes per splitter firing
    int64_t popped = 1;
    if (sj.split.kind == SplitKind::kRoundRobin) popped = 0;
    for (int b = 0; b < branches; ++b) {
      Gain g;
      sj.streams.push_back(stream(depth + 1, true, g));
      int64_t share = 1;
      if (sj.split.kind == SplitKind::kRoundRobin) {
        share = pick(1, 3);
        sj.split.weights.push_back(share);
        popped += share;
      }
      delivered.push_back(times(g, {share, 1}));
    }
    // Joiner weights in the ratio the branches deliver: the smallest integers that are.
    int64_t den = 1;
    for (const Gain& d : delivered) den = std::lcm(den, d.den);
    int64_t common = 0;
    for (const Gain& d : delivered) common = std::gcd(common, d.num * (den / d.den));
    int64_t total = 0;
    for (const Gain& d : delivered) {
      sj.join.weights.push_back(d.num * (den / d.den) / common);
      total += sj.join.weights.back();
    }
    // Per splitter firing (popping `popped` items) the joiner fires common / den times,
    // pushing `total` items each time.
    gain = times({total * common, 1}, {1, den * popped});
    return sj;
  }

  int pick(int low, int high) { return std::uniform_int_distribution<int>(low, high)(rng_); }

 private:
  Stream container(StreamKind kind) {
    Stream s;
    s.kind = kind;
    s.name = fmt::format("s{}", next_++);
    return s;
  }

  Stream filter(bool in_splitjoin, Gain& gain) {
    Stream s = container(StreamKind::kFilter);
    s.kind = StreamKind::kFilter;
    const int op = pick(0, in_splitjoin ? 2 : 3);
    s.pop = pick(1, 3);
    s.peek = s.pop;
    if (op == 0) {
      s.op = FilterOp::kIdentity;
      s.push = s.pop;
    } else if (op == 1) {
      s.op = FilterOp::kSlice;
      s.peek = s.pop + pick(0, 2);
      s.push = pick(1, static_cast<int>(s.peek));
      s.args = {pick(0, static_cast<int>(s.peek - s.push))};
    } else if (op == 2) {
      s.op = FilterOp::kSeparator;
      s.push = pick(1, static_cast<int>(s.pop));
      for (int64_t i = 0; i < s.push; ++i) s.args.push_back(pick(0, static_cast<int>(s.pop) - 1));
    } else {
      s.op = FilterOp::kConcat;
      s.push = 1;
      s.args = {0};
    }
    const int64_t g = std::gcd(s.push, s.pop);
    gain = {s.push / g, s.pop / g};
    return s;
  }

  std::mt19937 rng_;
  int next_ = 0;
};

// How many items a run of `inputs` items pushes out: fire any actor whose windows are full
// until none is (the count is the same in every order, as in a Kahn network).
int64_t sequential_outputs(const StreamGraph& graph, int64_t inputs) {
  std::vector<int64_t> items(graph.channels.size(), 0);
  items[graph.input_channel] = inputs;
  for (bool fired = true; fired;) {
    fired = false;
    for (const StreamNode& node : graph.nodes) {
      bool ready = true;
      for (std::size_t p = 0; p < node.inputs.size(); ++p) {
        ready = ready && items[node.inputs[p]] >= node.peek[p];
      }
      if (!ready) continue;
      for (std::size_t p = 0; p < node.inputs.size(); ++p) items[node.inputs[p]] -= node.pop[p];
      for (std::size_t p = 0; p < node.outputs.size(); ++p) items[node.outputs[p]] += node.push[p];
      fired = true;
    }
  }
  return items[graph.output_channel];
}

TEST(RandomStreamPrograms, ScheduleIsBalancedAndRunsGiveThePredictedCount) {
  int ran = 0;
  for (unsigned seed = 1; seed <= 150; ++seed) {
    Generator generator(seed);
    Gain gain;
    const Stream root = generator.stream(0, false, gain);
    const std::string text = stream_to_json(root);
    SCOPED_TRACE(text);
    const StreamProgram program = parse_stream_program(text, "random.json", ".");
    const StreamGraph graph = flatten_stream(program.root);
    const StreamSchedule schedule = schedule_stream(graph, program.origin);
    for (const StreamChannel& c : graph.channels) {
      if (c.from < 0 || c.to < 0) continue;
      EXPECT_EQ(schedule.repetitions[c.from] * graph.nodes[c.from].push[c.from_port],
                schedule.repetitions[c.to] * graph.nodes[c.to].pop[c.to_port])
          << c.name;
    }
    // The program's gain is what one steady-state iteration pushes per item it pops.
    EXPECT_EQ(schedule.output_per_iteration * gain.den, schedule.input_per_iteration * gain.num);
    const int64_t inputs = schedule.input_for_init + 2 * schedule.input_per_iteration;
    if (inputs > 2000 || iteration_firings(schedule, program.origin) > 2000) continue;
    std::vector<Tensor> items;
    for (int64_t i = 0; i < inputs; ++i) items.push_back(Tensor::allocate(DataType::kFloat, {2}));
    const StreamRunResult r =
        run_stream(program, items, testing::on_workers(1 + static_cast<int>(seed % 2)));
    EXPECT_EQ(r.output_count, sequential_outputs(graph, inputs));
    EXPECT_GE(r.output_count, 2 * schedule.output_per_iteration);
    ++ran;
  }
  EXPECT_GT(ran, 100);
}

TEST(RandomStreamPrograms, MutatedProgramsAreErrorsNeverCrashes) {
  for (unsigned seed = 1; seed <= 150; ++seed) {
    Generator generator(seed);
    Gain gain;
    Stream root = generator.stream(0, false, gain);
    Stream* first = &root;
    while (!first->is_filter()) first = &first->streams.front();
    const int mutation = generator.pick(0, 4);
    if (mutation == 0) first->pop = 0;
    if (mutation == 1) first->peek = first->pop - 1;                     // below pop
    if (mutation == 2) root.name = root.is_filter() ? "" : first->name;  // none, or used twice
    std::string mutated = stream_to_json(root);
    if (mutation == 3) {  // cut short
      mutated.resize(
          static_cast<std::size_t>(generator.pick(0, static_cast<int>(mutated.size()) - 1)));
    }
    if (mutation == 4) mutated = "{\"filter\": " + mutated + "}";  // a stream where a body goes
    SCOPED_TRACE(mutated);
    EXPECT_THROW(
        {
          const StreamProgram program = parse_stream_program(mutated, "mutated.json", ".");
          schedule_stream(flatten_stream(program.root), program.origin);
        },
        Error);
  }
}

}  // namespace
}  // namespace cleave
