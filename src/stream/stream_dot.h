// Graphviz drawing of a stream program: clusters for pipelines and split-joins.
#pragma once

#include <string>

#include "stream/stream_ir.h"

namespace cleave {

/// DOT text: one box per filter (name, rates, op), diamonds for splitters and joiners, a
/// dashed cluster per pipeline and split-join, edges along the channels.
std::string stream_to_dot(const Stream& root);

}  // namespace cleave
