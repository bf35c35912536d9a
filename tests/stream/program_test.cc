// The JSON and text forms of stream programs, the builder, and refusals of bad programs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "stream/builder.h"
#include "stream/stream_json.h"
#include "stream/stream_text.h"
#include "test_models.h"

namespace cleave {
namespace {

using ::testing::HasSubstr;

constexpr const char* kNested = R"({"pipeline": {"name": "top", "streams": [
  {"filter": {"name": "a", "pop": 1, "peek": 2, "push": 1, "op": "slice", "args": [1]}},
  {"splitjoin": {"name": "sj", "split": {"roundrobin": [2, 1]}, "streams": [
    {"filter": {"name": "b", "pop": 2, "push": 1, "op": "concat"}},
    {"splitjoin": {"name": "inner", "split": "duplicate", "streams": [
      {"filter": {"name": "c", "pop": 1, "push": 1, "op": "identity"}},
      {"filter": {"name": "d", "pop": 1, "push": 1, "op": "identity"}}],
      "join": {"roundrobin": [1, 1]}}}],
    "join": {"roundrobin": [1, 2]}}}]}})";

std::string error_of(const std::string& text) {
  try {
    parse_stream_program(text, "prog.json", ".", StreamLoadOptions{false, true});
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(StreamProgram, TextFormPrintsLikeStreamIt) {
  const StreamProgram p = parse_stream_program(kNested, "prog.json", ".");
  EXPECT_EQ(print_stream(p.root),
            "pipeline top {\n"
            "  filter a(pop 1, peek 2, push 1) slice(1);\n"
            "  splitjoin sj {\n"
            "    split roundrobin(2, 1);\n"
            "    filter b(pop 2, peek 2, push 1) concat;\n"
            "    splitjoin inner {\n"
            "      split duplicate;\n"
            "      filter c(pop 1, peek 1, push 1) identity;\n"
            "      filter d(pop 1, peek 1, push 1) identity;\n"
            "      join roundrobin(1, 1);\n"
            "    }\n"
            "    join roundrobin(1, 2);\n"
            "  }\n"
            "}\n");
}

TEST(StreamProgram, JsonRoundTrips) {
  const StreamProgram p = parse_stream_program(kNested, "prog.json", ".");
  const std::string json = stream_to_json(p.root);
  const StreamProgram again = parse_stream_program(json, "again.json", ".");
  EXPECT_EQ(print_stream(again.root), print_stream(p.root));
  EXPECT_EQ(stream_to_json(again.root), json);
}

TEST(StreamProgram, BuilderMatchesTheJsonForm) {
  const Stream built = make_pipeline("top", [](StreamBuilder& p) {
    p.filter("a", FilterOp::kSlice, 1, 2, 1, {1});
    p.splitjoin("sj", Splitter{SplitKind::kRoundRobin, {2, 1}}, Joiner{{1, 2}},
                [](StreamBuilder& sj) {
                  sj.filter("b", FilterOp::kConcat, 2, 2, 1);
                  sj.splitjoin("inner", Splitter{SplitKind::kDuplicate, {}}, Joiner{{1, 1}},
                               [](StreamBuilder& in) {
                                 in.filter("c", FilterOp::kIdentity, 1, 1, 1);
                                 in.filter("d", FilterOp::kIdentity, 1, 1, 1);
                               });
                });
  });
  const StreamProgram p = parse_stream_program(kNested, "prog.json", ".");
  EXPECT_EQ(stream_to_json(built), stream_to_json(p.root));
}

TEST(StreamProgram, MalformedJsonNamesTheFile) {
  EXPECT_THAT(error_of("{\"pipeline\": "), HasSubstr("prog.json: not valid JSON"));
}

TEST(StreamProgram, MissingFieldNamesTheStream) {
  EXPECT_THAT(error_of(R"({"filter": {"name": "f", "pop": 1, "op": "identity"}})"),
              HasSubstr("prog.json: filter \"f\": missing field \"push\""));
}

TEST(StreamProgram, UnknownOpIsRefused) {
  EXPECT_THAT(error_of(R"({"filter": {"name": "f", "pop": 1, "push": 1, "op": "fft"}})"),
              HasSubstr("filter \"f\": unknown op \"fft\""));
}

TEST(StreamProgram, PeekBelowPopIsRefused) {
  EXPECT_THAT(
      error_of(R"({"filter": {"name": "f", "pop": 3, "peek": 2, "push": 1, "op": "slice"}})"),
      HasSubstr("prog.json: filter \"f\": peek 2 is less than pop 3"));
}

TEST(StreamProgram, DuplicateNamesAreRefused) {
  EXPECT_THAT(error_of(R"({"pipeline": {"name": "p", "streams": [
      {"filter": {"name": "f", "pop": 1, "push": 1, "op": "identity"}},
      {"filter": {"name": "f", "pop": 1, "push": 1, "op": "identity"}}]}})"),
              HasSubstr("filter \"f\": the name is used twice"));
}

TEST(StreamProgram, JoinerWithTheWrongNumberOfWeightsIsRefused) {
  EXPECT_THAT(error_of(R"({"splitjoin": {"name": "s", "split": "duplicate", "streams": [
      {"filter": {"name": "f", "pop": 1, "push": 1, "op": "identity"}}],
      "join": {"roundrobin": [1, 1]}}})"),
              HasSubstr("splitjoin \"s\": round-robin joiner has 2 weights for 1 branches"));
}

TEST(StreamProgram, CyclicIncludeIsRefused) {
  const auto dir = testing::scratch_dir("cyclic");
  std::ofstream(dir / "a.json") << R"({"pipeline": {"name": "pa", "streams": [
      {"include": "b.json"}]}})";
  std::ofstream(dir / "b.json") << R"({"pipeline": {"name": "pb", "streams": [
      {"include": "a.json"}]}})";
  try {
    load_stream_program((dir / "a.json").string(), StreamLoadOptions{false, true});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("b.json: pipeline \"pb\" stream 0"));
    EXPECT_THAT(e.what(), HasSubstr("cyclic"));
  }
  std::filesystem::remove_all(dir);
}

TEST(StreamProgram, IncludeSplicesAnotherFile) {
  const auto dir = testing::scratch_dir("include");
  std::ofstream(dir / "inner.json")
      << R"({"filter": {"name": "f", "pop": 1, "push": 1, "op": "identity"}})";
  std::ofstream(dir / "outer.json") << R"({"pipeline": {"name": "p", "streams": [
      {"include": "inner.json"}]}})";
  const StreamProgram p = load_stream_program((dir / "outer.json").string());
  EXPECT_EQ(print_stream(p.root), "pipeline p {\n  filter f(pop 1, peek 1, push 1) identity;\n}\n");
  std::filesystem::remove_all(dir);
}

class ModelFilterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::scratch_dir(::testing::UnitTest::GetInstance()->current_test_info()->name());
    // x: f32[3,4] -> y: f32[1,6]
    export_onnx(*testing::dense_model("embed", {3, 4}, 6, {1, 6}, "Tanh", 2),
                (dir_ / "embed.onnx").string());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string load_error(const std::string& filter) {
    std::ofstream(dir_ / "p.json") << "{\"filter\": " + filter + "}";
    try {
      load_stream_program((dir_ / "p.json").string());
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  }
  std::filesystem::path dir_;
};

TEST_F(ModelFilterTest, MatchingRatesLoad) {
  EXPECT_EQ(load_error(R"({"name": "e", "pop": 1, "peek": 3, "push": 1, "model": "embed.onnx",
                          "input_item": "f32[4]", "output_item": "f32[6]"})"),
            "no error");
}

TEST_F(ModelFilterTest, PeekThatDoesNotDivideTheInputIsRefused) {
  const std::string e =
      load_error(R"({"name": "e", "pop": 1, "peek": 5, "push": 1, "model": "embed.onnx"})");
  EXPECT_THAT(e, HasSubstr("p.json: filter \"e\": peek 5 does not divide model inputs \"x\""));
  EXPECT_THAT(e, HasSubstr("f32[3,4]"));
}

TEST_F(ModelFilterTest, PushThatDoesNotDivideTheOutputIsRefused) {
  EXPECT_THAT(load_error(R"({"name": "e", "pop": 1, "peek": 3, "push": 4, "model": "embed.onnx"})"),
              HasSubstr("filter \"e\": push 4 does not divide model outputs \"y\""));
}

TEST_F(ModelFilterTest, ItemTypeThatDisagreesWithTheModelIsRefused) {
  EXPECT_THAT(load_error(R"({"name": "e", "pop": 1, "peek": 3, "push": 1, "model": "embed.onnx",
                             "input_item": "f32[5]"})"),
              HasSubstr("filter \"e\": model inputs \"x\" is f32[3,4] but the channel carries 3 "
                        "items of f32[5]"));
}

TEST_F(ModelFilterTest, MissingModelFileNamesProgramAndFilter) {
  const std::string e =
      load_error(R"({"name": "e", "pop": 1, "peek": 3, "push": 1, "model": "nope.onnx"})");
  EXPECT_THAT(e, HasSubstr("p.json: filter \"e\": model \"nope.onnx\""));
}

}  // namespace
}  // namespace cleave
