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
  // Model paths are relative to the folder written.
  EXPECT_NE(source.find("run_model(\"../m.onnx\", in.window(1), 1)"), std::string::npos) << source;
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

TEST_F(CodegenStreamit, ModelConversionReadBackFromItsStreamitTextHasMixedRings) {
  write_model(kMixedBranchModel, path("mixed.onnx"));
  CommandOutput text = cleave("codegen mixed.onnx --lang streamit -o st");
  ASSERT_EQ(text.exit_code, 0) << text.text;
  const std::string source = read_text_file(path("st/stream.cc"));
  EXPECT_NE(source.find("// Converted from model \"mixed.onnx\" (fnv1a64:"), std::string::npos)
      << source;
  // Each model filter's graph lies where its run_model names it.
  const std::size_t run = source.find("run_model(\"");
  ASSERT_NE(run, std::string::npos);
  const std::string model = source.substr(run + 11, source.find('"', run + 11) - run - 11);
  EXPECT_TRUE(fs::exists(path("st/" + model))) << model;
  CommandOutput cpp = cleave("codegen mixed.onnx --stream st/stream.cc --lang cpp --json -o gen");
  ASSERT_EQ(cpp.exit_code, 0) << cpp.text;
  EXPECT_NE(cpp.text.find("\"mixed_channels\": 1"), std::string::npos) << cpp.text;
  const std::string generated = read_text_file(path("gen/stream.cc"));
  EXPECT_NE(generated.find("item(s) of several types, slots of the largest (8192 bytes)"),
            std::string::npos)
      << generated;
  // The text of one model's conversion is refused for another model, naming both.
  CommandOutput other = cleave("codegen m.onnx --stream st/stream.cc --lang cpp -o other");
  EXPECT_EQ(other.exit_code, 1);
  EXPECT_NE(other.text.find("conversion of model mixed.onnx"), std::string::npos) << other.text;
  EXPECT_FALSE(fs::exists(path("other")));
}

TEST_F(CodegenStreamit, StreamitTextThatCannotBeReadNamesItsLineAndWritesNothing) {
  ASSERT_EQ(cleave("codegen m.onnx --stream prog.json --lang streamit -o st").exit_code, 0);
  std::string source = read_text_file(path("st/stream.cc"));
  source.replace(source.find("/*push=*/1"), 10, "/*push=*/x");
  std::ofstream(path("st/broken.cc")) << source;
  CommandOutput result = cleave("codegen m.onnx --stream st/broken.cc --lang cpp -o gen");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.text.find("st/broken.cc:"), std::string::npos) << result.text;
  EXPECT_NE(result.text.find("/*push=*/"), std::string::npos) << result.text;
  EXPECT_FALSE(fs::exists(path("gen")));
  // Unbroken, the same text is read back as its program.
  CommandOutput read = cleave("codegen m.onnx --stream st/stream.cc --lang cpp -o gen");
  EXPECT_EQ(read.exit_code, 0) << read.text;
}

}  // namespace
}  // namespace cleave
