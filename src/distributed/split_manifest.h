// Reading a `cleave split` folder for its ranks: the one manifest, sub-models confined to it.
#pragma once

#include <string>

#include "spatial/manifest.h"

namespace cleave {

/// Reads DIR/manifest.json with read_manifest (spatial/manifest.h), which checks every field,
/// then confines every run step's sub-model to DIR (also through symbolic links): its `model`
/// becomes the absolute path of that file. Throws Error naming the file and the field.
SplitManifest read_split_manifest(const std::string& folder);

}  // namespace cleave
