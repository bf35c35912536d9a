// libFuzzer target: arbitrary bytes into the split manifest reader (spatial/manifest.h, which
// `cleave run-split` and `cleave bench --split` read), which may only fail with cleave::Error.
//
// Each input is parsed as JSON (bytes that are not JSON stop there) and read as a manifest. A
// manifest that reads must survive writing and reading back unchanged in its steps.
#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "spatial/manifest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  nlohmann::json json = nlohmann::json::parse(bytes, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return 0;
  try {
    const cleave::SplitManifest manifest = cleave::manifest_from_json(json, "fuzz manifest");
    const cleave::SplitManifest again =
        cleave::manifest_from_json(cleave::manifest_to_json(manifest), "fuzz round trip");
    bool same = again.machines == manifest.machines &&
                again.outputs.size() == manifest.outputs.size() &&
                again.inputs.size() == manifest.inputs.size();
    for (int m = 0; same && m < manifest.machines; ++m)
      same = again.steps[m].size() == manifest.steps[m].size();
    if (!same) {
      std::fprintf(stderr, "manifest round trip changed the manifest\n");
      std::abort();
    }
  } catch (const cleave::Error&) {
    // Rejected with a message: what bad input should get.
  }
  return 0;
}
