// StaticProgram over hand-written tables: a Concat's inputs written in place, and refused where
// the kernels prepared at run time would not read them there.
#include "codegen_runtime/static_program.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "runtime/tensor.h"
#include "support/error.h"

namespace cleave {
namespace {

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
    {"a", "a", 0, 0, 1, 1, 2}, {"b", "b", 0, 2, 3, 3, 4}, {"c", "c", 0, 4, 6, 6, 7}};
const int kGraphInputs[] = {0};
const int kGraphOutputs[] = {3};
const int kWorkerCores[] = {-1};

void run_steps(StaticProgram& p) {
  p.step(0);
  p.step(1);
  p.step(2);
}
const StaticWorkerFunction kWorkers[] = {run_steps};

class StaticProgramConcat : public ::testing::Test {
 protected:
  void SetUp() override {
    weights_ = (std::filesystem::temp_directory_path() /
                ("cleave_static_program_" + std::to_string(::getpid()) + ".bin"))
                   .string();
    std::ofstream(weights_, std::ios::binary);  // No initializers: an empty weights file.
  }
  void TearDown() override { std::filesystem::remove(weights_); }

  // The tables with a at `a_offset` and b at `b_offset` of the arena; c's output at 32.
  StaticProgramTables tables(int64_t a_offset, int64_t b_offset) {
    values_ = {{"x", StaticValue::kGraphInput, 0, 32, 1, 4, kInputDims, -1},
               {"a", StaticValue::kActivation, a_offset, 32, 1, 4, kInputDims, -1},
               {"b", StaticValue::kActivation, b_offset, 32, 1, 4, kInputDims, -1},
               {"c", StaticValue::kActivation, 32, 64, 1, 4, kOutputDims, -1}};
    return {"concat",
            kGraph,
            "weights.bin",
            0,
            "blocked",
            0,
            1,
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
            kWorkers};
  }

  std::string weights_;
  std::vector<StaticValue> values_;
};

TEST_F(StaticProgramConcat, InputsWrittenInPlaceAreNotCopiedOverAndTheOutputIsTheJoin) {
  const StaticProgramTables placed = tables(32, 64);
  StaticProgram program(placed, weights_);
  const float x[8] = {-1.5f, 2.0f, 0.25f, -0.5f, 3.0f, -2.0f, 0.0f, 1.0f};
  float c[16] = {};
  const void* inputs[] = {x};
  void* outputs[] = {c};
  for (int run = 0; run < 2; ++run) {
    program.run(inputs, outputs);
    for (int i = 0; i < 8; ++i) {
      EXPECT_EQ(c[i], std::max(0.0f, x[i])) << i;
      EXPECT_NEAR(c[8 + i], 1.0f / (1.0f + std::exp(-x[i])), 1e-6f) << i;
    }
  }
  // Both inputs are views into the output's bytes: the Concat found them in place.
  EXPECT_EQ(static_cast<char*>(program.value(1).raw()), static_cast<char*>(program.value(3).raw()));
  EXPECT_EQ(static_cast<char*>(program.value(2).raw()),
            static_cast<char*>(program.value(3).raw()) + 32);
}

TEST_F(StaticProgramConcat, InputPlacedWhereItsConcatDoesNotReadItIsRefusedNamingTheStep) {
  const StaticProgramTables swapped = tables(64, 32);  // a in b's slice and b in a's.
  StaticProgram program(swapped, weights_);
  const float x[8] = {};
  float c[16] = {};
  const void* inputs[] = {x};
  void* outputs[] = {c};
  try {
    program.run(inputs, outputs);
    FAIL() << "a run with misplaced Concat inputs went through";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("step c"), std::string::npos) << message;
    EXPECT_NE(message.find("input 0 ('a'"), std::string::npos) << message;
    EXPECT_NE(message.find("its slice starts at byte 0"), std::string::npos) << message;
    EXPECT_NE(message.find("regenerate"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace cleave
