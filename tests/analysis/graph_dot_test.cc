// Graphviz output: the critical path is highlighted and `dot` accepts the text.
#include "analysis/graph_dot.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "analysis/static_cost.h"
#include "ir/text.h"

namespace cleave {
namespace {

Graph diamond() {
  return parse_graph(R"(graph diamond (%x: f32[1,4,8,8]) {
  @w3: f32[4,4,3,3]
  @w1: f32[4,4,1,1]
  %a: f32[1,4,8,8] = Relu(%x)
  %b: f32[1,4,8,8] = Conv[kernel_shape=[1,1]](%a, @w1)
  %c: f32[1,4,8,8] = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%a, @w3)
  %d: f32[1,4,8,8] = Add(%b, %c)
  return %d
})");
}

int count(const std::string& text, const std::string& needle) {
  int n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

std::filesystem::path scratch_folder(const std::string& name) {
  auto folder = std::filesystem::temp_directory_path() /
                ("cleave_dot_test_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(folder);
  std::filesystem::create_directories(folder);
  return folder;
}

TEST(GraphDot, HighlightsThePathNodesAndTheEdgesBetweenThem) {
  Graph graph = diamond();
  std::string dot = graph_to_dot(graph, analyze_static_cost(graph).critical_path);
  EXPECT_EQ(count(dot, "fontcolor=red"), 3 + 2);  // a, c, d and a->c, c->d
  EXPECT_NE(dot.find("n0 -> n2 [color=red"), std::string::npos) << dot;
  EXPECT_NE(dot.find("n0 -> n1;"), std::string::npos) << dot;
  EXPECT_NE(dot.find("label=\"Conv\\nc\\nf32[1,4,8,8]\""), std::string::npos) << dot;
}

TEST(GraphDot, GraphvizRendersItToSvg) {
  Graph graph = diamond();
  auto folder = scratch_folder("svg");
  const std::string svg = (folder / "diamond.svg").string();
  render_dot(graph_to_dot(graph, analyze_static_cost(graph).critical_path), "svg", svg);
  std::ifstream in(svg);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("<svg"), std::string::npos);
  // Only the result is left in the folder: no temporary files.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(folder), {}), 1);
  std::filesystem::remove_all(folder);
}

// `cleave inspect --svg /dev/null` as root must not rename a file over the device: a pipe
// stands in for it (its reader opened first, so the write does not block).
TEST(GraphDot, ARenderingIntoAPipeIsWrittenIntoItAndLeavesItAPipe) {
  auto folder = scratch_folder("pipe");
  const std::string pipe = (folder / "out.svg").string();
  ASSERT_EQ(::mkfifo(pipe.c_str(), 0600), 0);
  const int reader = ::open(pipe.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0);
  Graph graph = diamond();
  render_dot(graph_to_dot(graph, {}), "svg", pipe);
  std::string text(1 << 16, '\0');
  const ssize_t got = ::read(reader, text.data(), text.size());
  ::close(reader);
  text.resize(got > 0 ? static_cast<std::size_t>(got) : 0);
  EXPECT_NE(text.find("<svg"), std::string::npos) << text;
  EXPECT_TRUE(std::filesystem::is_fifo(pipe));
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(folder), {}), 1);
  std::filesystem::remove_all(folder);
}

TEST(GraphDot, GraphvizFailureIsAnErrorAndLeavesNoFile) {
  auto folder = scratch_folder("bad");
  const std::string out = (folder / "broken.svg").string();
  EXPECT_THROW(render_dot("digraph { this is not dot", "svg", out), Error);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(folder), {}), 0);
  std::filesystem::remove_all(folder);
}

}  // namespace
}  // namespace cleave
