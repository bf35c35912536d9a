// In-place Concat: slice geometry, which inputs are placed, and bitwise-equal runs with it.
#include "runtime/concat_placement.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ir/text.h"
#include "runtime/executor.h"
#include "runtime/kernels/dnnl_util.h"
#include "support/error.h"

namespace cleave {
namespace {

using Tag = dnnl::memory::format_tag;
using Type = dnnl::memory::data_type;

dnnl::memory::desc layout(dnnl::memory::dims dims, Tag tag) {
  return dnnl::memory::desc(dims, Type::f32, tag);
}

// ---- slice_byte_offset --------------------------------------------------------------------

TEST(SliceByteOffset, PlainChannelSliceOfBatchOne) {
  auto start = slice_byte_offset(layout({1, 3, 4, 5}, Tag::abcd), layout({1, 8, 4, 5}, Tag::abcd),
                                 1, 2, false);
  ASSERT_TRUE(start);
  EXPECT_EQ(*start, 2u * 4 * 5 * sizeof(float));
}

TEST(SliceByteOffset, BlockedSliceStartingOnABlock) {
  auto start = slice_byte_offset(layout({1, 16, 3, 3}, Tag::aBcd16b),
                                 layout({1, 48, 3, 3}, Tag::aBcd16b), 1, 16, false);
  ASSERT_TRUE(start);
  EXPECT_EQ(*start, 16u * 3 * 3 * sizeof(float));
}

TEST(SliceByteOffset, BlockedSliceInsideABlockIsRefused) {
  EXPECT_FALSE(slice_byte_offset(layout({1, 8, 3, 3}, Tag::aBcd16b),
                                 layout({1, 24, 3, 3}, Tag::aBcd16b), 1, 8, false));
}

TEST(SliceByteOffset, PaddedBlockOnlyAtTheEnd) {
  // 40 channels = 2 full blocks + 8 padded to 16: the padded part may only be the last.
  auto tail = layout({1, 8, 2, 2}, Tag::aBcd16b);
  auto whole = layout({1, 40, 2, 2}, Tag::aBcd16b);
  EXPECT_EQ(slice_byte_offset(tail, whole, 1, 32, true), 32u * 2 * 2 * sizeof(float));
  EXPECT_FALSE(slice_byte_offset(tail, layout({1, 56, 2, 2}, Tag::aBcd16b), 1, 32, false));
}

TEST(SliceByteOffset, ChannelsLastSlicesInterleave) {
  EXPECT_FALSE(slice_byte_offset(layout({1, 16, 3, 3}, Tag::acdb), layout({1, 32, 3, 3}, Tag::acdb),
                                 1, 16, false));
}

TEST(SliceByteOffset, BatchTwoSlicesAreNotContiguous) {
  EXPECT_FALSE(slice_byte_offset(layout({2, 3, 4, 4}, Tag::abcd), layout({2, 6, 4, 4}, Tag::abcd),
                                 1, 3, false));
}

TEST(SliceByteOffset, DifferentLayoutsAreRefused) {
  EXPECT_FALSE(slice_byte_offset(layout({1, 16, 3, 3}, Tag::abcd),
                                 layout({1, 32, 3, 3}, Tag::aBcd16b), 1, 0, false));
}

// ---- place_concat_inputs on text graphs ---------------------------------------------------

// Places with every node output in the plain layout its declared shape gives, and prints
// "value -> root @ byte offset" per placed value; `may_place` as place_concat_inputs's.
std::string placements(const char* text,
                       const std::function<bool(const Node&, ValueId)>& may_place = {}) {
  Graph graph = parse_graph(text);
  std::map<ValueId, OutputSpec> specs;
  for (NodeId node : graph.node_ids()) {
    for (ValueId output : graph.node(node).outputs) {
      OutputSpec spec;
      spec.dtype = graph.value(output).dtype;
      spec.shape = graph.value(output).shape.sizes();
      specs[output] = spec;
    }
  }
  ConcatPlacement placement = place_concat_inputs(
      graph,
      [&](ValueId value) {
        auto it = specs.find(value);
        return it == specs.end() ? nullptr : &it->second;
      },
      may_place ? [&](const Node& concat, ValueId value) { return may_place(concat, value); }
                : std::function<bool(const Node&, ValueId)>());
  std::string out;
  for (std::size_t value = 0; value < placement.slots.size(); ++value) {
    const auto& slot = placement.slots[value];
    if (!slot || slot->root == static_cast<ValueId>(value)) continue;
    out += graph.value(static_cast<ValueId>(value)).name + " -> " + graph.value(slot->root).name +
           " @" + std::to_string(slot->byte_offset) + "\n";
  }
  return out;
}

TEST(ConcatPlacement, ChannelJoinOfTwoProducers) {
  EXPECT_EQ(placements(R"(graph main [ai.onnx=17] (%x: f32[1,2,2,2]) {
  %a: f32[1,2,2,2] = Relu(%x)
  %b: f32[1,2,2,2] = Sigmoid(%x)
  %cat: f32[1,4,2,2] = Concat[axis=1](%a, %b)
  return %cat
})"),
            "a -> cat @0\nb -> cat @32\n");
}

const char* kChannelJoin = R"(graph main [ai.onnx=17] (%x: f32[1,2,2,2]) {
  %a: f32[1,2,2,2] = Relu(%x)
  %b: f32[1,2,2,2] = Sigmoid(%x)
  %cat: f32[1,4,2,2] = Concat[axis=1](%a, %b)
  return %cat
})";

// An input refused by may_place is left for the Concat to copy, the others still placed.
TEST(ConcatPlacement, AnInputMayPlaceRefusesIsCopiedAndTheOthersPlaced) {
  Graph names = parse_graph(kChannelJoin);
  EXPECT_EQ(placements(kChannelJoin,
                       [&](const Node&, ValueId value) { return names.value(value).name != "a"; }),
            "b -> cat @32\n");
}

// Asked with the Concat's own output, may_place keeps the Concat (run elsewhere) from holding
// any input.
TEST(ConcatPlacement, AConcatMayPlaceRefusesHoldsNoInput) {
  EXPECT_EQ(placements(kChannelJoin, [](const Node& concat,
                                        ValueId value) { return value != concat.outputs[0]; }),
            "");
}

// ---- concat_inputs_received_in_place: the one answer of the MPI executor and the simulator -

bool received_in_place(const char* text) {
  Graph graph = parse_graph(text);
  for (NodeId node : graph.node_ids()) {
    if (graph.node(node).op_type == "Concat")
      return concat_inputs_received_in_place(graph, graph.node(node));
  }
  ADD_FAILURE() << "no Concat";
  return false;
}

TEST(ConcatReceivedInPlace, BatchOneChannelJoinOfWholeBlocks) {
  // 32 + 16 channels: whole 16-channel blocks, and the last input may be any size.
  EXPECT_TRUE(received_in_place(
      R"(graph main [ai.onnx=17] (%x: f32[1,32,2,2], %y: f32[1,16,2,2], %z: f32[1,3,2,2]) {
  %cat: f32[1,51,2,2] = Concat[axis=1](%x, %y, %z)
  return %cat
})"));
}

TEST(ConcatReceivedInPlace, AnInputEndingInsideABlockCopies) {
  // In a 16-channel blocked layout the second input would start inside a block.
  EXPECT_FALSE(received_in_place(R"(graph main [ai.onnx=17] (%x: f32[1,8,2,2], %y: f32[1,16,2,2]) {
  %cat: f32[1,24,2,2] = Concat[axis=1](%x, %y)
  return %cat
})"));
}

TEST(ConcatReceivedInPlace, BatchTwoCopies) {
  EXPECT_FALSE(received_in_place(R"(graph main [ai.onnx=17] (%x: f32[2,16,2,2], %y: f32[2,16,2,2]) {
  %cat: f32[2,32,2,2] = Concat[axis=1](%x, %y)
  return %cat
})"));
}

TEST(ConcatReceivedInPlace, NegativeAxisAndOtherTypes) {
  EXPECT_TRUE(received_in_place(R"(graph main [ai.onnx=17] (%x: f32[1,1,16], %y: f32[1,1,5]) {
  %cat: f32[1,1,21] = Concat[axis=-1](%x, %y)
  return %cat
})"));
  EXPECT_FALSE(received_in_place(R"(graph main [ai.onnx=17] (%x: i64[1,16], %y: i64[1,16]) {
  %cat: i64[1,32] = Concat[axis=1](%x, %y)
  return %cat
})"));
}

// Sets an environment variable for one scope.
class ScopedEnvironment {
 public:
  ScopedEnvironment(const char* name, const char* value) : name_(name) { ::setenv(name, value, 1); }
  ~ScopedEnvironment() { ::unsetenv(name_); }

 private:
  const char* name_;
};

TEST(ConcatPlacement, SwitchedOffByTheEnvironmentEveryConcatCopies) {
  ScopedEnvironment off("CLEAVE_CONCAT_IN_PLACE", "0");
  EXPECT_EQ(placements(kChannelJoin), "");
}

TEST(ConcatPlacement, SwitchedOnByTheEnvironmentAsByDefault) {
  ScopedEnvironment on("CLEAVE_CONCAT_IN_PLACE", "1");
  EXPECT_EQ(placements(kChannelJoin), "a -> cat @0\nb -> cat @32\n");
}

TEST(ConcatPlacement, AnEnvironmentValueOtherThanZeroOrOneIsRefusedNamingTheVariable) {
  ScopedEnvironment bad("CLEAVE_CONCAT_IN_PLACE", "no");
  try {
    placements(kChannelJoin);
    FAIL() << "CLEAVE_CONCAT_IN_PLACE=no was taken";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("CLEAVE_CONCAT_IN_PLACE is 'no': expected 0"),
              std::string::npos)
        << e.what();
  }
}

TEST(ConcatPlacement, BatchTwoStaysACopy) {
  EXPECT_EQ(placements(R"(graph main [ai.onnx=17] (%x: f32[2,2,2,2]) {
  %a: f32[2,2,2,2] = Relu(%x)
  %b: f32[2,2,2,2] = Sigmoid(%x)
  %cat: f32[2,4,2,2] = Concat[axis=1](%a, %b)
  return %cat
})"),
            "");
}

TEST(ConcatPlacement, GraphInputIsCopiedAndTheOthersPlaced) {
  EXPECT_EQ(placements(R"(graph main [ai.onnx=17] (%x: f32[1,2,2,2]) {
  %a: f32[1,2,2,2] = Relu(%x)
  %cat: f32[1,4,2,2] = Concat[axis=1](%x, %a)
  return %cat
})"),
            "a -> cat @32\n");
}

TEST(ConcatPlacement, DenseBlockSharesTheLastConcatsBuffer) {
  // c1 = [x0 x1] and c2 = [x0 x1 x2]: every value, c1 included, lives inside c2.
  EXPECT_EQ(placements(R"(graph main [ai.onnx=17] (%x: f32[1,2,2,2]) {
  %x0: f32[1,2,2,2] = Relu(%x)
  %x1: f32[1,2,2,2] = Sigmoid(%x0)
  %c1: f32[1,4,2,2] = Concat[axis=1](%x0, %x1)
  %x2: f32[1,4,2,2] = Relu(%c1)
  %c2: f32[1,8,2,2] = Concat[axis=1](%x0, %x1, %x2)
  return %c2
})"),
            "x0 -> c2 @0\nx1 -> c2 @32\nc1 -> c2 @0\nx2 -> c2 @64\n");
}

TEST(ConcatPlacement, ValueReadByTwoConcatsLivesInTheLaterOne) {
  // The first Concat orders its inputs differently, so it cannot be a view: it copies.
  EXPECT_EQ(placements(R"(graph main [ai.onnx=17] (%x: f32[1,2,2,2]) {
  %a: f32[1,2,2,2] = Relu(%x)
  %b: f32[1,2,2,2] = Sigmoid(%x)
  %c1: f32[1,4,2,2] = Concat[axis=1](%b, %a)
  %c2: f32[1,4,2,2] = Concat[axis=1](%a, %b)
  %y: f32[1,8,2,2] = Concat[axis=1](%c1, %c2)
  return %y
})"),
            "a -> y @64\nb -> y @96\nc1 -> y @0\nc2 -> y @64\n");
}

TEST(ConcatPlacement, NestedConcatChainsToTheOutermostBuffer) {
  EXPECT_EQ(placements(R"(graph main [ai.onnx=17] (%x: f32[1,1,2,2]) {
  %a: f32[1,1,2,2] = Relu(%x)
  %b: f32[1,1,2,2] = Sigmoid(%x)
  %inner: f32[1,2,2,2] = Concat[axis=1](%a, %b)
  %c: f32[1,1,2,2] = Tanh(%x)
  %outer: f32[1,3,2,2] = Concat[axis=1](%c, %inner)
  return %outer
})"),
            "a -> outer @16\nb -> outer @32\ninner -> outer @16\nc -> outer @0\n");
}

TEST(ConcatPlacement, RepeatedInputIsPlacedOnce) {
  EXPECT_EQ(placements(R"(graph main [ai.onnx=17] (%x: f32[1,1,2,2]) {
  %a: f32[1,1,2,2] = Relu(%x)
  %cat: f32[1,2,2,2] = Concat[axis=1](%a, %a)
  return %cat
})"),
            "a -> cat @0\n");
}

// ---- concat_input_offsets: where each input's slice starts ---------------------------------

// The offsets of the Concat writing `output`, every value in the plain layout of its shape.
std::optional<std::vector<std::optional<std::size_t>>> offsets_of(const char* text,
                                                                  const std::string& output) {
  Graph graph = parse_graph(text);
  std::map<ValueId, OutputSpec> specs;
  for (NodeId node : graph.node_ids()) {
    for (ValueId value : graph.node(node).outputs) {
      specs[value].dtype = graph.value(value).dtype;
      specs[value].shape = graph.value(value).shape.sizes();
    }
  }
  const ValueId concat = *graph.find_value(output);
  return concat_input_offsets(graph, graph.node(graph.value(concat).producer), specs.at(concat),
                              [&](ValueId value) {
                                auto it = specs.find(value);
                                return it == specs.end() ? nullptr : &it->second;
                              });
}

TEST(ConcatInputOffsets, EachInputsSliceAndNoneForAnEmptyOne) {
  const auto offsets = offsets_of(R"(graph main [ai.onnx=17] (%x: f32[1,2,2,2]) {
  %a: f32[1,2,2,2] = Relu(%x)
  %e: f32[1,0,2,2] = Relu(%x)
  %b: f32[1,2,2,2] = Sigmoid(%x)
  %cat: f32[1,6,2,2] = Concat[axis=-3](%a, %e, %b, %a)
  return %cat
})",
                                  "cat");
  ASSERT_TRUE(offsets);
  ASSERT_EQ(offsets->size(), 4u);
  EXPECT_EQ((*offsets)[0], 0u);
  EXPECT_FALSE((*offsets)[1]);
  EXPECT_EQ((*offsets)[2], 32u);
  EXPECT_EQ((*offsets)[3], 64u);
}

TEST(ConcatInputOffsets, NoneWhereTheSlicesAreNotContiguous) {
  EXPECT_FALSE(offsets_of(R"(graph main [ai.onnx=17] (%x: f32[2,2,2,2]) {
  %a: f32[2,2,2,2] = Relu(%x)
  %cat: f32[2,4,2,2] = Concat[axis=1](%a, %x)
  return %cat
})",
                          "cat"));
  EXPECT_FALSE(offsets_of(R"(graph main [ai.onnx=17] (%x: f32[1,2,2,2]) {
  %a: f32[1,2,2,2] = Relu(%x)
  %r: f32[1,2,2,2] = Sigmoid(%a)
  return %r
})",
                          "r"));
}

// ---- the executor with and without it -----------------------------------------------------

std::vector<float> pseudo_random(std::size_t count, uint32_t seed) {
  std::vector<float> values(count);
  uint32_t state = seed * 2654435761u + 7u;
  for (float& v : values) {
    state = state * 1664525u + 1013904223u;
    v = static_cast<float>(state >> 8) / static_cast<float>(1u << 24) - 0.5f;
  }
  return values;
}

Graph with_weights(const char* text) {
  Graph graph = parse_graph(text);
  uint32_t seed = 1;
  for (ValueId id : graph.initializers()) {
    TensorData& data = *graph.value(id).initializer;
    data = TensorData::from(DataType::kFloat, data.dims,
                            pseudo_random(static_cast<std::size_t>(data.element_count()), seed++));
  }
  return graph;
}

// Three runs (the first prepares kernels and plans placement); returns the last outputs.
std::vector<std::vector<float>> run_three_times(const Graph& graph, bool in_place, int* placed) {
  ExecutorOptions options;
  options.in_place_concat = in_place;
  Executor executor(graph, options);
  const Value& input = graph.value(graph.inputs().front());
  Tensor x = Tensor::allocate(DataType::kFloat, input.shape.sizes());
  std::vector<float> values = pseudo_random(static_cast<std::size_t>(x.element_count()), 99);
  std::memcpy(x.raw(), values.data(), values.size() * sizeof(float));
  std::vector<Tensor> outputs;
  for (int run = 0; run < 3; ++run) outputs = executor.run({{input.name, x}});
  *placed = executor.stats().concat_inputs_in_place;
  std::vector<std::vector<float>> result;
  for (const Tensor& output : outputs) {
    auto span = output.values<float>();
    result.emplace_back(span.begin(), span.end());
  }
  return result;
}

void expect_same_outputs_in_place(const char* text) {
  Graph graph = with_weights(text);
  int placed_copying = 0, placed = 0;
  auto copied = run_three_times(graph, false, &placed_copying);
  auto in_place = run_three_times(graph, true, &placed);
  EXPECT_EQ(placed_copying, 0);
  EXPECT_GT(placed, 0);
  ASSERT_EQ(copied.size(), in_place.size());
  for (std::size_t i = 0; i < copied.size(); ++i) {
    ASSERT_EQ(copied[i].size(), in_place[i].size());
    EXPECT_EQ(std::memcmp(copied[i].data(), in_place[i].data(), copied[i].size() * sizeof(float)),
              0)
        << "output " << i;
  }
}

TEST(InPlaceConcat, BlockedDenseBlockEqualsCopyingBitwise) {
  // Convolutions of a 3-channel image write oneDNN's 16-channel blocks (channels-last is
  // what most others pick, and its slices interleave), so their outputs are placed blocked.
  expect_same_outputs_in_place(R"(graph main [ai.onnx=17] (%x: f32[1,3,32,32]) {
  @w0: f32[32,3,3,3]
  @w1: f32[16,3,3,3]
  @w2: f32[16,3,3,3]
  @w3: f32[8,64,1,1]
  %x0 = Conv[pads=[1,1,1,1]](%x, @w0)
  %x1 = Conv[pads=[1,1,1,1]](%x, @w1)
  %c1 = Concat[axis=1](%x0, %x1)
  %x2 = Conv[pads=[1,1,1,1]](%x, @w2)
  %c2 = Concat[axis=1](%x0, %x1, %x2)
  %y = Conv(%c2, @w3)
  %p = MaxPool[kernel_shape=[2,2], strides=[2,2]](%c1)
  return %y, %p
})");
}

TEST(InPlaceConcat, PlainElementwiseJoinEqualsCopyingBitwise) {
  expect_same_outputs_in_place(R"(graph main [ai.onnx=17] (%x: f32[1,3,5,5]) {
  %a = Relu(%x)
  %b = Sigmoid(%x)
  %c = Concat[axis=1](%a, %x, %b)
  %d = Tanh(%c)
  %e = Concat[axis=1](%d, %a)
  return %e
})");
}

}  // namespace
}  // namespace cleave
