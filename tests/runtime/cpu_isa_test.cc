// Tests of the one ISA switch: ONEDNN_MAX_CPU_ISA parsing, capping, and the channel block.
#include "runtime/cpu_isa.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "ir/graph.h"

namespace cleave {
namespace {

using Isa = dnnl::cpu_isa;

TEST(ParseMaxCpuIsa, ReadsOneDnnNamesInAnyCase) {
  EXPECT_EQ(parse_max_cpu_isa("AVX2"), Isa::avx2);
  EXPECT_EQ(parse_max_cpu_isa("avx2"), Isa::avx2);
  EXPECT_EQ(parse_max_cpu_isa("Avx512_Core"), Isa::avx512_core);
  EXPECT_EQ(parse_max_cpu_isa("avx2_vnni"), Isa::avx2_vnni);
  EXPECT_EQ(parse_max_cpu_isa("sse41"), Isa::sse41);
  EXPECT_EQ(parse_max_cpu_isa("AVX512_CORE_BF16"), Isa::avx512_core_bf16);
  EXPECT_EQ(parse_max_cpu_isa("all"), Isa::all);
}

TEST(ParseMaxCpuIsa, RefusesOtherNames) {
  EXPECT_EQ(parse_max_cpu_isa("avx3"), std::nullopt);
  EXPECT_EQ(parse_max_cpu_isa("avx2 "), std::nullopt);
  EXPECT_EQ(parse_max_cpu_isa(""), std::nullopt);
}

TEST(IsaName, RoundTripsThroughTheParser) {
  for (Isa isa : {Isa::sse41, Isa::avx, Isa::avx2, Isa::avx2_vnni, Isa::avx512_core,
                  Isa::avx512_core_vnni, Isa::avx512_core_bf16, Isa::avx512_core_amx}) {
    EXPECT_EQ(parse_max_cpu_isa(isa_name(isa)), isa) << isa_name(isa);
  }
}

// Sets ONEDNN_MAX_CPU_ISA and DNNL_MAX_CPU_ISA for one test and puts back what was there (the
// capped CI run sets the first for the whole binary).
class IsaEnvironment : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : {"ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA"}) {
      const char* value = std::getenv(name);
      saved_.push_back(value ? std::optional<std::string>(value) : std::nullopt);
      unsetenv(name);
    }
  }
  void TearDown() override {
    const char* names[] = {"ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA"};
    for (int i = 0; i < 2; ++i) {
      if (saved_[i]) {
        setenv(names[i], saved_[i]->c_str(), 1);
      } else {
        unsetenv(names[i]);
      }
    }
  }
  std::vector<std::optional<std::string>> saved_;
};

TEST_F(IsaEnvironment, UnsetOrAllIsNoCap) {
  EXPECT_EQ(isa_cap_from_environment(), std::nullopt);
  setenv("ONEDNN_MAX_CPU_ISA", "ALL", 1);
  EXPECT_EQ(isa_cap_from_environment(), std::nullopt);
  setenv("ONEDNN_MAX_CPU_ISA", "", 1);
  EXPECT_EQ(isa_cap_from_environment(), std::nullopt);
}

TEST_F(IsaEnvironment, LowerCaseValueCaps) {
  setenv("ONEDNN_MAX_CPU_ISA", "avx2", 1);
  EXPECT_EQ(isa_cap_from_environment(), Isa::avx2);
}

TEST_F(IsaEnvironment, OldVariableNameIsRead) {
  setenv("DNNL_MAX_CPU_ISA", "AVX", 1);
  EXPECT_EQ(isa_cap_from_environment(), Isa::avx);
  // oneDNN reads the ONEDNN_ name first.
  setenv("ONEDNN_MAX_CPU_ISA", "AVX512_CORE", 1);
  EXPECT_EQ(isa_cap_from_environment(), Isa::avx512_core);
}

TEST_F(IsaEnvironment, UnknownValueIsAnErrorNamingTheVariable) {
  setenv("ONEDNN_MAX_CPU_ISA", "avx9", 1);
  try {
    isa_cap_from_environment();
    FAIL() << "avx9 was accepted";
  } catch (const Error& error) {
    EXPECT_THAT(error.what(), testing::HasSubstr("ONEDNN_MAX_CPU_ISA=avx9"));
    EXPECT_THAT(error.what(), testing::HasSubstr("AVX2"));
  }
  // The vector dispatch ignores it, as oneDNN does, rather than fail inside a kernel.
  EXPECT_NO_THROW(vector_isa());
}

TEST(VectorIsaFor, TakesTheWidestTheCpuHasBelowTheCap) {
  EXPECT_EQ(vector_isa_for(true, true, std::nullopt), VectorIsa::kAvx512);
  EXPECT_EQ(vector_isa_for(true, true, Isa::all), VectorIsa::kAvx512);
  EXPECT_EQ(vector_isa_for(true, true, Isa::avx512_core), VectorIsa::kAvx512);
  EXPECT_EQ(vector_isa_for(true, true, Isa::avx2), VectorIsa::kAvx2);
  EXPECT_EQ(vector_isa_for(true, true, Isa::avx2_vnni), VectorIsa::kAvx2);
  EXPECT_EQ(vector_isa_for(true, true, Isa::avx), VectorIsa::kBaseline);
  EXPECT_EQ(vector_isa_for(true, true, Isa::sse41), VectorIsa::kBaseline);
  // A cap above the CPU changes nothing.
  EXPECT_EQ(vector_isa_for(true, false, Isa::avx512_core), VectorIsa::kAvx2);
  EXPECT_EQ(vector_isa_for(false, false, std::nullopt), VectorIsa::kBaseline);
}

TEST(ChannelBlockFor, SixteenOnAvx512AndEightBelow) {
  EXPECT_EQ(channel_block_for(Isa::avx512_core), 16);
  EXPECT_EQ(channel_block_for(Isa::avx512_core_bf16), 16);
  EXPECT_EQ(channel_block_for(Isa::avx512_mic), 16);
  EXPECT_EQ(channel_block_for(Isa::avx2), 8);
  EXPECT_EQ(channel_block_for(Isa::avx2_vnni), 8);
  EXPECT_EQ(channel_block_for(Isa::sse41), 8);
}

TEST(ChannelBlockedTag, NamesTheBlockedLayoutOfEachRank) {
  using Tag = dnnl::memory::format_tag;
  EXPECT_EQ(channel_blocked_tag(4, 8), Tag::nChw8c);
  EXPECT_EQ(channel_blocked_tag(4, 16), Tag::nChw16c);
  EXPECT_EQ(channel_blocked_tag(3, 16), Tag::nCw16c);
  EXPECT_EQ(channel_blocked_tag(5, 8), Tag::nCdhw8c);
  EXPECT_EQ(channel_blocked_tag(2, 8), Tag::undef);
  EXPECT_EQ(channel_blocked_tag(4, 4), Tag::undef);
}

TEST(NativeChannelBlock, IsTheBlockOfTheEffectiveIsa) {
  EXPECT_EQ(native_channel_block(), channel_block_for(effective_isa()));
}

// oneDNN's direct convolution reads the helper's block with a jit kernel and writes the same
// block when left free, on this CPU and under any cap the test runs with.
TEST(NativeChannelBlock, IsWhatOneDnnsJitConvolutionReadsAndWrites) {
  if (effective_isa() == Isa::sse41 || effective_isa() == Isa::avx) {
    GTEST_SKIP() << "needs AVX2 or AVX-512 (blocked direct kernels); effective ISA is "
                 << isa_name(effective_isa());
  }
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  using dt = dnnl::memory::data_type;
  using Tag = dnnl::memory::format_tag;
  const dnnl::memory::desc blocked({1, 64, 14, 14}, dt::f32,
                                   channel_blocked_tag(4, native_channel_block()));
  dnnl::memory::desc weights({64, 64, 3, 3}, dt::f32, Tag::any);
  dnnl::memory::desc destination({1, 64, 14, 14}, dt::f32, Tag::any);
  dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference,
                                       dnnl::algorithm::convolution_direct, blocked, weights,
                                       destination, {1, 1}, {1, 1}, {1, 1});
  dnnl::convolution_forward::primitive_desc primitive(desc, engine);
  EXPECT_THAT(std::string(primitive.impl_info_str()), testing::StartsWith("jit"));
  EXPECT_TRUE(primitive.dst_desc() == blocked);
}

// Under a cap (the CI's second run sets ONEDNN_MAX_CPU_ISA=AVX2) oneDNN and cleave's own loops
// both stay at or below it.
TEST(EffectiveIsa, HonoursTheEnvironmentsCap) {
  std::optional<Isa> cap = isa_cap_from_environment();
  if (!cap) GTEST_SKIP() << "needs ONEDNN_MAX_CPU_ISA set (e.g. AVX2, as the capped CI run does)";
  const unsigned effective = static_cast<unsigned>(effective_isa());
  EXPECT_EQ(effective & ~static_cast<unsigned>(*cap), 0u)
      << isa_name(effective_isa()) << " is above the cap " << isa_name(*cap);
  EXPECT_LE(channel_block_for(effective_isa()), channel_block_for(*cap));
  if (channel_block_for(*cap) == 8) {
    EXPECT_NE(vector_isa(), VectorIsa::kAvx512);
  }
}

// On AMX the cache key names the int8 AMX policy: a profile or layout measured with every int8
// product on AMX is not reused when small ones run on VNNI. Elsewhere the policy is not read.
TEST(IsaCacheKey, NamesTheInt8AmxPolicyOnAmxOnly) {
  const char* saved = std::getenv("CLEAVE_INT8_AMX");
  const std::optional<std::string> restore =
      saved ? std::optional<std::string>(saved) : std::nullopt;
  unsetenv("CLEAVE_INT8_AMX");
  const std::string automatic = isa_cache_key();
  setenv("CLEAVE_INT8_AMX", "never", 1);
  const std::string never = isa_cache_key();
  setenv("CLEAVE_INT8_AMX", "always", 1);
  const std::string always = isa_cache_key();
  if (restore) {
    setenv("CLEAVE_INT8_AMX", restore->c_str(), 1);
  } else {
    unsetenv("CLEAVE_INT8_AMX");
  }
  if (effective_isa() == Isa::avx512_core_amx) {
    EXPECT_EQ(automatic, "avx512_core_amx-int8amx-auto2");
    EXPECT_EQ(never, "avx512_core_amx-int8amx-never");
    EXPECT_EQ(always, "avx512_core_amx-int8amx-always");
  } else {
    EXPECT_EQ(never, automatic);
    EXPECT_EQ(always, automatic);
    EXPECT_EQ(automatic.find("int8amx"), std::string::npos);
  }
}

}  // namespace
}  // namespace cleave
