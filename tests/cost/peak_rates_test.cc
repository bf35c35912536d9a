// measure_peak_rates: the CPU's rates are measured once per process, not per caller.
#include <gtest/gtest.h>

#include "cost/cost_table.h"

namespace cleave {
namespace {

// `cleave plan --costs analytical` measures before it loads the model, so that the copy
// probe's buffers never sit beside the weights; the planner's own call must then reuse it.
TEST(PeakRates, LaterCallsReuseTheFirstMeasurement) {
  const PeakRates first = measure_peak_rates(2);
  const PeakRates again = measure_peak_rates(2);
  const PeakRates fewer = measure_peak_rates(1);
  ASSERT_EQ(first.flops_per_second.size(), 2u);
  EXPECT_EQ(again.flops_per_second, first.flops_per_second);
  EXPECT_EQ(again.bytes_per_second, first.bytes_per_second);
  ASSERT_EQ(fewer.flops_per_second.size(), 1u);
  EXPECT_EQ(fewer.flops_per_second.front(), first.flops_per_second.front());
  EXPECT_EQ(fewer.bytes_per_second, first.bytes_per_second);
}

}  // namespace
}  // namespace cleave
