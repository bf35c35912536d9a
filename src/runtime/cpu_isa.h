// The instruction set cleave runs with: the ONEDNN_MAX_CPU_ISA cap, oneDNN's effective ISA,
// the vector path of cleave's own kernels and the channel block that ISA's kernels prefer.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace cleave {

/// Which of cleave's own vector loops (fast_math.cc) run: the widest the CPU has, capped.
enum class VectorIsa { kBaseline, kAvx2, kAvx512 };

/// A ONEDNN_MAX_CPU_ISA value as oneDNN 2.6 names it (ALL, SSE41, AVX, AVX2, AVX2_VNNI,
/// AVX512_MIC, AVX512_MIC_4OPS, AVX512_CORE, AVX512_CORE_VNNI, AVX512_CORE_BF16,
/// AVX512_CORE_AMX), any case; nullopt for any other value.
std::optional<dnnl::cpu_isa> parse_max_cpu_isa(std::string_view value);

/// The name oneDNN's environment variable uses for an ISA ("AVX2", "AVX512_CORE"; "ALL").
std::string isa_name(dnnl::cpu_isa isa);

/// The cap the environment sets (ONEDNN_MAX_CPU_ISA, else DNNL_MAX_CPU_ISA): nullopt when
/// unset, empty or ALL. Throws Error naming the variable and the accepted values otherwise.
std::optional<dnnl::cpu_isa> isa_cap_from_environment();

/// Hands the environment's cap to oneDNN before its first kernel (so a lower-case value caps
/// it too) and checks the value; call once at startup. Throws Error on a bad value.
void apply_isa_cap();

/// The ISA oneDNN's kernels use here, after the cap.
dnnl::cpu_isa effective_isa();

/// Whether `isa` has every feature of `part` (oneDNN's ISA values are feature masks; their
/// numeric order is not: AVX2_VNNI is above AVX512_CORE).
bool isa_includes(dnnl::cpu_isa isa, dnnl::cpu_isa part);

/// The best oneDNN ISA this CPU has, read from CPUID, ignoring any cap.
dnnl::cpu_isa hardware_isa();

/// Whether the cap holds oneDNN below what the CPU has.
bool isa_capped();

/// The vector path for a CPU with these features under a cap (pure, for tests).
VectorIsa vector_isa_for(bool has_avx2_fma, bool has_avx512, std::optional<dnnl::cpu_isa> cap);

/// The vector path of cleave's own loops on this CPU under the environment's cap (a bad value
/// is ignored here, as oneDNN ignores it; apply_isa_cap reports it).
VectorIsa vector_isa();

/// "avx512", "avx2" or "baseline".
std::string vector_isa_name(VectorIsa isa);

/// oneDNN's native channel block for an ISA: 16 floats on AVX-512, 8 below.
int64_t channel_block_for(dnnl::cpu_isa isa);

/// The channel block the effective ISA's kernels read and write (8 or 16).
int64_t native_channel_block();

/// The channel-blocked layout tag for a tensor of rank 3, 4 or 5 with this block (8 or 16),
/// e.g. nChw16c; `format_tag::undef` otherwise.
dnnl::memory::format_tag channel_blocked_tag(int rank, int64_t block);

/// The effective ISA for cache file names ("avx2", "avx512_core_bf16"), so that a cache
/// measured on another CPU, or under another cap, is not used here. On AMX it also names the
/// int8 AMX policy (CLEAVE_INT8_AMX: "avx512_core_amx-int8amx-auto2").
std::string isa_cache_key();

}  // namespace cleave
