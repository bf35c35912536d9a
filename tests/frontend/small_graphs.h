// Small graphs in the text form that several of auto's tests plan with fixed costs.
#pragma once

#include "ir/graph.h"
#include "ir/text.h"

namespace cleave::testing {

/// Four independent branches of equal weight between one input and one sum: two workers
/// beat one.
inline Graph four_branches() {
  return parse_graph(R"(graph g (%x: f32[1,64]) {
  %a = Relu(%x)
  %b = Sigmoid(%x)
  %c = Tanh(%x)
  %d = Exp(%x)
  %ab = Add(%a, %b)
  %cd = Add(%c, %d)
  %y = Add(%ab, %cd)
  return %y
}
)");
}

}  // namespace cleave::testing
