// SampleStreamProgram over hand-written tables: a value received from another worker lands in
// its place in the reader's arena, inside the Concat's output where the generator placed it.
#include "codegen_runtime/sample_stream.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "support/error.h"

namespace cleave {
namespace {

// Worker 0 computes %a and hands it over; worker 1 computes %b and joins them.
const char* kGraph = R"(graph main [ai.onnx=17] (%x: f32[1,2,2,2]) {
  %a = Relu(%x)
  %b = Sigmoid(%x)
  %c = Concat[axis=1](%a, %b)
  return %c
})";

const int64_t kInputDims[] = {1, 2, 2, 2};
const int64_t kOutputDims[] = {1, 4, 2, 2};
const int kStepValues[] = {0, 1, 0, 2, 1, 2, 3};
const StaticStep kSteps[] = {
    {"a", "a", 0, 0, 1, 1, 2}, {"b", "b", 1, 2, 3, 3, 4}, {"c", "c", 1, 4, 6, 6, 7}};
const int kGraphInputs[] = {0};
const int kGraphOutputs[] = {3};
const int kWorkerCores[] = {-1, -1};
constexpr int kSamples = 2;
const SampleStreamChannel kChannels[] = {{1, 0, 1, 2}};

void worker_0(SampleStreamWorker& p) {
  for (int s = 0; s < kSamples; ++s) {
    p.use_inputs(s);
    p.step(0);
    p.send(0, s % 2, s);
  }
}

void worker_1(SampleStreamWorker& p) {
  for (int s = 0; s < kSamples; ++s) {
    p.use_inputs(s);
    p.step(1);
    p.receive(0, s % 2, s);
    p.step(2);
    p.take_output(0, s);
  }
}
const SampleStreamFunction kWorkers[] = {worker_0, worker_1};

class SampleStreamConcat : public ::testing::Test {
 protected:
  void SetUp() override {
    weights_ = (std::filesystem::temp_directory_path() /
                ("cleave_sample_stream_" + std::to_string(::getpid()) + ".bin"))
                   .string();
    std::ofstream(weights_, std::ios::binary);  // No initializers: an empty weights file.
  }
  void TearDown() override { std::filesystem::remove(weights_); }

  // a at `a_offset` and b at `b_offset` of each worker's arena; c's output at 32.
  void make_tables(int64_t a_offset, int64_t b_offset) {
    values_ = {{"x", StaticValue::kGraphInput, 0, 32, 1, 4, kInputDims, -1},
               {"a", StaticValue::kActivation, a_offset, 32, 1, 4, kInputDims, -1},
               {"b", StaticValue::kActivation, b_offset, 32, 1, 4, kInputDims, -1},
               {"c", StaticValue::kActivation, 32, 64, 1, 4, kOutputDims, -1}};
    program_ = {"concat",
                kGraph,
                "weights.bin",
                0,
                "blocked",
                0,
                2,
                1,
                kWorkerCores,
                values_.data(),
                4,
                kSteps,
                3,
                kStepValues,
                0,
                kGraphInputs,
                1,
                kGraphOutputs,
                1,
                96,
                nullptr};
    stream_ = {&program_, kChannels, 1, kWorkers, kSamples};
  }

  std::string weights_;
  std::vector<StaticValue> values_;
  StaticProgramTables program_{};
  SampleStreamTables stream_{};
};

TEST_F(SampleStreamConcat, AReceivedInputPlacedInItsConcatGivesTheJoin) {
  make_tables(32, 64);
  SampleStreamProgram program(stream_, weights_);
  const float x0[8] = {-1.5f, 2.0f, 0.25f, -0.5f, 3.0f, -2.0f, 0.0f, 1.0f};
  const float x1[8] = {4.0f, -3.0f, 1.5f, -0.25f, -1.0f, 0.5f, 2.5f, -4.0f};
  float c0[16] = {}, c1[16] = {};
  const void* inputs[] = {x0, x1};
  void* outputs[] = {c0, c1};
  for (int run = 0; run < 2; ++run) {
    program.run(inputs, outputs);
    for (int i = 0; i < 8; ++i) {
      EXPECT_EQ(c0[i], std::max(0.0f, x0[i])) << i;
      EXPECT_EQ(c1[i], std::max(0.0f, x1[i])) << i;
      EXPECT_NEAR(c0[8 + i], 1.0f / (1.0f + std::exp(-x0[i])), 1e-6f) << i;
      EXPECT_NEAR(c1[8 + i], 1.0f / (1.0f + std::exp(-x1[i])), 1e-6f) << i;
    }
  }
}

// The received bytes go to the value's arena place: placed in the other input's slice, the
// Concat's first-run check finds them there and stops, naming the step. (Received into a buffer
// of their own, as before, they would have been copied and the run gone through.)
TEST_F(SampleStreamConcat, AReceivedInputLandsInTheArenaWhereTheConcatChecksItsSlice) {
  make_tables(64, 32);
  SampleStreamProgram program(stream_, weights_);
  const float x[8] = {};
  float c0[16] = {}, c1[16] = {};
  const void* inputs[] = {x, x};
  void* outputs[] = {c0, c1};
  try {
    program.run(inputs, outputs);
    FAIL() << "a run with a misplaced received Concat input went through";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("step c"), std::string::npos) << message;
    EXPECT_NE(message.find("input 0 ('a'"), std::string::npos) << message;
    EXPECT_NE(message.find("its slice starts at byte 0"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace cleave
