// SVG Gantt chart: hand-written markup, no dependencies, readable in any browser.
#include "viz/gantt.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>

#include "ir/graph.h"
#include "support/atomic_output.h"

namespace cleave {
namespace {

std::string escape(const std::string& text) {
  std::string result;
  for (char c : text) {
    switch (c) {
      case '&':
        result += "&amp;";
        break;
      case '<':
        result += "&lt;";
        break;
      case '>':
        result += "&gt;";
        break;
      case '"':
        result += "&quot;";
        break;
      default:
        result += c;
    }
  }
  return result;
}

// A round tick step (1, 2 or 5 times a power of ten) giving at most about `count` ticks.
double tick_step(double span, int count) {
  if (!(span > 0)) return 1;
  const double raw = span / count;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double factor : {1.0, 2.0, 5.0, 10.0}) {
    if (factor * power >= raw) return factor * power;
  }
  return 10 * power;
}

const char* const kPalette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
                                "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};

}  // namespace

std::string gantt_svg(const Plan& plan, const TaskGraph& graph, const Simulation& simulation,
                      std::string title) {
  constexpr double kLeft = 120, kRight = 30, kTop = 50, kRow = 34, kBox = 24, kWidth = 1100;
  const std::size_t workers = graph.machine.size();
  const double chart_width = kWidth - kLeft - kRight;
  const double span =
      simulation.makespan > 0 && std::isfinite(simulation.makespan) ? simulation.makespan : 1e-3;
  const double scale = chart_width / span;
  const double axis_y = kTop + kRow * static_cast<double>(workers) + 8;
  const double height = axis_y + 80;
  const auto x_of = [&](double seconds) { return kLeft + std::min(seconds, span) * scale; };

  std::string svg;
  svg += fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" height=\"{:.0f}\" "
      "font-family=\"sans-serif\" font-size=\"11\">\n",
      kWidth, height);
  svg += fmt::format("<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
  svg +=
      fmt::format("<text x=\"{:.0f}\" y=\"22\" font-size=\"15\" font-weight=\"bold\">{}</text>\n",
                  kLeft, escape(title));
  svg += fmt::format(
      "<text x=\"{:.0f}\" y=\"38\" fill=\"#555\">{}: makespan {:.3f} ms, {} transfers, {:.0f} "
      "bytes moved</text>\n",
      kLeft, escape(plan.strategy.empty() ? std::string("plan") : plan.strategy),
      simulation.makespan * 1e3, simulation.transfer_count, simulation.transfer_bytes);

  for (std::size_t worker = 0; worker < workers; ++worker) {
    const double y = kTop + kRow * static_cast<double>(worker);
    svg += fmt::format(
        "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\"/>\n", kLeft,
        y, chart_width, kRow, worker % 2 == 0 ? "#f4f4f4" : "#fbfbfb");
    const double busy = worker < simulation.busy.size() ? simulation.busy[worker] : 0.0;
    svg += fmt::format(
        "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n"
        "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\" fill=\"#777\" font-size=\"9\">busy "
        "{:.0f}%</text>\n",
        kLeft - 6, y + kRow / 2, escape(graph.machine.devices[worker].name), kLeft - 6,
        y + kRow / 2 + 11, simulation.makespan > 0 ? 100.0 * busy / simulation.makespan : 0.0);
  }

  // Grid and axis.
  const double step = tick_step(span, 10);
  svg += fmt::format(
      "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#333\"/>\n", kLeft,
      axis_y, kLeft + chart_width, axis_y);
  for (int tick = 0; tick * step <= span * (1 + 1e-9); ++tick) {
    const double x = x_of(tick * step);
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#ddd\"/>\n"
        "<line x1=\"{0:.1f}\" y1=\"{2:.1f}\" x2=\"{0:.1f}\" y2=\"{3:.1f}\" stroke=\"#333\"/>\n"
        "<text x=\"{0:.1f}\" y=\"{4:.1f}\" text-anchor=\"middle\">{5:g}</text>\n",
        x, kTop, axis_y, axis_y + 5, axis_y + 17, tick * step * 1e3);
  }
  svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">time (ms)</text>\n",
                     kLeft + chart_width / 2, axis_y + 33);

  // Tasks.
  for (std::size_t task = 0; task < graph.tasks.size() && task < plan.tasks.size(); ++task) {
    const int worker = plan.tasks[task].worker;
    if (worker < 0 || static_cast<std::size_t>(worker) >= workers) continue;
    const double start = simulation.start.at(task);
    const double finish = simulation.finish.at(task);
    const double x = x_of(start);
    const double width = std::max(1.0, x_of(finish) - x);
    const double y = kTop + kRow * worker + (kRow - kBox) / 2;
    const std::string& name = graph.tasks[task].name;
    svg += fmt::format(
        "<g><title>{} on {}: {:.4f} - {:.4f} ms ({:.4f} ms)</title>"
        "<rect x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"{:.1f}\" fill=\"{}\" "
        "stroke=\"white\" stroke-width=\"0.5\"/>",
        escape(name), escape(graph.machine.devices[worker].name), start * 1e3, finish * 1e3,
        (finish - start) * 1e3, x, y, width, kBox, kPalette[task % std::size(kPalette)]);
    // About 6.5 px per character at this font size: label only boxes wide enough for it.
    if (width >= 6.5 * static_cast<double>(name.size()) + 4) {
      svg += fmt::format(
          "<text x=\"{:.2f}\" y=\"{:.1f}\" text-anchor=\"middle\" fill=\"white\">{}</text>",
          x + width / 2, y + kBox / 2 + 4, escape(name));
    }
    svg += "</g>\n";
  }

  // Transfers: from the producer's finish on its row to the arrival on the consumer's row.
  for (std::size_t edge = 0; edge < graph.edges.size(); ++edge) {
    const auto [from, to] = graph.edges[edge];
    const int from_worker = plan.tasks.at(from).worker;
    const int to_worker = plan.tasks.at(to).worker;
    if (from_worker == to_worker) continue;
    const double sent = simulation.finish.at(from);
    const double arrived = sent + graph.edge_time(edge, from_worker, to_worker);
    const double y1 = kTop + kRow * from_worker + kRow / 2;
    const double y2 = kTop + kRow * to_worker + kRow / 2;
    svg += fmt::format(
        "<g><title>{} -> {}: {:.0f} bytes, {:.4f} ms</title>"
        "<line x1=\"{:.2f}\" y1=\"{:.1f}\" x2=\"{:.2f}\" y2=\"{:.1f}\" stroke=\"#222\" "
        "stroke-width=\"0.8\" stroke-opacity=\"0.6\"/>"
        "<circle cx=\"{:.2f}\" cy=\"{:.1f}\" r=\"2\" fill=\"#222\"/></g>\n",
        escape(graph.tasks[from].name), escape(graph.tasks[to].name), graph.bytes_on_edge(edge),
        (arrived - sent) * 1e3, x_of(sent), y1, x_of(arrived), y2, x_of(arrived), y2);
  }

  // Legend.
  const double legend_y = axis_y + 55;
  svg += fmt::format(
      "<rect x=\"{0:.0f}\" y=\"{1:.0f}\" width=\"14\" height=\"10\" fill=\"{2}\"/>"
      "<text x=\"{3:.0f}\" y=\"{4:.0f}\">task (box; hover for name and times)</text>\n"
      "<line x1=\"{5:.0f}\" y1=\"{6:.0f}\" x2=\"{7:.0f}\" y2=\"{6:.0f}\" stroke=\"#222\" "
      "stroke-width=\"0.8\"/><circle cx=\"{7:.0f}\" cy=\"{6:.0f}\" r=\"2\" fill=\"#222\"/>"
      "<text x=\"{8:.0f}\" y=\"{4:.0f}\">transfer (producer finish to arrival)</text>\n",
      kLeft, legend_y, kPalette[0], kLeft + 20, legend_y + 9, kLeft + 280, legend_y + 5,
      kLeft + 300, kLeft + 306);
  svg += "</svg>\n";
  return svg;
}

void write_gantt_svg(const std::string& path, const Plan& plan, const TaskGraph& graph,
                     const Simulation& simulation, const std::string& title) {
  const std::string contents = gantt_svg(plan, graph, simulation, title);
  write_file_atomically(path, contents);
}

}  // namespace cleave
