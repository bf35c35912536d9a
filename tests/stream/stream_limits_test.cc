// Stream programs under hostile input: nesting depth, rates, iteration size, fission specs.
#include <fmt/core.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "stream/executor.h"
#include "stream/fission.h"
#include "stream/schedule.h"
#include "stream/stream_json.h"
#include "support/limits.h"
#include "test_models.h"

namespace cleave {
namespace {

using ::testing::HasSubstr;

// `levels` pipelines nested around one identity filter, which sits at depth levels + 1.
std::string nested_program(int levels) {
  std::string text;
  for (int i = 0; i < levels; ++i) {
    text += fmt::format(R"({{"pipeline": {{"name": "p{}", "streams": [)", i);
  }
  text += R"({"filter": {"name": "f", "pop": 1, "push": 1, "op": "identity"}})";
  for (int i = 0; i < levels; ++i) text += "]}}";
  return text;
}

// A pipeline of concat filters popping `pops` items each: the steady state multiplies them.
std::string concat_chain(const std::vector<int64_t>& pops) {
  std::string streams;
  for (std::size_t i = 0; i < pops.size(); ++i) {
    streams +=
        fmt::format(R"({}{{"filter": {{"name": "c{}", "pop": {}, "push": 1, "op": "concat"}}}})",
                    i ? "," : "", i, pops[i]);
  }
  return R"({"pipeline": {"name": "primes", "streams": [)" + streams + "]}}";
}

std::string error_of(const std::string& text) {
  try {
    parse_stream_program(text, "prog.json", ".");
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

std::vector<Tensor> items(int count, int64_t size) {
  std::vector<Tensor> out;
  for (int i = 0; i < count; ++i) out.push_back(Tensor::allocate(DataType::kFloat, {size}));
  return out;
}

TEST(StreamLimits, ProgramNestedPastTheDepthLimitIsRefusedNamingFileAndLimit) {
  const std::string message = error_of(nested_program(7000));
  EXPECT_THAT(message,
              HasSubstr("prog.json: pipeline \"p255\": streams nest deeper than 256 levels"));
}

TEST(StreamLimits, ProgramAtTheDepthLimitIsReadScheduledPrintedAndRun) {
  const StreamProgram program = parse_stream_program(nested_program(255), "prog.json", ".");
  const StreamGraph graph = flatten_stream(program.root);
  const StreamSchedule schedule = schedule_stream(graph, program.origin);
  EXPECT_EQ(schedule.repetitions, (std::vector<int64_t>{1}));
  EXPECT_EQ(closed_form_rates(program.root).size(), 256u);
  const StreamProgram again = parse_stream_program(stream_to_json(program.root), "again.json", ".");
  EXPECT_EQ(collect_filters(again.root).size(), 1u);
  const StreamRunResult r = run_stream(program, items(3, 2), testing::on_workers(1));
  EXPECT_EQ(r.output_count, 3);
}

TEST(StreamLimits, StreamBuiltPastTheDepthLimitFailsVerification) {
  Stream root;
  root.kind = StreamKind::kFilter;
  root.name = "f";
  root.op = FilterOp::kIdentity;
  root.pop = root.peek = root.push = 1;
  for (int i = 0; i < 300; ++i) {
    Stream outer;
    outer.kind = StreamKind::kPipeline;
    outer.name = fmt::format("p{}", i);
    outer.streams.push_back(std::move(root));
    root = std::move(outer);
  }
  try {
    verify_stream(root, "built");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("built: pipeline \"p44\": streams nest deeper than 256"));
  }
}

TEST(StreamLimits, HugePeekIsRefusedNamingTheField) {
  EXPECT_THAT(error_of(R"({"filter": {"name": "f", "pop": 1, "peek": 1099511627776, "push": 1,
                                     "op": "slice"}})"),
              HasSubstr("prog.json: filter.peek: expected an integer from 1 to 1048576, got "
                        "1099511627776"));
}

TEST(StreamLimits, HugeJoinWeightIsRefusedNamingTheField) {
  EXPECT_THAT(error_of(R"({"splitjoin": {"name": "sj", "split": "duplicate", "streams": [
      {"filter": {"name": "f", "pop": 1, "push": 1, "op": "identity"}}],
      "join": {"roundrobin": [5000000]}}})"),
              HasSubstr("prog.json: splitjoin.join.roundrobin[0]: expected an integer from 1 to "
                        "1048576, got 5000000"));
}

TEST(StreamLimits, MistypedFieldNamesItsPath) {
  EXPECT_THAT(error_of(R"({"pipeline": {"name": "p", "streams": [
      {"filter": {"name": "a", "pop": 1, "push": 1, "op": "identity"}},
      {"filter": {"name": "b", "pop": "two", "push": 1, "op": "identity"}}]}})"),
              HasSubstr("prog.json: pipeline.streams[1].filter.pop: expected an integer from 1 "
                        "to 1048576, got \"two\""));
}

TEST(StreamLimits, HugeItemTypeIsRefused) {
  EXPECT_THAT(error_of(R"({"filter": {"name": "f", "pop": 1, "push": 1, "op": "identity",
                              "input_item": "f32[1000000000,1000000000,1000000000]"}})"),
              HasSubstr("prog.json: filter.input_item: bad item type"));
}

TEST(StreamLimits, ScheduleReportsAHugeIterationThatARunRefuses) {
  // The first 12 primes: one steady-state iteration needs their product, 7420738134810, of
  // input items.
  const std::vector<int64_t> primes = {2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37};
  const StreamProgram program = parse_stream_program(concat_chain(primes), "primes.json", ".");
  const StreamSchedule schedule = schedule_stream(flatten_stream(program.root), program.origin);
  EXPECT_EQ(schedule.input_per_iteration, 7420738134810);
  try {
    run_stream(program, items(20, 1), testing::on_workers(1));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("primes.json: one steady-state iteration fires the actors"));
    EXPECT_THAT(e.what(), HasSubstr("needs 7420738134810 input items"));
    EXPECT_THAT(e.what(), HasSubstr("at most 1000000 firings per iteration"));
  }
}

TEST(StreamLimits, RepetitionsBeyond64BitsAreRefusedBySchedule) {
  // The first 16 primes multiply past 2^63.
  const std::vector<int64_t> primes = {2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53};
  const StreamProgram program = parse_stream_program(concat_chain(primes), "primes.json", ".");
  try {
    schedule_stream(flatten_stream(program.root), program.origin);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("primes.json: repetition counts overflow 64 bits"));
  }
}

TEST(StreamLimits, TooFewItemsForAnyOutputAreAnErrorNotAnEmptyResult) {
  const StreamProgram program = parse_stream_program(concat_chain({4}), "four.json", ".");
  try {
    run_stream(program, items(3, 1), testing::on_workers(1));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("four.json: 3 input items gave no output item; one "
                                    "steady-state iteration needs 4 input items"));
  }
}

TEST(StreamLimits, ClosedFormsThatOverflowAreNone) {
  // Peeks multiply to 2^60, which fits; times the first pop, 2^80 does not.
  const StreamProgram program =
      parse_stream_program(concat_chain({1 << 20, 1 << 20, 1 << 20}), "big.json", ".");
  const std::vector<ClosedFormRates> forms = closed_form_rates(program.root);
  ASSERT_EQ(forms.back().name, "primes");
  EXPECT_EQ(forms.back().peek, int64_t{1} << 60);
  EXPECT_FALSE(forms.back().pop.has_value());
}

TEST(StreamLimits, NamesThatAreNotUtf8AreWrittenWithAReplacementNotThrown) {
  // StreamIt text and ONNX node names may hold any bytes; the JSON form must still be written.
  Stream s;
  s.name = "bad\xff";
  s.op = FilterOp::kIdentity;
  s.pop = s.peek = s.push = 1;
  EXPECT_THAT(stream_to_json(s), HasSubstr("\"name\": \"bad\xef\xbf\xbd\""));
}

std::string fission_error(const std::vector<std::string>& specs) {
  try {
    parse_fission_specs(specs);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(StreamLimits, FissionSpecsAreParsedStrictly) {
  const std::vector<FissionSpec> specs = parse_fission_specs({"lin=4:2", "conv=2:1"});
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].filter, "lin");
  EXPECT_EQ(specs[0].copies, 4);
  EXPECT_EQ(specs[0].granularity, 2);
  EXPECT_THAT(fission_error({"lin=2:2:2"}),
              HasSubstr("--fission \"lin=2:2:2\": GRANULARITY must be an integer from 1 to "
                        "1048576, got \"2:2\""));
  EXPECT_THAT(fission_error({"lin=1x:2"}),
              HasSubstr("--fission \"lin=1x:2\": COPIES must be an integer from 1 to 1024, got "
                        "\"1x\""));
  EXPECT_THAT(fission_error({"lin"}),
              HasSubstr("--fission \"lin\": expected NAME=COPIES:GRANULARITY"));
  EXPECT_THAT(fission_error({"=2:2"}), HasSubstr("expected NAME=COPIES:GRANULARITY"));
}

TEST(StreamLimits, FissionFactorsAreBounded) {
  EXPECT_THAT(fission_error({"lin=1000000000:1"}),
              HasSubstr("COPIES must be an integer from 1 to 1024, got \"1000000000\""));
  EXPECT_THAT(fission_error({"lin=2:1000000000"}),
              HasSubstr("GRANULARITY must be an integer from 1 to 1048576, got \"1000000000\""));
  EXPECT_THAT(
      fission_error({"lin=1024:2048"}),
      HasSubstr("1024 copies of 2048 rows deal 2097152 rows per firing, more than 1048576"));
}

TEST(StreamLimits, FissionOfOneFilterTwiceIsRefused) {
  EXPECT_THAT(fission_error({"lin=2:1", "lin=4:1"}),
              HasSubstr("--fission \"lin=4:1\": filter \"lin\" is split by an earlier --fission"));
}

}  // namespace
}  // namespace cleave
