// `cleave codegen --ranks`: the generated rank program builds, runs under mpirun and computes
// the same bits as `mpirun ... cleave run --plan`.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "codegen_fixture.h"

namespace cleave {
namespace {

namespace fs = std::filesystem;

class CodegenRanks : public CodegenFixture {
 protected:
  // `command` on `ranks` ranks over loopback TCP, one OpenMP thread each.
  CommandOutput mpirun(int ranks, const std::string& command) const {
    return shell("timeout 120 mpirun --allow-run-as-root --oversubscribe -np " +
                 std::to_string(ranks) +
                 " --mca btl tcp,self --mca btl_tcp_if_include lo -x OMP_NUM_THREADS=1 " + command);
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
  CommandOutput build = shell(
      "cmake -S gen -B gen/build -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build gen/build");
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

}  // namespace
}  // namespace cleave
