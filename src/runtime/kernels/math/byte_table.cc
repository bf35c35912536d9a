// com.cleave ByteTable, which QDQ table fusion writes for an elementwise chain from one
// DequantizeLinear: each 8-bit value looked up in a 256-entry table of 8-bit values or floats.
#include <fmt/core.h>

#include <immintrin.h>

#include <array>
#include <cstring>

#include "runtime/cpu_isa.h"
#include "runtime/kernels/dnnl_util.h"
#include "runtime/kernels/elementwise.h"
#include "runtime/kernels/registration.h"

namespace cleave {

namespace {

using elementwise::make_kernel;
using elementwise::plain_output;

// Below this many values one thread looks them up (a table lookup is a load and a store).
constexpr int64_t kOnTeam = int64_t{1} << 15;

void look_up(const uint8_t* table, const uint8_t* in, uint8_t* out, int64_t count) {
  for (int64_t i = 0; i < count; ++i) out[i] = table[in[i]];
}

// 32 values a step: the table as 16 rows of 16 bytes, each row looked up with vpshufb by the
// values whose high nibble is its own (x ^ (h << 4) + 0x70 keeps the low nibble below 0x80 for
// them; the others saturate past 0x80, which vpshufb reads as 0), the rows' bytes or'ed.
__attribute__((target("avx2"))) void look_up_avx2(const uint8_t* table, const uint8_t* in,
                                                  uint8_t* out, int64_t count) {
  __m256i rows[16];
  for (int h = 0; h < 16; ++h) {
    rows[h] = _mm256_broadcastsi128_si256(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(table + 16 * h)));
  }
  const __m256i bias = _mm256_set1_epi8(0x70);
  int64_t i = 0;
  for (; i + 32 <= count; i += 32) {
    const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i));
    __m256i bytes = _mm256_shuffle_epi8(rows[0], _mm256_adds_epu8(x, bias));
    for (int h = 1; h < 16; ++h) {
      const __m256i own = _mm256_xor_si256(x, _mm256_set1_epi8(static_cast<char>(h << 4)));
      bytes = _mm256_or_si256(bytes, _mm256_shuffle_epi8(rows[h], _mm256_adds_epu8(own, bias)));
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), bytes);
  }
  look_up(table, in + i, out + i, count - i);
}

void look_up(const float* table, const uint8_t* in, float* out, int64_t count) {
  for (int64_t i = 0; i < count; ++i) out[i] = table[in[i]];
}

// 8 values a step, gathered.
__attribute__((target("avx2"))) void look_up_avx2(const float* table, const uint8_t* in, float* out,
                                                  int64_t count) {
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    int64_t bytes = 0;
    std::memcpy(&bytes, in + i, sizeof bytes);
    const __m256i index = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(bytes));
    _mm256_storeu_ps(out + i, _mm256_i32gather_ps(table, index, 4));
  }
  look_up(table, in + i, out + i, count - i);
}

std::unique_ptr<Kernel> create_byte_table(const KernelContext& context) {
  const Tensor& x = context.input(0);
  const Tensor& table = context.input(1);
  const auto is_8_bit = [](DataType type) {
    return type == DataType::kUInt8 || type == DataType::kInt8;
  };
  const bool floats = table.dtype() == DataType::kFloat;
  if (!is_8_bit(x.dtype()) || !(floats || is_8_bit(table.dtype())) ||
      table.element_count() != 256 || table.is_blocked()) {
    throw Error(fmt::format(
        "{}: ByteTable reads u8/i8 values and a table of 256 u8/i8/f32 values; got {} and {}",
        context.where(), x.describe(), table.describe()));
  }
  const int64_t count = x.element_count();
  const int threads = context.threads;
  const bool avx2 = vector_isa() != VectorIsa::kBaseline;
  // Each byte maps on its own: the values' layout is the output's where it has no padding.
  OutputSpec output = plain_output(table.dtype(), x.shape());
  if (context.blocked_outputs_allowed)
    output.layout = unpadded_layout_as(context, x, table.dtype());
  std::shared_ptr<elementwise::PlainInputs> plain;
  if (x.is_blocked() && !output.layout) plain = std::make_shared<elementwise::PlainInputs>(context);
  return make_kernel({output}, [=](const std::vector<const Tensor*>& given,
                                   const std::vector<Tensor*>& outputs, dnnl::stream& stream) {
    const auto& inputs = plain ? plain->convert(given, stream) : given;
    const auto* in = static_cast<const uint8_t*>(inputs[0]->raw());
    // The lookups of the values [begin, end): floats or bytes, by the overloads.
    auto sweep = [&](const auto* entries, auto* out, int64_t grain) {
      elementwise::parallel_for(
          count, threads,
          [&](int64_t begin, int64_t end) {
            if (avx2) {
              look_up_avx2(entries, in + begin, out + begin, end - begin);
            } else {
              look_up(entries, in + begin, out + begin, end - begin);
            }
          },
          grain);
    };
    if (floats) {
      std::array<float, 256> entries;
      std::memcpy(entries.data(), inputs[1]->raw(), sizeof entries);
      sweep(entries.data(), outputs[0]->data<float>(), kOnTeam / 4);
      return;
    }
    std::array<uint8_t, 256> entries;
    std::memcpy(entries.data(), inputs[1]->raw(), entries.size());
    sweep(entries.data(), static_cast<uint8_t*>(outputs[0]->raw()), kOnTeam);
  });
}

}  // namespace

void register_byte_table_kernels(KernelRegistry& registry) {
  KernelInfo info;
  info.op_type = "ByteTable";
  info.domain = "com.cleave";
  info.since_opset = 1;
  info.dtypes = {DataType::kUInt8, DataType::kInt8, DataType::kFloat};
  info.accepts_blocked = [](std::size_t input) { return input == 0; };
  info.create = create_byte_table;
  registry.add(std::move(info));
}

}  // namespace cleave
