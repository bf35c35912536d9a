// `cleave codegen --lang cpp`: the generated program builds with CMake and computes the same bits.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "../busy_processes.h"
#include "codegen_fixture.h"

namespace cleave {
namespace {

namespace fs = std::filesystem;

// A tiny C program over the generated C API: raw float input file in, raw output file out.
const char* kEmbedSource = R"(#include <stdio.h>
#include <stdlib.h>

#include "model.h"

int main(int argc, char** argv) {
  if (argc != 4) return 3;
  size_t n = model_input_elements(0), m = model_output_elements(0);
  float* in = malloc(n * sizeof(float));
  float* out = malloc(m * sizeof(float));
  FILE* f = fopen(argv[1], "rb");
  if (!f || fread(in, sizeof(float), n, f) != n) return 3;
  fclose(f);
  if (model_init(argv[3]) != 0) {
    fprintf(stderr, "model_init: %s\n", model_last_error());
    return 2;
  }
  const float* inputs[MODEL_INPUT_COUNT] = {in};
  float* outputs[MODEL_OUTPUT_COUNT] = {out};
  if (model_run(inputs, outputs) != 0) {
    fprintf(stderr, "model_run: %s\n", model_last_error());
    return 2;
  }
  f = fopen(argv[2], "wb");
  fwrite(out, sizeof(float), m, f);
  fclose(f);
  model_shutdown();
  free(in);
  free(out);
  return 0;
}
)";

class CodegenCpp : public CodegenFixture {};

TEST_F(CodegenCpp, GeneratedProgramBuildsAndMatchesCleaveRunBitForBit) {
  write_model(kTwoBranchModel, path("m.onnx"));
  save_default_input("m.onnx", path("x.npy"));
  ASSERT_EQ(cleave("plan m.onnx --strategy lc --workers 2 --costs static -o plan.json").exit_code,
            0);
  CommandOutput generated =
      cleave("codegen m.onnx --plan plan.json --lang cpp --layouts blocked -o gen");
  ASSERT_EQ(generated.exit_code, 0) << generated.text;
  EXPECT_TRUE(fs::exists(path("gen/worker_0.cc")));
  EXPECT_TRUE(fs::exists(path("gen/worker_1.cc")));
  const std::string worker =
      read_text_file(path("gen/worker_0.cc")) + read_text_file(path("gen/worker_1.cc"));
  EXPECT_NE(worker.find("p.send("), std::string::npos);
  EXPECT_NE(worker.find("p.receive("), std::string::npos);

  CommandOutput build = build_generated();
  ASSERT_EQ(build.exit_code, 0) << build.text;
  EXPECT_TRUE(fs::exists(path("gen/build/libmodel.a")));

  CommandOutput run = shell("gen/build/model_run --input x=x.npy --output-dir out --repeat 3");
  ASSERT_EQ(run.exit_code, 0) << run.text;
  EXPECT_NE(run.text.find("latency    min"), std::string::npos) << run.text;
  // Inputs not given are cleave run's seeded ones: the same bits without --input.
  CommandOutput seeded = shell("gen/build/model_run --output-dir seeded");
  ASSERT_EQ(seeded.exit_code, 0) << seeded.text;
  CommandOutput reference =
      cleave("run m.onnx --plan gen/plan.json --layouts blocked --input x=x.npy --output-dir ref");
  ASSERT_EQ(reference.exit_code, 0) << reference.text;
  EXPECT_TRUE(same_bits(read_npy(path("out/out.npy")), read_npy(path("ref/out.npy"))));
  EXPECT_TRUE(same_bits(read_npy(path("seeded/out.npy")), read_npy(path("ref/out.npy"))));

  // The C API embedded in a small C program: model.h and libmodel.a, through the folder's
  // CMakeLists (which brings cleave's library and its dependencies along).
  CommandOutput embed_build = build_embedding(kEmbedSource);
  ASSERT_EQ(embed_build.exit_code, 0) << embed_build.text;
  CommandOutput embedded = shell("embed_build/embed x.raw out.raw gen/weights.bin");
  ASSERT_EQ(embedded.exit_code, 0) << embedded.text;
  const Tensor expected = read_npy(path("ref/out.npy"));
  const std::string got = read_text_file(path("out.raw"));
  ASSERT_EQ(got.size(), expected.byte_size());
  EXPECT_EQ(std::memcmp(got.data(), expected.raw(), got.size()), 0);
  // A weights file that is not there is reported through model_last_error.
  CommandOutput missing = shell("embed_build/embed x.raw out.raw nowhere.bin");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.text.find("nowhere.bin"), std::string::npos) << missing.text;

  // A weights file of another size is refused by name, not read past its end.
  { std::ofstream(path("short.bin")) << "short"; }
  CommandOutput bad = shell("gen/build/model_run --weights short.bin");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.text.find("short.bin"), std::string::npos) << bad.text;
}

// With every core held by other processes, a two-worker program folds its workers onto the one
// core `cleave run --plan` would give them (its caller runs both workers' steps in one order)
// and still computes the same bits; --fixed-threads keeps both workers' threads.
TEST_F(CodegenCpp, TwoWorkerProgramFoldedOntoOneCoreMatchesCleaveRunBitForBit) {
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  if (cores > 8)
    GTEST_SKIP() << "fills every core with a busy process: wants at most 8, has " << cores;
  write_model(kTwoBranchModel, path("m.onnx"));
  save_default_input("m.onnx", path("x.npy"));
  ASSERT_EQ(cleave("plan m.onnx --strategy lc --workers 2 --costs static -o plan.json").exit_code,
            0);
  CommandOutput generated =
      cleave("codegen m.onnx --plan plan.json --lang cpp --layouts blocked -o gen");
  ASSERT_EQ(generated.exit_code, 0) << generated.text;
  // Both workers have steps, and values cross between them: one order must follow the edges.
  EXPECT_NE(read_text_file(path("gen/worker_1.cc")).find("p.step("), std::string::npos);
  EXPECT_NE((read_text_file(path("gen/worker_0.cc")) + read_text_file(path("gen/worker_1.cc")))
                .find("p.receive("),
            std::string::npos);
  CommandOutput build = build_generated();
  ASSERT_EQ(build.exit_code, 0) << build.text;
  CommandOutput reference =
      cleave("run m.onnx --plan gen/plan.json --layouts blocked --input x=x.npy --output-dir ref");
  ASSERT_EQ(reference.exit_code, 0) << reference.text;
  BusyProcesses busy(cores + 1);
  CommandOutput folded = shell(
      "env -u CLEAVE_FIXED_THREADS timeout 120 gen/build/model_run --input x=x.npy "
      "--output-dir folded --repeat 3 --json");
  ASSERT_EQ(folded.exit_code, 0) << folded.text;
  EXPECT_NE(folded.text.find("\"threads\": 1"), std::string::npos) << folded.text;
  EXPECT_TRUE(same_bits(read_npy(path("folded/out.npy")), read_npy(path("ref/out.npy"))));
  CommandOutput text =
      shell("env -u CLEAVE_FIXED_THREADS timeout 120 gen/build/model_run --input x=x.npy");
  EXPECT_NE(text.text.find("the 2 workers folded onto 1 core(s)"), std::string::npos) << text.text;
  CommandOutput fixed = shell(
      "env -u CLEAVE_FIXED_THREADS timeout 120 gen/build/model_run --fixed-threads --input "
      "x=x.npy --output-dir fixed --json");
  ASSERT_EQ(fixed.exit_code, 0) << fixed.text;
  EXPECT_EQ(fixed.text.find("\"threads\""), std::string::npos) << fixed.text;
  EXPECT_TRUE(same_bits(read_npy(path("fixed/out.npy")), read_npy(path("ref/out.npy"))));
}

// With every core held by other processes, a generated program's worker runs on one thread and
// says so; --fixed-threads keeps the two it was generated with. (The test binaries set
// CLEAVE_FIXED_THREADS for the commands they start, test_environment.cc; these go without it.)
TEST_F(CodegenCpp, GeneratedProgramTakesOnlyTheCoresOtherProcessesLeaveFree) {
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  if (cores > 8)
    GTEST_SKIP() << "fills every core with a busy process: wants at most 8, has " << cores;
  write_model(kTwoBranchModel, path("m.onnx"));
  CommandOutput generated =
      cleave("codegen m.onnx --threads 2 --lang cpp --layouts blocked -o gen");
  ASSERT_EQ(generated.exit_code, 0) << generated.text;
  CommandOutput build = build_generated();
  ASSERT_EQ(build.exit_code, 0) << build.text;
  BusyProcesses busy(cores + 1);
  CommandOutput adapted = shell("env -u CLEAVE_FIXED_THREADS gen/build/model_run --json");
  ASSERT_EQ(adapted.exit_code, 0) << adapted.text;
  EXPECT_NE(adapted.text.find("\"ran_threads_per_worker\": 1"), std::string::npos) << adapted.text;
  EXPECT_NE(adapted.text.find("\"threads_per_worker\": 2"), std::string::npos);
  EXPECT_NE(adapted.text.find("\"host_load\""), std::string::npos);
  CommandOutput text = shell("env -u CLEAVE_FIXED_THREADS gen/build/model_run");
  EXPECT_NE(text.text.find("ran with 1 per worker"), std::string::npos) << text.text;
  CommandOutput fixed =
      shell("env -u CLEAVE_FIXED_THREADS gen/build/model_run --fixed-threads --json");
  ASSERT_EQ(fixed.exit_code, 0) << fixed.text;
  EXPECT_EQ(fixed.text.find("ran_threads_per_worker"), std::string::npos) << fixed.text;
}

TEST_F(CodegenCpp, GeneratedStreamProgramBuildsAndMatchesCleaveStreamRunBitForBit) {
  write_model(kTwoBranchModel, path("m.onnx"));
  // A peeking slice (init), a round-robin split-join of two model filters, a separator.
  std::ofstream(path("prog.json")) << R"({"pipeline": {"name": "top", "streams": [
    {"filter": {"name": "win", "pop": 1, "peek": 3, "push": 2, "op": "slice", "args": [1]}},
    {"splitjoin": {"name": "rr", "split": {"roundrobin": [1, 1]}, "streams": [
      {"filter": {"name": "net", "pop": 1, "push": 1, "model": "m.onnx"}},
      {"pipeline": {"name": "p2", "streams": [
        {"filter": {"name": "net2", "pop": 1, "push": 1, "model": "m.onnx"}}]}}],
      "join": {"roundrobin": [1, 1]}}},
    {"filter": {"name": "sep", "pop": 2, "push": 2, "op": "separator", "args": [1, 0]}}]}})";
  {
    Tensor items = Tensor::allocate(DataType::kFloat, {5, 3, 16, 16});
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    for (int64_t i = 0; i < items.element_count(); ++i) items.data<float>()[i] = uniform(rng);
    write_npy(path("items.npy"), items);
  }
  CommandOutput generated = cleave("codegen m.onnx --stream prog.json --lang cpp -o gen");
  ASSERT_EQ(generated.exit_code, 0) << generated.text;
  const std::string source = read_text_file(path("gen/stream.cc"));
  EXPECT_NE(source.find("model_net->fire("), std::string::npos) << source;
  EXPECT_NE(source.find("stream_round_robin_split("), std::string::npos) << source;
  EXPECT_NE(source.find("void steady_state() {"), std::string::npos) << source;
  CommandOutput build = build_generated();
  ASSERT_EQ(build.exit_code, 0) << build.text;
  // 5 items: the init, whole iterations; 12 items: the input repeated, as --items does.
  for (const std::string items : {"", " --items 12"}) {
    fs::remove_all(path("out"));
    fs::remove_all(path("ref"));
    CommandOutput run = shell("gen/build/stream_run --input x=items.npy --output-dir out" + items);
    ASSERT_EQ(run.exit_code, 0) << run.text;
    CommandOutput reference =
        cleave("stream run prog.json --input x=items.npy --output-dir ref" + items);
    ASSERT_EQ(reference.exit_code, 0) << reference.text;
    const Tensor got = read_npy(path("out/output.npy"));
    EXPECT_EQ(got.dim(0), items.empty() ? 6 : 20);
    EXPECT_TRUE(same_bits(got, read_npy(path("ref/output.npy")))) << items;
  }
  // Items of another size are refused by file name.
  write_npy(path("bad.npy"), Tensor::allocate(DataType::kFloat, {2, 5}));
  CommandOutput bad = shell("gen/build/stream_run --input x=bad.npy");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.text.find("bad.npy"), std::string::npos) << bad.text;
}

TEST_F(CodegenCpp, ModelConversionWithMixedItemsFromItsStreamitTextMatchesCleaveStreamRun) {
  write_model(kMixedBranchModel, path("m.onnx"));
  {
    Tensor items = Tensor::allocate(DataType::kFloat, {4, 3, 16, 16});
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    for (int64_t i = 0; i < items.element_count(); ++i) items.data<float>()[i] = uniform(rng);
    write_npy(path("items.npy"), items);
  }
  ASSERT_EQ(cleave("codegen m.onnx --lang streamit -o st").exit_code, 0);
  CommandOutput generated = cleave("codegen m.onnx --stream st/stream.cc --lang cpp -o gen");
  ASSERT_EQ(generated.exit_code, 0) << generated.text;
  EXPECT_NE(generated.text.find("(1 of mixed items)"), std::string::npos) << generated.text;
  CommandOutput build = build_generated();
  ASSERT_EQ(build.exit_code, 0) << build.text;
  CommandOutput run = shell("gen/build/stream_run --input x=items.npy --output-dir out");
  ASSERT_EQ(run.exit_code, 0) << run.text;
  CommandOutput reference = cleave("stream run m.onnx --input x=items.npy --output-dir ref");
  ASSERT_EQ(reference.exit_code, 0) << reference.text;
  const Tensor got = read_npy(path("out/output.npy"));
  EXPECT_EQ(got.shape(), (std::vector<int64_t>{4, 12, 16, 16}));
  EXPECT_TRUE(same_bits(got, read_npy(path("ref/output.npy"))));
}

}  // namespace
}  // namespace cleave
