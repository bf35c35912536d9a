// pack_constant's copies: those of 2 MiB or more in their own 2 MiB-aligned mapping (huge pages),
// each holding the reorder's bytes and counted in packed_constant_bytes while it lives.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "runtime/kernels/dnnl_util.h"

namespace cleave {
namespace {

using dnnl::memory;

// Packs random [out, in, 3, 3] weights into OIhw16i16o and expects oneDNN's reorder's bytes.
std::shared_ptr<Buffer> expect_reorder_bytes(int64_t out, int64_t in) {
  const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  const memory::desc from({out, in, 3, 3}, memory::data_type::f32, memory::format_tag::oihw);
  const memory::desc to({out, in, 3, 3}, memory::data_type::f32, memory::format_tag::OIhw16i16o);
  std::vector<float> w(static_cast<std::size_t>(out * in * 9));
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> uniform(-1.f, 1.f);
  for (float& v : w) v = uniform(rng);
  std::shared_ptr<Buffer> packed = pack_constant(w.data(), from, to, engine);
  std::vector<std::byte> reference(to.get_size());
  memory source(from, engine, w.data()), target(to, engine, reference.data());
  dnnl::stream stream(engine);
  dnnl::reorder(source, target).execute(stream, source, target);
  stream.wait();
  EXPECT_EQ(packed->size(), reference.size());
  EXPECT_EQ(std::memcmp(packed->data(), reference.data(), reference.size()), 0);
  return packed;
}

TEST(PackedMemory, ALargePackIsHugePageAlignedAndCountedWhileAlive) {
  const std::size_t before = packed_constant_bytes();
  std::shared_ptr<Buffer> packed = expect_reorder_bytes(256, 256);  // 2.25 MiB
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(packed->data()) % (std::size_t{2} << 20), 0u);
  EXPECT_EQ(packed_constant_bytes(), before + packed->size());
  packed.reset();
  EXPECT_EQ(packed_constant_bytes(), before);
}

TEST(PackedMemory, ASmallPackHoldsTheReordersBytes) {
  const std::size_t before = packed_constant_bytes();
  std::shared_ptr<Buffer> packed = expect_reorder_bytes(32, 16);
  EXPECT_EQ(packed_constant_bytes(), before + packed->size());
}

}  // namespace
}  // namespace cleave
