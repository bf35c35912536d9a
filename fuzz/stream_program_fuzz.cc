// libFuzzer target: arbitrary bytes into the stream-program JSON reader, which may only fail
// with cleave::Error.
//
// A program that reads (and verifies, models aside) is flattened and scheduled, and its JSON
// form must read back as the same program.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "stream/schedule.h"
#include "stream/stream_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  cleave::StreamLoadOptions options;
  options.load_models = false;
  try {
    const cleave::StreamProgram program =
        cleave::parse_stream_program(text, "fuzz.json", "/nonexistent", options);
    const std::string json = cleave::stream_to_json(program.root);
    const cleave::StreamProgram again =
        cleave::parse_stream_program(json, "fuzz round trip", "/nonexistent", options);
    if (cleave::stream_to_json(again.root) != json) {
      std::fprintf(stderr, "stream program round trip changed the program\n");
      std::abort();
    }
    const cleave::StreamGraph graph = cleave::flatten_stream(program.root);
    const cleave::StreamSchedule schedule = cleave::schedule_stream(graph, program.origin);
    cleave::iteration_firings(schedule, program.origin);
    cleave::closed_form_rates(program.root);
  } catch (const cleave::Error&) {
    // Rejected with a message: what bad input should get.
  }
  return 0;
}
