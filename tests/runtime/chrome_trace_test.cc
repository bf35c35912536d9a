// The one Chrome-trace writer: a run's workers as thread rows or as process rows (ranks), and
// several runs and slices merged into one trace (a session's profile).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "runtime/trace.h"

namespace cleave {
namespace {

// Two tasks on two workers: task 0 on worker 1, task 1 on worker 0.
Trace two_tasks() {
  Trace trace;
  trace.events = {{0, 1, 0.001, 0.003, 0.0005}, {1, 0, 0.002, 0.004, 0.0}};
  trace.makespan = 0.004;
  return trace;
}

nlohmann::json events_of(const ChromeTrace& chrome) {
  return nlohmann::json::parse(chrome.json())["traceEvents"];
}

TEST(ChromeTrace, WorkersAsThreadsAreNamedRowsOfOneProcess) {
  ChromeTrace chrome;
  chrome.add_run(two_tasks(), {"conv", "relu"}, {"core 0", "core 1"});
  const nlohmann::json events = events_of(chrome);
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[1]["name"], "thread_name");
  EXPECT_EQ(events[1]["tid"], 1);
  EXPECT_EQ(events[1]["args"]["name"], "core 1");
  EXPECT_EQ(events[2]["name"], "conv");
  EXPECT_EQ(events[2]["pid"], 0);
  EXPECT_EQ(events[2]["tid"], 1);
  EXPECT_NEAR(events[2]["ts"].get<double>(), 1000.0, 1e-6);
  EXPECT_NEAR(events[2]["dur"].get<double>(), 2000.0, 1e-6);
  EXPECT_NEAR(events[2]["args"]["wait_us"].get<double>(), 500.0, 1e-6);
}

TEST(ChromeTrace, WorkersAsProcessesPutEachTaskOnItsRanksRow) {
  ChromeTrace chrome;
  chrome.add_run(two_tasks(), {"conv", "relu"}, {"rank 0", "rank 1"}, TraceRows::processes);
  const nlohmann::json events = events_of(chrome);
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0]["name"], "process_name");
  EXPECT_EQ(events[1]["pid"], 1);
  EXPECT_EQ(events[1]["args"]["name"], "rank 1");
  EXPECT_EQ(events[2]["name"], "conv");
  EXPECT_EQ(events[2]["pid"], 1);
  EXPECT_EQ(events[2]["tid"], 0);
}

TEST(ChromeTrace, ALaterRunMovesByItsOffsetWithoutNamingItsRowsAgain) {
  ChromeTrace chrome;
  chrome.add_run(two_tasks(), {"conv", "relu"}, {"w0", "w1"}, TraceRows::threads, 3, 0, true);
  chrome.add_run(two_tasks(), {"conv", "relu"}, {"w0", "w1"}, TraceRows::threads, 3, 5000, false);
  const nlohmann::json events = events_of(chrome);
  ASSERT_EQ(events.size(), 6u);
  EXPECT_EQ(events[4]["name"], "conv");
  EXPECT_EQ(events[4]["pid"], 3);
  EXPECT_NEAR(events[4]["ts"].get<double>(), 6000.0, 1e-6);
}

TEST(ChromeTrace, ASliceKeepsItsCategoryAndArguments) {
  ChromeTrace chrome;
  chrome.add_slice("session_prepare", 0, 0, 10, 20, "Session", {{"shapes", "x: f32[1]"}});
  chrome.add_slice("model_run", 0, 0, 40, 5, "Session");
  const nlohmann::json events = events_of(chrome);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0]["cat"], "Session");
  EXPECT_EQ(events[0]["args"]["shapes"], "x: f32[1]");
  EXPECT_FALSE(events[1].contains("args"));
}

}  // namespace
}  // namespace cleave
