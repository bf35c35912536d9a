// Whole runs of a model at 2 threads timed as the profile times them (back to back on one
// thread, node timing on) against as `bench --families` times them (time_in_rounds: a fresh
// thread per round, one untimed run and one timed, another executor's round in between), and
// node times summed per op type in both (issue 46 item 2, docs/results/predictions-2cores.md,
// 2026-11-30 11:xx). Build against a Release build's archives (link line of `cleave`, main.cc.o
// replaced):
//   cd build && LINK=$(ninja -t commands cleave | tail -1 | sed 's/^: && //; s/ && :$//' |
//     sed 's#CMakeFiles/cleave.dir/src/cli/main.cc.o#/tmp/profile_rounds.o#; s#-o cleave#-o
//     /tmp/profile_rounds#')
//   g++ -O2 -std=c++20 -fopenmp -DFMT_SHARED -DONNX_ML=1 -DONNX_NAMESPACE=onnx -Igenerated -I../src
//   \
//     -isystem /usr/include/coin -c ../bench/profile_rounds.cc -o /tmp/profile_rounds.o && eval
//     $LINK
//   GOMP_SPINCOUNT=300000 taskset -c 0-1 /tmp/profile_rounds MODEL.onnx channels-last 4
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "frontend/load.h"
#include "runtime/executor.h"
#include "runtime/random_inputs.h"

using namespace cleave;
using Clock = std::chrono::steady_clock;

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}
static double since(Clock::time_point s) {
  return std::chrono::duration<double>(Clock::now() - s).count();
}

struct Acc {
  std::vector<double> whole;
  std::vector<std::vector<double>> nodes;
};

int main(int argc, char** argv) {
  Graph graph = load_model(argv[1]);
  ConvolutionFamily family = *parse_convolution_family(argv[2]);
  int blocks = argc > 3 ? std::stoi(argv[3]) : 4;
  ExecutorOptions o;
  o.threads = 2;
  o.convolution_family = family;
  ExecutorOptions os = o;
  os.collect_stats = true;
  ExecutorOptions o1 = o;
  o1.threads = 1;
  Executor es(graph, os), ep(graph, o), eo(graph, o1);
  auto inputs_map = random_inputs(graph, 0);
  SampleInputs inputs = inputs_map;
  for (int i = 0; i < 2; ++i) {
    es.run(inputs);
    ep.run(inputs);
    eo.run(inputs);
  }
  std::map<std::string, Acc> acc;
  auto node_sample = [&](Acc& a, const std::vector<double>& before) {
    const auto& after = es.stats().node_seconds;
    if (a.nodes.empty()) a.nodes.resize(graph.node_capacity());
    for (NodeId id : graph.node_ids()) a.nodes[id].push_back(after[id] - before[id]);
  };
  // P: profile style, es back-to-back on the main thread.
  auto mode_P = [&] {
    Acc& a = acc["P_stats_b2b"];
    for (int i = 0; i < 20; ++i) {
      auto before = es.stats().node_seconds;
      auto s = Clock::now();
      es.run(inputs);
      a.whole.push_back(since(s));
      node_sample(a, before);
    }
  };
  auto mode_Q = [&] {
    Acc& a = acc["Q_plain_b2b"];
    for (int i = 0; i < 20; ++i) {
      auto s = Clock::now();
      ep.run(inputs);
      a.whole.push_back(since(s));
    }
  };
  auto round = [&](Executor& e, Acc* a, bool stats) {
    std::thread t([&] {
      e.run(inputs);
      auto before = es.stats().node_seconds;
      auto s = Clock::now();
      e.run(inputs);
      double w = since(s);
      if (a) {
        a->whole.push_back(w);
        if (stats) node_sample(*a, before);
      }
    });
    t.join();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  };
  auto mode_R = [&] {
    omp_pause_resource_all(omp_pause_hard);
    for (int i = 0; i < 10; ++i) round(ep, &acc["R_plain_rounds"], false);
  };
  auto mode_S = [&] {
    omp_pause_resource_all(omp_pause_hard);
    for (int i = 0; i < 10; ++i) {
      round(ep, &acc["S_plain_rounds_other"], false);
      round(eo, nullptr, false);
    }
  };
  auto mode_T = [&] {
    omp_pause_resource_all(omp_pause_hard);
    for (int i = 0; i < 10; ++i) {
      round(es, &acc["T_stats_rounds_other"], true);
      round(eo, nullptr, false);
    }
  };
  std::vector<std::function<void()>> modes = {mode_P, mode_Q, mode_R, mode_S, mode_T};
  for (int b = 0; b < blocks; ++b) {
    for (std::size_t k = 0; k < modes.size(); ++k) modes[b % 2 ? modes.size() - 1 - k : k]();
  }
  for (auto& [name, a] : acc)
    std::printf("%-22s median %.3f ms  n=%zu\n", name.c_str(), median(a.whole) * 1e3,
                a.whole.size());
  // Per op type: P vs T node medians summed.
  std::map<std::string, std::pair<double, double>> by_op;
  double sp = 0, st = 0;
  for (NodeId id : graph.node_ids()) {
    double p = median(acc["P_stats_b2b"].nodes[id]),
           t = median(acc["T_stats_rounds_other"].nodes[id]);
    by_op[graph.node(id).op_type].first += p;
    by_op[graph.node(id).op_type].second += t;
    sp += p;
    st += t;
  }
  std::printf("%-24s %10s %10s %6s\n", "op", "b2b ms", "rounds ms", "ratio");
  for (auto& [op, v] : by_op)
    std::printf("%-24s %10.3f %10.3f %6.2f\n", op.c_str(), v.first * 1e3, v.second * 1e3,
                v.second / v.first);
  std::printf("%-24s %10.3f %10.3f %6.2f\n", "SUM nodes", sp * 1e3, st * 1e3, st / sp);
  std::printf("gap (whole - nodes): b2b %.3f ms, rounds %.3f ms\n",
              (median(acc["P_stats_b2b"].whole) - sp) * 1e3,
              (median(acc["T_stats_rounds_other"].whole) - st) * 1e3);
}
