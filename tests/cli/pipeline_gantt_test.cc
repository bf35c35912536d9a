// `cleave run --plan pipeline --gantt`: one box per stage firing, on the worker that fired it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "command_fixture.h"
#include "ir/text.h"
#include "onnx/onnx_export.h"

namespace cleave {
namespace {

using ::testing::HasSubstr;

int count_of(const std::string& text, const std::string& part) {
  int count = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1))
    ++count;
  return count;
}

class PipelineGantt : public CommandFixture {
 protected:
  void SetUp() override {
    CommandFixture::SetUp();
    export_onnx(parse_graph(R"(graph g [ai.onnx=13] (%x: f32[1,8]) {
  %a = Relu(%x)
  %b = Tanh(%a)
  %c = Sigmoid(%b)
  %d = Neg(%c)
  return %d
}
)"),
                path("m.onnx"));
  }
};

TEST_F(PipelineGantt, GanttDrawsOneBoxPerStageFiringOnItsWorker) {
  const CommandResult r =
      cleave("run " + path("m.onnx") +
             " --costs static --plan pipeline --workers 2 --samples 3 --gantt " + path("g.svg"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string svg = read_text(path("g.svg"));
  // 2 stages, each fired once per sample; stage k on worker k.
  EXPECT_EQ(count_of(svg, "<title>stage0 #"), 3);
  EXPECT_EQ(count_of(svg, "<title>stage1 #"), 3);
  EXPECT_EQ(count_of(svg, " on worker 0: "), 3);
  EXPECT_EQ(count_of(svg, " on worker 1: "), 3);
  EXPECT_THAT(r.out, HasSubstr("gantt      " + path("g.svg")));
}

TEST_F(PipelineGantt, JsonNamesTheGanttFile) {
  const CommandResult r = cleave("run " + path("m.onnx") +
                                 " --costs static --plan pipeline --workers 2 --samples 2 --json "
                                 "--gantt " +
                                 path("g.svg"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\"gantt_file\": \"" + path("g.svg") + "\""));
}

}  // namespace
}  // namespace cleave
