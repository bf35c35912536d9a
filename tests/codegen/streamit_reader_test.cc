// Reading StreamIt builder text back: program -> text -> program is the same program; bad text
// names its line.
#include "codegen/streamit_reader.h"

#include <fmt/core.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "codegen/streamit_emitter.h"
#include "stream/builder.h"
#include "stream/stream_json.h"

namespace cleave {
namespace {

using ::testing::HasSubstr;

// Every kind of stream the printer writes: built-ins with arguments, a model filter with item
// types, nested pipelines, both split-join kinds with their weights.
const char* kProgram = R"({"pipeline": {"name": "top", "streams": [
  {"filter": {"name": "win", "pop": 1, "peek": 3, "push": 2, "op": "slice", "args": [1]}},
  {"splitjoin": {"name": "rr", "split": {"roundrobin": [2, 1]}, "streams": [
    {"filter": {"name": "net", "pop": 2, "peek": 2, "push": 1, "model": "models/m.onnx",
                "input_item": "f32[3,16,16]", "output_item": "f32[10]"}},
    {"pipeline": {"name": "p2", "streams": [
      {"filter": {"name": "pass", "pop": 1, "push": 1, "op": "identity"}},
      {"filter": {"name": "cat", "pop": 2, "push": 1, "op": "concat", "args": [0]}}]}}],
    "join": {"roundrobin": [1, 3]}}},
  {"splitjoin": {"name": "dup", "split": "duplicate", "streams": [
    {"filter": {"name": "sep", "pop": 2, "push": 1, "op": "separator", "args": [1]}},
    {"filter": {"name": "one", "pop": 2, "push": 1, "op": "slice", "args": [1]}}],
    "join": {"roundrobin": [1, 1]}}}]}})";

StreamProgram unloaded(const std::string& json) {
  StreamLoadOptions options;
  options.load_models = false;
  options.verify = false;
  return parse_stream_program(json, "prog.json", ".", options);
}

TEST(StreamitReader, ProgramToTextToProgramIsTheSameProgram) {
  const StreamProgram program = unloaded(kProgram);
  const std::string text = streamit_source(program.root);
  const StreamitText read = parse_streamit(text, "stream.cc", ".", /*load_models=*/false);
  EXPECT_EQ(stream_to_json(read.program.root), stream_to_json(program.root)) << text;
  EXPECT_EQ(read.program.origin, "stream.cc");
  EXPECT_EQ(read.converted_from, "");
  // The text read back prints as the same text.
  EXPECT_EQ(streamit_source(read.program.root), text);
}

TEST(StreamitReader, SeparatorAndOneItemSliceStayApartThoughTheirWorkReadsAlike) {
  const StreamitText read =
      parse_streamit(streamit_source(unloaded(kProgram).root), "stream.cc", ".", false);
  const std::vector<const Stream*> filters = collect_filters(read.program.root);
  ASSERT_EQ(filters.size(), 6u);
  EXPECT_EQ(filters[4]->name, "sep");
  EXPECT_EQ(filters[4]->op, FilterOp::kSeparator);
  EXPECT_EQ(filters[5]->name, "one");
  EXPECT_EQ(filters[5]->op, FilterOp::kSlice);
}

TEST(StreamitReader, AConversionRecordsItsModelAndFingerprint) {
  const StreamProgram program = unloaded(kProgram);
  const std::string text =
      streamit_source(program.root, nullptr, "dir/m.onnx", "fnv1a64:0123456789abcdef");
  EXPECT_THAT(text,
              HasSubstr("// Converted from model \"dir/m.onnx\" (fnv1a64:0123456789abcdef).\n"));
  const StreamitText read = parse_streamit(text, "stream.cc", ".", false);
  EXPECT_EQ(read.converted_from, "dir/m.onnx");
  EXPECT_EQ(read.converted_fingerprint, "fnv1a64:0123456789abcdef");
}

// Replaces the first occurrence of `from` in the printed program.
std::string edited(const std::string& from, const std::string& to) {
  std::string text = streamit_source(unloaded(kProgram).root);
  const std::size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

int line_of(const std::string& text, const std::string& what) {
  const std::size_t at = text.find(what);
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(at), '\n'));
}

TEST(StreamitReader, AnUnknownOpNamesItsLine) {
  const std::string text = edited("// win: slice(1)", "// win: shuffle(1)");
  try {
    parse_streamit(text, "s.cc", ".", false);
    FAIL() << "accepted an unknown op";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr(fmt::format("s.cc:{}:", line_of(text, "stream_t filter_win"))));
    EXPECT_THAT(e.what(), HasSubstr("unknown op \"shuffle\""));
  }
}

TEST(StreamitReader, ABadRateNamesItsLineAndTheRate) {
  const std::string text = edited("/*peek=*/3", "/*peek=*/three");
  try {
    parse_streamit(text, "s.cc", ".", false);
    FAIL() << "accepted a rate that is no number";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr(fmt::format("s.cc:{}:", line_of(text, "/*peek=*/three"))));
    EXPECT_THAT(e.what(), HasSubstr("/*peek=*/"));
  }
}

TEST(StreamitReader, ABrokenTreeNamesTheLineAndWhatWasExpected) {
  const std::string text = edited("sj->add(2, 1, filter_net());", "sj->add(2, filter_net());");
  try {
    parse_streamit(text, "s.cc", ".", false);
    FAIL() << "accepted a round-robin branch without its join weight";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(),
                HasSubstr(fmt::format("s.cc:{}:", line_of(text, "sj->add(2, filter_net"))));
    EXPECT_THAT(e.what(), HasSubstr("expected"));
  }
}

TEST(StreamitReader, AnUndefinedFilterAndAMissingProgramAreRefused) {
  EXPECT_THROW(parse_streamit(edited("pipe->add(filter_pass());", "pipe->add(filter_gone());"),
                              "s.cc", ".", false),
               Error);
  try {
    parse_streamit("#include \"streamit.h\"\n", "s.cc", ".", false);
    FAIL() << "accepted text without a program";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("no program function"));
  }
  try {
    parse_streamit("int main() { return 0; }\n", "s.cc", ".", false);
    FAIL() << "accepted other C++";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("s.cc:1: expected a filter function"));
  }
}

TEST(StreamitReader, ModelPathsAreLoadedRelativeToTheTextAndAMissingModelIsNamed) {
  try {
    parse_streamit(streamit_source(unloaded(kProgram).root), "dir/s.cc", "dir", true);
    FAIL() << "loaded a model that is not there";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("m.onnx"));
  }
}

}  // namespace
}  // namespace cleave
