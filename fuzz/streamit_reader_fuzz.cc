// libFuzzer target: arbitrary bytes into the StreamIt text reader of `codegen --stream`,
// which may only fail with cleave::Error.
//
// Text that reads is verified as a program file would be (models aside), then scheduled.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "codegen/streamit_reader.h"
#include "stream/schedule.h"
#include "stream/stream_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const cleave::StreamitText read =
        cleave::parse_streamit(text, "fuzz.cc", "/nonexistent", /*load_models=*/false);
    cleave::verify_stream(read.program.root, read.program.origin);
    const cleave::StreamGraph graph = cleave::flatten_stream(read.program.root);
    cleave::schedule_stream(graph, read.program.origin);
  } catch (const cleave::Error&) {
    // Rejected with a message: what bad input should get.
  }
  return 0;
}
