// Static schedules checked against hand-computed repetition vectors and init schedules.
#include "stream/schedule.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

#include "stream/stream_json.h"

namespace cleave {
namespace {

using ::testing::HasSubstr;

StreamProgram parse(const std::string& text) {
  return parse_stream_program(text, "test.json", ".", StreamLoadOptions{false, true});
}

struct Named {
  std::map<std::string, int64_t> reps, init, buffers, initial;
  StreamSchedule schedule;
};

Named schedule_of(const std::string& text) {
  const StreamProgram program = parse(text);
  const StreamGraph graph = flatten_stream(program.root);
  Named out;
  out.schedule = schedule_stream(graph, program.origin);
  for (std::size_t v = 0; v < graph.nodes.size(); ++v) {
    out.reps[graph.nodes[v].name] = out.schedule.repetitions[v];
    out.init[graph.nodes[v].name] = out.schedule.init[v];
  }
  for (std::size_t c = 0; c < graph.channels.size(); ++c) {
    out.buffers[graph.channels[c].name] = out.schedule.buffers[c];
    out.initial[graph.channels[c].name] = out.schedule.initial_items[c];
  }
  return out;
}

std::string filter(const std::string& name, int pop, int peek, int push) {
  return "{\"filter\": {\"name\": \"" + name + "\", \"pop\": " + std::to_string(pop) +
         ", \"peek\": " + std::to_string(peek) + ", \"push\": " + std::to_string(push) +
         ", \"model\": \"m.onnx\"}}";
}

TEST(StreamSchedule, PipelineBalancesPushAgainstPop) {
  // a pushes 2, b pops 3: 3 firings of a feed 2 of b.
  const Named s = schedule_of("{\"pipeline\": {\"name\": \"p\", \"streams\": [" +
                              filter("a", 1, 1, 2) + "," + filter("b", 3, 3, 1) + "]}}");
  EXPECT_EQ(s.reps, (std::map<std::string, int64_t>{{"a", 3}, {"b", 2}}));
  EXPECT_EQ(s.schedule.input_per_iteration, 3);
  EXPECT_EQ(s.schedule.output_per_iteration, 2);
  EXPECT_EQ(s.buffers.at("a->b"), 6);
}

TEST(StreamSchedule, PeekingFilterGetsAnInitSchedule) {
  // b peeks 3 but pops 1: a must fire twice first so two items wait in b's window.
  const Named s = schedule_of("{\"pipeline\": {\"name\": \"p\", \"streams\": [" +
                              filter("a", 1, 1, 1) + "," + filter("b", 1, 3, 1) + "]}}");
  EXPECT_EQ(s.reps, (std::map<std::string, int64_t>{{"a", 1}, {"b", 1}}));
  EXPECT_EQ(s.init, (std::map<std::string, int64_t>{{"a", 2}, {"b", 0}}));
  EXPECT_EQ(s.initial.at("a->b"), 2);
  EXPECT_EQ(s.buffers.at("a->b"), 3);
  EXPECT_EQ(s.schedule.input_for_init, 2);
}

TEST(StreamSchedule, PeekingFiltersInSeriesChainTheirInit) {
  // c peeks 4 pops 2; b peeks 3 pops 1 and pushes 2. c needs 2 extra items -> b fires once
  // in init; b then needs 1*1 + 2 = 3 items -> a (push 1) fires 3 times.
  const Named s =
      schedule_of("{\"pipeline\": {\"name\": \"p\", \"streams\": [" + filter("a", 1, 1, 1) + "," +
                  filter("b", 1, 3, 2) + "," + filter("c", 2, 4, 1) + "]}}");
  EXPECT_EQ(s.reps, (std::map<std::string, int64_t>{{"a", 1}, {"b", 1}, {"c", 1}}));
  EXPECT_EQ(s.init, (std::map<std::string, int64_t>{{"a", 3}, {"b", 1}, {"c", 0}}));
  EXPECT_EQ(s.initial.at("a->b"), 2);
  EXPECT_EQ(s.initial.at("b->c"), 2);
}

TEST(StreamSchedule, NestedSplitJoinsMatchTheHandComputedVector) {
  // S splits round robin [2,1]: a gets 2x items, the pipeline (b, T) x items; T duplicates.
  const std::string t =
      "{\"splitjoin\": {\"name\": \"T\", \"split\": \"duplicate\", "
      "\"streams\": [" +
      filter("c", 1, 1, 1) + "," + filter("d", 2, 2, 2) + "], \"join\": {\"roundrobin\": [1, 1]}}}";
  const std::string text =
      "{\"splitjoin\": {\"name\": \"S\", \"split\": {\"roundrobin\": [2, 1]}, \"streams\": [" +
      filter("a", 1, 1, 1) + ", {\"pipeline\": {\"name\": \"P\", \"streams\": [" +
      filter("b", 1, 1, 2) + "," + t + "]}}], \"join\": {\"roundrobin\": [1, 2]}}}";
  const Named s = schedule_of(text);
  EXPECT_EQ(s.reps, (std::map<std::string, int64_t>{{"S.split", 1},
                                                    {"a", 2},
                                                    {"b", 1},
                                                    {"T.split", 2},
                                                    {"c", 2},
                                                    {"d", 1},
                                                    {"T.join", 2},
                                                    {"S.join", 2}}));
  EXPECT_EQ(s.schedule.input_per_iteration, 3);
  EXPECT_EQ(s.schedule.output_per_iteration, 6);
}

TEST(StreamSchedule, RepetitionVectorIsMinimal) {
  // Rates with a common factor must not inflate the counts: 4/6 reduces to 2/3.
  const Named s = schedule_of("{\"pipeline\": {\"name\": \"p\", \"streams\": [" +
                              filter("a", 2, 2, 4) + "," + filter("b", 6, 6, 2) + "]}}");
  EXPECT_EQ(s.reps, (std::map<std::string, int64_t>{{"a", 3}, {"b", 2}}));
}

TEST(StreamSchedule, JoinerWeightsThatCannotMatchAreRefused) {
  const std::string text =
      "{\"splitjoin\": {\"name\": \"bad\", \"split\": \"duplicate\", "
      "\"streams\": [" +
      filter("a", 1, 1, 1) + "," + filter("b", 1, 1, 2) + "], \"join\": {\"roundrobin\": [1, 1]}}}";
  try {
    schedule_of(text);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("test.json"));
    EXPECT_THAT(e.what(), HasSubstr("splitjoin \"bad\""));
    EXPECT_THAT(e.what(), HasSubstr("weights [1, 1]"));
    EXPECT_THAT(e.what(), HasSubstr("push [1, 2]"));
  }
}

TEST(StreamSchedule, ZeroRateIsRefusedNamingItsField) {
  try {
    parse("{\"pipeline\": {\"name\": \"p\", \"streams\": [" + filter("a", 1, 1, 1) + "," +
          filter("z", 0, 1, 1) + "]}}");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("test.json: pipeline.streams[1].filter.pop: expected an "
                                    "integer from 1 to 1048576, got 0"));
  }
}

TEST(StreamSchedule, OverflowingRatesAreRefused) {
  // Each stage multiplies the count of the first filter by 2^20; four stages exceed 2^63.
  std::string stages;
  for (int i = 0; i < 4; ++i) {
    if (i) stages += ",";
    stages += filter("s" + std::to_string(i), 1048576, 1048576, 1);
  }
  EXPECT_THROW(schedule_of("{\"pipeline\": {\"name\": \"p\", \"streams\": [" +
                           filter("a", 1, 1, 1) + "," + stages + "]}}"),
               Error);
}

TEST(StreamSchedule, ClosedFormsFollowTheThesisEquations) {
  // The thesis's example: S1 (pop 2, peek 3, push 5), S2 (pop 4, peek 4, push 7):
  // peek 3*4 = 12 (2.1), push 5*7 = 35 (2.2), pop 12*2/3 = 8 (2.3).
  const StreamProgram p = parse("{\"pipeline\": {\"name\": \"p\", \"streams\": [" +
                                filter("s1", 2, 3, 5) + "," + filter("s2", 4, 4, 7) + "]}}");
  const std::vector<ClosedFormRates> forms = closed_form_rates(p.root);
  ASSERT_EQ(forms.back().name, "p");
  EXPECT_EQ(forms.back().peek, 12);
  EXPECT_EQ(forms.back().push, 35);
  EXPECT_EQ(forms.back().pop, 8);
}

TEST(StreamSchedule, ClosedFormOfDuplicateSplitJoinIsAnLcm) {
  // Joiner weights [1, 2], peeks 2 and 3: LCM(2, 6) = 6 (2.4); push 6 * 1 / 2 * 3 = 9 (2.5).
  // b pushes 3 per 3 popped, so both branches deliver one joiner sweep per 2 items.
  const StreamProgram p =
      parse("{\"splitjoin\": {\"name\": \"d\", \"split\": \"duplicate\", \"streams\": [" +
            filter("a", 2, 2, 1) + "," + filter("b", 3, 3, 3) +
            "], \"join\": {\"roundrobin\": [1, 2]}}}");
  const std::vector<ClosedFormRates> forms = closed_form_rates(p.root);
  EXPECT_EQ(forms.back().peek, 6);
  EXPECT_EQ(forms.back().pop, 6);
  EXPECT_EQ(forms.back().push, 9);
  // The exact schedule agrees: 6 items in, a fires 3 times, b twice, 3 joiner sweeps of 3.
  const Named s =
      schedule_of("{\"splitjoin\": {\"name\": \"d\", \"split\": \"duplicate\", \"streams\": [" +
                  filter("a", 2, 2, 1) + "," + filter("b", 3, 3, 3) +
                  "], \"join\": {\"roundrobin\": [1, 2]}}}");
  EXPECT_EQ(s.schedule.input_per_iteration, 6);
  EXPECT_EQ(s.schedule.output_per_iteration, 9);
}

TEST(StreamSchedule, JsonHasTheIssueShape) {
  const StreamProgram p = parse("{\"pipeline\": {\"name\": \"p\", \"streams\": [" +
                                filter("a", 1, 1, 2) + "," + filter("b", 3, 3, 1) + "]}}");
  const StreamGraph g = flatten_stream(p.root);
  const std::string json = schedule_to_json(g, schedule_stream(g, "x"), closed_form_rates(p.root));
  EXPECT_THAT(json, HasSubstr("\"repetitions\": {\n    \"a\": 3,\n    \"b\": 2\n  }"));
  EXPECT_THAT(json, HasSubstr("\"a->b\": 6"));
  EXPECT_THAT(json, HasSubstr("\"init\""));
}

}  // namespace
}  // namespace cleave
