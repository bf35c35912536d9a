// The SVG Gantt chart: one row per worker, labelled task boxes, transfers, axis in ms.
#include "viz/gantt.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "plan/schedule/heft.h"

namespace cleave {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TaskGraph example() {
  return task_graph_from_json(nlohmann::json::parse(R"({
    "devices": [{"name": "cpu"}, {"name": "gpu<0>"}], "bandwidth": [[0, 1e5], [1e5, 0]],
    "tasks": [{"name": "conv_1", "time": [0.004, 0.002], "output_bytes": 100},
              {"name": "a&b", "time": [0.004, 0.004], "output_bytes": 100},
              {"name": "tiny_task_with_a_very_long_name", "time": [0.0001, 0.0001]},
              {"name": "join", "time": [0.001, 0.001]}],
    "edges": [["conv_1", "a&b"], ["conv_1", "tiny_task_with_a_very_long_name"],
              ["a&b", "join"], ["tiny_task_with_a_very_long_name", "join"]]})"),
                              "g.json");
}

std::string chart() {
  const TaskGraph graph = example();
  const Plan plan = plan_heft(graph);
  return gantt_svg(plan, graph, simulate(plan, graph), "HEFT <example>");
}

TEST(GanttTest, IsAnSvgDocumentWithTitle) {
  const std::string svg = chart();
  EXPECT_THAT(svg, HasSubstr("<svg xmlns=\"http://www.w3.org/2000/svg\""));
  EXPECT_THAT(svg, HasSubstr("HEFT &lt;example&gt;"));
  EXPECT_THAT(svg, HasSubstr("</svg>"));
}

TEST(GanttTest, HasOneRowLabelPerWorkerEscaped) {
  const std::string svg = chart();
  EXPECT_THAT(svg, HasSubstr(">cpu</text>"));
  EXPECT_THAT(svg, HasSubstr(">gpu&lt;0&gt;</text>"));
}

TEST(GanttTest, LabelsWideBoxesOnlyButTitlesEveryTask) {
  const std::string svg = chart();
  EXPECT_THAT(svg, HasSubstr("fill=\"white\">conv_1</text>"));
  EXPECT_THAT(svg, Not(HasSubstr("fill=\"white\">tiny_task_with_a_very_long_name</text>")));
  EXPECT_THAT(svg, HasSubstr("<title>tiny_task_with_a_very_long_name on"));
  EXPECT_THAT(svg, HasSubstr("<title>a&amp;b on"));
}

TEST(GanttTest, DrawsTimeAxisInMillisecondsAndLegend) {
  const std::string svg = chart();
  EXPECT_THAT(svg, HasSubstr("time (ms)"));
  EXPECT_THAT(svg, HasSubstr(">0</text>"));
  EXPECT_THAT(svg, HasSubstr("transfer (producer finish to arrival)"));
}

TEST(GanttTest, DrawsCrossWorkerTransfers) {
  const TaskGraph graph = example();
  const Plan plan = plan_heft(graph);
  const std::string svg = gantt_svg(plan, graph, simulate(plan, graph), "t");
  const std::size_t transfers = plan.transfers(graph).size();
  std::size_t marks = 0;
  for (std::size_t at = svg.find("<circle"); at != std::string::npos;
       at = svg.find("<circle", at + 1)) {
    ++marks;
  }
  EXPECT_EQ(marks, transfers + 1);  // one per transfer, one in the legend
}

TEST(GanttTest, WritesTheFileWithoutLeavingATemporary) {
  const TaskGraph graph = example();
  const Plan plan = plan_heft(graph);
  const std::string path = (std::filesystem::temp_directory_path() / "cleave_gantt.svg").string();
  write_gantt_svg(path, plan, graph, simulate(plan, graph), "t");
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_THAT(text.str(), HasSubstr("</svg>"));
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace cleave
