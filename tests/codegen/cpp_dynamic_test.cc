// `cleave codegen --lang cpp` of models with run-time steps (sub-graphs, shapes the run decides):
// the generated program builds and computes `cleave run`'s bits.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "../busy_processes.h"
#include "codegen_fixture.h"

namespace cleave {
namespace {

// A NonZero feeding more nodes: y's shape follows x's values, r's does not.
const char* kNonZeroModel = R"(graph main [ai.onnx=13] (%x: f32[2,6]) {
  @w: f32[6,6]
  %h = MatMul(%x, @w)
  %r = Relu(%h)
  %i = NonZero(%r)
  %f = Cast[to=1](%i)
  %s = ReduceSum[keepdims=0](%f)
  %y = Add(%f, %s)
  return %y, %r
})";

// A C program over the generated C API: output 0 (shaped at run time) read after the run
// through model_output, then a run given a buffer for it, which must fail.
const char* kRunTimeOutputEmbedSource = R"(#include <stdio.h>
#include <stdlib.h>

#include "model.h"

int main(int argc, char** argv) {
  if (argc != 4) return 3;
  size_t n = model_input_elements(0);
  float* in = malloc(n * sizeof(float));
  FILE* f = fopen(argv[1], "rb");
  if (!f || fread(in, sizeof(float), n, f) != n) return 3;
  fclose(f);
  if (model_init(argv[3]) != 0) return 2;
  if (model_output(0) != NULL || model_output_elements(0) != 0) return 4;
  const float* inputs[MODEL_INPUT_COUNT] = {in};
  float* outputs[MODEL_OUTPUT_COUNT] = {NULL, NULL};
  if (model_run(inputs, outputs) != 0) {
    fprintf(stderr, "model_run: %s\n", model_last_error());
    return 2;
  }
  f = fopen(argv[2], "wb");
  fwrite(model_output(0), sizeof(float), model_output_elements(0), f);
  fclose(f);
  float buffer[64];
  outputs[0] = buffer;
  if (model_run(inputs, outputs) == 0) return 5;
  printf("%s\n", model_last_error());
  model_shutdown();
  free(in);
  return 0;
}
)";

class CppDynamic : public CodegenFixture {
 protected:
  // Writes `text` as m.onnx, generates gen/ (sequential plan, blocked layouts) and builds it.
  void generate_and_build(const std::string& text) {
    write_model(text, path("m.onnx"));
    CommandOutput generated = cleave("codegen m.onnx --lang cpp --layouts blocked -o gen");
    ASSERT_EQ(generated.exit_code, 0) << generated.text;
    CommandOutput build = build_generated();
    ASSERT_EQ(build.exit_code, 0) << build.text;
  }
  // Runs the generated program (three runs, so that later runs reuse what the first
  // prepared) and `cleave run` on `input_options`; expects every output bit for bit equal.
  void expect_same_bits(const std::string& input_options, const std::vector<std::string>& outputs,
                        const std::string& tag) {
    CommandOutput run =
        shell("gen/build/model_run " + input_options + " --repeat 3 --output-dir out_" + tag);
    ASSERT_EQ(run.exit_code, 0) << run.text;
    CommandOutput reference = cleave("run m.onnx --plan gen/plan.json --layouts blocked " +
                                     input_options + " --output-dir ref_" + tag);
    ASSERT_EQ(reference.exit_code, 0) << reference.text;
    for (const std::string& name : outputs) {
      const Tensor expected = read_npy(path("ref_" + tag + "/" + name + ".npy"));
      const Tensor actual = read_npy(path("out_" + tag + "/" + name + ".npy"));
      EXPECT_TRUE(same_bits(actual, expected))
          << tag << " " << name << ": " << actual.describe() << " against " << expected.describe();
    }
  }
  // x.npy-like input named `file`: the seeded input of `text`, every value shifted by `shift`.
  void write_shifted_input(const std::string& text, float shift, const std::string& file) {
    Tensor x = random_inputs(parse_graph(text), 0).at("x");
    for (int64_t i = 0; i < x.element_count(); ++i) x.data<float>()[i] += shift;
    write_npy(path(file), x);
  }
};

TEST_F(CppDynamic, NonZeroFeedingMoreNodesMatchesCleaveRunForTwoInputs) {
  ASSERT_NO_FATAL_FAILURE(generate_and_build(kNonZeroModel));
  EXPECT_NE(read_text_file(path("gen/tables.cc")).find("(shape at run time)"), std::string::npos);
  ASSERT_NO_FATAL_FAILURE(expect_same_bits("--seed 0", {"y", "r"}, "seed0"));
  ASSERT_NO_FATAL_FAILURE(expect_same_bits("--seed 5", {"y", "r"}, "seed5"));
  // The number of nonzero values follows the input: the two runs made different shapes.
  EXPECT_NE(read_npy(path("ref_seed0/y.npy")).shape(), read_npy(path("ref_seed5/y.npy")).shape());
}

TEST_F(CppDynamic, TheCApiReturnsAnOutputShapedAtRunTimeAfterTheRun) {
  write_model(kNonZeroModel, path("m.onnx"));
  write_npy(path("x.npy"), random_inputs(parse_graph(kNonZeroModel), 0).at("x"));
  CommandOutput generated = cleave("codegen m.onnx --lang cpp --layouts blocked -o gen");
  ASSERT_EQ(generated.exit_code, 0) << generated.text;
  CommandOutput build = build_embedding(kRunTimeOutputEmbedSource);
  ASSERT_EQ(build.exit_code, 0) << build.text;
  CommandOutput embedded = shell("embed_build/embed x.raw y.raw gen/weights.bin");
  ASSERT_EQ(embedded.exit_code, 0) << embedded.text;
  EXPECT_NE(embedded.text.find("known only at run time"), std::string::npos) << embedded.text;
  CommandOutput reference =
      cleave("run m.onnx --plan gen/plan.json --layouts blocked --input x=x.npy --output-dir ref");
  ASSERT_EQ(reference.exit_code, 0) << reference.text;
  const Tensor expected = read_npy(path("ref/y.npy"));
  const std::string got = read_text_file(path("y.raw"));
  ASSERT_EQ(got.size(), expected.byte_size());
  EXPECT_EQ(std::memcmp(got.data(), expected.raw(), got.size()), 0);
}

TEST_F(CppDynamic, IfBranchesOfDifferentShapesMatchCleaveRun) {
  const char* text = R"(graph main [ai.onnx=17] (%x: f32[2,3]) {
  %s = ReduceSum[keepdims=0](%x)
  %z = Constant[value=tensor<f32[]>[0]]()
  %c = Greater(%s, %z)
  %b = If[else_branch=graph e [ai.onnx=17] () {
    %n = Neg(%x)
    return %n
  }, then_branch=graph t [ai.onnx=17] () {
    %p = Relu(%x)
    %q = Concat[axis=0](%p, %x)
    return %q
  }](%c)
  %y = Sigmoid(%b)
  return %y
})";
  ASSERT_NO_FATAL_FAILURE(generate_and_build(text));
  write_shifted_input(text, 3.0f, "above.npy");
  write_shifted_input(text, -3.0f, "below.npy");
  ASSERT_NO_FATAL_FAILURE(expect_same_bits("--input x=above.npy", {"y"}, "then"));
  ASSERT_NO_FATAL_FAILURE(expect_same_bits("--input x=below.npy", {"y"}, "else"));
  EXPECT_EQ(read_npy(path("out_then/y.npy")).shape(), (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(read_npy(path("out_else/y.npy")).shape(), (std::vector<int64_t>{2, 3}));
}

TEST_F(CppDynamic, LoopOfAComputedTripCountMatchesCleaveRun) {
  const char* text = R"(graph main [ai.onnx=17] (%x: f32[2,3]) {
  %a = Abs(%x)
  %s = ReduceSum[keepdims=0](%a)
  %k = Ceil(%s)
  %m = Cast[to=7](%k)
  %t = Constant[value=tensor<bool[]>[1]]()
  %out, %scan = Loop[body=graph b [ai.onnx=17] (%i: i64[], %cond: bool[], %v: f32[2,3]) {
    %f = Cast[to=1](%i)
    %w = Add(%v, %f)
    %h = Tanh(%w)
    %same = Identity(%cond)
    return %same, %h, %w
  }](%m, %t, %x)
  %y = Mul(%out, %x)
  return %y, %scan
})";
  ASSERT_NO_FATAL_FAILURE(generate_and_build(text));
  write_shifted_input(text, 0.0f, "small.npy");
  write_shifted_input(text, 2.0f, "large.npy");
  ASSERT_NO_FATAL_FAILURE(expect_same_bits("--input x=small.npy", {"y", "scan"}, "small"));
  ASSERT_NO_FATAL_FAILURE(expect_same_bits("--input x=large.npy", {"y", "scan"}, "large"));
  EXPECT_NE(read_npy(path("out_small/scan.npy")).shape(),
            read_npy(path("out_large/scan.npy")).shape());
}

TEST_F(CppDynamic, TwoWorkersWithRunTimeStepsMatchCleaveRunWithTheirPlan) {
  const char* text = R"(graph main [ai.onnx=13] (%x: f32[1,3,16,16]) {
  @wa: f32[8,3,3,3]
  @wb: f32[8,3,1,1]
  %a = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%x, @wa)
  %ar = Relu(%a)
  %b = Conv[kernel_shape=[1,1]](%x, @wb)
  %bs = Sigmoid(%b)
  %n = NonZero(%ar)
  %nf = Cast[to=1](%n)
  %m = ReduceMean[keepdims=0](%nf)
  %c = Add(%bs, %m)
  return %c
})";
  write_model(text, path("m.onnx"));
  ASSERT_EQ(cleave("plan m.onnx --strategy lc --workers 2 --costs static -o plan.json").exit_code,
            0);
  CommandOutput generated =
      cleave("codegen m.onnx --plan plan.json --lang cpp --layouts blocked -o gen");
  ASSERT_EQ(generated.exit_code, 0) << generated.text;
  ASSERT_TRUE(std::ifstream(path("gen/worker_1.cc")).good());
  CommandOutput build = build_generated();
  ASSERT_EQ(build.exit_code, 0) << build.text;
  ASSERT_NO_FATAL_FAILURE(expect_same_bits("--seed 0", {"c"}, "seed0"));
  // Folded onto one core (every core held), one thread runs both workers' steps, the run-time
  // ones included, in one order: the same bits.
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  if (cores > 8) return;
  CommandOutput folded;
  {
    BusyProcesses busy(cores + 1);
    folded = shell(
        "env -u CLEAVE_FIXED_THREADS timeout 120 gen/build/model_run --seed 0 --repeat 3 "
        "--output-dir out_folded --json");
  }
  ASSERT_EQ(folded.exit_code, 0) << folded.text;
  EXPECT_NE(folded.text.find("\"threads\": 1"), std::string::npos) << folded.text;
  EXPECT_TRUE(same_bits(read_npy(path("out_folded/c.npy")), read_npy(path("ref_seed0/c.npy"))));
}

}  // namespace
}  // namespace cleave
