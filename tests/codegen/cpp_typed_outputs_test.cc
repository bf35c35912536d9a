// The generated C API's typed outputs: an int64 output read as int64 (ArgMax, NonZero), and
// output buffers too small for their outputs refused with an error, nothing written past them.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "codegen_fixture.h"

namespace cleave {
namespace {

// i: int64 of a static shape; h: float; n: int64 shaped at run time.
const char* kArgMaxModel = R"(graph main [ai.onnx=13] (%x: f32[3,5]) {
  @w: f32[5,5]
  %h = MatMul(%x, @w)
  %i = ArgMax[axis=1, keepdims=0](%h)
  %n = NonZero(%h)
  return %i, %h, %n
})";

// argv: x.raw, weights, mode. "read": checks the type and shape queries, runs with typed
// buffers of the exact sizes and writes i.raw and n.raw. "small": buffers one byte short.
const char* kTypedEmbedSource = R"(#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

static int save(const char* file, const void* data, size_t bytes) {
  FILE* f = fopen(file, "wb");
  if (!f || fwrite(data, 1, bytes, f) != bytes) return 1;
  return fclose(f);
}

int main(int argc, char** argv) {
  if (argc != 4) return 3;
  size_t n = model_input_elements(0);
  float* in = malloc(n * sizeof(float));
  FILE* f = fopen(argv[1], "rb");
  if (!f || fread(in, sizeof(float), n, f) != n) return 3;
  fclose(f);
  if (model_init(argv[2]) != 0) return 2;
  const float* inputs[MODEL_INPUT_COUNT] = {in};
  float h[15];
  long long idx[3], nz[64];
  if (strcmp(argv[3], "read") == 0) {
    long long dims[4] = {0, 0, 0, 0};
    if (model_output_type(0) != MODEL_INT64 || model_output_type(1) != MODEL_FLOAT ||
        model_output_type(2) != MODEL_INT64 || model_output_type(3) != -1) return 4;
    if (model_output_bytes(0) != 3 * 8 || model_output_bytes(1) != 15 * 4) return 5;
    if (model_output_shape(0, dims, 4) != 1 || dims[0] != 3) return 6;
    if (model_output_shape(1, dims, 1) != 2 || dims[0] != 3 || dims[1] != 0) return 7;
    if (model_output_shape(2, dims, 4) != -1 || model_output_bytes(2) != 0) return 8;
    void* outputs[MODEL_OUTPUT_COUNT] = {idx, h, nz};
    size_t bytes[MODEL_OUTPUT_COUNT] = {sizeof idx, sizeof h, sizeof nz};
    if (model_run_typed(inputs, outputs, bytes) != 0) {
      fprintf(stderr, "model_run_typed: %s\n", model_last_error());
      return 2;
    }
    if (model_output_shape(2, dims, 4) != 2 || dims[0] != 2) return 9;
    if (save("i.raw", idx, sizeof idx) || save("n.raw", nz, model_output_bytes(2))) return 3;
  } else {
    unsigned char guard[64];
    memset(guard, 0x5a, sizeof guard);
    void* outputs[MODEL_OUTPUT_COUNT] = {guard, NULL, NULL};
    size_t bytes[MODEL_OUTPUT_COUNT] = {3 * 8 - 1, 0, 0};
    if (model_run_typed(inputs, outputs, bytes) != -1) return 4;
    printf("%s\n", model_last_error());
    for (size_t b = 0; b < sizeof guard; ++b)
      if (guard[b] != 0x5a) return 5;
    if (model_run_typed(inputs, outputs, NULL) != -1) return 6;
    printf("%s\n", model_last_error());
    void* late[MODEL_OUTPUT_COUNT] = {NULL, NULL, nz};
    size_t late_bytes[MODEL_OUTPUT_COUNT] = {0, 0, 8};
    if (model_run_typed(inputs, late, late_bytes) != -1) return 7;
    printf("%s\n", model_last_error());
  }
  model_shutdown();
  free(in);
  return 0;
}
)";

class CppTypedOutputs : public CodegenFixture {
 protected:
  void SetUp() override {
    CodegenFixture::SetUp();
    write_model(kArgMaxModel, path("m.onnx"));
    write_npy(path("x.npy"), random_inputs(parse_graph(kArgMaxModel), 0).at("x"));
    CommandOutput generated = cleave("codegen m.onnx --lang cpp --layouts blocked -o gen");
    ASSERT_EQ(generated.exit_code, 0) << generated.text;
    CommandOutput build = build_embedding(kTypedEmbedSource);
    ASSERT_EQ(build.exit_code, 0) << build.text;
  }
};

TEST_F(CppTypedOutputs, Int64OutputsReadAsInt64MatchCleaveRun) {
  CommandOutput embedded = shell("embed_build/embed x.raw gen/weights.bin read");
  ASSERT_EQ(embedded.exit_code, 0) << embedded.text;
  CommandOutput reference =
      cleave("run m.onnx --plan gen/plan.json --layouts blocked --input x=x.npy --output-dir ref");
  ASSERT_EQ(reference.exit_code, 0) << reference.text;
  for (const char* name : {"i", "n"}) {
    const Tensor expected = read_npy(path(std::string("ref/") + name + ".npy"));
    ASSERT_EQ(expected.dtype(), DataType::kInt64) << name;
    const std::string got = read_text_file(path(std::string(name) + ".raw"));
    ASSERT_EQ(got.size(), expected.byte_size()) << name;
    EXPECT_EQ(std::memcmp(got.data(), expected.raw(), got.size()), 0) << name;
  }
}

TEST_F(CppTypedOutputs, BuffersTooSmallAreRefusedNamingTheOutput) {
  CommandOutput embedded = shell("embed_build/embed x.raw gen/weights.bin small");
  ASSERT_EQ(embedded.exit_code, 0) << embedded.text;
  EXPECT_NE(embedded.text.find("output 0 'i' needs 24 bytes; its buffer has 23"), std::string::npos)
      << embedded.text;
  EXPECT_NE(embedded.text.find("output_bytes is NULL"), std::string::npos) << embedded.text;
  EXPECT_NE(embedded.text.find("output 2 'n' has 240 bytes this run; its buffer has 8"),
            std::string::npos)
      << embedded.text;
}

}  // namespace
}  // namespace cleave
