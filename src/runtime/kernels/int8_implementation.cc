// The choice between oneDNN's AMX and non-AMX int8 implementations, by problem size.
#include "runtime/kernels/int8_implementation.h"

#include <fmt/core.h>

#include <algorithm>
#include <cstdlib>

namespace cleave {

namespace {

// Multiply-adds per thread from which an AMX implementation wins, by family, measured per
// node on the held-out int8 models (ONEDNN_VERBOSE times under CLEAVE_INT8_AMX=always and never,
// bench/kernels/int8_amx_shapes.py; docs/results/heldout-speed.md, 2026-11-30). jit_1x1 lost on
// all but one of 90 problems up to 9.8 M at 1 and 2 threads; jit (strided 1x1s, grouped and
// large-kernel convolutions) lost up to 8.4 M (1.1-3.4x) and won from 31.5 M at 1 thread and
// 15.8 M per thread at 2; the others (brgconv, brgconv_1x1, brg) won from about 3 M.
constexpr int64_t kJit1x1MinMacs = 32'000'000;
constexpr int64_t kJitMinMacs = 12'000'000;
constexpr int64_t kAmxMinMacs = 3'000'000;
// The brgemm convolutions also won below 3 M where each output sums 128 or more products
// (squeezenet1_1_int8's squeeze and expand 1x1s of 0.9-2 M: 0.65-0.89 of VNNI's time at 1
// thread, 0.73-0.86 at 2, where the per-thread bound had sent them to VNNI), and lost or tied
// at sums of 16-64 (0.9-1.2 at 0.5-2.6 M) and on every product under 0.8 M.
constexpr int64_t kBrgemmConvMinReduction = 128;
constexpr int64_t kBrgemmConvMinMacs = 800'000;

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
  if (name.starts_with("jit_1x1:")) return per_thread >= kJit1x1MinMacs;
  if (name.starts_with("jit:")) return per_thread >= kJitMinMacs;
  const bool brgemm_conv = name.starts_with("brgconv:") || name.starts_with("brgconv_1x1:");
  if (brgemm_conv && work.reduction >= kBrgemmConvMinReduction && work.macs >= kBrgemmConvMinMacs)
    return true;
  return per_thread >= kAmxMinMacs;
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
