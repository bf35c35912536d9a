// How many rounds the layout choice times a family: the median's bounds, the bar, the budget.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "frontend/layout_choice.h"
#include "support/timing.h"

namespace cleave {
namespace {

// Rounds of interleaved runs, one line per round: "blocked channels-last" latencies in ms.
std::vector<std::map<ConvolutionFamily, double>> rounds_of(
    const std::vector<std::pair<double, double>>& lines) {
  std::vector<std::map<ConvolutionFamily, double>> rounds;
  for (auto [blocked, channels_last] : lines) {
    rounds.push_back({{ConvolutionFamily::kBlocked, blocked},
                      {ConvolutionFamily::kChannelsLast, channels_last}});
  }
  return rounds;
}

// The family kept from scripted rounds (pick_settled_family over their ratios).
ConvolutionFamily pick(const std::vector<std::map<ConvolutionFamily, double>>& rounds,
                       double margin = kFamilyMargin) {
  return pick_settled_family(ratios_to_blocked(rounds), margin);
}

TEST(PickFamily, OneLuckyRunDoesNotDecide) {
  // channels-last has the fastest single run (7 ms) but is 5% slower in four rounds of five.
  const auto rounds = rounds_of({{10, 10.5}, {10, 10.5}, {10, 7}, {10.2, 10.7}, {9.8, 10.3}});
  EXPECT_NEAR(relative_to_blocked(rounds).at(ConvolutionFamily::kChannelsLast), 1.05, 0.001);
  EXPECT_EQ(pick(rounds), ConvolutionFamily::kBlocked);
}

TEST(PickFamily, ABurstInOneRoundDoesNotDecide) {
  // Round 2 caught a burst during blocked's run; channels-last is 4% slower in the others.
  EXPECT_EQ(pick(rounds_of({{10, 10.4}, {30, 10.4}, {10, 10.4}, {10, 10.4}, {10, 10.4}})),
            ConvolutionFamily::kBlocked);
}

TEST(PickFamily, AConsistentWinIsTaken) {
  const auto rounds = rounds_of({{66, 60}, {70, 63}, {64, 58}, {68, 61}, {65, 59}});
  EXPECT_NEAR(relative_to_blocked(rounds).at(ConvolutionFamily::kChannelsLast), 0.906, 0.002);
  EXPECT_EQ(pick(rounds), ConvolutionFamily::kChannelsLast);
  // Against blocked the median decides, settled or not.
  EXPECT_EQ(pick({rounds.begin(), rounds.begin() + 3}), ConvolutionFamily::kChannelsLast);
}

TEST(PickFamily, AWinWithinTheMarginKeepsBlocked) {
  const auto rounds = rounds_of({{10, 9.9}, {10, 9.9}, {10, 9.9}, {10, 9.9}, {10, 9.9}});
  EXPECT_EQ(pick(rounds), ConvolutionFamily::kBlocked);
  EXPECT_EQ(pick(rounds, 0.005), ConvolutionFamily::kChannelsLast);
}

TEST(PickFamily, TheLowestOfThreeWins) {
  EXPECT_EQ(pick_settled_family({{ConvolutionFamily::kWinograd, {0.8, 0.81, 0.79, 0.8, 0.82}},
                                 {ConvolutionFamily::kChannelsLast, {0.9, 0.9, 0.91, 0.89, 0.9}}}),
            ConvolutionFamily::kWinograd);
  EXPECT_EQ(pick_settled_family({{ConvolutionFamily::kWinograd, {0.9, 0.9, 0.91, 0.89, 0.9}},
                                 {ConvolutionFamily::kChannelsLast, {0.8, 0.81, 0.79, 0.8, 0.82}}}),
            ConvolutionFamily::kChannelsLast);
}

TEST(PickFamily, UnsettledRoundsKeepWhatCameBefore) {
  // resnet101 at 1 thread: channels-last's median below Winograd's, its rounds on both sides of
  // it; Winograd stays.
  const std::vector<double> winograd = {0.95, 0.94, 0.96, 0.95, 0.93, 0.95};
  const std::vector<double> unsettled = {0.86, 0.99, 0.80, 1.02, 0.90, 0.92};
  EXPECT_EQ(pick_settled_family({{ConvolutionFamily::kWinograd, winograd},
                                 {ConvolutionFamily::kChannelsLast, unsettled}}),
            ConvolutionFamily::kWinograd);
  // Against blocked the median decides: unsettled, Winograd still replaces it.
  EXPECT_EQ(pick_settled_family({{ConvolutionFamily::kWinograd, unsettled}}),
            ConvolutionFamily::kWinograd);
  // Settled below Winograd, channels-last replaces it.
  EXPECT_EQ(pick_settled_family({{ConvolutionFamily::kWinograd, winograd},
                                 {ConvolutionFamily::kChannelsLast, {0.9, 0.89, 0.91, 0.9, 0.88}}}),
            ConvolutionFamily::kChannelsLast);
}

std::vector<double> one_to(int n) {
  std::vector<double> values;
  for (int i = n; i >= 1; --i) values.push_back(i);  // out of order on purpose
  return values;
}

TEST(MedianInterval, FewerThanFiveRoundsBoundNothing) {
  const RatioInterval bounds = median_interval({0.5, 0.5, 0.5, 0.5});
  EXPECT_TRUE(std::isinf(bounds.low) && bounds.low < 0);
  EXPECT_TRUE(std::isinf(bounds.high) && bounds.high > 0);
}

TEST(MedianInterval, OrderStatisticsOfTheBinomialTail) {
  // Five: 1/32 <= 0.05, so the extremes. Ten: P(B <= 1) = 11/1024, P(B <= 2) = 56/1024 > 0.05,
  // so x_(2) and x_(9). Twenty: P(B <= 5) = 0.0207, P(B <= 6) = 0.0577, so x_(6) and x_(15).
  EXPECT_EQ(median_interval({0.97, 0.9, 0.95, 0.91, 0.92}), (RatioInterval{0.9, 0.97}));
  EXPECT_EQ(median_interval(one_to(10)), (RatioInterval{2, 9}));
  EXPECT_EQ(median_interval(one_to(20)), (RatioInterval{6, 15}));
  // A looser error bounds more tightly: P(B <= 2) = 0.0547 <= 0.1 at ten.
  EXPECT_EQ(median_interval(one_to(10), 0.1), (RatioInterval{3, 8}));
  EXPECT_TRUE(std::isinf(median_interval({}).high));
}

TEST(FamilyBar, TheMarginOrABetterFamilyTimedBefore) {
  EXPECT_DOUBLE_EQ(family_bar({}), 1.0 - kFamilyMargin);
  EXPECT_DOUBLE_EQ(family_bar({{ConvolutionFamily::kBlocked, 1.0}}), 1.0 - kFamilyMargin);
  EXPECT_DOUBLE_EQ(
      family_bar({{ConvolutionFamily::kBlocked, 1.0}, {ConvolutionFamily::kWinograd, 0.99}}),
      1.0 - kFamilyMargin);
  EXPECT_DOUBLE_EQ(
      family_bar({{ConvolutionFamily::kBlocked, 1.0}, {ConvolutionFamily::kWinograd, 0.9}}), 0.9);
}

TEST(FamilyBar, AFamilyThatMissedItsOwnMarginSetsNoBar) {
  // Winograd at 0.96 beat 1 - kFamilyMargin but not its own bar (a margin of 0.05).
  const std::map<ConvolutionFamily, double> relative = {{ConvolutionFamily::kBlocked, 1.0},
                                                        {ConvolutionFamily::kWinograd, 0.96}};
  EXPECT_DOUBLE_EQ(family_bar(relative), 0.96);
  EXPECT_DOUBLE_EQ(family_bar(relative, kFamilyMargin, {{ConvolutionFamily::kWinograd, 0.05}}),
                   1.0 - kFamilyMargin);
  // The family's own margin is its bar.
  EXPECT_DOUBLE_EQ(family_bar({}, 0.05), 0.95);
}

TEST(PickFamily, AFamilyWithALargerMarginMustClearIt) {
  const std::map<ConvolutionFamily, std::vector<double>> ratios = {
      {ConvolutionFamily::kWinograd, {0.96, 0.955, 0.965, 0.96, 0.96}}};
  EXPECT_EQ(pick_settled_family(ratios), ConvolutionFamily::kWinograd);
  EXPECT_EQ(pick_settled_family(ratios, kFamilyMargin, {{ConvolutionFamily::kWinograd, 0.05}}),
            ConvolutionFamily::kBlocked);
  EXPECT_EQ(pick_settled_family(ratios, kFamilyMargin, {{ConvolutionFamily::kWinograd, 0.03}}),
            ConvolutionFamily::kWinograd);
}

TEST(PickFamily, AFamilyAfterOneThatMissedItsMarginFacesBlocked) {
  // Winograd's 0.96 misses its 0.05 margin; channels-last's unsettled 0.97 is then measured
  // against blocked only, where the median decides.
  const std::map<ConvolutionFamily, std::vector<double>> ratios = {
      {ConvolutionFamily::kWinograd, {0.96, 0.955, 0.965, 0.96, 0.96}},
      {ConvolutionFamily::kChannelsLast, {0.97, 0.9, 1.0}}};
  EXPECT_EQ(pick_settled_family(ratios), ConvolutionFamily::kWinograd);
  EXPECT_EQ(pick_settled_family(ratios, kFamilyMargin, {{ConvolutionFamily::kWinograd, 0.05}}),
            ConvolutionFamily::kChannelsLast);
}

TEST(FamilySettled, OnlyWhenTheBoundsLieOnOneSide) {
  EXPECT_TRUE(family_settled({0.9, 0.91, 0.92, 0.9, 0.93}, 0.98));
  EXPECT_TRUE(family_settled({1.1, 1.0, 0.99, 1.05, 1.2}, 0.98));
  EXPECT_FALSE(family_settled({0.93, 1.01, 0.95, 0.99, 0.97}, 0.98));
  // Four rounds say nothing, however far from the bar.
  EXPECT_FALSE(family_settled({0.5, 0.5, 0.5, 0.5}, 0.98));
}

// Scripted rounds: ratios[i] is round i's family ms over blocked's 10 ms; each round takes
// `seconds` of the fake clock.
struct Script {
  std::vector<double> ratios;
  double seconds = 0.01;
  int calls = 0;
  std::vector<std::pair<double, double>> run(double bar, double others,
                                             const LayoutChoiceOptions& options) {
    return time_family(
        [&](int count) {
          EXPECT_EQ(count, calls);
          const double ratio = ratios.at(static_cast<std::size_t>(calls++) % ratios.size());
          return std::make_pair(10.0, 10.0 * ratio);
        },
        [&] { return calls * seconds; }, bar, others, options);
  }
};

TEST(TimeFamily, AClearAnswerStopsWhereItDidBefore) {
  LayoutChoiceOptions options;
  Script fast{{0.8, 0.82, 0.79}};
  EXPECT_EQ(fast.run(0.98, 2, options).size(), 10u);  // max_runs within the share
  Script slow{{1.2, 1.25, 1.18}, 0.6};
  // Three rounds take the 1 s share; two more for the five that bound a median.
  EXPECT_EQ(slow.run(0.98, 2, options).size(), 5u);
}

TEST(TimeFamily, ANearTieRunsOnUntilItSettles) {
  // The first ten rounds' median is 0.97, inside the bar: ten rounds chose the family. The
  // rounds that follow put it at blocked's latency, and the choice keeps blocked.
  std::vector<double> ratios = {0.96, 0.97, 0.95, 0.98, 0.97, 1.0, 0.96, 0.99, 0.97, 0.98};
  std::vector<std::map<ConvolutionFamily, double>> first_ten;
  for (double r : ratios) {
    first_ten.push_back(
        {{ConvolutionFamily::kBlocked, 10.0}, {ConvolutionFamily::kWinograd, 10.0 * r}});
  }
  ASSERT_LT(relative_to_blocked(first_ten).at(ConvolutionFamily::kWinograd), 1.0 - kFamilyMargin);
  for (int i = 0; i < 30; ++i) ratios.push_back(i % 3 == 0 ? 0.99 : 1.01 + 0.002 * i);
  Script script{ratios};
  const std::vector<std::pair<double, double>> timed = script.run(0.98, 2, LayoutChoiceOptions{});
  EXPECT_GT(timed.size(), 10u);
  EXPECT_LE(timed.size(), 40u);
  std::vector<std::map<ConvolutionFamily, double>> rounds;
  for (const auto& [blocked, winograd] : timed) {
    rounds.push_back(
        {{ConvolutionFamily::kBlocked, blocked}, {ConvolutionFamily::kWinograd, winograd}});
  }
  EXPECT_TRUE(family_settled(ratios_to_blocked(rounds).at(ConvolutionFamily::kWinograd), 0.98));
  EXPECT_GT(relative_to_blocked(rounds).at(ConvolutionFamily::kWinograd), 1.0 - kFamilyMargin);
  EXPECT_EQ(pick_settled_family(ratios_to_blocked(rounds)), ConvolutionFamily::kBlocked);
}

TEST(TimeFamily, TheBudgetEndsAnUnsettledFamily) {
  LayoutChoiceOptions options;
  // Straddling the bar for ever: 0.25 s rounds, 1 + 3 s for each of two families: 16 rounds.
  Script slow{{0.96, 1.0}, 0.25};
  EXPECT_EQ(slow.run(0.98, 2, options).size(), 16u);
  // Fast rounds stop at the cap.
  Script fast{{0.96, 1.0}, 0.001};
  EXPECT_EQ(fast.run(0.98, 2, options).size(), 40u);
  // Without the extension, the old rule: max_runs within the share.
  options.unsettled_max_runs = 0;
  Script old{{0.96, 1.0}, 0.001};
  EXPECT_EQ(old.run(0.98, 2, options).size(), 10u);
}

TEST(TimeFamily, ABetterFamilyTimedBeforeRaisesTheBar) {
  // Clearly below the margin, but no clearer than Winograd's 0.90: the rounds go on to the cap.
  Script script{{0.88, 0.92}, 0.001};
  EXPECT_EQ(script.run(0.98, 2, LayoutChoiceOptions{}).size(), 10u);
  Script against_winograd{{0.88, 0.92}, 0.001};
  EXPECT_EQ(against_winograd.run(0.90, 2, LayoutChoiceOptions{}).size(), 40u);
}

TEST(LayoutChoiceDescription, NamesTheRoundsAndTheBounds) {
  LayoutChoice choice;
  choice.family = ConvolutionFamily::kWinograd;
  choice.measured = true;
  choice.cpu_time = true;
  choice.fastest_ms = {{ConvolutionFamily::kBlocked, 31.4}, {ConvolutionFamily::kWinograd, 25.7}};
  choice.relative = {{ConvolutionFamily::kBlocked, 1.0}, {ConvolutionFamily::kWinograd, 0.92}};
  choice.ratios = {{ConvolutionFamily::kWinograd, {0.92, 0.9, 0.95, 0.93, 0.91}}};
  EXPECT_EQ(describe(choice),
            "winograd (measured: 25.700 CPU ms; blocked 31.400 CPU ms; median against blocked in "
            "interleaved rounds: winograd 0.920 (5 rounds, 0.900-0.950))");
  choice.ratios.at(ConvolutionFamily::kWinograd).resize(3);
  EXPECT_EQ(describe(choice),
            "winograd (measured: 25.700 CPU ms; blocked 31.400 CPU ms; median against blocked in "
            "interleaved rounds: winograd 0.920 (3 rounds))");
}

}  // namespace
}  // namespace cleave
