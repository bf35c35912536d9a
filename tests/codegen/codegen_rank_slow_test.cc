// `cleave codegen --ranks`: the generated rank program builds, runs under mpirun and computes
// the same bits as `mpirun ... cleave run --plan`.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "../busy_processes.h"
#include "../cli/command_fixture.h"
#include "codegen_fixture.h"

namespace cleave {
namespace {

namespace fs = std::filesystem;

// A tiny C program over the generated rank C API: every rank calls it, rank 0 with a raw input
// file and an output file.
const char* kRankEmbedSource = R"(#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "model.h"

int main(int argc, char** argv) {
  if (argc != 4) return 3;
  if (model_init(argv[3]) != 0) {
    fprintf(stderr, "model_init: %s\n", model_last_error());
    return 2;
  }
  void* in = NULL;
  void* out = NULL;
  if (model_rank() == 0) {
    in = malloc(model_input_bytes(0));
    out = malloc(model_output_bytes(0));
    FILE* f = fopen(argv[1], "rb");
    if (!f || fread(in, 1, model_input_bytes(0), f) != model_input_bytes(0)) return 3;
    fclose(f);
  }
  const void* inputs[MODEL_INPUT_COUNT] = {in};
  void* outputs[MODEL_OUTPUT_COUNT] = {out};
  if (model_run(inputs, outputs) != 0) {
    fprintf(stderr, "model_run: %s\n", model_last_error());
    return 2;
  }
  if (model_rank() == 0) {
    FILE* f = fopen(argv[2], "wb");
    fwrite(out, 1, model_output_bytes(0), f);
    fclose(f);
  }
  model_shutdown();
  free(in);
  free(out);
  return 0;
}
)";

class CodegenRanks : public CodegenFixture {
 protected:
  // `command` on `ranks` ranks over loopback TCP, one OpenMP thread each.
  CommandOutput mpirun(int ranks, const std::string& command) const {
    return shell(loopback_mpirun(ranks) + command);
  }
};

TEST_F(CodegenRanks, TwoRankProgramBuildsAndMatchesMpirunCleaveRunBitForBit) {
  write_model(kTwoBranchModel, path("m.onnx"));
  save_default_input("m.onnx", path("x.npy"));
  ASSERT_EQ(cleave("plan m.onnx --strategy lc --workers 2 --costs static -o plan.json").exit_code,
            0);
  CommandOutput generated =
      cleave("codegen m.onnx --plan plan.json --lang cpp --ranks --layouts blocked -o gen");
  ASSERT_EQ(generated.exit_code, 0) << generated.text;
  CommandOutput build = build_generated();
  ASSERT_EQ(build.exit_code, 0) << build.text;

  CommandOutput run = mpirun(2, "gen/build/model_run --input x=x.npy --output-dir out --repeat 3");
  ASSERT_EQ(run.exit_code, 0) << run.text;
  EXPECT_NE(run.text.find("latency    min"), std::string::npos) << run.text;
  EXPECT_NE(run.text.find("2 rank(s) x 1 thread(s)"), std::string::npos) << run.text;
  CommandOutput reference = mpirun(2, std::string(CLEAVE_BINARY) +
                                          " run m.onnx --plan gen/plan.json --layouts blocked "
                                          "--input x=x.npy --output-dir ref");
  ASSERT_EQ(reference.exit_code, 0) << reference.text;
  EXPECT_TRUE(same_bits(read_npy(path("out/out.npy")), read_npy(path("ref/out.npy"))));
  // Inputs not given are cleave run's seeded ones, and one process computes the same bits.
  CommandOutput seeded = mpirun(2, "gen/build/model_run --output-dir seeded --json");
  ASSERT_EQ(seeded.exit_code, 0) << seeded.text;
  EXPECT_NE(seeded.text.find("\"ranks\": 2"), std::string::npos) << seeded.text;
  CommandOutput single = cleave("run m.onnx --layouts blocked --output-dir single");
  ASSERT_EQ(single.exit_code, 0) << single.text;
  EXPECT_TRUE(same_bits(read_npy(path("seeded/out.npy")), read_npy(path("single/out.npy"))));

  // The C API embedded in a small C program, run on 2 ranks: the same bits as model_run.
  CommandOutput embed_build = build_embedding(kRankEmbedSource);
  ASSERT_EQ(embed_build.exit_code, 0) << embed_build.text;
  CommandOutput embedded = mpirun(2, "embed_build/embed x.raw out.raw gen/weights.bin");
  ASSERT_EQ(embedded.exit_code, 0) << embedded.text;
  const Tensor expected = read_npy(path("ref/out.npy"));
  const std::string got = read_text_file(path("out.raw"));
  ASSERT_EQ(got.size(), expected.byte_size());
  EXPECT_EQ(std::memcmp(got.data(), expected.raw(), got.size()), 0);
  // A missing weights file comes back through model_last_error, naming the file.
  CommandOutput missing = mpirun(2, "embed_build/embed x.raw out.raw nowhere.bin");
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.text.find("nowhere.bin"), std::string::npos) << missing.text;

  // Started on another number of ranks, every rank refuses before any work.
  CommandOutput three = mpirun(3, "gen/build/model_run");
  EXPECT_NE(three.exit_code, 0);
  EXPECT_NE(three.text.find("generated for 2 ranks, 3 were started"), std::string::npos)
      << three.text;
  // A rank timeout that is no number of seconds is refused by name.
  CommandOutput timeout = mpirun(2, "gen/build/model_run --rank-timeout soon");
  EXPECT_NE(timeout.exit_code, 0);
  EXPECT_NE(timeout.text.find("--rank-timeout 'soon'"), std::string::npos) << timeout.text;
  // A weights file of another size is refused by name on every rank.
  { std::ofstream(path("short.bin")) << "short"; }
  CommandOutput bad = mpirun(2, "gen/build/model_run --weights short.bin");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.text.find("short.bin"), std::string::npos) << bad.text;
}

// A stream of 3 samples through pipelined stages and through data-parallel ranks: every
// sample's output is bit-identical to `mpirun ... cleave run --plan --samples 3` with that
// sample's seed (cleave run writes its sample 0, whose inputs are seed S + 0).
TEST_F(CodegenRanks, StreamOfThreeSamplesMatchesMpirunCleaveRunForEverySample) {
  write_model(kTwoBranchModel, path("m.onnx"));
  std::ofstream(path("two.json")) << R"({"devices": [{"name": "rank0"}, {"name": "rank1"}],
    "bandwidth": [[0, 1e9], [1e9, 0]], "latency": [[0, 1e-4], [1e-4, 0]]})";
  for (const std::string strategy : {"pipeline", "data-parallel"}) {
    fs::remove_all(path("gen"));
    ASSERT_EQ(cleave("plan m.onnx --strategy " + strategy +
                     " --machine two.json --samples 3 --costs static -o " + strategy + ".json")
                  .exit_code,
              0);
    CommandOutput generated =
        cleave("codegen m.onnx --plan " + strategy +
               ".json --samples 3 --lang cpp --ranks --layouts blocked -o gen");
    ASSERT_EQ(generated.exit_code, 0) << generated.text;
    // Both ranks compute: stages on each, or each its own samples.
    EXPECT_NE(read_text_file(path("gen/rank_1.cc")).find("p.step("), std::string::npos);
    CommandOutput build = build_generated();
    ASSERT_EQ(build.exit_code, 0) << build.text;
    const std::string out = "out-" + strategy;
    CommandOutput run = mpirun(2, "gen/build/model_run --output-dir " + out + " --repeat 2");
    ASSERT_EQ(run.exit_code, 0) << run.text;
    EXPECT_NE(run.text.find("stream     3 sample(s) a run"), std::string::npos) << run.text;
    EXPECT_NE(run.text.find("per-sample latency median"), std::string::npos) << run.text;
    for (int sample = 0; sample < 3; ++sample) {
      const std::string ref = "ref-" + strategy + std::to_string(sample);
      CommandOutput reference = mpirun(
          2, std::string(CLEAVE_BINARY) + " run m.onnx --plan gen/plan.json --layouts " +
                 "blocked --samples 3 --seed " + std::to_string(sample) + " --output-dir " + ref);
      ASSERT_EQ(reference.exit_code, 0) << reference.text;
      const Tensor got = read_npy(path(out + "/sample_" + std::to_string(sample) + "/out.npy"));
      EXPECT_TRUE(same_bits(got, read_npy(path(ref + "/out.npy")))) << strategy << " " << sample;
    }
    // Sample 0 also where `cleave run` writes it, and the samples' inputs differ.
    EXPECT_TRUE(
        same_bits(read_npy(path(out + "/out.npy")), read_npy(path(out + "/sample_0/out.npy"))));
    EXPECT_FALSE(same_bits(read_npy(path(out + "/sample_0/out.npy")),
                           read_npy(path(out + "/sample_1/out.npy"))));
  }
}

// The same plans as worker threads in one process: every sample's output is bit-identical to
// `cleave run --plan --samples 3` with that sample's seed, and the report gives each sample's
// latency.
TEST_F(CodegenRanks, StreamOfThreeSamplesOnWorkerThreadsMatchesCleaveRunForEverySample) {
  write_model(kTwoBranchModel, path("m.onnx"));
  std::ofstream(path("two.json")) << R"({"devices": [{"name": "rank0"}, {"name": "rank1"}],
    "bandwidth": [[0, 1e9], [1e9, 0]], "latency": [[0, 1e-4], [1e-4, 0]]})";
  for (const std::string strategy : {"pipeline", "data-parallel"}) {
    fs::remove_all(path("gen"));
    ASSERT_EQ(cleave("plan m.onnx --strategy " + strategy +
                     " --machine two.json --samples 3 --costs static -o " + strategy + ".json")
                  .exit_code,
              0);
    CommandOutput generated = cleave("codegen m.onnx --plan " + strategy +
                                     ".json --samples 3 --lang cpp --layouts blocked -o gen");
    ASSERT_EQ(generated.exit_code, 0) << generated.text;
    EXPECT_NE(read_text_file(path("gen/worker_1.cc")).find("p.step("), std::string::npos);
    CommandOutput build = build_generated();
    ASSERT_EQ(build.exit_code, 0) << build.text;
    const std::string out = "out-" + strategy;
    CommandOutput run =
        shell("timeout 120 gen/build/model_run --output-dir " + out + " --repeat 2 --json");
    ASSERT_EQ(run.exit_code, 0) << run.text;
    const nlohmann::json report = nlohmann::json::parse(run.text);
    EXPECT_EQ(report["samples"], 3);
    EXPECT_EQ(report["sample_latency_ms"]["per_sample"].size(), 3u) << run.text;
    for (int sample = 0; sample < 3; ++sample) {
      const std::string ref = "ref-" + strategy + std::to_string(sample);
      CommandOutput reference =
          cleave("run m.onnx --plan gen/plan.json --layouts blocked --samples 3 --seed " +
                 std::to_string(sample) + " --output-dir " + ref);
      ASSERT_EQ(reference.exit_code, 0) << reference.text;
      const Tensor got = read_npy(path(out + "/sample_" + std::to_string(sample) + "/out.npy"));
      EXPECT_TRUE(same_bits(got, read_npy(path(ref + "/out.npy")))) << strategy << " " << sample;
    }
    EXPECT_FALSE(same_bits(read_npy(path(out + "/sample_0/out.npy")),
                           read_npy(path(out + "/sample_2/out.npy"))));
    // With every core held, the workers fold onto one core (one permit between them, the
    // pipeline's hand-offs passing it on) and every sample keeps its bits.
    const long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cores > 8) continue;
    const std::string folded_out = "folded-" + strategy;
    CommandOutput folded;
    {
      BusyProcesses busy(cores + 1);
      folded = shell("env -u CLEAVE_FIXED_THREADS timeout 120 gen/build/model_run --output-dir " +
                     folded_out + " --repeat 2 --json");
    }
    ASSERT_EQ(folded.exit_code, 0) << folded.text;
    EXPECT_EQ(nlohmann::json::parse(folded.text)["threads"], 1) << folded.text;
    for (int sample = 0; sample < 3; ++sample) {
      const std::string file = "/sample_" + std::to_string(sample) + "/out.npy";
      EXPECT_TRUE(same_bits(read_npy(path(folded_out + file)), read_npy(path(out + file))))
          << strategy << " " << sample;
    }
  }
}

}  // namespace
}  // namespace cleave
