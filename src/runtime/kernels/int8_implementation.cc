// The choice between oneDNN's AMX and non-AMX int8 implementations, by problem size.
#include "runtime/kernels/int8_implementation.h"

#include <fmt/core.h>

#include <algorithm>
#include <cstdlib>

namespace cleave {

namespace {

// Multiply-adds per thread from which an AMX implementation wins, measured per node with
// `cleave profile` (1 thread) against the same models capped at AVX512_CORE_VNNI. jit_1x1 lost
// on every node seen, up to 9.8 M (efficientnet_b1's largest 1x1, 193 us against 153 us);
// the others won from about 3 M (squeezenet's 3x3 expands at 4-9 M: 9-30 us against 16-38 us)
// and lost below it (resnet18's 2.1 M downsamples: 34 us against 20 us; every 1-2 row QGemm).
constexpr int64_t kJit1x1MinMacs = 32'000'000;
constexpr int64_t kAmxMinMacs = 3'000'000;

bool is_reference(std::string_view name) {
  return name.starts_with("ref");
}

}  // namespace

bool is_amx_implementation(std::string_view name) {
  return name.find("_amx") != std::string_view::npos;
}

bool amx_pays_off(std::string_view name, const Int8Work& work) {
  if (!is_amx_implementation(name)) return true;
  const int64_t per_thread = work.macs / std::max(work.threads, 1);
  return per_thread >= (name.starts_with("jit_1x1:") ? kJit1x1MinMacs : kAmxMinMacs);
}

AmxPolicy parse_amx_policy(std::string_view text, std::string_view origin) {
  if (text.empty() || text == "auto") return AmxPolicy::kAuto;
  if (text == "always") return AmxPolicy::kAlways;
  if (text == "never") return AmxPolicy::kNever;
  throw Error(fmt::format(
      "{}: '{}' is no int8 AMX policy: expected auto (AMX where the problem is large enough), "
      "always (oneDNN's first choice) or never",
      origin, text));
}

AmxPolicy amx_policy_from_environment() {
  const char* text = std::getenv("CLEAVE_INT8_AMX");
  return text ? parse_amx_policy(text, "CLEAVE_INT8_AMX") : AmxPolicy::kAuto;
}

std::size_t chosen_implementation(const std::vector<std::string>& names, const Int8Work& work,
                                  AmxPolicy policy) {
  if (names.empty() || !is_amx_implementation(names[0]) || policy == AmxPolicy::kAlways) return 0;
  if (policy == AmxPolicy::kAuto && amx_pays_off(names[0], work)) return 0;
  for (std::size_t i = 1; i < names.size(); ++i) {
    if (!is_amx_implementation(names[i]) && !is_reference(names[i])) return i;
  }
  return 0;
}

}  // namespace cleave
