// Issue 42 at the command line: output folders are replaced only with --force, never one that
// holds an input, the working directory, `/` or $HOME; bad targets are refused before the work.
#include <gmock/gmock.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "command_fixture.h"
#include "runtime/npy.h"
#include "test_paths.h"

namespace cleave {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

class OutputSafety : public CommandFixture {
 protected:
  void SetUp() override {
    CommandFixture::SetUp();
    demo_ = std::string(CLEAVE_SOURCE_DIR) + "/models/inception_demo.onnx";
    setenv("CLEAVE_CACHE_DIR", path("cache").c_str(), 1);
  }
  void TearDown() override {
    unsetenv("CLEAVE_CACHE_DIR");
    CommandFixture::TearDown();
  }

  // A folder holding one file of ours, which no refused command may touch.
  void make_kept_folder(const std::string& name) const {
    fs::create_directories(path(name));
    std::ofstream(path(name + "/mine.txt")) << "keep";
  }
  bool kept(const std::string& name) const { return read_text(path(name + "/mine.txt")) == "keep"; }

  // `cleave arguments` run with `folder` as its working directory.
  CommandResult cleave_in(const std::string& folder, const std::string& arguments) const {
    return run_shell("cd " + path(folder) + " && " + CLEAVE_BINARY + " " + arguments);
  }

  // Hidden staging or old folders left beside the outputs.
  bool leftovers() const {
    for (const auto& entry : fs::directory_iterator(folder_))
      if (entry.path().filename().string().rfind(".", 0) == 0) return true;
    return false;
  }

  // p.json pops two items of in.npy's four and pushes their concatenation.
  void write_concat_program() const {
    std::ofstream(path("p.json")) << R"({"filter": {"name": "cat", "pop": 2, "push": 1,
      "op": "concat"}})";
    Tensor items = Tensor::allocate(DataType::kFloat, {4, 3});
    for (int i = 0; i < 12; ++i) items.data<float>()[i] = static_cast<float>(i);
    write_npy(path("in.npy"), items);
  }

  std::string demo_;
};

TEST_F(OutputSafety, SplitOntoANonEmptyFolderIsRefusedAndItsFilesKept) {
  make_kept_folder("out");
  CommandResult r = cleave("split " + demo_ + " --nodes 2 -o " + path("out"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr(path("out") +
                               ": folder exists and is not empty (use --force to replace it)"));
  EXPECT_TRUE(kept("out"));
  EXPECT_EQ(std::distance(fs::directory_iterator(path("out")), fs::directory_iterator()), 1);
}

TEST_F(OutputSafety, SplitForceReplacesAFolderButNeverOneHoldingTheModel) {
  make_kept_folder("out");
  fs::copy_file(demo_, path("out/m.onnx"));
  CommandResult r =
      cleave("split " + path("out/m.onnx") + " --nodes 2 -o " + path("out") + " --force");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr(path("out") +
                               ": refusing to replace this folder, even with --force: it holds "
                               "the input " +
                               path("out/m.onnx")));
  EXPECT_TRUE(kept("out"));
  EXPECT_TRUE(fs::exists(path("out/m.onnx")));

  make_kept_folder("old");
  r = cleave("split " + path("out/m.onnx") + " --nodes 2 -o " + path("old") + " --force");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(fs::exists(path("old/mine.txt")));
  EXPECT_TRUE(fs::exists(path("old/manifest.json")));
  EXPECT_FALSE(leftovers());
}

TEST_F(OutputSafety, SplitPictureTargetsAreCheckedBeforeTheSplit) {
  CommandResult r =
      cleave("split " + demo_ + " --nodes 2 -o " + path("out") + " --svg " + path("nop/x.svg"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err,
              HasSubstr("nop/x.svg: cannot write: folder '" + path("nop") + "' does not exist"));
  EXPECT_FALSE(fs::exists(path("out")));
  r = cleave("split " + demo_ + " --nodes 2 -o " + path("out") + " --dot " + folder_.string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("cannot write: it is a folder, expected a file"));
  EXPECT_FALSE(fs::exists(path("out")));
  EXPECT_FALSE(leftovers());
}

TEST_F(OutputSafety, CodegenNeverReplacesTheWorkingDirectory) {
  make_kept_folder("work");
  for (const char* target : {".", "./", "../work"}) {
    CommandResult r =
        cleave_in("work", "codegen " + demo_ + " --lang pytorch -o " + target + " --force");
    EXPECT_EQ(r.exit_code, 1) << target;
    EXPECT_THAT(r.err, HasSubstr(": refusing to replace this folder, even with --force: it is "
                                 "the working directory"))
        << target;
    EXPECT_TRUE(kept("work")) << target;
  }
  CommandResult r = cleave_in("work", "codegen " + demo_ + " --lang pytorch -o .. --force");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("even with --force: it holds the working directory"));
  EXPECT_TRUE(kept("work"));
}

TEST_F(OutputSafety, CodegenNeverReplacesRootOrHome) {
  CommandResult r = cleave("codegen " + demo_ + " --lang pytorch -o / --force");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("/: refusing to replace this folder, even with --force: it is "
                               "the root folder"));
  make_kept_folder("home");
  r = run_shell("HOME=" + path("home") + " " + CLEAVE_BINARY + " codegen " + demo_ +
                " --lang pytorch -o " + path("home") + " --force");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("even with --force: it is the home folder"));
  EXPECT_TRUE(kept("home"));
}

// An empty path is a slip (an unset shell variable), never "write nothing": every output option
// refuses it before any work.
TEST_F(OutputSafety, AnEmptyOutputPathIsRefused) {
  for (const std::string& command :
       {"codegen " + demo_ + " --lang pytorch -o ''", "split " + demo_ + " --nodes 2 -o ''",
        "plan " + demo_ + " --costs static -o ''", "run " + demo_ + " --trace ''",
        "run " + demo_ + " --output-dir ''", "inspect " + demo_ + " --svg ''"}) {
    CommandResult r = cleave(command);
    EXPECT_NE(r.exit_code, 0) << command;
    EXPECT_THAT(r.err, AllOf(HasSubstr("expected a path, got an empty one"),
                             Not(HasSubstr("internal error"))))
        << command;
  }
}

TEST_F(OutputSafety, StreamRunOutputDirThatIsAFileIsRefused) {
  write_concat_program();
  std::ofstream(path("file")) << "x";
  CommandResult r = cleave("stream run " + path("p.json") + " --input x=" + path("in.npy") +
                           " --output-dir " + path("file"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, AllOf(HasSubstr(path("file") + ": cannot write the output folder: it is a "
                                                    "file, expected a folder"),
                           Not(HasSubstr("internal error"))));
  EXPECT_EQ(read_text(path("file")), "x");
}

// output.npy is the stream's input here: the outputs may join the folder but never replace it.
TEST_F(OutputSafety, StreamRunNeverWritesItsOutputOverItsInput) {
  write_concat_program();
  fs::create_directory(path("out"));
  fs::copy_file(path("in.npy"), path("out/output.npy"));
  CommandResult r = cleave("stream run " + path("p.json") + " --input x=" + path("out/output.npy") +
                           " --output-dir " + path("out"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("output.npy: refusing to replace the input"));
  EXPECT_EQ(read_text(path("out/output.npy")), read_text(path("in.npy")));
  EXPECT_FALSE(leftovers());
}

}  // namespace
}  // namespace cleave
