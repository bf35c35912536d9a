// `cleave codegen --lang cpp`: the generated program builds with CMake and computes the same bits.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "codegen_fixture.h"

namespace cleave {
namespace {

namespace fs = std::filesystem;

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.raw(), b.raw(), a.byte_size()) == 0;
}

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

  CommandOutput build = shell(
      "cmake -S gen -B gen/build -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build gen/build");
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

  // A weights file of another size is refused by name, not read past its end.
  { std::ofstream(path("short.bin")) << "short"; }
  CommandOutput bad = shell("gen/build/model_run --weights short.bin");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.text.find("short.bin"), std::string::npos) << bad.text;
}

}  // namespace
}  // namespace cleave
