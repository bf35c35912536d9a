// Shape and index kernels: each op on small tensors against hand-computed outputs (ONNX
// specification examples where they exist), opset-dependent forms, and error cases.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "ir/text.h"
#include "runtime/executor.h"
#include "runtime/kernel.h"
#include "runtime/kernels/registration.h"
#include "runtime/tensor.h"

#include "kernel_test_util.h"

namespace cleave {
namespace {

using kernel_test::make_tensor;

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Tensor f32(std::vector<int64_t> shape, const std::vector<double>& values) {
  return make_tensor(DataType::kFloat, std::move(shape), values);
}

// int64 tensors are built from int64 values so that extremes (INT64_MIN/MAX) survive.
Tensor i64(std::vector<int64_t> shape, const std::vector<int64_t>& values) {
  Tensor t = Tensor::allocate(DataType::kInt64, std::move(shape));
  EXPECT_EQ(static_cast<std::size_t>(t.element_count()), values.size());
  if (!values.empty()) std::memcpy(t.raw(), values.data(), values.size() * sizeof(int64_t));
  return t;
}

// 0, 1, 2, ... as a float tensor of `shape`.
Tensor iota(std::vector<int64_t> shape, DataType dtype = DataType::kFloat) {
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  std::vector<double> values(count);
  std::iota(values.begin(), values.end(), 0.0);
  return make_tensor(dtype, std::move(shape), values);
}

TensorData int64_data(std::vector<int64_t> dims, const std::vector<int64_t>& values) {
  return TensorData::from(DataType::kInt64, std::move(dims), values);
}

const KernelRegistry& shape_registry() {
  static const KernelRegistry registry = [] {
    KernelRegistry r;
    shape::register_view_kernels(r);
    shape::register_source_kernels(r);
    shape::register_layout_kernels(r);
    shape::register_index_kernels(r);
    shape::register_order_kernels(r);
    shape::register_resize_kernels(r);
    shape::register_select_kernels(r);
    return r;
  }();
  return registry;
}

// One node of the op under test, prepared and run directly through its kernel, as the
// executor would (aliased outputs share their input's bytes).
class NodeCase {
 public:
  explicit NodeCase(std::string op, int64_t opset = 17) : op_(std::move(op)), opset_(opset) {
    graph_.opset_imports[""] = opset;
  }
  NodeCase& input(Tensor tensor) {
    inputs_.push_back(std::move(tensor));
    return *this;
  }
  NodeCase& missing() {
    inputs_.push_back(std::nullopt);
    return *this;
  }
  NodeCase& attr(std::string name, Attribute value) {
    attributes_.emplace_back(std::move(name), std::move(value));
    return *this;
  }
  NodeCase& ints(std::string name, std::vector<int64_t> values) {
    return attr(std::move(name), Attribute::of_ints(std::move(values)));
  }
  NodeCase& integer(std::string name, int64_t value) {
    return attr(std::move(name), Attribute::of_int(value));
  }
  NodeCase& real(std::string name, float value) {
    return attr(std::move(name), Attribute::of_float(value));
  }
  NodeCase& text(std::string name, std::string value) {
    return attr(std::move(name), Attribute::of_string(std::move(value)));
  }
  NodeCase& outputs(int count) {
    output_count_ = count;
    return *this;
  }
  NodeCase& threads(int count) {
    threads_ = count;
    return *this;
  }

  std::vector<Tensor> run() {
    prepare();
    return run_again();
  }
  Tensor run_one() { return run().at(0); }

  /// Prepares the kernel (throws what the factory throws).
  void prepare() {
    std::vector<ValueId> ids;
    for (std::size_t i = 0; i < inputs_.size(); ++i) {
      if (!inputs_[i]) {
        ids.push_back(kNoValue);
        continue;
      }
      ids.push_back(graph_.add_input("in" + std::to_string(i), inputs_[i]->dtype(),
                                     Shape::of(inputs_[i]->shape())));
    }
    node_ = graph_.add_op(op_, ids, output_count_, attributes_, "the_" + op_);
    const KernelInfo* info = shape_registry().find("", op_, opset_);
    ASSERT_NE(info, nullptr) << op_;
    KernelContext context{graph_,  node_,      graph_.node(node_),
                          opset_,  pointers(), std::vector<bool>(inputs_.size(), false),
                          engine_, threads_,   false};
    kernel_ = info->create(context);
    specs_ = kernel_->output_specs();
  }

  /// Runs the prepared kernel on the current inputs.
  std::vector<Tensor> run_again() {
    std::vector<Tensor> outputs(specs_.size());
    std::vector<Tensor*> targets;
    for (std::size_t i = 0; i < specs_.size(); ++i) {
      const OutputSpec& spec = specs_[i];
      if (spec.alias_of >= 0) {
        const Tensor& source = *inputs_.at(spec.alias_of);
        outputs[i] = Tensor::view(spec.dtype, spec.shape, source.storage());
      } else {
        outputs[i] = Tensor::allocate(spec.dtype, spec.shape);
        // Poison fresh outputs: a kernel must write every element.
        std::memset(outputs[i].raw(), 0x5a, outputs[i].byte_size());
      }
      targets.push_back(&outputs[i]);
    }
    kernel_->run(pointers(), targets, stream_);
    return outputs;
  }

  const std::vector<OutputSpec>& specs() const { return specs_; }
  Tensor& input_at(std::size_t i) { return *inputs_.at(i); }

 private:
  std::vector<const Tensor*> pointers() const {
    std::vector<const Tensor*> result;
    for (const auto& input : inputs_) result.push_back(input ? &*input : nullptr);
    return result;
  }

  std::string op_;
  int64_t opset_;
  Graph graph_;
  NodeId node_ = -1;
  std::vector<std::optional<Tensor>> inputs_;
  std::vector<std::pair<std::string, Attribute>> attributes_;
  int output_count_ = 1;
  int threads_ = 1;
  dnnl::engine engine_{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream_{engine_};
  std::unique_ptr<Kernel> kernel_;
  std::vector<OutputSpec> specs_;
};

void expect_tensor(const Tensor& actual, std::vector<int64_t> shape,
                   const std::vector<double>& expected, double tolerance = 0) {
  ASSERT_EQ(actual.shape(), shape) << actual.describe();
  std::vector<double> got = actual.to_double_vector();
  ASSERT_EQ(got.size(), expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(expected[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "element " << i;
    } else if (tolerance == 0) {
      EXPECT_EQ(got[i], expected[i]) << "element " << i;
    } else {
      EXPECT_NEAR(got[i], expected[i], tolerance) << "element " << i;
    }
  }
}

// The message of the Error that `action` throws ("" when it throws none).
template <typename Action>
std::string error_of(Action action) {
  try {
    action();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// ---- Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout ------------------------------

TEST(Reshape, InfersTheMinusOneDimensionAndAliasesTheInput) {
  NodeCase node("Reshape", 13);
  node.input(iota({2, 3, 4})).input(i64({2}, {4, -1}));
  Tensor out = node.run_one();
  EXPECT_EQ(node.specs()[0].alias_of, 0);
  EXPECT_EQ(out.shape(), (std::vector<int64_t>{4, 6}));
  EXPECT_EQ(out.raw(), node.input_at(0).raw());
}

TEST(Reshape, ZeroCopiesTheInputDimension) {
  NodeCase node("Reshape", 13);
  node.input(iota({2, 3, 4})).input(i64({2}, {0, 12}));
  EXPECT_EQ(node.run_one().shape(), (std::vector<int64_t>{2, 12}));
}

TEST(Reshape, AllowZeroKeepsAZeroDimension) {
  NodeCase node("Reshape", 14);
  node.input(iota({0, 3})).input(i64({2}, {3, 0})).integer("allowzero", 1);
  EXPECT_EQ(node.run_one().shape(), (std::vector<int64_t>{3, 0}));
}

TEST(Reshape, ZeroWithoutAllowZeroCopiesAndThenMismatches) {
  NodeCase node("Reshape", 14);
  node.input(iota({0, 3})).input(i64({2}, {3, 0}));
  EXPECT_NE(error_of([&] { node.prepare(); }).find("cannot reshape"), std::string::npos);
}

TEST(Reshape, ShapeAttributeBeforeOpset5) {
  NodeCase node("Reshape", 1);
  node.input(iota({6})).ints("shape", {3, 2});
  expect_tensor(node.run_one(), {3, 2}, {0, 1, 2, 3, 4, 5});
}

TEST(Reshape, ElementCountMismatchNamesNodeAndCounts) {
  NodeCase node("Reshape", 13);
  node.input(iota({2, 3})).input(i64({2}, {4, 2}));
  std::string message = error_of([&] { node.prepare(); });
  EXPECT_NE(message.find("the_Reshape"), std::string::npos) << message;
  EXPECT_NE(message.find("6 elements"), std::string::npos) << message;
}

TEST(Reshape, TwoMinusOnesIsAnError) {
  NodeCase node("Reshape", 13);
  node.input(iota({2, 3})).input(i64({2}, {-1, -1}));
  EXPECT_NE(error_of([&] { node.prepare(); }).find("more than one -1"), std::string::npos);
}

TEST(Reshape, RefusesToRunWhenTheShapeInputChangedAfterPreparation) {
  NodeCase node("Reshape", 13);
  node.input(iota({6})).input(i64({2}, {3, 2}));
  node.run();
  node.input_at(1).data<int64_t>()[0] = 2;
  node.input_at(1).data<int64_t>()[1] = 3;
  EXPECT_NE(error_of([&] { node.run_again(); }).find("changed"), std::string::npos);
}

TEST(Flatten, SplitsTheShapeAtTheAxis) {
  NodeCase node("Flatten", 13);
  node.input(iota({2, 3, 4, 5})).integer("axis", 2);
  EXPECT_EQ(node.run_one().shape(), (std::vector<int64_t>{6, 20}));
}

TEST(Flatten, NegativeAxisCountsFromTheEnd) {
  NodeCase node("Flatten", 13);
  node.input(iota({2, 3, 4})).integer("axis", -1);
  EXPECT_EQ(node.run_one().shape(), (std::vector<int64_t>{6, 4}));
}

TEST(Flatten, AxisZeroGivesALeadingOne) {
  NodeCase node("Flatten", 13);
  node.input(iota({2, 3})).integer("axis", 0);
  expect_tensor(node.run_one(), {1, 6}, {0, 1, 2, 3, 4, 5});
}

TEST(Flatten, AxisBeyondTheRankIsAnError) {
  NodeCase node("Flatten", 13);
  node.input(iota({2, 3, 4})).integer("axis", 4);
  EXPECT_NE(error_of([&] { node.prepare(); }).find("out of range"), std::string::npos);
}

TEST(Squeeze, AxesAttributeBeforeOpset13) {
  NodeCase node("Squeeze", 11);
  node.input(iota({1, 3, 1, 2})).ints("axes", {0});
  EXPECT_EQ(node.run_one().shape(), (std::vector<int64_t>{3, 1, 2}));
}

TEST(Squeeze, AxesInputFromOpset13WithNegativeAxis) {
  NodeCase node("Squeeze", 13);
  node.input(iota({1, 3, 1, 2})).input(i64({1}, {-2}));
  EXPECT_EQ(node.run_one().shape(), (std::vector<int64_t>{1, 3, 2}));
}

TEST(Squeeze, WithoutAxesRemovesEveryUnitDimension) {
  NodeCase node("Squeeze", 13);
  node.input(iota({1, 3, 1, 2}));
  expect_tensor(node.run_one(), {3, 2}, {0, 1, 2, 3, 4, 5});
}

TEST(Squeeze, NonUnitAxisIsAnError) {
  NodeCase node("Squeeze", 13);
  node.input(iota({1, 3})).input(i64({1}, {1}));
  EXPECT_NE(error_of([&] { node.prepare(); }).find("not 1"), std::string::npos);
}

TEST(Unsqueeze, AxesAttributeBeforeOpset13) {
  NodeCase node("Unsqueeze", 11);
  node.input(iota({3, 4})).ints("axes", {0, 3});
  EXPECT_EQ(node.run_one().shape(), (std::vector<int64_t>{1, 3, 4, 1}));
}

TEST(Unsqueeze, UnsortedNegativeAxesInputFromOpset13) {
  NodeCase node("Unsqueeze", 13);
  node.input(iota({3, 4})).input(i64({2}, {-2, 0}));
  EXPECT_EQ(node.run_one().shape(), (std::vector<int64_t>{1, 3, 1, 4}));
}

TEST(Unsqueeze, DuplicateAxesAreAnError) {
  NodeCase node("Unsqueeze", 13);
  node.input(iota({3, 4})).input(i64({2}, {0, -4}));
  EXPECT_NE(error_of([&] { node.prepare(); }).find("twice"), std::string::npos);
}

TEST(Identity, AliasesItsInput) {
  NodeCase node("Identity", 14);
  node.input(iota({2, 2}, DataType::kInt64));
  Tensor out = node.run_one();
  EXPECT_EQ(node.specs()[0].alias_of, 0);
  expect_tensor(out, {2, 2}, {0, 1, 2, 3});
}

TEST(Dropout, InferenceIsIdentityWithAnAllTrueBoolMask) {
  NodeCase node("Dropout", 13);
  node.input(f32({3}, {1.5, -2, 3})).outputs(2);
  std::vector<Tensor> out = node.run();
  expect_tensor(out[0], {3}, {1.5, -2, 3});
  EXPECT_EQ(out[1].dtype(), DataType::kBool);
  expect_tensor(out[1], {3}, {1, 1, 1});
}

TEST(Dropout, MaskHasTheDataTypeBeforeOpset10) {
  NodeCase node("Dropout", 7);
  node.input(f32({2}, {4, 5})).real("ratio", 0.3f).outputs(2);
  std::vector<Tensor> out = node.run();
  EXPECT_EQ(out[1].dtype(), DataType::kFloat);
  expect_tensor(out[1], {2}, {1, 1});
}

TEST(Dropout, TrainingModeWithNonZeroRatioIsUnsupported) {
  NodeCase node("Dropout", 13);
  node.input(f32({2}, {4, 5})).input(f32({}, {0.5})).input(make_tensor(DataType::kBool, {}, {1}));
  EXPECT_THROW(node.prepare(), UnsupportedError);
}

TEST(Dropout, TrainingModeWithZeroRatioIsIdentity) {
  NodeCase node("Dropout", 13);
  node.input(f32({2}, {4, 5})).input(f32({}, {0})).input(make_tensor(DataType::kBool, {}, {1}));
  expect_tensor(node.run_one(), {2}, {4, 5});
}

// ---- Shape, Size, Constant, ConstantOfShape, Range ----------------------------------------

TEST(Shape, GivesTheDimensionsAsInt64) {
  NodeCase node("Shape", 13);
  node.input(iota({2, 3, 4}));
  Tensor out = node.run_one();
  EXPECT_EQ(out.dtype(), DataType::kInt64);
  expect_tensor(out, {3}, {2, 3, 4});
}

TEST(Shape, StartAndNegativeEndFromOpset15) {
  NodeCase node("Shape", 15);
  node.input(iota({2, 3, 4})).integer("start", 1).integer("end", -1);
  expect_tensor(node.run_one(), {1}, {3});
}

TEST(Shape, OutOfRangeStartAndEndAreClamped) {
  NodeCase node("Shape", 15);
  node.input(iota({2, 3, 4})).integer("start", -10).integer("end", 10);
  expect_tensor(node.run_one(), {3}, {2, 3, 4});
}

TEST(Size, IsAnInt64ScalarOfTheElementCount) {
  NodeCase node("Size", 13);
  node.input(iota({2, 3, 4}));
  Tensor out = node.run_one();
  EXPECT_EQ(out.dtype(), DataType::kInt64);
  expect_tensor(out, {}, {24});
}

TEST(Constant, ValueTensorKeepsItsTypeAndShape) {
  NodeCase node("Constant", 13);
  node.attr("value", Attribute::of_tensor(
                         TensorData::from(DataType::kInt32, {2}, std::vector<int32_t>{5, -6})));
  Tensor out = node.run_one();
  EXPECT_EQ(out.dtype(), DataType::kInt32);
  expect_tensor(out, {2}, {5, -6});
}

TEST(Constant, ValueFloatIsAFloatScalar) {
  NodeCase node("Constant", 13);
  node.real("value_float", 1.5f);
  expect_tensor(node.run_one(), {}, {1.5});
}

TEST(Constant, ValueIntsIsAnInt64Vector) {
  NodeCase node("Constant", 13);
  node.ints("value_ints", {3, -1, 7});
  Tensor out = node.run_one();
  EXPECT_EQ(out.dtype(), DataType::kInt64);
  expect_tensor(out, {3}, {3, -1, 7});
}

TEST(Constant, StringValueIsUnsupported) {
  NodeCase node("Constant", 13);
  node.text("value_string", "hello");
  EXPECT_THROW(node.prepare(), UnsupportedError);
}

TEST(Constant, NoValueAttributeIsAnError) {
  NodeCase node("Constant", 13);
  EXPECT_NE(error_of([&] { node.prepare(); }).find("none of the attributes"), std::string::npos);
}

TEST(ConstantOfShape, DefaultsToFloatZeros) {
  NodeCase node("ConstantOfShape", 13);
  node.input(i64({2}, {2, 3}));
  Tensor out = node.run_one();
  EXPECT_EQ(out.dtype(), DataType::kFloat);
  expect_tensor(out, {2, 3}, {0, 0, 0, 0, 0, 0});
}

TEST(ConstantOfShape, ValueAttributeGivesTypeAndFill) {
  NodeCase node("ConstantOfShape", 13);
  node.input(i64({2}, {2, 1})).attr("value", Attribute::of_tensor(int64_data({1}, {7})));
  Tensor out = node.run_one();
  EXPECT_EQ(out.dtype(), DataType::kInt64);
  expect_tensor(out, {2, 1}, {7, 7});
}

TEST(ConstantOfShape, EmptyShapeGivesAScalar) {
  NodeCase node("ConstantOfShape", 13);
  node.input(i64({0}, {})).attr("value", Attribute::of_tensor(int64_data({1}, {4})));
  expect_tensor(node.run_one(), {}, {4});
}

TEST(ConstantOfShape, NegativeDimensionIsAnError) {
  NodeCase node("ConstantOfShape", 13);
  node.input(i64({2}, {2, -1}));
  EXPECT_NE(error_of([&] { node.prepare(); }).find("negative"), std::string::npos);
}

TEST(Range, FloatWithPositiveDelta) {
  NodeCase node("Range", 11);
  node.input(f32({}, {1})).input(f32({}, {5})).input(f32({}, {2}));
  expect_tensor(node.run_one(), {2}, {1, 3});
}

TEST(Range, Int32WithNegativeDelta) {
  NodeCase node("Range", 11);
  Tensor start = make_tensor(DataType::kInt32, {}, {10});
  node.input(start)
      .input(make_tensor(DataType::kInt32, {}, {4}))
      .input(make_tensor(DataType::kInt32, {}, {-3}));
  Tensor out = node.run_one();
  EXPECT_EQ(out.dtype(), DataType::kInt32);
  expect_tensor(out, {2}, {10, 7});
}

TEST(Range, LimitBehindStartGivesAnEmptyRange) {
  NodeCase node("Range", 11);
  node.input(i64({}, {5})).input(i64({}, {1})).input(i64({}, {1}));
  expect_tensor(node.run_one(), {0}, {});
}

TEST(Range, ZeroDeltaIsAnError) {
  NodeCase node("Range", 11);
  node.input(i64({}, {0})).input(i64({}, {4})).input(i64({}, {0}));
  EXPECT_NE(error_of([&] { node.prepare(); }).find("delta is zero"), std::string::npos);
}

// ---- Transpose ----------------------------------------------------------------------------

// out[i] = in[j] where j runs over the input in the order the permuted axes give.
std::vector<double> naive_transpose(const Tensor& input, const std::vector<int64_t>& perm) {
  std::vector<double> values = input.to_double_vector();
  std::vector<int64_t> strides = input.strides();
  std::vector<int64_t> out_shape;
  for (int64_t axis : perm) out_shape.push_back(input.dim(axis));
  std::vector<double> out;
  std::vector<int64_t> index(perm.size(), 0);
  for (std::size_t n = 0; n < values.size(); ++n) {
    int64_t offset = 0;
    for (std::size_t d = 0; d < perm.size(); ++d) offset += index[d] * strides[perm[d]];
    out.push_back(values[offset]);
    for (std::size_t d = perm.size(); d-- > 0;) {
      if (++index[d] < out_shape[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

TEST(Transpose, DefaultPermutationReversesTheAxes) {
  NodeCase node("Transpose", 13);
  node.input(iota({2, 3}));
  expect_tensor(node.run_one(), {3, 2}, {0, 3, 1, 4, 2, 5});
}

TEST(Transpose, NchwToNhwc) {
  NodeCase node("Transpose", 13);
  node.input(iota({1, 2, 2, 3})).ints("perm", {0, 2, 3, 1});
  expect_tensor(node.run_one(), {1, 2, 3, 2}, {0, 6, 1, 7, 2, 8, 3, 9, 4, 10, 5, 11});
}

TEST(Transpose, LargeFourDimensionalCasesMatchTheDefinition) {
  for (std::vector<int64_t> perm :
       {std::vector<int64_t>{0, 2, 3, 1}, {0, 3, 1, 2}, {3, 2, 1, 0}, {1, 0, 3, 2}, {0, 1, 3, 2}}) {
    for (int threads : {1, 2}) {
      Tensor input = iota({2, 37, 19, 53});  // Big enough for the copy to use both threads.
      NodeCase node("Transpose", 13);
      node.input(input).ints("perm", perm).threads(threads);
      Tensor out = node.run_one();
      std::vector<int64_t> shape;
      for (int64_t axis : perm) shape.push_back(input.dim(axis));
      SCOPED_TRACE(testing::Message() << "perm " << perm[0] << perm[1] << perm[2] << perm[3]
                                      << " threads " << threads);
      expect_tensor(out, shape, naive_transpose(input, perm));
    }
  }
}

TEST(Transpose, Int64AndInt8ElementsMoveWhole) {
  for (DataType type : {DataType::kInt64, DataType::kInt8}) {
    NodeCase node("Transpose", 13);
    node.input(iota({2, 1, 3}, type)).ints("perm", {2, 1, 0});
    Tensor out = node.run_one();
    EXPECT_EQ(out.dtype(), type);
    expect_tensor(out, {3, 1, 2}, {0, 3, 1, 4, 2, 5});
  }
}

TEST(Transpose, MovingOnlyAxesOfSizeOneSharesTheInputsBytes) {
  for (DataType type : {DataType::kInt64, DataType::kFloat}) {
    NodeCase node("Transpose", 13);
    node.input(iota({1, 5}, type)).ints("perm", {1, 0});
    const Tensor out = node.run_one();
    EXPECT_EQ(node.specs().at(0).alias_of, 0);
    expect_tensor(out, {5, 1}, {0, 1, 2, 3, 4});
  }
  NodeCase node("Transpose", 13);
  node.input(iota({2, 1, 3}, DataType::kInt64)).ints("perm", {1, 0, 2});
  const Tensor out = node.run_one();
  EXPECT_EQ(node.specs().at(0).alias_of, 0);
  expect_tensor(out, {1, 2, 3}, {0, 1, 2, 3, 4, 5});
}

TEST(Transpose, ReorderingAxesLongerThanOneCopies) {
  NodeCase node("Transpose", 13);
  node.input(iota({2, 1, 3}, DataType::kInt64)).ints("perm", {2, 0, 1});
  const Tensor out = node.run_one();
  EXPECT_LT(node.specs().at(0).alias_of, 0);
  expect_tensor(out, {3, 2, 1}, {0, 3, 1, 4, 2, 5});
}

TEST(Transpose, PermutationWithARepeatedAxisIsAnError) {
  NodeCase node("Transpose", 13);
  node.input(iota({2, 3})).ints("perm", {0, 0});
  EXPECT_NE(error_of([&] { node.prepare(); }).find("twice"), std::string::npos);
}

// ---- Slice --------------------------------------------------------------------------------

TEST(Slice, AttributesBeforeOpset10) {
  NodeCase node("Slice", 9);
  node.input(iota({3, 4})).ints("starts", {1, 0}).ints("ends", {2, 3});
  expect_tensor(node.run_one(), {1, 3}, {4, 5, 6});
}

TEST(Slice, NegativeStepWithInt64MinEndReversesEverything) {
  NodeCase node("Slice", 13);
  node.input(iota({5}))
      .input(i64({1}, {-1}))
      .input(i64({1}, {kInt64Min}))
      .input(i64({1}, {0}))
      .input(i64({1}, {-1}));
  expect_tensor(node.run_one(), {5}, {4, 3, 2, 1, 0});
}

TEST(Slice, StepAndOutOfBoundsEndAreClamped) {
  NodeCase node("Slice", 13);
  node.input(iota({10})).input(i64({1}, {1})).input(i64({1}, {1000})).input(i64({1}, {0}));
  node.input(i64({1}, {3}));
  expect_tensor(node.run_one(), {3}, {1, 4, 7});
}

TEST(Slice, NegativeAxisWithOmittedSteps) {
  NodeCase node("Slice", 13);
  node.input(iota({2, 3})).input(i64({1}, {1})).input(i64({1}, {kInt64Max})).input(i64({1}, {-1}));
  expect_tensor(node.run_one(), {2, 2}, {1, 2, 4, 5});
}

TEST(Slice, NegativeStepClampsAStartBeyondTheEnd) {
  NodeCase node("Slice", 13);
  node.input(iota({6})).input(i64({1}, {10})).input(i64({1}, {1})).missing().input(i64({1}, {-2}));
  expect_tensor(node.run_one(), {2}, {5, 3});
}

TEST(Slice, EmptyRangeGivesAZeroLengthAxis) {
  NodeCase node("Slice", 13);
  node.input(iota({2, 4})).input(i64({1}, {3})).input(i64({1}, {1})).input(i64({1}, {1}));
  expect_tensor(node.run_one(), {2, 0}, {});
}

TEST(Slice, ZeroStepIsAnError) {
  NodeCase node("Slice", 13);
  node.input(iota({4})).input(i64({1}, {0})).input(i64({1}, {3})).missing().input(i64({1}, {0}));
  EXPECT_NE(error_of([&] { node.prepare(); }).find("step"), std::string::npos);
}

// ---- Split --------------------------------------------------------------------------------

TEST(Split, EqualPartsWithoutSplitInput) {
  NodeCase node("Split", 13);
  node.input(iota({6})).outputs(3);
  std::vector<Tensor> out = node.run();
  ASSERT_EQ(out.size(), 3u);
  expect_tensor(out[0], {2}, {0, 1});
  expect_tensor(out[1], {2}, {2, 3});
  expect_tensor(out[2], {2}, {4, 5});
}

TEST(Split, SplitAttributeBeforeOpset13) {
  NodeCase node("Split", 11);
  node.input(iota({6})).ints("split", {2, 4}).outputs(2);
  std::vector<Tensor> out = node.run();
  expect_tensor(out[0], {2}, {0, 1});
  expect_tensor(out[1], {4}, {2, 3, 4, 5});
}

TEST(Split, SplitInputFromOpset13AlongANegativeAxis) {
  NodeCase node("Split", 13);
  node.input(iota({2, 3})).input(i64({2}, {1, 2})).integer("axis", -1).outputs(2);
  std::vector<Tensor> out = node.run();
  expect_tensor(out[0], {2, 1}, {0, 3});
  expect_tensor(out[1], {2, 2}, {1, 2, 4, 5});
}

TEST(Split, NumOutputsFromOpset18LeavesASmallerLastPart) {
  NodeCase node("Split", 18);
  node.input(iota({7})).integer("num_outputs", 3).outputs(3);
  std::vector<Tensor> out = node.run();
  expect_tensor(out[0], {3}, {0, 1, 2});
  expect_tensor(out[1], {3}, {3, 4, 5});
  expect_tensor(out[2], {1}, {6});
}

TEST(Split, OnePartSharesTheInputsBytes) {
  NodeCase node("Split", 13);
  node.input(iota({4, 1}, DataType::kInt64)).integer("axis", 1).outputs(1);
  const Tensor out = node.run_one();
  EXPECT_EQ(node.specs().at(0).alias_of, 0);
  expect_tensor(out, {4, 1}, {0, 1, 2, 3});
}

TEST(Split, SizesThatDoNotSumToTheAxisAreAnError) {
  NodeCase node("Split", 13);
  node.input(iota({6})).input(i64({2}, {2, 3})).outputs(2);
  EXPECT_NE(error_of([&] { node.prepare(); }).find("sums to 5"), std::string::npos);
}

TEST(Split, UnevenEqualSplitIsAnError) {
  NodeCase node("Split", 13);
  node.input(iota({5})).outputs(2);
  EXPECT_NE(error_of([&] { node.prepare(); }).find("equal parts"), std::string::npos);
}

// ---- Gather, GatherElements ---------------------------------------------------------------

TEST(Gather, Axis0SpecificationExample) {
  NodeCase node("Gather", 13);
  node.input(f32({3, 2}, {1.0, 1.2, 2.3, 3.4, 4.5, 5.7})).input(i64({2, 2}, {0, 1, 1, 2}));
  expect_tensor(node.run_one(), {2, 2, 2}, {1.0f, 1.2f, 2.3f, 3.4f, 2.3f, 3.4f, 4.5f, 5.7f});
}

TEST(Gather, Axis1SpecificationExample) {
  NodeCase node("Gather", 13);
  node.input(f32({3, 3}, {1.0, 1.2, 1.9, 2.3, 3.4, 3.9, 4.5, 5.7, 5.9}))
      .input(i64({1, 2}, {0, 2}))
      .integer("axis", 1);
  expect_tensor(node.run_one(), {3, 1, 2}, {1.0f, 1.9f, 2.3f, 3.9f, 4.5f, 5.9f});
}

TEST(Gather, NegativeIndicesCountFromTheEnd) {
  NodeCase node("Gather", 13);
  node.input(iota({10})).input(i64({3}, {0, -9, -10}));
  expect_tensor(node.run_one(), {3}, {0, 1, 0});
}

TEST(Gather, ScalarInt32IndexDropsTheAxis) {
  NodeCase node("Gather", 13);
  node.input(iota({3, 2})).input(make_tensor(DataType::kInt32, {}, {1}));
  expect_tensor(node.run_one(), {2}, {2, 3});
}

TEST(Gather, OutOfRangeIndexIsAnErrorAtRun) {
  NodeCase node("Gather", 13);
  node.input(iota({3, 2})).input(i64({2}, {0, 3}));
  std::string message = error_of([&] { node.run(); });
  EXPECT_NE(message.find("the_Gather"), std::string::npos) << message;
  EXPECT_NE(message.find("value 3 is out of range"), std::string::npos) << message;
}

TEST(GatherElements, Axis1SpecificationExample) {
  NodeCase node("GatherElements", 13);
  node.input(f32({2, 2}, {1, 2, 3, 4})).input(i64({2, 2}, {0, 0, 1, 0})).integer("axis", 1);
  expect_tensor(node.run_one(), {2, 2}, {1, 1, 4, 3});
}

TEST(GatherElements, Axis0SpecificationExample) {
  NodeCase node("GatherElements", 13);
  node.input(f32({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9})).input(i64({2, 3}, {1, 2, 0, 2, 0, 0}));
  expect_tensor(node.run_one(), {2, 3}, {4, 8, 3, 7, 2, 3});
}

TEST(GatherElements, NegativeIndices) {
  NodeCase node("GatherElements", 13);
  node.input(f32({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9})).input(i64({2, 3}, {-1, -2, 0, -2, 0, 0}));
  expect_tensor(node.run_one(), {2, 3}, {7, 5, 3, 4, 2, 3});
}

TEST(GatherElements, OutOfRangeIndexIsAnError) {
  NodeCase node("GatherElements", 13);
  node.input(f32({2, 2}, {1, 2, 3, 4})).input(i64({2, 2}, {0, 0, 2, 0})).integer("axis", 1);
  EXPECT_NE(error_of([&] { node.run(); }).find("out of range"), std::string::npos);
}

TEST(GatherND, PicksElementsByFullIndexTuples) {
  NodeCase node("GatherND", 13);
  node.input(make_tensor(DataType::kInt32, {2, 2}, {0, 1, 2, 3})).input(i64({2, 2}, {0, 0, 1, 1}));
  expect_tensor(node.run_one(), {2}, {0, 3});
}

TEST(GatherND, PicksRowsByPartialTuples) {
  NodeCase node("GatherND", 13);
  node.input(iota({2, 2, 2})).input(i64({2, 1, 2}, {0, 1, 1, 0}));
  expect_tensor(node.run_one(), {2, 1, 2}, {2, 3, 4, 5});
}

TEST(GatherND, BatchDimsIndexWithinEachBatch) {
  NodeCase node("GatherND", 13);
  node.input(iota({2, 2, 2})).input(i64({2, 1}, {1, 0})).integer("batch_dims", 1);
  expect_tensor(node.run_one(), {2, 2}, {2, 3, 4, 5});
}

TEST(GatherND, OutOfRangeIndexIsAnError) {
  NodeCase node("GatherND", 13);
  node.input(iota({2, 2})).input(i64({1, 2}, {0, -3}));
  EXPECT_NE(error_of([&] { node.run(); }).find("out of range"), std::string::npos);
}

// ---- ScatterElements, ScatterND -----------------------------------------------------------

TEST(ScatterElements, Axis0SpecificationExample) {
  NodeCase node("ScatterElements", 13);
  node.input(f32({3, 3}, {0, 0, 0, 0, 0, 0, 0, 0, 0}))
      .input(i64({2, 3}, {1, 0, 2, 0, 2, 1}))
      .input(f32({2, 3}, {1.0, 1.1, 1.2, 2.0, 2.1, 2.2}));
  expect_tensor(node.run_one(), {3, 3}, {2.0f, 1.1f, 0.0f, 1.0f, 0.0f, 2.2f, 0.0f, 2.1f, 1.2f});
}

TEST(ScatterElements, NegativeIndexAlongAxis1) {
  NodeCase node("ScatterElements", 13);
  node.input(f32({1, 5}, {1, 2, 3, 4, 5}))
      .input(i64({1, 2}, {1, -3}))
      .input(f32({1, 2}, {1.1, 2.1}))
      .integer("axis", 1);
  expect_tensor(node.run_one(), {1, 5}, {1.0f, 1.1f, 2.1f, 4.0f, 5.0f});
}

TEST(ScatterElements, AddReductionAccumulatesDuplicates) {
  NodeCase node("ScatterElements", 16);
  node.input(f32({1, 5}, {1, 2, 3, 4, 5}))
      .input(i64({1, 2}, {1, 1}))
      .input(f32({1, 2}, {1.5, 2.5}))
      .integer("axis", 1)
      .text("reduction", "add");
  expect_tensor(node.run_one(), {1, 5}, {1, 6, 3, 4, 5});
}

TEST(ScatterElements, OutOfRangeIndexIsAnError) {
  NodeCase node("ScatterElements", 13);
  node.input(f32({1, 3}, {1, 2, 3}))
      .input(i64({1, 1}, {3}))
      .input(f32({1, 1}, {9}))
      .integer("axis", 1);
  EXPECT_NE(error_of([&] { node.run(); }).find("out of range"), std::string::npos);
}

TEST(ScatterND, SpecificationExampleOfSingleElements) {
  NodeCase node("ScatterND", 13);
  node.input(f32({8}, {1, 2, 3, 4, 5, 6, 7, 8}))
      .input(i64({4, 1}, {4, 3, 1, 7}))
      .input(f32({4}, {9, 10, 11, 12}));
  expect_tensor(node.run_one(), {8}, {1, 11, 3, 10, 9, 6, 7, 12});
}

TEST(ScatterND, RowUpdatesWithMultiplyReduction) {
  NodeCase node("ScatterND", 16);
  node.input(f32({2, 2}, {1, 2, 3, 4}))
      .input(i64({2, 1}, {1, -1}))
      .input(f32({2, 2}, {2, 3, 10, 10}))
      .text("reduction", "mul");
  expect_tensor(node.run_one(), {2, 2}, {1, 2, 60, 120});
}

TEST(ScatterND, OutOfRangeIndexIsAnError) {
  NodeCase node("ScatterND", 13);
  node.input(f32({2}, {1, 2})).input(i64({1, 1}, {2})).input(f32({1}, {5}));
  EXPECT_NE(error_of([&] { node.run(); }).find("out of range"), std::string::npos);
}

// ---- Pad ----------------------------------------------------------------------------------

const std::vector<double> kPadData = {1.0, 1.2, 2.3, 3.4, 4.5, 5.7};

TEST(Pad, ConstantModeWithConstantValueInput) {
  NodeCase node("Pad", 13);
  node.input(f32({3, 2}, kPadData)).input(i64({4}, {0, 2, 0, 0})).input(f32({}, {9}));
  expect_tensor(node.run_one(), {3, 4}, {9, 9, 1.0f, 1.2f, 9, 9, 2.3f, 3.4f, 9, 9, 4.5f, 5.7f});
}

TEST(Pad, ReflectModeSpecificationExample) {
  NodeCase node("Pad", 13);
  node.input(f32({3, 2}, kPadData)).input(i64({4}, {0, 2, 0, 0})).text("mode", "reflect");
  expect_tensor(node.run_one(), {3, 4},
                {1.0f, 1.2f, 1.0f, 1.2f, 2.3f, 3.4f, 2.3f, 3.4f, 4.5f, 5.7f, 4.5f, 5.7f});
}

TEST(Pad, EdgeModeSpecificationExample) {
  NodeCase node("Pad", 13);
  node.input(f32({3, 2}, kPadData)).input(i64({4}, {0, 2, 0, 0})).text("mode", "edge");
  expect_tensor(node.run_one(), {3, 4},
                {1.0f, 1.0f, 1.0f, 1.2f, 2.3f, 2.3f, 2.3f, 3.4f, 4.5f, 4.5f, 4.5f, 5.7f});
}

TEST(Pad, ReflectBeyondOneFoldRepeatsTheReflection) {
  NodeCase node("Pad", 13);
  node.input(f32({3}, {1, 2, 3})).input(i64({2}, {5, 0})).text("mode", "reflect");
  expect_tensor(node.run_one(), {8}, {2, 1, 2, 3, 2, 1, 2, 3});
}

TEST(Pad, PadsAndValueAttributesBeforeOpset11) {
  NodeCase node("Pad", 2);
  node.input(f32({2}, {1, 2})).ints("pads", {1, 2}).real("value", 7);
  expect_tensor(node.run_one(), {5}, {7, 1, 2, 7, 7});
}

TEST(Pad, NegativePadsCrop) {
  NodeCase node("Pad", 13);
  node.input(iota({5})).input(i64({2}, {-1, 1}));
  expect_tensor(node.run_one(), {5}, {1, 2, 3, 4, 0});
}

TEST(Pad, Int64DataWithInt64ConstantValue) {
  NodeCase node("Pad", 13);
  node.input(iota({2}, DataType::kInt64)).input(i64({2}, {1, 1})).input(i64({}, {-5}));
  expect_tensor(node.run_one(), {4}, {-5, 0, 1, -5});
}

TEST(Pad, LargeConvolutionStylePaddingMatchesTheDefinition) {
  for (int threads : {1, 2}) {
    Tensor input = iota({2, 3, 100, 110});  // Big enough for the copy to use both threads.
    NodeCase node("Pad", 13);
    node.input(input).input(i64({8}, {0, 0, 1, 2, 0, 0, 3, 4})).threads(threads);
    Tensor out = node.run_one();
    ASSERT_EQ(out.shape(), (std::vector<int64_t>{2, 3, 104, 116}));
    std::vector<double> got = out.to_double_vector();
    std::size_t p = 0;
    for (int64_t n = 0; n < 6; ++n) {
      for (int64_t h = 0; h < 104; ++h) {
        for (int64_t w = 0; w < 116; ++w, ++p) {
          bool inside = h >= 1 && h < 101 && w >= 2 && w < 112;
          double expected = inside ? static_cast<double>((n * 100 + h - 1) * 110 + w - 2) : 0.0;
          ASSERT_EQ(got[p], expected) << "n " << n << " h " << h << " w " << w;
        }
      }
    }
  }
}

TEST(Pad, WrongNumberOfPadsIsAnError) {
  NodeCase node("Pad", 13);
  node.input(iota({2, 2})).input(i64({2}, {1, 1}));
  EXPECT_NE(error_of([&] { node.prepare(); }).find("should have 4 entries"), std::string::npos);
}

// ---- Expand, Tile -------------------------------------------------------------------------

TEST(Expand, BroadcastsToAHigherRank) {
  NodeCase node("Expand", 13);
  node.input(f32({3, 1}, {1, 2, 3})).input(i64({3}, {2, 1, 4}));
  expect_tensor(node.run_one(), {2, 3, 4},
                {1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3});
}

TEST(Expand, ShapeOfLowerRankKeepsTheInputDims) {
  NodeCase node("Expand", 13);
  node.input(f32({3, 1}, {1, 2, 3})).input(i64({1}, {2}));
  expect_tensor(node.run_one(), {3, 2}, {1, 1, 2, 2, 3, 3});
}

TEST(Expand, IncompatibleShapeIsAnError) {
  NodeCase node("Expand", 13);
  node.input(f32({3, 2}, {1, 2, 3, 4, 5, 6})).input(i64({2}, {3, 4}));
  EXPECT_NE(error_of([&] { node.prepare(); }).find("cannot broadcast"), std::string::npos);
}

TEST(Tile, RepeatsEachAxis) {
  NodeCase node("Tile", 13);
  node.input(f32({2, 2}, {1, 2, 3, 4})).input(i64({2}, {2, 2}));
  expect_tensor(node.run_one(), {4, 4}, {1, 2, 1, 2, 3, 4, 3, 4, 1, 2, 1, 2, 3, 4, 3, 4});
}

TEST(Tile, RepeatsOfTheWrongLengthAreAnError) {
  NodeCase node("Tile", 13);
  node.input(f32({2, 2}, {1, 2, 3, 4})).input(i64({1}, {2}));
  EXPECT_NE(error_of([&] { node.prepare(); }).find("one entry per axis"), std::string::npos);
}

// ---- DepthToSpace, SpaceToDepth, Trilu ----------------------------------------------------

TEST(DepthToSpace, DcrTakesBlockOffsetsFromTheOuterChannels) {
  NodeCase node("DepthToSpace", 13);
  node.input(iota({1, 8, 1, 1})).integer("blocksize", 2);
  expect_tensor(node.run_one(), {1, 2, 2, 2}, {0, 2, 4, 6, 1, 3, 5, 7});
}

TEST(DepthToSpace, CrdTakesBlockOffsetsFromTheInnerChannels) {
  NodeCase node("DepthToSpace", 13);
  node.input(iota({1, 8, 1, 1})).integer("blocksize", 2).text("mode", "CRD");
  expect_tensor(node.run_one(), {1, 2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
}

TEST(DepthToSpace, SpreadsChannelsOverPixels) {
  NodeCase node("DepthToSpace", 11);
  node.input(f32({1, 4, 1, 2}, {0, 1, 10, 11, 20, 21, 30, 31})).integer("blocksize", 2);
  expect_tensor(node.run_one(), {1, 1, 2, 4}, {0, 10, 1, 11, 20, 30, 21, 31});
}

TEST(DepthToSpace, ChannelsNotDivisibleByTheBlockAreAnError) {
  NodeCase node("DepthToSpace", 13);
  node.input(iota({1, 6, 1, 1})).integer("blocksize", 2);
  EXPECT_NE(error_of([&] { node.prepare(); }).find("not divisible"), std::string::npos);
}

TEST(SpaceToDepth, GathersBlocksIntoChannels) {
  NodeCase node("SpaceToDepth", 13);
  node.input(iota({1, 1, 2, 4})).integer("blocksize", 2);
  expect_tensor(node.run_one(), {1, 4, 1, 2}, {0, 2, 1, 3, 4, 6, 5, 7});
}

TEST(Trilu, UpperByDefault) {
  NodeCase node("Trilu", 14);
  node.input(f32({3, 4}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}));
  expect_tensor(node.run_one(), {3, 4}, {1, 2, 3, 4, 0, 6, 7, 8, 0, 0, 11, 12});
}

TEST(Trilu, LowerBelowTheDiagonal) {
  NodeCase node("Trilu", 14);
  node.input(f32({3, 4}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}))
      .input(i64({}, {-1}))
      .integer("upper", 0);
  expect_tensor(node.run_one(), {3, 4}, {0, 0, 0, 0, 5, 0, 0, 0, 9, 10, 0, 0});
}

TEST(Trilu, UpperAboveTheDiagonalOnABatch) {
  NodeCase node("Trilu", 14);
  node.input(f32({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8})).input(i64({}, {1}));
  expect_tensor(node.run_one(), {2, 2, 2}, {0, 2, 0, 0, 0, 6, 0, 0});
}

TEST(Trilu, HugeKKeepsNothingWithoutOverflow) {
  NodeCase node("Trilu", 14);
  node.input(f32({2, 2}, {1, 2, 3, 4})).input(i64({}, {kInt64Max}));
  expect_tensor(node.run_one(), {2, 2}, {0, 0, 0, 0});
}

// ---- TopK, ArgMax, ArgMin, CumSum ---------------------------------------------------------

TEST(TopK, LargestThreeSpecificationExample) {
  NodeCase node("TopK", 11);
  node.input(iota({3, 4})).input(i64({1}, {3})).outputs(2);
  std::vector<Tensor> out = node.run();
  expect_tensor(out[0], {3, 3}, {3, 2, 1, 7, 6, 5, 11, 10, 9});
  expect_tensor(out[1], {3, 3}, {3, 2, 1, 3, 2, 1, 3, 2, 1});
}

TEST(TopK, SmallestFromOpset11) {
  NodeCase node("TopK", 11);
  node.input(f32({3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 11, 10, 9, 8}))
      .input(i64({1}, {3}))
      .integer("largest", 0)
      .outputs(2);
  std::vector<Tensor> out = node.run();
  expect_tensor(out[0], {3, 3}, {0, 1, 2, 4, 5, 6, 8, 9, 10});
  expect_tensor(out[1], {3, 3}, {0, 1, 2, 0, 1, 2, 3, 2, 1});
}

TEST(TopK, TiesKeepTheLowerIndexFirst) {
  NodeCase node("TopK", 11);
  node.input(f32({5}, {1, 3, 3, 2, 3})).input(i64({1}, {3})).outputs(2);
  std::vector<Tensor> out = node.run();
  expect_tensor(out[0], {3}, {3, 3, 3});
  expect_tensor(out[1], {3}, {1, 2, 4});
}

TEST(TopK, AlongAxis0) {
  NodeCase node("TopK", 11);
  node.input(f32({3, 2}, {1, 6, 5, 2, 3, 4})).input(i64({1}, {1})).integer("axis", -2).outputs(2);
  std::vector<Tensor> out = node.run();
  expect_tensor(out[0], {1, 2}, {5, 6});
  expect_tensor(out[1], {1, 2}, {1, 0});
}

TEST(TopK, KAttributeBeforeOpset10) {
  NodeCase node("TopK", 1);
  node.input(f32({4}, {2, 9, 4, 7})).integer("k", 2).outputs(2);
  std::vector<Tensor> out = node.run();
  expect_tensor(out[0], {2}, {9, 7});
  expect_tensor(out[1], {2}, {1, 3});
}

TEST(TopK, NaNCountsAsTheLargest) {
  NodeCase node("TopK", 11);
  node.input(f32({3}, {1, kNaN, 3})).input(i64({1}, {2})).outputs(2);
  std::vector<Tensor> out = node.run();
  expect_tensor(out[0], {2}, {kNaN, 3});
  expect_tensor(out[1], {2}, {1, 2});
}

TEST(TopK, KLargerThanTheAxisIsAnError) {
  NodeCase node("TopK", 11);
  node.input(iota({4})).input(i64({1}, {5})).outputs(2);
  EXPECT_NE(error_of([&] { node.prepare(); }).find("out of range"), std::string::npos);
}

TEST(ArgMax, KeepsDimsAlongAxis0ByDefault) {
  NodeCase node("ArgMax", 13);
  node.input(f32({2, 2}, {2, 1, 3, 10}));
  Tensor out = node.run_one();
  EXPECT_EQ(out.dtype(), DataType::kInt64);
  expect_tensor(out, {1, 2}, {1, 1});
}

TEST(ArgMax, WithoutKeepDimsAlongAxis1) {
  NodeCase node("ArgMax", 13);
  node.input(f32({2, 2}, {2, 1, 3, 10})).integer("axis", 1).integer("keepdims", 0);
  expect_tensor(node.run_one(), {2}, {0, 1});
}

TEST(ArgMax, TiesPickTheFirstIndexUnlessSelectLastIndex) {
  NodeCase first("ArgMax", 13);
  first.input(f32({1, 3}, {2, 5, 5})).integer("axis", 1);
  expect_tensor(first.run_one(), {1, 1}, {1});
  NodeCase last("ArgMax", 13);
  last.input(f32({1, 3}, {2, 5, 5})).integer("axis", 1).integer("select_last_index", 1);
  expect_tensor(last.run_one(), {1, 1}, {2});
}

TEST(ArgMin, NegativeAxisWithSelectLastIndex) {
  NodeCase node("ArgMin", 13);
  node.input(f32({2, 3}, {2, 1, 1, 3, 10, 0})).integer("axis", -1).integer("select_last_index", 1);
  expect_tensor(node.run_one(), {2, 1}, {2, 2});
}

TEST(ArgMin, Int32Data) {
  NodeCase node("ArgMin", 11);
  node.input(make_tensor(DataType::kInt32, {3}, {4, -2, 7})).integer("keepdims", 0);
  expect_tensor(node.run_one(), {}, {1});
}

TEST(CumSum, RunningSum) {
  NodeCase node("CumSum", 14);
  node.input(f32({5}, {1, 2, 3, 4, 5})).input(i64({}, {0}));
  expect_tensor(node.run_one(), {5}, {1, 3, 6, 10, 15});
}

TEST(CumSum, Exclusive) {
  NodeCase node("CumSum", 14);
  node.input(f32({5}, {1, 2, 3, 4, 5})).input(i64({}, {0})).integer("exclusive", 1);
  expect_tensor(node.run_one(), {5}, {0, 1, 3, 6, 10});
}

TEST(CumSum, Reverse) {
  NodeCase node("CumSum", 14);
  node.input(f32({5}, {1, 2, 3, 4, 5})).input(i64({}, {0})).integer("reverse", 1);
  expect_tensor(node.run_one(), {5}, {15, 14, 12, 9, 5});
}

TEST(CumSum, ReverseExclusive) {
  NodeCase node("CumSum", 14);
  node.input(f32({5}, {1, 2, 3, 4, 5}))
      .input(i64({}, {0}))
      .integer("reverse", 1)
      .integer("exclusive", 1);
  expect_tensor(node.run_one(), {5}, {14, 12, 9, 5, 0});
}

TEST(CumSum, AlongAxis0AndANegativeInt32Axis) {
  NodeCase rows("CumSum", 14);
  rows.input(f32({2, 3}, {1, 2, 3, 4, 5, 6})).input(i64({}, {0}));
  expect_tensor(rows.run_one(), {2, 3}, {1, 2, 3, 5, 7, 9});
  NodeCase columns("CumSum", 14);
  columns.input(iota({2, 3}, DataType::kInt64)).input(make_tensor(DataType::kInt32, {1}, {-1}));
  expect_tensor(columns.run_one(), {2, 3}, {0, 1, 3, 3, 7, 12});
}

TEST(CumSum, AxisOutOfRangeIsAnError) {
  NodeCase node("CumSum", 14);
  node.input(f32({2}, {1, 2})).input(i64({}, {1}));
  EXPECT_NE(error_of([&] { node.run(); }).find("axis"), std::string::npos);
}

// ---- NonZero, OneHot ----------------------------------------------------------------------

TEST(NonZero, GivesCoordinatesOfNonZeroElements) {
  NodeCase node("NonZero", 13);
  node.input(make_tensor(DataType::kBool, {2, 2}, {1, 0, 1, 1}));
  expect_tensor(node.run_one(), {2, 3}, {0, 1, 1, 0, 0, 1});
}

TEST(OneHot, NegativeAndOutOfRangeIndices) {
  NodeCase node("OneHot", 11);
  node.input(i64({4}, {0, 2, -1, 5})).input(f32({}, {3})).input(f32({2}, {0, 1}));
  expect_tensor(node.run_one(), {4, 3}, {1, 0, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0});
}

TEST(OneHot, Axis0WithCustomOffAndOnValues) {
  NodeCase node("OneHot", 11);
  node.input(f32({2}, {0, 2})).input(i64({}, {3})).input(i64({2}, {2, 5})).integer("axis", 0);
  Tensor out = node.run_one();
  EXPECT_EQ(out.dtype(), DataType::kInt64);
  expect_tensor(out, {3, 2}, {5, 2, 2, 2, 2, 5});
}

// ---- Resize, Upsample ---------------------------------------------------------------------

// 1, 2, ..., 16 as a [1, 1, 4, 4] float tensor (the data of most ONNX Resize examples).
Tensor sixteen() {
  std::vector<double> values(16);
  std::iota(values.begin(), values.end(), 1.0);
  return f32({1, 1, 4, 4}, values);
}

// Expected nearest output of a [1,1,4,4] 1..16 input from the row and column source indices.
std::vector<double> pick_rows_and_columns(const std::vector<int>& rows,
                                          const std::vector<int>& columns) {
  std::vector<double> values;
  for (int r : rows) {
    for (int c : columns) values.push_back(r * 4 + c + 1);
  }
  return values;
}

TEST(Resize, NearestUpsampleByScales) {
  NodeCase node("Resize", 13);
  node.input(f32({1, 1, 2, 2}, {1, 2, 3, 4})).missing().input(f32({4}, {1, 1, 2, 3}));
  node.text("mode", "nearest");
  expect_tensor(node.run_one(), {1, 1, 4, 6},
                {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4});
}

TEST(Resize, NearestDownsampleByScales) {
  NodeCase node("Resize", 13);
  node.input(f32({1, 1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}))
      .missing()
      .input(f32({4}, {1, 1, 0.6, 0.6}));
  expect_tensor(node.run_one(), {1, 1, 1, 2}, {1, 3});
}

TEST(Resize, NearestRoundPreferFloorBySizes) {
  NodeCase node("Resize", 13);
  node.input(f32({1, 1, 2, 2}, {1, 2, 3, 4})).missing().missing().input(i64({4}, {1, 1, 7, 8}));
  std::vector<double> expected;
  for (int r = 0; r < 7; ++r) {
    for (int c = 0; c < 8; ++c) expected.push_back((r < 4 ? 1 : 3) + (c < 4 ? 0 : 1));
  }
  expect_tensor(node.run_one(), {1, 1, 7, 8}, expected);
}

TEST(Resize, NearestCeilWithHalfPixel) {
  NodeCase node("Resize", 13);
  node.input(sixteen()).missing().missing().input(i64({4}, {1, 1, 8, 8}));
  node.text("nearest_mode", "ceil");
  std::vector<int> source = {0, 1, 1, 2, 2, 3, 3, 3};
  expect_tensor(node.run_one(), {1, 1, 8, 8}, pick_rows_and_columns(source, source));
}

TEST(Resize, NearestFloorWithAlignCorners) {
  NodeCase node("Resize", 13);
  node.input(sixteen()).missing().missing().input(i64({4}, {1, 1, 8, 8}));
  node.text("nearest_mode", "floor").text("coordinate_transformation_mode", "align_corners");
  std::vector<int> source = {0, 0, 0, 1, 1, 2, 2, 3};
  expect_tensor(node.run_one(), {1, 1, 8, 8}, pick_rows_and_columns(source, source));
}

TEST(Resize, NearestRoundPreferCeilWithAsymmetric) {
  NodeCase node("Resize", 13);
  node.input(sixteen()).missing().missing().input(i64({4}, {1, 1, 8, 8}));
  node.text("nearest_mode", "round_prefer_ceil")
      .text("coordinate_transformation_mode", "asymmetric");
  std::vector<int> source = {0, 1, 1, 2, 2, 3, 3, 3};
  expect_tensor(node.run_one(), {1, 1, 8, 8}, pick_rows_and_columns(source, source));
}

TEST(Resize, Opset10NearestCeilsWhenShrinking) {
  // Opset 10 (asymmetric, ceil when shrinking) and opset 11 (half_pixel, round_prefer_floor)
  // pick different pixels for the same scales.
  NodeCase legacy("Resize", 10);
  legacy.input(f32({1, 1, 1, 4}, {1, 2, 3, 4})).input(f32({4}, {1, 1, 1, 0.75}));
  expect_tensor(legacy.run_one(), {1, 1, 1, 3}, {1, 3, 4});
  NodeCase current("Resize", 11);
  current.input(f32({1, 1, 1, 4}, {1, 2, 3, 4}))
      .input(f32({0}, {}))
      .input(f32({4}, {1, 1, 1, 0.75}));
  expect_tensor(current.run_one(), {1, 1, 1, 3}, {1, 2, 4});
}

TEST(Resize, LinearUpsampleWithHalfPixel) {
  NodeCase node("Resize", 13);
  node.input(f32({1, 1, 2, 2}, {1, 2, 3, 4})).missing().input(f32({4}, {1, 1, 2, 2}));
  node.text("mode", "linear");
  expect_tensor(node.run_one(), {1, 1, 4, 4},
                {1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3, 3.25, 3.75, 4},
                1e-6);
}

TEST(Resize, LinearUpsampleWithAlignCorners) {
  NodeCase node("Resize", 13);
  node.input(f32({1, 1, 2, 2}, {1, 2, 3, 4})).missing().input(f32({4}, {1, 1, 2, 2}));
  node.text("mode", "linear").text("coordinate_transformation_mode", "align_corners");
  double third = 1.0 / 3;
  expect_tensor(node.run_one(), {1, 1, 4, 4},
                {1, 1 + third, 1 + 2 * third, 2, 1 + 2 * third, 2, 2 + third, 2 + 2 * third,
                 2 + third, 2 + 2 * third, 3, 3 + third, 3, 3 + third, 3 + 2 * third, 4},
                1e-5);
}

TEST(Resize, LinearDownsampleWithHalfPixel) {
  NodeCase node("Resize", 13);
  node.input(f32({1, 1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}))
      .missing()
      .input(f32({4}, {1, 1, 0.6, 0.6}))
      .text("mode", "linear");
  expect_tensor(node.run_one(), {1, 1, 1, 2}, {2.6666665, 4.3333331}, 1e-5);
}

TEST(Resize, AlignCornersUsesTheUnroundedResizedLength) {
  // ONNX's reference divides by in × scale - 1 = 1.4 here, not by the rounded size - 1 = 1.
  NodeCase node("Resize", 13);
  node.input(f32({1, 1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}))
      .missing()
      .input(f32({4}, {1, 1, 0.6, 0.6}))
      .text("mode", "linear")
      .text("coordinate_transformation_mode", "align_corners");
  expect_tensor(node.run_one(), {1, 1, 1, 2}, {1, 3.142857}, 1e-5);
}

TEST(Resize, LinearPytorchHalfPixelToASingleColumn) {
  NodeCase node("Resize", 13);
  node.input(sixteen()).missing().missing().input(i64({4}, {1, 1, 3, 1}));
  node.text("mode", "linear").text("coordinate_transformation_mode", "pytorch_half_pixel");
  expect_tensor(node.run_one(), {1, 1, 3, 1}, {1.6666666, 7, 12.333333}, 1e-5);
}

TEST(Resize, TfCropAndResizeInterpolatesInsideTheBox) {
  NodeCase node("Resize", 13);
  node.input(sixteen())
      .input(f32({8}, {0, 0, 0.4, 0.6, 1, 1, 0.6, 0.8}))
      .missing()
      .input(i64({4}, {1, 1, 3, 3}));
  node.text("mode", "linear").text("coordinate_transformation_mode", "tf_crop_and_resize");
  expect_tensor(node.run_one(), {1, 1, 3, 3}, {7.6, 7.9, 8.2, 8.8, 9.1, 9.4, 10, 10.3, 10.6}, 1e-5);
}

TEST(Resize, TfCropAndResizeExtrapolatesOutsideTheInput) {
  NodeCase node("Resize", 13);
  node.input(sixteen())
      .input(f32({8}, {0, 0, 0.4, 0.6, 1, 1, 1.2, 1.7}))
      .missing()
      .input(i64({4}, {1, 1, 3, 3}));
  node.text("mode", "linear")
      .text("coordinate_transformation_mode", "tf_crop_and_resize")
      .real("extrapolation_value", 10);
  expect_tensor(node.run_one(), {1, 1, 3, 3}, {7.6, 10, 10, 12.4, 10, 10, 10, 10, 10}, 1e-5);
}

TEST(Resize, CubicUpsampleFirstRowMatchesTheSpecification) {
  NodeCase node("Resize", 13);
  node.input(sixteen()).missing().input(f32({4}, {1, 1, 2, 2})).text("mode", "cubic");
  Tensor out = node.run_one();
  ASSERT_EQ(out.shape(), (std::vector<int64_t>{1, 1, 8, 8}));
  std::vector<double> row(out.to_double_vector());
  row.resize(8);
  expect_tensor(
      f32({8}, row), {8},
      {0.47265625, 0.76953125, 1.24609375, 1.875, 2.28125, 2.91015625, 3.38671875, 3.68359375},
      1e-5);
}

TEST(Resize, LargeBilinearGivesTheSameResultOnTwoThreads) {
  Tensor input = iota({1, 3, 60, 70});
  std::vector<std::vector<double>> results;
  for (int threads : {1, 2}) {
    NodeCase node("Resize", 13);
    node.input(input)
        .missing()
        .input(f32({4}, {1, 1, 2, 2}))
        .text("mode", "linear")
        .threads(threads);
    results.push_back(node.run_one().to_double_vector());
  }
  EXPECT_EQ(results[0], results[1]);
  // Rows interpolate linearly between source rows: the centre of output row 1, column 0 lies
  // a quarter of the way from source row 0 to row 1.
  EXPECT_NEAR(results[0][140], 0.25 * 70, 1e-4);
}

TEST(Resize, LinearOnIntegersIsUnsupported) {
  NodeCase node("Resize", 13);
  node.input(make_tensor(DataType::kInt32, {1, 1, 2, 2}, {1, 2, 3, 4}))
      .missing()
      .input(f32({4}, {1, 1, 2, 2}))
      .text("mode", "linear");
  EXPECT_THROW(node.prepare(), UnsupportedError);
}

TEST(Resize, ScalesAndSizesTogetherAreAnError) {
  NodeCase node("Resize", 13);
  node.input(f32({1, 1, 2, 2}, {1, 2, 3, 4}))
      .missing()
      .input(f32({4}, {1, 1, 2, 2}))
      .input(i64({4}, {1, 1, 4, 4}));
  EXPECT_NE(error_of([&] { node.prepare(); }).find("only one of scales and sizes"),
            std::string::npos);
}

TEST(Upsample, NearestScalesInputAtOpset9) {
  NodeCase node("Upsample", 9);
  node.input(f32({1, 1, 2, 2}, {1, 2, 3, 4})).input(f32({4}, {1, 1, 2, 3}));
  expect_tensor(node.run_one(), {1, 1, 4, 6},
                {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4});
}

TEST(Upsample, LinearScalesAttributeAtOpset7) {
  NodeCase node("Upsample", 7);
  node.input(f32({1, 1, 2, 2}, {1, 2, 3, 4}));
  node.attr("scales", Attribute::of_floats({1, 1, 2, 2})).text("mode", "linear");
  expect_tensor(node.run_one(), {1, 1, 4, 4},
                {1, 1.5, 2, 2, 2, 2.5, 3, 3, 3, 3.5, 4, 4, 3, 3.5, 4, 4}, 1e-6);
}

// ---- Through the executor -----------------------------------------------------------------

TEST(ShapeKernelsInExecutor, TransposeReshapeSliceChain) {
  Graph graph = parse_graph(R"(graph g [ai.onnx=13] (%x: f32[2,3,2]) {
  @shape: i64[2] = [-1, 3]
  @starts: i64[1] = [1]
  @ends: i64[1] = [3]
  %t = Transpose[perm=[0, 2, 1]](%x)
  %r = Reshape(%t, @shape)
  %y = Slice(%r, @starts, @ends)
  return %y
})");
  Executor executor(graph);
  std::vector<Tensor> out = executor.run({{"x", iota({2, 3, 2})}});
  ASSERT_EQ(out.size(), 1u);
  // Transposed rows: [0,2,4], [1,3,5], [6,8,10], [7,9,11]; the slice keeps rows 1 and 2.
  expect_tensor(out[0], {2, 3}, {1, 3, 5, 6, 8, 10});
}

}  // namespace
}  // namespace cleave
