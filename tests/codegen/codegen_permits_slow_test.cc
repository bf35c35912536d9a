// Generated programs of more than two workers folded onto fewer cores than workers but more than
// one (WorkerPermits): they finish and compute `cleave run --plan`'s bits.
#include <gtest/gtest.h>
#include <sched.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "codegen_fixture.h"

namespace cleave {
namespace {

/// Four branches from one input joined by one Concat: a plan of four workers has a branch for
/// each, and the Concat reads values from the others. 16 channels a branch: each a whole block
/// of the blocked layout, so that every branch writes straight into the Concat's output.
const char* kFourBranchModel = R"(graph main [ai.onnx=17] (%x: f32[1,3,16,16]) {
  @w1: f32[16,3,3,3]
  @w2: f32[16,3,1,1]
  @w3: f32[16,3,3,3]
  @w4: f32[16,3,1,1]
  @wc: f32[8,64,3,3]
  @fw: f32[10,8]
  @fb: f32[10]
  %a = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%x, @w1)
  %ar = Relu(%a)
  %b = Conv[kernel_shape=[1,1]](%x, @w2)
  %bs = Sigmoid(%b)
  %c = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%x, @w3)
  %ct = Tanh(%c)
  %d = Conv[kernel_shape=[1,1]](%x, @w4)
  %dr = Relu(%d)
  %j = Concat[axis=1](%ar, %bs, %ct, %dr)
  %e = Conv[kernel_shape=[3,3], pads=[1,1,1,1], strides=[2,2]](%j, @wc)
  %g = GlobalAveragePool(%e)
  %f = Flatten(%g)
  %y = Gemm[transB=1](%f, @fw, @fb)
  %out = Softmax[axis=1](%y)
  return %out
})";

/// A machine of four devices on this host.
const char* kFourDevices = R"({"devices": [{"name": "w0"}, {"name": "w1"}, {"name": "w2"},
  {"name": "w3"}], "bandwidth": [[0, 1e9, 1e9, 1e9], [1e9, 0, 1e9, 1e9], [1e9, 1e9, 0, 1e9],
  [1e9, 1e9, 1e9, 0]], "latency": [[0, 1e-4, 1e-4, 1e-4], [1e-4, 0, 1e-4, 1e-4],
  [1e-4, 1e-4, 0, 1e-4], [1e-4, 1e-4, 1e-4, 0]]})";

// The generated program folded as model_run folds it when the cores other processes leave free
// are more than one but fewer than the workers: set_threads({permits, 1}), deterministic
// whatever the host's load. Every sample reads the same raw input; three runs, the last
// one's outputs written one sample after another.
const char* kPermitsSource = R"(#include <cstdio>
#include <cstdlib>
#include <exception>
#include <vector>

#include "program.h"
#include "runtime/wait_policy.h"

int main(int argc, char** argv) {
  if (argc != 5) return 3;
#ifdef STREAM
  const cleave::StaticProgramTables& tables = *generated::kStream.program;
  const int samples = generated::kStream.samples;
#else
  const cleave::StaticProgramTables& tables = generated::kTables;
  const int samples = 1;
#endif
  const cleave::StaticValue& in = tables.values[tables.graph_inputs[0]];
  const cleave::StaticValue& out = tables.values[tables.graph_outputs[0]];
  std::vector<char> input(in.bytes);
  std::vector<std::vector<char>> output(samples, std::vector<char>(out.bytes));
  FILE* f = std::fopen(argv[1], "rb");
  if (!f || std::fread(input.data(), 1, input.size(), f) != input.size()) return 3;
  std::fclose(f);
  std::vector<const void*> inputs(samples, input.data());
  std::vector<void*> outputs;
  for (auto& o : output) outputs.push_back(o.data());
  try {
#ifdef STREAM
    cleave::SampleStreamProgram program(generated::kStream, argv[3]);
#else
    cleave::StaticProgram program(generated::kTables, argv[3]);
#endif
    program.set_threads({std::atoi(argv[4]), 1});
    for (int run = 0; run < 3; ++run) program.run(inputs.data(), outputs.data());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
  f = std::fopen(argv[2], "wb");
  for (auto& o : output) std::fwrite(o.data(), 1, o.size(), f);
  std::fclose(f);
  return 0;
}
)";

const char* kPermitsCMake = R"(cmake_minimum_required(VERSION 3.22)
project(permits LANGUAGES CXX)
add_subdirectory(gen gen_build)
add_executable(permits permits.cc)
target_link_libraries(permits PRIVATE model)
)";

class CodegenCppPermits : public CodegenFixture {
 protected:
  // Plans kFourBranchModel on the four devices with `plan_options`, generates gen/ (blocked
  // layouts), builds it and the permits program (-DSTREAM for a stream of samples) and writes
  // `cleave run --plan`'s output for x.npy as ref/out.npy.
  void generate(const std::string& plan_options, bool stream) {
    write_model(kFourBranchModel, path("m.onnx"));
    write_npy(path("x.npy"), random_inputs(parse_graph(kFourBranchModel), 0).at("x"));
    std::ofstream(path("four.json")) << kFourDevices;
    CommandOutput planned =
        cleave("plan m.onnx --machine four.json --costs static " + plan_options + " -o plan.json");
    ASSERT_EQ(planned.exit_code, 0) << planned.text;
    const std::string samples = stream ? " --samples 3" : "";
    CommandOutput generated =
        cleave("codegen m.onnx --plan plan.json --lang cpp --layouts blocked -o gen" + samples);
    ASSERT_EQ(generated.exit_code, 0) << generated.text;
    // At least three workers compute (the fold then leaves some waiting for a permit), and
    // the Concat's inputs from other workers are written straight into its output.
    int busy_workers = 0;
    std::string sources;
    for (int w = 0; w < 4; ++w) {
      const std::string source = read_text_file(path("gen/worker_" + std::to_string(w) + ".cc"));
      busy_workers += source.find("p.step(") != std::string::npos ? 1 : 0;
      sources += source;
    }
    ASSERT_GE(busy_workers, 3) << sources;
    EXPECT_NE(sources.find("in place in j"), std::string::npos) << sources;
    std::ofstream(path("permits.cc")) << kPermitsSource;
    std::ofstream(path("CMakeLists.txt"))
        << kPermitsCMake << (stream ? "target_compile_definitions(permits PRIVATE STREAM)\n" : "");
    CommandOutput build = shell(
        "cmake -S . -B permits_build -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build "
        "permits_build");
    ASSERT_EQ(build.exit_code, 0) << build.text;
    CommandOutput reference = cleave("run m.onnx --plan gen/plan.json --layouts blocked" + samples +
                                     " --input x=x.npy --output-dir ref");
    ASSERT_EQ(reference.exit_code, 0) << reference.text;
    const Tensor input = read_npy(path("x.npy"));
    std::ofstream(path("x.raw"), std::ios::binary)
        .write(static_cast<const char*>(input.raw()),
               static_cast<std::streamsize>(input.byte_size()));
  }

  // Runs the permits program on `permits` permits (a timeout: it must finish) and expects
  // every one of `samples` outputs to be ref/out.npy's bits.
  void expect_reference_bits(int permits, int samples) {
    const std::string out = "out_" + std::to_string(permits) + ".raw";
    CommandOutput run = shell("timeout 120 permits_build/permits x.raw " + out +
                              " gen/weights.bin " + std::to_string(permits));
    ASSERT_EQ(run.exit_code, 0) << run.text;
    const Tensor expected = read_npy(path("ref/out.npy"));
    const std::string got = read_text_file(path(out));
    ASSERT_EQ(got.size(), expected.byte_size() * static_cast<std::size_t>(samples));
    for (int sample = 0; sample < samples; ++sample) {
      EXPECT_EQ(std::memcmp(got.data() + sample * expected.byte_size(), expected.raw(),
                            expected.byte_size()),
                0)
          << permits << " permits, sample " << sample;
    }
  }
};

TEST_F(CodegenCppPermits, FourWorkerProgramOnTwoAndThreePermitsMatchesCleaveRunBitForBit) {
  generate("--strategy heft", false);
  if (HasFatalFailure()) return;
  expect_reference_bits(2, 1);
  expect_reference_bits(3, 1);
  // model_run itself on two CPUs: it folds as the free cores say (two permits on an idle host,
  // one core's order under load) and keeps the bits either way.
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  ASSERT_EQ(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
  std::string cpus;
  for (int cpu = 0, taken = 0; cpu < CPU_SETSIZE && taken < 2; ++cpu) {
    if (!CPU_ISSET(cpu, &allowed)) continue;
    cpus += (taken++ ? "," : "") + std::to_string(cpu);
  }
  CommandOutput build = build_generated();
  ASSERT_EQ(build.exit_code, 0) << build.text;
  CommandOutput run = shell("env -u CLEAVE_FIXED_THREADS timeout 120 taskset -c " + cpus +
                            " gen/build/model_run --input x=x.npy --output-dir main --repeat 3 "
                            "--json");
  ASSERT_EQ(run.exit_code, 0) << run.text;
  const nlohmann::json report = nlohmann::json::parse(run.text);
  EXPECT_LE(report["threads"].get<int>(), 2) << run.text;
  EXPECT_TRUE(same_bits(read_npy(path("main/out.npy")), read_npy(path("ref/out.npy"))));
}

TEST_F(CodegenCppPermits, FourStagePipelinedStreamOnTwoPermitsMatchesCleaveRunBitForBit) {
  generate("--strategy pipeline --samples 3", true);
  if (HasFatalFailure()) return;
  expect_reference_bits(2, 3);
}

}  // namespace
}  // namespace cleave
