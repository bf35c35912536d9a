// The output-folder transaction: whole or nothing, never replacing a protected folder or an input.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "support/atomic_output.h"
#include "support/error.h"
#include "support_test_util.h"

namespace cleave {
namespace {

namespace fs = std::filesystem;
using support_testing::error_of;
using support_testing::read_all;
using support_testing::Scratch;
using support_testing::write_all;
using ::testing::AllOf;
using ::testing::HasSubstr;
using Existing = FolderRules::Existing;

// Runs the test body in `folder`, going back to the previous working directory afterwards.
class InFolder {
 public:
  explicit InFolder(const std::string& folder) : previous_(fs::current_path()) {
    fs::current_path(folder);
  }
  ~InFolder() { fs::current_path(previous_); }

 private:
  fs::path previous_;
};

TEST(OutputFolder, SubFoldersAndExecutableFilesAreStagedAndMovedIn) {
  Scratch scratch;
  {
    AtomicFolder folder(scratch.file("gen"));
    folder.write_file("src/a.cc", "int a;\n");
    folder.write_file("run.py", "print(1)\n");
    folder.set_executable("run.py");
    folder.commit();
  }
  EXPECT_EQ(scratch.entries(),
            (std::set<std::string>{"gen", "gen/run.py", "gen/src", "gen/src/a.cc"}));
  EXPECT_EQ(read_all(scratch.file("gen/src/a.cc")), "int a;\n");
  EXPECT_EQ(::access(scratch.file("gen/run.py").c_str(), X_OK), 0);
}

TEST(OutputFolder, ANonEmptyFolderIsRefusedWithoutForceBeforeAnyWork) {
  Scratch scratch;
  fs::create_directory(scratch.file("out"));
  write_all(scratch.file("out/mine.txt"), "keep");
  EXPECT_THAT(error_of([&] { AtomicFolder folder(scratch.file("out")); }),
              HasSubstr("out: folder exists and is not empty (use --force to replace it)"));
  EXPECT_EQ(scratch.entries(), (std::set<std::string>{"out", "out/mine.txt"}));
}

TEST(OutputFolder, ForceReplacesTheFolderWhole) {
  Scratch scratch;
  fs::create_directory(scratch.file("out"));
  write_all(scratch.file("out/old.txt"), "old");
  {
    AtomicFolder folder(scratch.file("out/"), {Existing::kReplace, {}});
    folder.write_file("new.txt", "new");
    EXPECT_TRUE(fs::exists(scratch.file("out/old.txt")));
    folder.commit();
  }
  EXPECT_EQ(scratch.entries(), (std::set<std::string>{"out", "out/new.txt"}));
}

TEST(OutputFolder, ForceNeverReplacesAFolderHoldingAnInput) {
  Scratch scratch;
  fs::create_directories(scratch.file("out/models"));
  write_all(scratch.file("out/models/m.onnx"), "model");
  EXPECT_THAT(error_of([&] {
                AtomicFolder folder(
                    scratch.file("out"),
                    {Existing::kReplace, {scratch.file("out/models/../models/m.onnx")}});
              }),
              HasSubstr("out: refusing to replace this folder, even with --force: it holds the "
                        "input"));
  EXPECT_EQ(read_all(scratch.file("out/models/m.onnx")), "model");
}

TEST(OutputFolder, ForceNeverReplacesTheWorkingDirectoryOrAnAncestor) {
  Scratch scratch;
  fs::create_directories(scratch.file("work"));
  write_all(scratch.file("work/mine.txt"), "keep");
  fs::create_directory_symlink(scratch.file("work"), scratch.file("link"));
  InFolder in(scratch.file("work"));
  for (const std::string& target :
       std::vector<std::string>{".", "./", "../work", scratch.file("link")}) {
    EXPECT_THAT(error_of([&] {
                  AtomicFolder folder(target, {Existing::kReplace, {}});
                }),
                HasSubstr("even with --force: it is the working directory"))
        << target;
  }
  EXPECT_THAT(error_of([&] {
                AtomicFolder folder("..", {Existing::kReplace, {}});
              }),
              HasSubstr("even with --force: it holds the working directory"));
  EXPECT_EQ(read_all(scratch.file("work/mine.txt")), "keep");
}

TEST(OutputFolder, ForceNeverReplacesRootOrHome) {
  Scratch scratch;
  fs::create_directory(scratch.file("home"));
  const char* saved = std::getenv("HOME");
  const std::string previous = saved ? saved : "";
  ::setenv("HOME", scratch.file("home").c_str(), 1);
  const std::string home_error = error_of([&] {
    AtomicFolder folder(scratch.file("home"), {Existing::kReplace, {}});
  });
  if (saved) ::setenv("HOME", previous.c_str(), 1);
  EXPECT_THAT(home_error, HasSubstr("even with --force: it is the home folder"));
  EXPECT_THAT(error_of([&] {
                AtomicFolder folder("/", {Existing::kReplace, {}});
              }),
              HasSubstr("/: refusing to replace this folder, even with --force: it is the root "
                        "folder"));
}

TEST(OutputFolder, AnEmptyPathAFileOrAMissingParentIsRefused) {
  Scratch scratch;
  write_all(scratch.file("file"), "x");
  EXPECT_THAT(error_of([&] { AtomicFolder folder(""); }),
              HasSubstr("output folder: the path is empty, expected a folder"));
  EXPECT_THAT(error_of([&] {
                AtomicFolder folder(scratch.file("file"), {Existing::kMerge, {}});
              }),
              HasSubstr("file: cannot write the output folder: it is a file, expected a folder"));
  EXPECT_THAT(error_of([&] { AtomicFolder folder(scratch.file("no/out")); }),
              AllOf(HasSubstr("no/out: cannot write the output folder: folder '"),
                    HasSubstr("no' does not exist")));
  EXPECT_EQ(scratch.entries(), (std::set<std::string>{"file"}));
}

TEST(OutputFolder, AFailureWhileStagingLeavesNothing) {
  Scratch scratch;
  {
    AtomicFolder folder(scratch.file("out"));
    folder.write_file("a.txt", "a");
    folder.write_file("b", "a file where a folder must go");
    EXPECT_THAT(error_of([&] { folder.write_file("b/c.txt", "c"); }), HasSubstr("b/c.txt"));
  }
  EXPECT_TRUE(scratch.entries().empty());
}

TEST(OutputFolder, MergingNeverReplacesAnInput) {
  Scratch scratch;
  fs::create_directory(scratch.file("out"));
  write_all(scratch.file("out/x.npy"), "input");
  {
    AtomicFolder folder(scratch.file("out"), {Existing::kMerge, {scratch.file("out/x.npy")}});
    folder.write_file("y.npy", "y");
    folder.write_file("x.npy", "output");
    EXPECT_THAT(error_of([&] { folder.commit(); }),
                HasSubstr("x.npy: refusing to replace the input"));
  }
  EXPECT_EQ(scratch.entries(), (std::set<std::string>{"out", "out/x.npy"}));
  EXPECT_EQ(read_all(scratch.file("out/x.npy")), "input");
}

}  // namespace
}  // namespace cleave
