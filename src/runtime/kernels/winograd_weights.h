// oneDNN's Winograd weight layouts written by cleave's own transform, in place of oneDNN's reorder.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

namespace cleave {

/// Writes the 3x3 float weights `plain` (laid out as `from`: oihw, or goihw of one group) into
/// `to`, one of oneDNN 2.6's f32 Winograd weight layouts (aaOio, aaOBiOo, OBaaIBOIio), bit for
/// bit as oneDNN's own reorder would. Returns false, writing nothing, for any other pair of
/// layouts (the caller reorders then). oneDNN's reorder into these layouts reads the weights
/// across output channels with a large stride and runs its tiny loops as scalar code: a
/// 512x512 3x3 weight took 65-70 ms of one core, most of the first run of a Winograd model.
bool transform_winograd_weights(const float* plain, const dnnl::memory::desc& from,
                                const dnnl::memory::desc& to, void* destination);

}  // namespace cleave
