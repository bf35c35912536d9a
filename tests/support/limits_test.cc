// Bounds shared by options and file fields: readable messages, and the cores this host has.
#include "support/limits.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include "ir/graph.h"
#include "support_test_util.h"

namespace cleave {
namespace {

using support_testing::error_of;
using ::testing::HasSubstr;

TEST(Limits, IntegersOutsideTheirRangeSayTheRange) {
  EXPECT_EQ(integer_problem(1, 1, 10), "");
  EXPECT_EQ(integer_problem(0, 1, 10), "expected an integer from 1 to 10, got 0");
  EXPECT_EQ(integer_problem(-5, 0, std::numeric_limits<int64_t>::max()),
            "expected an integer >= 0, got -5");
}

TEST(Limits, NumbersMustBeFinite) {
  const double nan = std::nan("");
  EXPECT_EQ(number_problem(0.5, 0, 1), "");
  EXPECT_THAT(number_problem(nan, 0, 1), HasSubstr("expected a finite number in [0, 1], got nan"));
  EXPECT_THAT(positive_seconds_problem(nan), HasSubstr("got nan"));
  EXPECT_THAT(positive_seconds_problem(0), HasSubstr("> 0, got 0"));
  EXPECT_THAT(positive_seconds_problem(-1), HasSubstr("got -1"));
  EXPECT_EQ(positive_seconds_problem(0.5), "");
  EXPECT_THAT(non_negative_seconds_problem(-0.001), HasSubstr(">= 0"));
  EXPECT_THAT(non_negative_seconds_problem(std::numeric_limits<double>::infinity()),
              HasSubstr("got inf"));
}

TEST(Limits, ThreadsAreBoundedByTheStatedMaximum) {
  EXPECT_EQ(error_of([] { require_threads("p.json: threads_per_worker", 1024); }), "<no error>");
  EXPECT_EQ(error_of([] { require_threads("p.json: threads_per_worker", 100000); }),
            "p.json: threads_per_worker: expected a thread count from 1 to 1024, got 100000");
}

TEST(Limits, CoresMustExistHere) {
  EXPECT_GE(cores_present(), 1);
  EXPECT_FALSE(core_available(99999));
  EXPECT_FALSE(core_available(-1));
  EXPECT_THAT(error_of([] { require_core("plan.json: devices[0].cores[0]", 99999); }),
              HasSubstr("plan.json: devices[0].cores[0]: core 99999 does not exist"));
}

TEST(Limits, ThreadCountsAreCappedAtTheCoresUnlessForced) {
  const int cores = cores_present();
  std::string note;
  EXPECT_EQ(cap_threads_at_cores(cores + 1000, false, &note), cores);
  EXPECT_THAT(note, HasSubstr("capped at"));
  note.clear();
  EXPECT_EQ(cap_threads_at_cores(cores + 1000, true, &note), cores + 1000);
  EXPECT_EQ(note, "");
  EXPECT_EQ(cap_threads_at_cores(1, false, &note), 1);
}

}  // namespace
}  // namespace cleave
