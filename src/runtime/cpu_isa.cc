// One reading of ONEDNN_MAX_CPU_ISA for oneDNN and for cleave's own vector dispatch, so that
// an AVX-512 machine capped to AVX2 runs every AVX2 path an AVX2-only machine runs.
#include "runtime/cpu_isa.h"

#include <fmt/core.h>

#include <sys/syscall.h>
#include <unistd.h>
#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <mutex>
#include <utility>

#include "ir/graph.h"
#include "runtime/kernels/int8_implementation.h"

namespace cleave {

namespace {

using Isa = dnnl::cpu_isa;

// The names oneDNN 2.6 reads from DNNL_MAX_CPU_ISA, lowest first.
constexpr std::array<std::pair<std::string_view, Isa>, 11> kIsaNames{{
    {"ALL", Isa::all},
    {"SSE41", Isa::sse41},
    {"AVX", Isa::avx},
    {"AVX2", Isa::avx2},
    {"AVX2_VNNI", Isa::avx2_vnni},
    {"AVX512_MIC", Isa::avx512_mic},
    {"AVX512_MIC_4OPS", Isa::avx512_mic_4ops},
    {"AVX512_CORE", Isa::avx512_core},
    {"AVX512_CORE_VNNI", Isa::avx512_core_vnni},
    {"AVX512_CORE_BF16", Isa::avx512_core_bf16},
    {"AVX512_CORE_AMX", Isa::avx512_core_amx},
}};

// The ISA bits (dnnl_types.h) that mean 512-bit vectors (avx512_mic, avx512_core) and AVX2.
constexpr unsigned kAvx512Bits = 0x8 | 0x20;
constexpr unsigned kAvx2Bit = 0x4;

unsigned bits(Isa isa) {
  return static_cast<unsigned>(isa);
}

// The variable oneDNN reads (ONEDNN_ first, as oneDNN 2.6 does) and its value.
std::optional<std::pair<std::string, std::string>> cap_variable() {
  for (const char* name : {"ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA"}) {
    if (const char* value = std::getenv(name)) return std::make_pair(name, std::string(value));
  }
  return std::nullopt;
}

std::optional<Isa> cap_or_none() {
  try {
    return isa_cap_from_environment();
  } catch (const Error&) {
    return std::nullopt;
  }
}

// AMX as oneDNN counts it: the tile, int8 and bf16 parts, and the kernel's leave to use the
// tile data state (Linux asks each process to request it; oneDNN requests it the same way).
bool amx_usable() {
  if (!__builtin_cpu_supports("amx-tile") || !__builtin_cpu_supports("amx-int8") ||
      !__builtin_cpu_supports("amx-bf16"))
    return false;
  constexpr long kRequestPermission = 0x1023;  // ARCH_REQ_XCOMP_PERM
  constexpr long kTileData = 18;               // XFEATURE_XTILEDATA
  return syscall(SYS_arch_prctl, kRequestPermission, kTileData) == 0;
}

}  // namespace

std::optional<dnnl::cpu_isa> parse_max_cpu_isa(std::string_view value) {
  std::string upper(value);
  std::transform(upper.begin(), upper.end(), upper.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  for (const auto& [name, isa] : kIsaNames) {
    if (upper == name) return isa;
  }
  return std::nullopt;
}

std::string isa_name(dnnl::cpu_isa isa) {
  for (const auto& [name, known] : kIsaNames) {
    if (known == isa) return std::string(name);
  }
  return fmt::format("0x{:x}", bits(isa));
}

std::optional<dnnl::cpu_isa> isa_cap_from_environment() {
  auto variable = cap_variable();
  if (!variable || variable->second.empty()) return std::nullopt;
  std::optional<Isa> isa = parse_max_cpu_isa(variable->second);
  if (!isa) {
    std::string names;
    for (const auto& entry : kIsaNames)
      names += (names.empty() ? "" : ", ") + std::string(entry.first);
    throw Error(fmt::format("{}={}: expected one of {} (any case)", variable->first,
                            variable->second, names));
  }
  if (*isa == Isa::all) return std::nullopt;
  return isa;
}

void apply_isa_cap() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (std::optional<Isa> cap = cap_or_none()) {
      // Refused (and harmless) once oneDNN has read its setting; it read the same variable.
      dnnl_set_max_cpu_isa(static_cast<dnnl_cpu_isa_t>(*cap));
    }
  });
  isa_cap_from_environment();  // Reports a bad value to every caller, not only the first.
}

dnnl::cpu_isa effective_isa() {
  try {
    apply_isa_cap();
  } catch (const Error&) {
    // oneDNN ignores a value it does not know; so do the kernels.
  }
  return dnnl::get_effective_cpu_isa();
}

bool isa_includes(dnnl::cpu_isa isa, dnnl::cpu_isa part) {
  return (bits(isa) & bits(part)) == bits(part);
}

dnnl::cpu_isa hardware_isa() {
  __builtin_cpu_init();
  const bool avx512_core = __builtin_cpu_supports("avx512f") &&
                           __builtin_cpu_supports("avx512bw") &&
                           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  if (avx512_core) {
    if (__builtin_cpu_supports("avx512bf16") && amx_usable()) return Isa::avx512_core_amx;
    if (__builtin_cpu_supports("avx512bf16")) return Isa::avx512_core_bf16;
    if (__builtin_cpu_supports("avx512vnni")) return Isa::avx512_core_vnni;
    return Isa::avx512_core;
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    return __builtin_cpu_supports("avxvnni") ? Isa::avx2_vnni : Isa::avx2;
  }
  if (__builtin_cpu_supports("avx")) return Isa::avx;
  if (__builtin_cpu_supports("sse4.1")) return Isa::sse41;
  return Isa::all;
}

bool isa_capped() {
  return cap_or_none().has_value() && effective_isa() != hardware_isa();
}

VectorIsa vector_isa_for(bool has_avx2_fma, bool has_avx512, std::optional<dnnl::cpu_isa> cap) {
  const unsigned allowed = cap && *cap != Isa::all ? bits(*cap) : ~0u;
  if (has_avx512 && (allowed & kAvx512Bits) != 0) return VectorIsa::kAvx512;
  if (has_avx2_fma && (allowed & kAvx2Bit) != 0) return VectorIsa::kAvx2;
  return VectorIsa::kBaseline;
}

VectorIsa vector_isa() {
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
                      __builtin_cpu_supports("avx512dq");
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return vector_isa_for(avx2, avx512, cap_or_none());
}

std::string vector_isa_name(VectorIsa isa) {
  switch (isa) {
    case VectorIsa::kAvx512:
      return "avx512";
    case VectorIsa::kAvx2:
      return "avx2";
    case VectorIsa::kBaseline:
      break;
  }
  return "baseline";
}

int64_t channel_block_for(dnnl::cpu_isa isa) {
  return (bits(isa) & kAvx512Bits) != 0 ? 16 : 8;
}

int64_t native_channel_block() {
  static const int64_t block = channel_block_for(effective_isa());
  return block;
}

dnnl::memory::format_tag channel_blocked_tag(int rank, int64_t block) {
  using Tag = dnnl::memory::format_tag;
  if (block != 8 && block != 16) return Tag::undef;
  const bool sixteen = block == 16;
  switch (rank) {
    case 3:
      return sixteen ? Tag::nCw16c : Tag::nCw8c;
    case 4:
      return sixteen ? Tag::nChw16c : Tag::nChw8c;
    case 5:
      return sixteen ? Tag::nCdhw16c : Tag::nCdhw8c;
    default:
      return Tag::undef;
  }
}

std::string isa_cache_key() {
  const Isa isa = effective_isa();
  std::string key = isa_name(isa);
  std::transform(key.begin(), key.end(), key.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  // On AMX the int8 kernels follow CLEAVE_INT8_AMX, so times and layouts measured under one
  // policy say nothing about another (and those of before the policy were all "always"); auto2:
  // the rule by shape (int8_implementation.cc, 2026-11-30).
  if (isa == Isa::avx512_core_amx) {
    switch (amx_policy_from_environment()) {
      case AmxPolicy::kAuto:
        return key + "-int8amx-auto2";
      case AmxPolicy::kAlways:
        return key + "-int8amx-always";
      case AmxPolicy::kNever:
        return key + "-int8amx-never";
    }
  }
  return key;
}

}  // namespace cleave
