// The choice between oneDNN's AMX and non-AMX int8 implementations: the rule over names and
// sizes, the CLEAVE_INT8_AMX policy, and that either choice computes the same bytes.
#include "runtime/kernels/int8_implementation.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "runtime/cpu_isa.h"
#include "runtime/executor.h"

namespace cleave {
namespace {

using kernel_test::listed;
using kernel_test::make_tensor;
using kernel_test::random_values;

// oneDNN 2.6.3's implementations of a small 1x1 u8 convolution, in its order, on an AMX Xeon
// and (the same list without the AMX ones' lead) on a VNNI-only CPU.
const std::vector<std::string> kAmxList = {
    "jit_1x1:avx512_core_amx_int8", "brgconv_1x1:avx512_core_vnni", "jit_1x1:avx512_core_vnni",
    "jit_int8:avx512_core_vnni", "ref:any"};
const std::vector<std::string> kVnniList = {"brgconv_1x1:avx512_core_vnni",
                                            "jit_1x1:avx512_core_vnni", "ref:any"};

TEST(Int8Implementation, NamesAmxImplementations) {
  EXPECT_TRUE(is_amx_implementation("jit_1x1:avx512_core_amx_int8"));
  EXPECT_TRUE(is_amx_implementation("brg:avx512_core_amx_int8"));
  EXPECT_TRUE(is_amx_implementation("brgconv:avx512_core_amx"));
  EXPECT_FALSE(is_amx_implementation("brgconv_1x1:avx512_core_vnni"));
  EXPECT_FALSE(is_amx_implementation("gemm:jit"));
  EXPECT_FALSE(is_amx_implementation("ref:any"));
  EXPECT_FALSE(is_amx_implementation(""));
}

TEST(Int8Implementation, AmxPaysOffOnlyOnLargeProducts) {
  // jit_1x1 lost at every size measured (up to 9.8 M), the others below 3 M.
  EXPECT_FALSE(amx_pays_off("jit_1x1:avx512_core_amx_int8", {9'830'400, 1}));
  EXPECT_TRUE(amx_pays_off("jit_1x1:avx512_core_amx_int8", {40'000'000, 1}));
  EXPECT_FALSE(amx_pays_off("jit:avx512_core_amx_int8", {2'097'152, 1}));
  EXPECT_TRUE(amx_pays_off("brgconv:avx512_core_amx_int8", {4'064'256, 1}));
  EXPECT_FALSE(amx_pays_off("brg:avx512_core_amx_int8", {512'000, 1}));  // A 1-row QGemm.
  // Per thread: two threads each pay the fixed cost on half the work.
  EXPECT_FALSE(amx_pays_off("brgconv:avx512_core_amx_int8", {4'064'256, 2}));
  EXPECT_TRUE(amx_pays_off("brgconv:avx512_core_amx_int8", {8'128'512, 2}));
  EXPECT_TRUE(amx_pays_off("brgconv_1x1:avx512_core_vnni", {1, 1}));  // Not AMX: nothing to pay.
}

TEST(Int8Implementation, BrgemmConvolutionsTakeAmxByTheSumPerOutput) {
  const std::string brgconv_1x1 = "brgconv_1x1:avx512_core_amx_int8";
  const std::string brgconv = "brgconv:avx512_core_amx_int8";
  // squeezenet1_1_int8's squeeze 1x1, 49 x 384 x 64 (1.2 M): AMX at 1 and at 2 threads.
  EXPECT_TRUE(amx_pays_off(brgconv_1x1, {1'204'224, 1, 384}));
  EXPECT_TRUE(amx_pays_off(brgconv_1x1, {1'204'224, 2, 384}));
  // Its 3x3 expand, 49 x 432 x 192 (4.06 M), at 2 threads: 2.03 M per thread.
  EXPECT_TRUE(amx_pays_off(brgconv, {4'064'256, 2, 432}));
  // Sums of 64 or fewer keep to the bound per thread: 961 x 16 x 64 (0.98 M), regnet's
  // 256 x 64 x 160 (2.6 M); 4096 x 32 x 32 (4.2 M) is above it.
  EXPECT_FALSE(amx_pays_off(brgconv_1x1, {983'040, 1, 16}));
  EXPECT_FALSE(amx_pays_off(brgconv_1x1, {2'621'440, 1, 64}));
  EXPECT_TRUE(amx_pays_off(brgconv_1x1, {4'194'304, 1, 32}));
  // Under 0.8 M whatever the sum: 49 x 256 x 48 (0.6 M); an unknown sum (0) neither.
  EXPECT_FALSE(amx_pays_off(brgconv_1x1, {602'112, 1, 256}));
  EXPECT_FALSE(amx_pays_off(brgconv_1x1, {1'204'224, 1, 0}));
  // Other families keep their bounds per thread: an 80 x 128 x 128 product (1.3 M) lost.
  EXPECT_FALSE(amx_pays_off("brg:avx512_core_amx_int8", {1'310'720, 1, 128}));
  EXPECT_FALSE(amx_pays_off("jit_1x1:avx512_core_amx_int8", {9'830'400, 1, 1920}));
}

TEST(Int8Implementation, JitConvolutionsTakeAmxFromTwelveMillionPerThread) {
  const std::string jit = "jit:avx512_core_amx_int8";
  // regnet_x_400mf_int8's 2-group 3x3 (4.7 M) and r3d_18_int8's strided 1x1x1 (8.4 M) lost.
  EXPECT_FALSE(amx_pays_off(jit, {4'718'592, 1, 144}));
  EXPECT_FALSE(amx_pays_off(jit, {8'388'608, 1, 64}));
  // mel_frontend_int8's 400-tap convolution (31.5 M) won, also at 2 threads (15.8 M each).
  EXPECT_TRUE(amx_pays_off(jit, {31'516'800, 1, 400}));
  EXPECT_TRUE(amx_pays_off(jit, {31'516'800, 2, 400}));
  EXPECT_FALSE(amx_pays_off(jit, {31'516'800, 3, 400}));
}

TEST(Int8Implementation, SmallProductsSkipToTheFirstNonAmxNonReferenceOne) {
  const Int8Work small{800'000, 1}, large{40'000'000, 1};
  EXPECT_EQ(chosen_implementation(kAmxList, small, AmxPolicy::kAuto), 1u);
  EXPECT_EQ(chosen_implementation(kAmxList, large, AmxPolicy::kAuto), 0u);
  EXPECT_EQ(chosen_implementation(kAmxList, small, AmxPolicy::kAlways), 0u);
  EXPECT_EQ(chosen_implementation(kAmxList, large, AmxPolicy::kNever), 1u);
  // An AMX one followed by more AMX ones and the reference: the first non-AMX one after them.
  EXPECT_EQ(chosen_implementation({"brgconv:avx512_core_amx_int8", "jit:avx512_core_amx_int8",
                                   "ref:any", "brgconv:avx512_core_vnni"},
                                  small, AmxPolicy::kAuto),
            3u);
  // No alternative but the reference: AMX stays.
  EXPECT_EQ(
      chosen_implementation({"brg:avx512_core_amx_int8", "ref:any"}, small, AmxPolicy::kNever), 0u);
  EXPECT_EQ(chosen_implementation({}, small, AmxPolicy::kNever), 0u);
}

TEST(Int8Implementation, WithoutAmxTheChoiceIsOneDnnsUnderEveryPolicy) {
  for (AmxPolicy policy : {AmxPolicy::kAuto, AmxPolicy::kAlways, AmxPolicy::kNever}) {
    for (int64_t macs : {1, 800'000, 40'000'000}) {
      EXPECT_EQ(chosen_implementation(kVnniList, {macs, 1}, policy), 0u) << macs;
      EXPECT_EQ(chosen_implementation({"jit:avx2", "gemm:jit", "ref:any"}, {macs, 2}, policy), 0u);
    }
  }
}

TEST(Int8Implementation, ParsesThePolicyAndNamesABadOne) {
  EXPECT_EQ(parse_amx_policy("", "CLEAVE_INT8_AMX"), AmxPolicy::kAuto);
  EXPECT_EQ(parse_amx_policy("auto", "CLEAVE_INT8_AMX"), AmxPolicy::kAuto);
  EXPECT_EQ(parse_amx_policy("always", "CLEAVE_INT8_AMX"), AmxPolicy::kAlways);
  EXPECT_EQ(parse_amx_policy("never", "CLEAVE_INT8_AMX"), AmxPolicy::kNever);
  try {
    parse_amx_policy("sometimes", "CLEAVE_INT8_AMX");
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("CLEAVE_INT8_AMX"), std::string::npos) << message;
    EXPECT_NE(message.find("'sometimes'"), std::string::npos) << message;
    EXPECT_NE(message.find("always"), std::string::npos) << message;
  }
}

// Sets CLEAVE_INT8_AMX for one scope and restores what was there.
class ScopedPolicy {
 public:
  explicit ScopedPolicy(const char* value) {
    if (const char* old = std::getenv("CLEAVE_INT8_AMX")) old_ = old;
    setenv("CLEAVE_INT8_AMX", value, 1);
  }
  ~ScopedPolicy() {
    if (old_) {
      setenv("CLEAVE_INT8_AMX", old_->c_str(), 1);
    } else {
      unsetenv("CLEAVE_INT8_AMX");
    }
  }

 private:
  std::optional<std::string> old_;
};

// A QLinearConv of 64 channels, 1x1, on a 64 x `side` x `side` u8 input: small enough that
// oneDNN's AMX implementation does not pay off.
std::string qlinear_conv_text(int64_t side) {
  const int64_t channels = 64;
  const std::vector<double> w = random_values(channels * channels, -127, 127, 3);
  std::string scales, bias;
  for (int64_t m = 0; m < channels; ++m) {
    scales += (m ? ", " : "") + std::to_string(0.0005 * static_cast<double>(m % 7 + 1));
    bias += (m ? ", " : "") + std::to_string(53 * m - 1700);
  }
  const std::string size = std::to_string(side);
  return "graph g [ai.onnx=13] (%x: u8[1,64," + size + "," + size +
         "]) {\n"
         "  @x_scale: f32[] = [0.05]\n  @x_zero: u8[] = [7]\n"
         "  @w: i8[64,64,1,1] = " +
         listed(w) + "\n  @w_scale: f32[64] = [" + scales +
         "]\n  @w_zero: i8[] = [0]\n  @y_scale: f32[] = [0.02]\n  @y_zero: u8[] = [3]\n"
         "  @bias: i32[64] = [" +
         bias +
         "]\n  %y = QLinearConv(%x, @x_scale, @x_zero, @w, @w_scale, @w_zero, @y_scale, @y_zero, "
         "@bias)\n  return %y\n}\n";
}

TEST(Int8Implementation, ABadPolicyFailsThePreparationWithItsName) {
  ScopedPolicy policy("amx-please");
  if (!isa_includes(effective_isa(), dnnl::cpu_isa::avx512_core_amx)) {
    // Without AMX the policy is never consulted: the choice is a no-op.
    Executor executor(parse_graph(qlinear_conv_text(4)));
    executor.run({{"x", make_tensor(DataType::kUInt8, {1, 64, 4, 4}, std::vector<double>(1024))}});
    EXPECT_FALSE(is_amx_implementation(executor.stats().implementations.at(0)));
    return;
  }
  try {
    Executor executor(parse_graph(qlinear_conv_text(4)));
    executor.run({{"x", make_tensor(DataType::kUInt8, {1, 64, 4, 4}, std::vector<double>(1024))}});
    FAIL() << "no error for CLEAVE_INT8_AMX=amx-please";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("CLEAVE_INT8_AMX"), std::string::npos) << e.what();
  }
}

struct Ran {
  std::vector<uint8_t> bytes;
  std::string implementation;
};

Ran run_with_policy(const char* policy_value, const std::string& text, const Tensor& input) {
  ScopedPolicy policy(policy_value);
  Executor executor(parse_graph(text));
  const Tensor y = executor.run({{"x", input}})[0];
  Ran ran;
  ran.bytes.assign(y.data<uint8_t>(), y.data<uint8_t>() + y.element_count());
  ran.implementation = executor.stats().implementations[0];
  return ran;
}

// AMX and VNNI both add u8 x s8 products exactly in int32 and requantize alike: the same bytes.
void expect_same_bytes_either_way(const std::string& text, const Tensor& input) {
  const Ran amx = run_with_policy("always", text, input);
  const Ran other = run_with_policy("never", text, input);
  if (isa_includes(effective_isa(), dnnl::cpu_isa::avx512_core_amx)) {
    EXPECT_TRUE(is_amx_implementation(amx.implementation)) << amx.implementation;
    EXPECT_FALSE(is_amx_implementation(other.implementation)) << other.implementation;
  } else {
    EXPECT_EQ(amx.implementation, other.implementation);
  }
  ASSERT_EQ(amx.bytes.size(), other.bytes.size());
  int differing = 0;
  for (std::size_t i = 0; i < amx.bytes.size(); ++i) differing += amx.bytes[i] != other.bytes[i];
  EXPECT_EQ(differing, 0) << "of " << amx.bytes.size() << " (" << amx.implementation << " vs "
                          << other.implementation << ")";
}

TEST(Int8Implementation, AQLinearConvComputesTheSameBytesOnAmxAndVnni) {
  const Tensor input =
      make_tensor(DataType::kUInt8, {1, 64, 14, 14}, random_values(64 * 14 * 14, 0, 255, 4));
  expect_same_bytes_either_way(qlinear_conv_text(14), input);
}

// resnet18_int8's classifier, 1 x 512 by 512 x 1000: oneDNN 2.6.3 ran brg:avx512_core_vnni first
// for the same product with 96 or 256 columns, AMX for 1000.
TEST(Int8Implementation, AQGemmComputesTheSameBytesOnAmxAndVnni) {
  const std::vector<double> w = random_values(512 * 1000, -127, 127, 5);
  std::string scales;
  for (int n = 0; n < 1000; ++n) scales += (n ? ", " : "") + std::to_string(0.0004 * (n % 5 + 1));
  const std::string text =
      "graph g [ai.onnx=13] (%x: u8[1,512]) {\n"
      "  @a_scale: f32[] = [0.05]\n  @a_zero: u8[] = [0]\n  @b: i8[512,1000] = " +
      listed(w) + "\n  @b_scale: f32[1000] = [" + scales +
      "]\n  @b_zero: i8[] = [0]\n  @c: i32[1000] = " + listed(random_values(1000, -3000, 3000, 7)) +
      "\n"
      "  @y_scale: f32[] = [0.7]\n  @y_zero: u8[] = [128]\n"
      "  %y = com.microsoft.QGemm(%x, @a_scale, @a_zero, @b, @b_scale, @b_zero, @c, @y_scale, "
      "@y_zero)\n"
      "  return %y\n}\n";
  const Tensor input = make_tensor(DataType::kUInt8, {1, 512}, random_values(512, 0, 255, 6));
  expect_same_bytes_either_way(text, input);
}

}  // namespace
}  // namespace cleave
