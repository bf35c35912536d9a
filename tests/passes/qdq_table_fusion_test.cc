// QDQ table fusion: an elementwise float chain between one DequantizeLinear and a QuantizeLinear
// becomes com.cleave.ByteTable, and the near misses that must stay in float.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "ir/text.h"
#include "ir/verify.h"
#include "passes/constant_folding.h"
#include "passes/dead_code.h"
#include "passes/qdq_fusion.h"

namespace cleave {
namespace {

struct Fused {
  std::string summary, text;
};

Fused fuse(const std::string& text) {
  Graph graph = parse_graph(text);
  PassResult result = fuse_qdq(graph);
  eliminate_dead_code(graph);
  verify_graph(graph);
  return {result.summary(), print_graph(graph)};
}

// DequantizeLinear → `chain` (reading %xf, writing %r) → QuantizeLinear on `shape`.
std::string qdq_chain(const std::string& chain, const std::string& shape = "[1,4,8,8]",
                      const std::string& outputs = "%y") {
  return "graph main [ai.onnx=13] (%x: u8" + shape + R"() {
  @xs: f32[] = [0.05]
  @xz: u8[] = [40]
  @ys: f32[] = [0.03]
  @yz: u8[] = [9]
  @three: f32[] = [3]
  %xf = DequantizeLinear(%x, @xs, @xz)
)" + chain +
         R"(  %y = QuantizeLinear(%r, @ys, @yz)
  return )" +
         outputs + "\n}\n";
}

const char* kSilu = "  %s = Sigmoid(%xf)\n  %r = Mul(%xf, %s)\n";

TEST(QdqTableFusion, SiluBecomesOneLookupOfATable) {
  const Fused fused = fuse(qdq_chain(kSilu));
  EXPECT_EQ(fused.summary, "QDQ fusion: 1 elementwise chains fused into com.cleave.ByteTable");
  EXPECT_NE(fused.text.find("com.cleave.ByteTable(%x, %y_table)"), std::string::npos) << fused.text;
  // The table: the chain on the 256 byte values, so constant folding computes it.
  EXPECT_NE(fused.text.find("%xf_table: f32[256] = DequantizeLinear(@y_table_bytes, @xs, @xz)\n"
                            "  %s_table: f32[256] = Sigmoid(%xf_table)\n"
                            "  %r_table: f32[256] = Mul(%xf_table, %s_table)\n"
                            "  %y_table: u8[256] = QuantizeLinear(%r_table, @ys, @yz)"),
            std::string::npos)
      << fused.text;
  EXPECT_EQ(fused.text.find("Mul(%xf,"), std::string::npos) << fused.text;

  Graph graph = parse_graph(qdq_chain(kSilu));
  fuse_qdq(graph);
  fold_constants(graph);
  eliminate_dead_code(graph);
  int nodes = 0;
  for (NodeId id : graph.node_ids()) {
    ++nodes;
    EXPECT_EQ(graph.node(id).op_type, "ByteTable");
  }
  EXPECT_EQ(nodes, 1);
}

TEST(QdqTableFusion, HardSwishAndScalarOperandsFuse) {
  EXPECT_EQ(fuse(qdq_chain("  %h = HardSigmoid[alpha=0.16666667, beta=0.5](%xf)\n"
                           "  %m = Mul(%xf, %h)\n  %r = Add(%m, @three)\n"))
                .summary,
            "QDQ fusion: 1 elementwise chains fused into com.cleave.ByteTable");
}

// The values the table is computed on, in the order ByteTable indexes it: by their bytes.
std::vector<int> table_values(const std::string& text) {
  Graph graph = parse_graph(text);
  fuse_qdq(graph);
  const std::optional<ValueId> bytes = graph.find_value("y_table_bytes");
  if (!bytes) return {};
  const TensorData& data = *graph.value(*bytes).initializer;
  std::vector<int> values;
  if (data.dtype == DataType::kInt8) {
    for (int8_t v : data.as<int8_t>()) values.push_back(v);
  } else {
    for (uint8_t v : data.as<uint8_t>()) values.push_back(v);
  }
  return values;
}

TEST(QdqTableFusion, TheTableListsEachByteValueAtItsByte) {
  const std::vector<int> unsigned_values = table_values(qdq_chain(kSilu));
  ASSERT_EQ(unsigned_values.size(), 256u);
  for (int i = 0; i < 256; ++i) EXPECT_EQ(unsigned_values[i], i);
  std::string text = qdq_chain(kSilu);
  text.replace(text.find("%x: u8"), 6, "%x: i8");
  text.replace(text.find("@xz: u8[] = [40]"), 16, "@xz: i8[] = [-3]");
  const std::vector<int> signed_values = table_values(text);
  ASSERT_EQ(signed_values.size(), 256u);
  for (int i = 0; i < 256; ++i) EXPECT_EQ(signed_values[i], i < 128 ? i : i - 256) << i;
}

TEST(QdqTableFusion, NearMissesStayInFloat) {
  // Fewer than 256 values: a kernel could take another implementation than the table's.
  EXPECT_EQ(fuse(qdq_chain(kSilu, "[1,2,2]")).summary, "QDQ fusion: no change");
  // A chain value read outside the chain (a graph output here).
  EXPECT_EQ(fuse(qdq_chain(kSilu, "[1,4,8,8]", "%y, %s")).summary, "QDQ fusion: no change");
  // HardSwish's oneDNN kernel starts at another size than the table's.
  EXPECT_EQ(fuse(qdq_chain("  %r = HardSwish(%xf)\n")).summary, "QDQ fusion: no change");
  // A second quantized source: only the Sigmoid of one, a float chain, becomes a table.
  EXPECT_EQ(fuse(R"(graph main [ai.onnx=13] (%x: u8[1,4,8,8], %z: u8[1,4,8,8]) {
  @s: f32[] = [0.05]
  %xf = DequantizeLinear(%x, @s)
  %zf = DequantizeLinear(%z, @s)
  %g = Sigmoid(%zf)
  %r = Mul(%xf, %g)
  %y = QuantizeLinear(%r, @s)
  return %y
}
)")
                .summary,
            "QDQ fusion: 1 elementwise chains of float outputs fused into com.cleave.ByteTable");
  // A constant operand of more than one value (per channel).
  EXPECT_EQ(fuse(R"(graph main [ai.onnx=13] (%x: u8[1,2,16,8]) {
  @s: f32[] = [0.05]
  @c: f32[1,2,1,1] = [1, 2]
  %xf = DequantizeLinear(%x, @s)
  %r = Mul(%xf, @c)
  %y = QuantizeLinear(%r, @s)
  return %y
}
)")
                .summary,
            "QDQ fusion: no change");
}

// SiLU read by a squeeze-and-excitation's pool and product: a table of its float values.
const char* kSqueezeExcitation = R"(graph main [ai.onnx=13] (%x: u8[1,4,8,8], %z: u8[1,4,1,1]) {
  @s: f32[] = [0.05]
  %xf = DequantizeLinear(%x, @s)
  %g = Sigmoid(%xf)
  %silu = Mul(%xf, %g)
  %pool = GlobalAveragePool(%silu)
  %zf = DequantizeLinear(%z, @s)
  %gate = Sigmoid(%zf)
  %r = Mul(%silu, %gate)
  %y = QuantizeLinear(%r, @s)
  return %y, %pool
}
)";

TEST(QdqTableFusion, AFloatChainReadByOtherOpsBecomesATableOfFloats) {
  const Fused fused = fuse(kSqueezeExcitation);
  EXPECT_EQ(fused.summary,
            "QDQ fusion: 1 elementwise chains of float outputs fused into com.cleave.ByteTable");
  EXPECT_NE(fused.text.find("%silu = \"silu_byte_table\" com.cleave.ByteTable(%x, %silu_table)"),
            std::string::npos)
      << fused.text;
  EXPECT_NE(fused.text.find("%silu_table: f32[256] = Mul(%xf_table, %g_table)"), std::string::npos)
      << fused.text;
  // The gate's 4 values stay: below the table's size.
  EXPECT_NE(fused.text.find("%gate = Sigmoid(%zf)"), std::string::npos) << fused.text;
}

TEST(QdqTableFusion, AFloatChainStaysWhereItsDequantizedValuesAreReadElsewhere) {
  std::string text = kSqueezeExcitation;
  text.replace(text.find("return %y, %pool"), 16, "return %y, %pool, %xf");
  EXPECT_EQ(fuse(text).summary, "QDQ fusion: no change");
}

}  // namespace
}  // namespace cleave
