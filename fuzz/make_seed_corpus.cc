// Writes the fuzzer's seed models (small, valid, covering weights, bodies and odd types).
#include <cstdio>
#include <string>

#include "ir/text.h"
#include "onnx/onnx_export.h"
#include "onnx/onnx_import.h"

namespace {

const char* kConv = R"(graph conv [ai.onnx=17] (%x: f32[1,1,3,3]) {
  @w: f32[1,1,2,2] = [1.0, -1.0, 0.5, 2.0]
  @b: f32[1] = [0.25]
  %y: f32[1,1,2,2] = "conv" Conv[kernel_shape=[2,2], strides=[1,1]](%x, @w, @b)
  %z: f32[1,4] = "flat" Flatten[axis=1](%y)
  %s: i64[2] = "shape" Shape(%z)
  @n: i64[1] = [4]
  %r: f32[4] = Reshape(%z, @n)
  return %r, %s
}
)";

const char* kIf = R"(graph branchy [ai.onnx=13] (%c: bool[], %x: f32[N,2]) {
  %y: f32[N,2] = "choose" If[else_branch=graph e [ai.onnx=13] () {
    %n: f32[N,2] = Neg(%x)
    return %n
  }, then_branch=graph t [ai.onnx=13] () {
    %p: f32[N,2] = Relu(%x)
    return %p
  }](%c)
  %t: f32[2,N] = Transpose[perm=[1,0]](%y)
  return %t
}
)";

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_FOLDER\n", argv[0]);
    return 2;
  }
  std::string folder = argv[1];
  try {
    cleave::export_onnx(cleave::parse_graph(kConv), folder + "/conv.onnx");
    cleave::export_onnx(cleave::parse_graph(kIf), folder + "/if.onnx");
    // A sequence-typed output and an omitted optional output, built from the protobuf API.
    onnx::ModelProto model =
        cleave::to_onnx(cleave::parse_graph(R"(graph seq [ai.onnx=17] (%x: f32[3]) {
  %a: f32[3] = Relu(%x)
  return %a
}
)"));
    auto* graph = model.mutable_graph();
    auto* node = graph->add_node();
    node->set_op_type("SequenceConstruct");
    node->add_input("a");
    node->add_input("x");
    node->add_output("s");
    auto* split = graph->add_node();
    split->set_op_type("Dropout");
    split->add_input("a");
    split->add_output("dropped");
    split->add_output("");
    auto* out = graph->add_output();
    out->set_name("s");
    out->mutable_type()
        ->mutable_sequence_type()
        ->mutable_elem_type()
        ->mutable_tensor_type()
        ->set_elem_type(1);
    auto* dropped = graph->add_output();
    dropped->set_name("dropped");
    dropped->mutable_type()->mutable_tensor_type()->set_elem_type(1);
    dropped->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(3);
    cleave::write_model_file(model, folder + "/sequence.onnx");
    cleave::import_onnx(folder + "/sequence.onnx");  // Must be valid for the importer too.
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
