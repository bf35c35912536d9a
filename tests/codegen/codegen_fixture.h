// Shared fixture of the codegen command tests: a small two-branch model and helpers.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "ir/text.h"
#include "onnx/onnx_export.h"
#include "runtime/npy.h"
#include "runtime/random_inputs.h"
#include "test_paths.h"

namespace cleave {

/// Two branches from one input (so an lc plan has two workers and values cross between
/// them), joined by a Concat, then a classifier.
inline const char* kTwoBranchModel = R"(graph main [ai.onnx=17] (%x: f32[1,3,16,16]) {
  @wa: f32[8,3,3,3]
  @ba: f32[8]
  @wb: f32[8,3,1,1]
  @wc: f32[8,16,3,3]
  @fw: f32[10,8]
  @fb: f32[10]
  %a = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%x, @wa, @ba)
  %ar = Relu(%a)
  %b = Conv[kernel_shape=[1,1]](%x, @wb)
  %bs = Sigmoid(%b)
  %c = Concat[axis=1](%ar, %bs)
  %d = Conv[kernel_shape=[3,3], pads=[1,1,1,1], strides=[2,2]](%c, @wc)
  %p = MaxPool[kernel_shape=[2,2], strides=[2,2]](%d)
  %g = GlobalAveragePool(%p)
  %f = Flatten(%g)
  %y = Gemm[transB=1](%f, @fw, @fb)
  %out = Softmax[axis=1](%y)
  return %out
})";

/// Two branches of different widths joined by a Concat: the stream conversion's joiner channel
/// carries f32[8,16,16] and f32[4,16,16] items in turn (mixed item types).
inline const char* kMixedBranchModel = R"(graph main [ai.onnx=17] (%x: f32[1,3,16,16]) {
  @wa: f32[8,3,3,3]
  @wb: f32[4,3,1,1]
  %a = Conv[kernel_shape=[3,3], pads=[1,1,1,1]](%x, @wa)
  %b = Conv[kernel_shape=[1,1]](%x, @wb)
  %bs = Sigmoid(%b)
  %c = Concat[axis=1](%a, %bs)
  %out = Relu(%c)
  return %out
})";

/// Same type, shape and bytes.
// A CMake project that builds embed.c against the generated folder gen/ (its libmodel.a and
// model.h, with cleave's library and dependencies through gen's CMakeLists).
inline const char* kEmbedCMake = R"(cmake_minimum_required(VERSION 3.22)
project(embed LANGUAGES C CXX)
add_subdirectory(gen gen_build)
add_executable(embed embed.c)
target_link_libraries(embed PRIVATE model)
set_target_properties(embed PROPERTIES LINKER_LANGUAGE CXX)
)";

inline bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.raw(), b.raw(), a.byte_size()) == 0;
}

struct CommandOutput {
  int exit_code = -1;
  std::string text;  ///< stdout and stderr.
};

inline std::string read_text_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// Writes `text` as an ONNX model with seeded random weights in [-0.5, 0.5).
inline void write_model(const std::string& text, const std::string& path, unsigned seed = 7) {
  Graph graph = parse_graph(text);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-0.5f, 0.5f);
  for (ValueId id : graph.initializers()) {
    TensorData& data = *graph.value(id).initializer;
    if (data.has_data()) continue;
    std::vector<float> values(static_cast<std::size_t>(data.element_count()));
    for (float& v : values) v = uniform(rng);
    data = TensorData::from(DataType::kFloat, data.dims, values);
  }
  export_onnx(graph, path);
}

class CodegenFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = std::filesystem::temp_directory_path() /
              ("cleave_codegen_test_" + std::to_string(::getpid()) + "_" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(folder_);
    std::filesystem::create_directories(folder_);
    setenv("CLEAVE_CACHE_DIR", path("cache").c_str(), 1);
  }
  void TearDown() override {
    unsetenv("CLEAVE_CACHE_DIR");
    std::filesystem::remove_all(folder_);
  }
  std::string path(const std::string& name) const { return (folder_ / name).string(); }

  /// Runs a shell command line in the test's folder, stdout and stderr captured.
  CommandOutput shell(const std::string& command) const {
    const std::string line =
        "cd " + folder_.string() + " && " + command + " >" + path("log") + " 2>&1";
    const int status = std::system(line.c_str());
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, read_text_file(path("log"))};
  }
  CommandOutput cleave(const std::string& arguments) const {
    return shell(std::string(CLEAVE_BINARY) + " " + arguments);
  }
  /// Builds the generated folder gen/ (its CMake project) into gen/build.
  CommandOutput build_generated() const {
    return shell(
        "cmake -S gen -B gen/build -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build gen/build");
  }
  /// Writes embed.c (`source`, a C program over gen/'s C API) with kEmbedCMake beside it and
  /// x.npy's bytes as x.raw, and builds it into embed_build/embed.
  CommandOutput build_embedding(const char* source) const {
    std::ofstream(path("embed.c")) << source;
    std::ofstream(path("CMakeLists.txt")) << kEmbedCMake;
    const Tensor input = read_npy(path("x.npy"));
    std::ofstream(path("x.raw"), std::ios::binary)
        .write(static_cast<const char*>(input.raw()),
               static_cast<std::streamsize>(input.byte_size()));
    return shell(
        "cmake -S . -B embed_build -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build "
        "embed_build");
  }
  /// The seeded input `cleave run` uses, saved for the other side of a comparison.
  void save_default_input(const std::string& model, const std::string& npy) const {
    Graph graph = parse_graph(kTwoBranchModel);
    (void)model;
    write_npy(npy, random_inputs(graph, 0).at("x"));
  }

  std::filesystem::path folder_;
};

// A graph in text form through `codegen --lang pytorch` and the generated module, against
// `cleave run` of the same model.
class PytorchRunFixture : public CodegenFixture {
 protected:
  // Writes `text` as m.onnx (x.npy cleave run's seeded input), generates py/ and returns the
  // largest difference over `outputs` between cleave run and the generated module's forward;
  // INFINITY when a step fails or a shape differs. The generated model.py is kept in model_.
  double largest_difference(const std::string& text, const std::vector<std::string>& outputs) {
    write_model(text, path("m.onnx"));
    write_npy(path("x.npy"), random_inputs(parse_graph(text), 0).at("x"));
    CommandOutput generated = cleave("codegen m.onnx --lang pytorch -o py");
    EXPECT_EQ(generated.exit_code, 0) << generated.text;
    if (generated.exit_code != 0) return INFINITY;
    model_ = read_text_file(path("py/model.py"));
    CommandOutput reference = cleave("run m.onnx --input x=x.npy --output-dir ref");
    EXPECT_EQ(reference.exit_code, 0) << reference.text;
    CommandOutput run =
        shell("/usr/bin/python3 py/run.py --input x=x.npy --output-dir out --sequential");
    EXPECT_EQ(run.exit_code, 0) << run.text << model_;
    if (reference.exit_code != 0 || run.exit_code != 0) return INFINITY;
    double worst = 0;
    for (const std::string& name : outputs) {
      const Tensor expected = read_npy(path("ref/" + name + ".npy"));
      const Tensor actual = read_npy(path("out/" + name + ".npy"));
      EXPECT_EQ(actual.shape(), expected.shape()) << name;
      if (actual.shape() != expected.shape()) return INFINITY;
      const auto e = expected.to_double_vector(), a = actual.to_double_vector();
      for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - e[i]));
    }
    return worst;
  }
  std::string model_;
};

}  // namespace cleave
