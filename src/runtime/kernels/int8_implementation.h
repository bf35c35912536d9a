// Which of oneDNN's implementations an int8 convolution or matrix product runs: an AMX one only
// where the problem is large enough to earn AMX's fixed cost per call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/kernels/dnnl_util.h"

namespace cleave {

/// The size of an int8 product as the choice sees it.
struct Int8Work {
  int64_t macs = 0;  ///< Multiply-adds of one run (all groups, all rows).
  int threads = 1;   ///< Intra-op threads that share them.
  /// Multiply-adds summed into each output: input channels per group x taps (a convolution),
  /// K (a product); 0 when unknown.
  int64_t reduction = 0;
};

/// Whether an implementation name ("jit_1x1:avx512_core_amx_int8") is one of oneDNN's AMX ones.
bool is_amx_implementation(std::string_view name);

/// Whether AMX implementation `name` beats its non-AMX alternative on `work`, by the rule
/// calibrated on an AMX Xeon per convolution and product of the held-out int8 models
/// (docs/results/heldout-speed.md, 2026-11-29 and 2026-11-30): AMX's fixed cost a call differs
/// by implementation family, so each family has its own bound on multiply-adds per thread
/// (jit_1x1 32 M, jit 12 M, the others 3 M); the brgemm convolutions (brgconv, brgconv_1x1)
/// also take AMX from 0.8 M multiply-adds in all where each output sums at least 128 (two
/// rows of an AMX tile's 64 int8 lanes), whatever the thread count.
bool amx_pays_off(std::string_view name, const Int8Work& work);

/// What CLEAVE_INT8_AMX asks: kAuto (unset or "auto") applies amx_pays_off, kAlways keeps
/// oneDNN's first choice, kNever skips AMX wherever another implementation exists.
enum class AmxPolicy { kAuto, kAlways, kNever };
/// Parses a CLEAVE_INT8_AMX value; throws Error naming `origin` and the values accepted.
AmxPolicy parse_amx_policy(std::string_view text, std::string_view origin);
AmxPolicy amx_policy_from_environment();

/// Index into `names` (oneDNN's implementations in its order, best first) of the one to run:
/// 0 unless names[0] is AMX and the policy says it does not pay off, then the first that is
/// neither AMX nor a reference one ("ref:any"), or 0 when there is none. On a CPU without AMX
/// names[0] is never AMX, so the choice is oneDNN's.
std::size_t chosen_implementation(const std::vector<std::string>& names, const Int8Work& work,
                                  AmxPolicy policy);

/// The primitive descriptor `make()` returns, advanced to chosen_implementation's pick under
/// the environment's policy. `make` is called again when the pick is not the first (a
/// descriptor's iterator only moves forward). oneDNN 2.x's iterator keeps a pointer to the
/// operation descriptor `make` builds from: that must outlive this call (a temporary one
/// crashed next_impl).
template <typename Make>
auto with_chosen_implementation(const Make& make, const Int8Work& work) {
  auto descriptor = make();
  std::vector<std::string> names{implementation_name(descriptor)};
  if (!is_amx_implementation(names[0])) return descriptor;
  while (descriptor.next_impl()) names.push_back(implementation_name(descriptor));
  const std::size_t index = chosen_implementation(names, work, amx_policy_from_environment());
  descriptor = make();
  for (std::size_t i = 0; i < index; ++i) descriptor.next_impl();
  return descriptor;
}

}  // namespace cleave
