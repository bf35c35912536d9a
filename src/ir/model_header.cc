// What a model says about itself besides its values and nodes, carried to graphs made from it.
#include "ir/model_header.h"

namespace cleave {

Graph empty_graph_like(const Graph& model) {
  Graph graph;
  graph.name = model.name;
  graph.opset_imports = model.opset_imports;
  graph.ir_version = model.ir_version;
  graph.producer_name = model.producer_name;
  graph.doc_string = model.doc_string;
  graph.metadata = model.metadata;
  return graph;
}

}  // namespace cleave
