// `cleave run` on the engine's session: symbolic dims fixed by the shapes of the --input files.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "command_fixture.h"
#include "ir/text.h"
#include "onnx/onnx_export.h"
#include "runtime/npy.h"

namespace cleave {
namespace {

using ::testing::HasSubstr;

class RunSessionCommand : public CommandFixture {
 protected:
  void SetUp() override {
    CommandFixture::SetUp();
    Graph graph = parse_graph(R"(graph g [ai.onnx=13] (%x: f32[N,3,4,4]) {
  @w: f32[2,3,1,1]
  %c = Conv[kernel_shape=[1,1]](%x, @w)
  %r = Relu(%c)
  return %r
}
)");
    for (ValueId id : graph.initializers()) {
      TensorData& data = *graph.value(id).initializer;
      std::vector<float> values(static_cast<std::size_t>(data.element_count()), 0.5f);
      data = TensorData::from(DataType::kFloat, data.dims, values);
    }
    export_onnx(graph, path("m.onnx"));
  }
  void write_batch(const std::string& name, int64_t n, int64_t channels = 3) {
    std::vector<float> values(static_cast<std::size_t>(n * channels * 16), 2.0f);
    write_npy(path(name),
              Tensor::from_data(TensorData::from(DataType::kFloat, {n, channels, 4, 4}, values)));
  }
};

TEST_F(RunSessionCommand, InputFileFixesTheSymbolicBatch) {
  write_batch("x.npy", 3);
  CommandResult r = cleave("run " + path("m.onnx") + " --input x=" + path("x.npy") +
                           " --output-dir " + path("out") + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Tensor out = read_npy(path("out/r.npy"));
  EXPECT_EQ(out.shape(), (std::vector<int64_t>{3, 2, 4, 4}));
  EXPECT_FLOAT_EQ(out.to_double_vector()[0], 3.0);
}

TEST_F(RunSessionCommand, InputFileContradictingAFixedDimNamesTheInput) {
  write_batch("x.npy", 1, 5);
  CommandResult r = cleave("run " + path("m.onnx") + " --input x=" + path("x.npy"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err,
              HasSubstr("input 'x' dim 1 is fixed to 3 by the model, the value given has 5"));
}

TEST_F(RunSessionCommand, WithoutInputOrShapeTheSymbolicDimIsStillRefused) {
  CommandResult r = cleave("run " + path("m.onnx"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("input 'x' has symbolic or unknown dims"));
  EXPECT_THAT(r.err, HasSubstr("--shape x="));
}

}  // namespace
}  // namespace cleave
