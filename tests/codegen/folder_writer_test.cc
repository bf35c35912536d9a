// A generated folder appears whole or not at all.
#include "codegen/folder_writer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "ir/graph.h"

namespace cleave {
namespace {

namespace fs = std::filesystem;

class FolderWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("cleave_folder_writer_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  std::string read(const fs::path& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  int entries() {
    int count = 0;
    for ([[maybe_unused]] const auto& entry : fs::directory_iterator(root_)) ++count;
    return count;
  }
  fs::path root_;
};

TEST_F(FolderWriterTest, WritesEveryFileAndNothingElse) {
  FolderWriter writer;
  writer.add("README.md", "hello\n");
  writer.add("src/a.cc", "int a;\n");
  writer.write((root_ / "out").string(), false);
  EXPECT_EQ(read(root_ / "out" / "README.md"), "hello\n");
  EXPECT_EQ(read(root_ / "out" / "src" / "a.cc"), "int a;\n");
  EXPECT_EQ(entries(), 1);  // No staging folder left beside it.
}

TEST_F(FolderWriterTest, RefusesANonEmptyFolderUnlessReplacing) {
  fs::create_directories(root_ / "out");
  std::ofstream(root_ / "out" / "old.txt") << "old";
  FolderWriter writer;
  writer.add("new.txt", "new");
  EXPECT_THROW(writer.write((root_ / "out").string(), false), Error);
  EXPECT_TRUE(fs::exists(root_ / "out" / "old.txt"));
  writer.write((root_ / "out").string(), true);
  EXPECT_FALSE(fs::exists(root_ / "out" / "old.txt"));
  EXPECT_EQ(read(root_ / "out" / "new.txt"), "new");
  EXPECT_EQ(entries(), 1);
}

TEST_F(FolderWriterTest, AFailedWriteLeavesNothing) {
  FolderWriter writer;
  writer.add("a.txt", "a");
  // A file where a folder must go: the second file cannot be written.
  writer.add("b", "a file");
  writer.add("b/c.txt", "c");
  EXPECT_THROW(writer.write((root_ / "out").string(), false), Error);
  EXPECT_FALSE(fs::exists(root_ / "out"));
  EXPECT_EQ(entries(), 0);
}

TEST_F(FolderWriterTest, RefusesPathsOutsideTheFolder) {
  FolderWriter writer;
  EXPECT_THROW(writer.add("../escape.txt", "x"), Error);
  EXPECT_THROW(writer.add("/etc/x", "x"), Error);
}

}  // namespace
}  // namespace cleave
