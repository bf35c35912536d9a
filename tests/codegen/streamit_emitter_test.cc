// `--lang streamit`: stream programs printed in the thesis's C++ builder form, text in, text out.
#include "codegen/streamit_emitter.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "frontend/load.h"
#include "ir/text.h"
#include "stream/builder.h"
#include "stream/from_graph.h"

namespace cleave {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Only the program function: what follows the filters' definitions.
std::string program_part(const std::string& source) {
  const std::size_t at = source.find("// The program:");
  return at == std::string::npos ? source : source.substr(at);
}

std::string converted(const std::string& text) {
  Graph g = parse_graph(text);
  infer_shapes(g, "test");
  return streamit_source(graph_to_stream(g).root);
}

TEST(StreamitEmitter, PipelineOfBuiltInsPrintsFiltersWithWorkFunctionsThenThePipeline) {
  const Stream s = make_pipeline("audio", [](StreamBuilder& p) {
    p.filter("pass", FilterOp::kIdentity, 1, 1, 1);
    p.filter("window", FilterOp::kSlice, 2, 4, 3, {1});
  });
  EXPECT_EQ(streamit_source(s),
            "// StreamIt builder code of stream \"audio\", written by `cleave codegen --lang "
            "streamit`.\n"
            "// Filters first (rates and work function each), then the program built from them.\n"
            "#include \"streamit.h\"\n\n"
            "namespace streamit {\n\n"
            "// pass: identity\n"
            "stream_t filter_pass() {\n"
            "  work_t work = [](channel_t& in, channel_t& out) {\n"
            "    out.push(in.pop());\n"
            "  };\n"
            "  return filter<tensor_t, tensor_t>(\"pass\", /*pop=*/1, /*peek=*/1, /*push=*/1, "
            "work);\n"
            "}\n\n"
            "// window: slice(1)\n"
            "stream_t filter_window() {\n"
            "  work_t work = [](channel_t& in, channel_t& out) {\n"
            "    for (int64_t i = 0; i < 3; ++i) out.push(in.peek(1 + i));\n"
            "    in.pop(2);\n"
            "  };\n"
            "  return filter<tensor_t, tensor_t>(\"window\", /*pop=*/2, /*peek=*/4, /*push=*/3, "
            "work);\n"
            "}\n\n"
            "// The program: 2 filter(s), 1 pipeline(s), 0 split-join(s).\n"
            "stream_t stream_audio() {\n"
            "  return pipeline<tensor_t, tensor_t>([&](auto pipe) {  // audio\n"
            "    pipe->add(filter_pass());\n"
            "    pipe->add(filter_window());\n"
            "  });\n"
            "}\n\n"
            "}  // namespace streamit\n");
}

TEST(StreamitEmitter, DuplicateSplitJoinAddsEachBranchWithItsJoinWeight) {
  const Stream s = make_splitjoin("both", Splitter{SplitKind::kDuplicate, {}}, Joiner{{1, 2}},
                                  [](StreamBuilder& sj) {
                                    sj.filter("left", FilterOp::kIdentity, 1, 1, 1);
                                    sj.filter("right", FilterOp::kIdentity, 2, 2, 2);
                                  });
  EXPECT_EQ(program_part(streamit_source(s)),
            "// The program: 2 filter(s), 0 pipeline(s), 1 split-join(s).\n"
            "stream_t stream_both() {\n"
            "  return duplicateSplitJoin<tensor_t, tensor_t>([&](auto sj) {  // both\n"
            "    sj->add(1, filter_left());\n"
            "    sj->add(2, filter_right());\n"
            "  });\n"
            "}\n\n"
            "}  // namespace streamit\n");
}

TEST(StreamitEmitter, RoundRobinSplitJoinAddsSplitAndJoinWeights) {
  const Stream s = make_splitjoin("rr", Splitter{SplitKind::kRoundRobin, {2, 1}}, Joiner{{1, 3}},
                                  [](StreamBuilder& sj) {
                                    sj.filter("a", FilterOp::kConcat, 2, 2, 1, {0});
                                    sj.filter("b", FilterOp::kIdentity, 1, 1, 1);
                                  });
  const std::string source = streamit_source(s);
  EXPECT_THAT(source, HasSubstr("    out.push(concat_items(in.window(2), 0));\n    in.pop(2);\n"));
  EXPECT_THAT(program_part(source),
              HasSubstr("  return roundRobinSplitJoin<tensor_t, tensor_t>([&](auto sj) {  // rr\n"
                        "    sj->add(2, 1, filter_a());\n"
                        "    sj->add(1, 3, filter_b());\n"
                        "  });\n"));
}

TEST(StreamitEmitter, ResidualModelBecomesADuplicateSplitJoinThenTheJoiningFilter) {
  // Fig. 4.9's shape: two branches from one value meet at Add, which follows the split-join.
  const std::string source = converted(R"(graph g (%x: f32[1,4]) {
  %a = Relu(%x)
  %b = Sigmoid(%a)
  %c = Tanh(%a)
  %y = Add(%b, %c)
  return %y
})");
  EXPECT_THAT(source, HasSubstr("// v2_Sigmoid: %b: f32[1,4] = Sigmoid(%in0)\n"
                                "//   (f32[1,4]) -> (f32[1,4])\n"));
  EXPECT_THAT(source, HasSubstr("    out.push(run_model(\"v4_Add.onnx\", in.window(2), 1));\n"
                                "    in.pop(2);\n"));
  EXPECT_THAT(program_part(source),
              HasSubstr("    pipe->add(filter_v1_Relu());\n"
                        "    pipe->add(duplicateSplitJoin<tensor_t, tensor_t>([&](auto sj) {  "
                        "// sj_v4\n"
                        "      sj->add(1, filter_v2_Sigmoid());\n"
                        "      sj->add(1, filter_v3_Tanh());\n"
                        "    }));\n"
                        "    pipe->add(filter_v4_Add());\n"));
}

TEST(StreamitEmitter, TwoInputsBecomeARoundRobinSplitJoin) {
  // Fig. 4.13: each program input goes to its own branch.
  const std::string source = converted(R"(graph g (%x: f32[1,4], %z: f32[1,4]) {
  %a = Relu(%x)
  %b = Sigmoid(%z)
  %y = Add(%a, %b)
  return %y
})");
  EXPECT_THAT(program_part(source), HasSubstr("roundRobinSplitJoin<tensor_t, tensor_t>"));
  EXPECT_THAT(program_part(source), HasSubstr("sj->add(1, 1, "));
  EXPECT_THAT(program_part(source), Not(HasSubstr("duplicateSplitJoin")));
}

TEST(StreamitEmitter, UnusedOutputIsDroppedByASeparatorFilter) {
  // Fig. 4.20: a two-output node whose second output nobody reads.
  const std::string source = converted(R"(graph g (%x: f32[2,4]) {
  %a, %b = Split[axis=0](%x)
  %y = Relu(%a)
  return %y
})");
  EXPECT_THAT(source, HasSubstr("out.push(run_model(\"v1_Split.onnx\", in.window(1), 2));"));
  EXPECT_THAT(source, HasSubstr("// v2_getitem0: separator(0)\n"));
  EXPECT_THAT(source, HasSubstr("    out.push(in.peek(0));\n    in.pop(2);\n"));
  EXPECT_THAT(program_part(source), Not(HasSubstr("SplitJoin")));
}

}  // namespace
}  // namespace cleave
