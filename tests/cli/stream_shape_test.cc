// `cleave stream --shape`: a model exported with a symbolic batch dim converts, schedules and runs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "command_fixture.h"
#include "ir/text.h"
#include "onnx/onnx_export.h"
#include "runtime/npy.h"

namespace cleave {
namespace {

using ::testing::HasSubstr;

// x * x + x on a batch of symbolic size N.
constexpr const char* kSymbolicBatch = R"(graph g (%x: f32[N,2]) {
  %s: f32[N,2] = "square" Mul(%x, %x)
  %y: f32[N,2] = "plus" Add(%s, %x)
  return %y
})";

class StreamShape : public CommandFixture {
 protected:
  void SetUp() override {
    CommandFixture::SetUp();
    export_onnx(parse_graph(kSymbolicBatch), path("m.onnx"));
  }
};

TEST_F(StreamShape, ConvertsAModelWithASymbolicBatchDim) {
  const CommandResult r = cleave("stream " + path("m.onnx") + " --shape x=1,2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("filter v1_Mul(pop 2, peek 2, push 1)"));
}

TEST_F(StreamShape, RunComputesEachItemAtTheFixedShape) {
  Tensor items = Tensor::allocate(DataType::kFloat, {3, 1, 2});
  for (int i = 0; i < 6; ++i) items.data<float>()[i] = static_cast<float>(i);
  write_npy(path("x.npy"), items);
  const CommandResult r =
      cleave("stream run " + path("m.onnx") + " --shape x=1,2 --input x=" + path("x.npy") +
             " --output-dir " + path("out"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Tensor out = read_npy(path("out/output.npy"));
  ASSERT_EQ(out.values<float>().size(), 6u);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(out.values<float>()[i], static_cast<float>(i * i + i)) << i;
}

TEST_F(StreamShape, ScheduleOfAModelTakesTheShape) {
  const CommandResult r = cleave("stream schedule " + path("m.onnx") + " --shape x=1,2 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\"repetitions\""));
}

TEST_F(StreamShape, WithoutShapeTheSymbolicInputIsNamedWithTheOption) {
  const CommandResult r = cleave("stream " + path("m.onnx"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("input 'x' has symbolic or unknown dims (f32[N,2]); fix them "
                               "with --shape x="));
}

TEST_F(StreamShape, RunWithoutShapeIsRefusedBeforeReadingInputs) {
  const CommandResult r =
      cleave("stream run " + path("m.onnx") + " --input x=" + path("missing.npy"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("input 'x' has symbolic or unknown dims"));
}

TEST_F(StreamShape, ShapeNamingNoInputIsRefused) {
  const CommandResult r = cleave("stream " + path("m.onnx") + " --shape z=1,2");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("--shape names 'z', which is not an input; inputs are: x"));
}

TEST_F(StreamShape, ShapeContradictingAFixedDimIsRefused) {
  const CommandResult r = cleave("stream run " + path("m.onnx") + " --shape x=1,3");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("input 'x' dim 1 is fixed to 2 by the model, --shape gives 3"));
}

TEST_F(StreamShape, MalformedShapeIsRefused) {
  const CommandResult r = cleave("stream " + path("m.onnx") + " --shape x=1,two");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("--shape 'x=1,two'"));
}

TEST_F(StreamShape, ShapeWithAProgramFileIsRefused) {
  std::ofstream(path("p.json")) << R"({"filter": {"name": "id", "pop": 1, "push": 1,
    "op": "identity"}})";
  const CommandResult r = cleave("stream " + path("p.json") + " --shape x=1,2");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("--shape apply to converting an ONNX model"));
}

}  // namespace
}  // namespace cleave
