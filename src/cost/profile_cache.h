// Whether a cached profile is reused: read and checked against the host's speed now.
#pragma once

#include <optional>
#include <string>

#include "cost/cost_table.h"

namespace cleave {

/// The table cached at `path` for `graph`, or nothing when there is none that may be used:
/// none there, options.use_cache off, CLEAVE_PROFILE_REUSE=never, a damaged entry or one of
/// another graph, or (ProfileReuse::kCheck) an entry with no recorded conditions or whose
/// reference kernel time differs from options.host_conditions' now by more than
/// options.reference_tolerance. `use` says which ("measured", "reused" or "re-measured", and
/// why); an entry set aside is told through options.progress, or on stderr without it.
std::optional<CostTable> read_cached_profile(const std::string& path, const Graph& graph,
                                             const ProfileOptions& options, ProfileCacheUse& use);

}  // namespace cleave
