// `cleave codegen --lang streamit` and `--stream`: the folder compiles; mismatches write nothing.
#include <gtest/gtest.h>

#include <filesystem>

#include "codegen_fixture.h"

namespace cleave {
namespace {

namespace fs = std::filesystem;

class CodegenStreamit : public CodegenFixture {
 protected:
  void SetUp() override {
    CodegenFixture::SetUp();
    write_model(kTwoBranchModel, path("m.onnx"));
    // The same graph with other weights: another model.
    write_model(kTwoBranchModel, path("other.onnx"), 11);
    std::ofstream(path("prog.json")) << R"({"pipeline": {"name": "top", "streams": [
      {"filter": {"name": "net", "pop": 1, "push": 1, "model": "m.onnx"}},
      {"filter": {"name": "pass", "pop": 1, "push": 1, "op": "identity"}}]}})";
  }
};

TEST_F(CodegenStreamit, ModelAsStreamCompilesAgainstItsBuilderHeader) {
  CommandOutput generated = cleave("codegen m.onnx --lang streamit -o st");
  ASSERT_EQ(generated.exit_code, 0) << generated.text;
  const std::string source = read_text_file(path("st/stream.cc"));
  // The two branches from %x meet at the Concat.
  EXPECT_NE(source.find("duplicateSplitJoin<tensor_t, tensor_t>"), std::string::npos) << source;
  EXPECT_NE(source.find("Concat"), std::string::npos);
  EXPECT_TRUE(fs::exists(path("st/README.md")));
  CommandOutput compiled = shell("g++ -std=c++20 -Wall -Wextra -Werror -fsyntax-only st/stream.cc");
  EXPECT_EQ(compiled.exit_code, 0) << compiled.text;
}

TEST_F(CodegenStreamit, ProgramFilePrintsItsFiltersInOrder) {
  CommandOutput generated = cleave("codegen m.onnx --stream prog.json --lang streamit -o st");
  ASSERT_EQ(generated.exit_code, 0) << generated.text;
  const std::string source = read_text_file(path("st/stream.cc"));
  EXPECT_NE(source.find("    pipe->add(filter_net());\n    pipe->add(filter_pass());\n"),
            std::string::npos)
      << source;
  EXPECT_NE(source.find("run_model(\"m.onnx\", in.window(1), 1)"), std::string::npos) << source;
  // The program written beside the code is what the C++ generator takes.
  CommandOutput cpp = cleave("codegen m.onnx --stream st/program.json --lang cpp -o cpp");
  EXPECT_EQ(cpp.exit_code, 0) << cpp.text;
  EXPECT_TRUE(fs::exists(path("cpp/stream.cc")));
}

TEST_F(CodegenStreamit, AProgramPassingValuesByReferenceIsRefusedAndNothingIsWritten) {
  std::ofstream(path("by_reference.json")) << R"({"pipeline": {"name": "top", "streams": [
      {"filter": {"name": "net", "pop": 1, "push": 1, "model": "m.onnx", "publishes": "v"}},
      {"filter": {"name": "again", "pop": 1, "push": 1, "op": "identity", "reads": "v"}}]}})";
  for (const std::string lang : {"streamit", "cpp"}) {
    CommandOutput result =
        cleave("codegen m.onnx --stream by_reference.json --lang " + lang + " -o st");
    EXPECT_EQ(result.exit_code, 1) << lang;
    EXPECT_NE(result.text.find("by reference"), std::string::npos) << result.text;
    EXPECT_FALSE(fs::exists(path("st"))) << lang;
  }
}

TEST_F(CodegenStreamit, AProgramForAnotherModelIsRefusedAndNothingIsWritten) {
  for (const std::string lang : {"streamit", "cpp"}) {
    CommandOutput result =
        cleave("codegen other.onnx --stream prog.json --lang " + lang + " -o st");
    EXPECT_EQ(result.exit_code, 1) << lang;
    EXPECT_NE(result.text.find("prog.json"), std::string::npos) << result.text;
    EXPECT_NE(result.text.find("another model"), std::string::npos) << result.text;
    EXPECT_FALSE(fs::exists(path("st"))) << lang;
  }
}

TEST_F(CodegenStreamit, CppOfAProgramWhoseJoinerMixesItemTypesNamesItAndWritesNothing) {
  std::ofstream(path("mixed.json")) << R"({"pipeline": {"name": "top", "streams": [
    {"splitjoin": {"name": "both", "split": "duplicate", "streams": [
      {"filter": {"name": "net", "pop": 1, "push": 1, "model": "m.onnx"}},
      {"filter": {"name": "pass", "pop": 1, "push": 1, "op": "identity"}}],
      "join": {"roundrobin": [1, 1]}}}]}})";
  CommandOutput result = cleave("codegen m.onnx --stream mixed.json --lang cpp -o st");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.text.find("both"), std::string::npos) << result.text;
  EXPECT_FALSE(fs::exists(path("st")));
}

TEST_F(CodegenStreamit, CppOfAProgramWritesRingsSizedByTheSchedule) {
  CommandOutput generated = cleave("codegen m.onnx --stream prog.json --lang cpp -o st");
  ASSERT_EQ(generated.exit_code, 0) << generated.text;
  const std::string source = read_text_file(path("st/stream.cc"));
  // input -> net: one item of the model's input without its batch dim, 3*16*16 floats.
  EXPECT_NE(source.find("// input->net: 1 item(s) of f32[3,16,16]\n"
                        "alignas(64) std::byte ring0_data[3072];\n"),
            std::string::npos)
      << source;
  EXPECT_NE(source.find("void steady_state() {\n  fire_0();  // net\n  fire_1();  // pass\n}"),
            std::string::npos)
      << source;
  EXPECT_TRUE(fs::exists(path("st/filters/net/tables.cc")));
  EXPECT_TRUE(fs::exists(path("st/net.weights.bin")));
}

TEST_F(CodegenStreamit, AnUnknownLanguageIsRefusedAndNothingIsWritten) {
  CommandOutput result = cleave("codegen m.onnx --lang fortran -o st");
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.text.find("fortran"), std::string::npos) << result.text;
  EXPECT_FALSE(fs::exists(path("st")));
}

TEST_F(CodegenStreamit, StreamWithPytorchOrWithAPlanIsRefused) {
  CommandOutput pytorch = cleave("codegen m.onnx --stream prog.json --lang pytorch -o st");
  EXPECT_EQ(pytorch.exit_code, 1);
  EXPECT_NE(pytorch.text.find("--stream"), std::string::npos) << pytorch.text;
  CommandOutput both = cleave("codegen m.onnx --stream prog.json --plan auto --lang cpp -o st");
  EXPECT_EQ(both.exit_code, 1);
  EXPECT_FALSE(fs::exists(path("st")));
}

}  // namespace
}  // namespace cleave
