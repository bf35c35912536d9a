// Helpers shared by the single-file oneDNN benchmarks in bench/ (depthwise.cc, conv_split.cc).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <oneapi/dnnl/dnnl.hpp>
#include <vector>

namespace dnnl_bench {

using dnnl::memory;
using Tag = memory::format_tag;

inline double seconds_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

inline memory::desc float_desc(memory::dims dims, Tag tag) {
  return memory::desc(dims, memory::data_type::f32, tag);
}

/// Memory for `desc` filled with small non-zero values.
inline memory filled(const memory::desc& desc, const dnnl::engine& engine) {
  memory storage(desc, engine);
  auto* values = static_cast<float*>(storage.get_data_handle());
  for (std::size_t i = 0; i < desc.get_size() / sizeof(float); ++i) values[i] = (i % 13) * 0.01f;
  return storage;
}

/// oneDNN's own channel block on the effective ISA (ONEDNN_MAX_CPU_ISA=AVX2 caps it): 16 on
/// AVX-512, 8 below, as cleave's kernels use (runtime/cpu_isa.h).
inline int64_t channel_block() {
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  return (isa & (0x8u | 0x20u)) != 0 ? 16 : 8;
}

inline double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace dnnl_bench
