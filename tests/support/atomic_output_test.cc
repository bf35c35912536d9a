// The atomic writer: files and folders appear whole or not at all, and no temporary survives.
#include "support/atomic_output.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <set>
#include <string>

#include "ir/graph.h"
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

TEST(AtomicFile, WritesAndReplacesAFile) {
  Scratch scratch;
  write_file_atomically(scratch.file("a.txt"), "first");
  write_file_atomically(scratch.file("a.txt"), "second");
  EXPECT_EQ(read_all(scratch.file("a.txt")), "second");
  EXPECT_EQ(scratch.entries(), (std::set<std::string>{"a.txt"}));
}

TEST(AtomicFile, AFolderInTheWayIsRefusedAndNothingIsLeft) {
  Scratch scratch;
  fs::create_directory(scratch.file("out.json"));
  EXPECT_THAT(error_of([&] { write_file_atomically(scratch.file("out.json"), "x"); }),
              AllOf(HasSubstr("out.json: cannot write: it is a folder, expected a file")));
  EXPECT_EQ(scratch.entries(), (std::set<std::string>{"out.json"}));
}

// `-o /dev/null` must not replace the device with a file: a pipe stands in for it here (its
// reader opened first, so the write neither blocks nor, on a replaced pipe, hangs the test).
TEST(AtomicFile, APipeIsWrittenIntoAndStaysAPipe) {
  Scratch scratch;
  const std::string pipe = scratch.file("pipe");
  ASSERT_EQ(::mkfifo(pipe.c_str(), 0600), 0);
  const int reader = ::open(pipe.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0);
  write_file_atomically(pipe, "through the pipe");
  char buffer[64] = {};
  const ssize_t got = ::read(reader, buffer, sizeof buffer);
  ::close(reader);
  EXPECT_EQ(std::string(buffer, got > 0 ? static_cast<std::size_t>(got) : 0), "through the pipe");
  EXPECT_TRUE(fs::is_fifo(pipe));
  EXPECT_EQ(scratch.entries(), (std::set<std::string>{"pipe"}));
}

TEST(AtomicFile, AMissingFolderIsNamed) {
  Scratch scratch;
  EXPECT_THAT(error_of([&] { write_file_atomically(scratch.file("no/such/a.txt"), "x"); }),
              HasSubstr("does not exist"));
  EXPECT_TRUE(scratch.entries().empty());
}

TEST(AtomicFolder, ANewFolderAppearsOnlyOnCommit) {
  Scratch scratch;
  {
    AtomicFolder folder(scratch.file("out"));
    folder.write_file("a.npy", "A");
    folder.write_file("b.npy", "B");
    EXPECT_FALSE(fs::exists(scratch.file("out")));
    folder.commit();
  }
  EXPECT_EQ(scratch.entries(), (std::set<std::string>{"out", "out/a.npy", "out/b.npy"}));
  EXPECT_EQ(read_all(scratch.file("out/b.npy")), "B");
}

TEST(AtomicFolder, AnAbandonedFolderLeavesNothing) {
  Scratch scratch;
  {
    AtomicFolder folder(scratch.file("out"));
    folder.write_file("a.npy", "A");
  }
  EXPECT_TRUE(scratch.entries().empty());
}

TEST(AtomicFolder, FilesJoinAnExistingFolder) {
  Scratch scratch;
  fs::create_directory(scratch.file("out"));
  write_all(scratch.file("out/keep.txt"), "kept");
  write_all(scratch.file("out/a.npy"), "old");
  {
    AtomicFolder folder(scratch.file("out"), {FolderRules::Existing::kMerge, {}});
    folder.write_file("a.npy", "new");
    folder.commit();
  }
  EXPECT_EQ(scratch.entries(), (std::set<std::string>{"out", "out/a.npy", "out/keep.txt"}));
  EXPECT_EQ(read_all(scratch.file("out/a.npy")), "new");
}

// The first output's file must not be written when the second's target is a folder.
TEST(AtomicFolder, AFolderInTheWayOfOneFileChangesNothing) {
  Scratch scratch;
  fs::create_directories(scratch.file("out/b.npy"));
  {
    AtomicFolder folder(scratch.file("out"), {FolderRules::Existing::kMerge, {}});
    folder.write_file("a.npy", "A");
    folder.write_file("b.npy", "B");
    EXPECT_THAT(error_of([&] { folder.commit(); }),
                AllOf(HasSubstr("out/b.npy: cannot write: it is a folder, expected a file"),
                      HasSubstr("nothing in")));
  }
  EXPECT_EQ(scratch.entries(), (std::set<std::string>{"out", "out/b.npy"}));
}

TEST(AtomicFolder, AFileNamedAsTheFolderIsRefused) {
  Scratch scratch;
  write_all(scratch.file("out"), "a file");
  EXPECT_THAT(error_of([&] { AtomicFolder folder(scratch.file("out")); }),
              HasSubstr("out: cannot write the output folder: it is a file, expected a folder"));
  EXPECT_EQ(scratch.entries(), (std::set<std::string>{"out"}));
}

TEST(AtomicFolder, NamesLeavingTheFolderAreRefused) {
  Scratch scratch;
  AtomicFolder folder(scratch.file("out"));
  EXPECT_THAT(error_of([&] { folder.write_file("../escape", "x"); }),
              HasSubstr("'../escape' is not a file inside the folder"));
  EXPECT_THAT(error_of([&] { folder.write_file("/etc/escape", "x"); }),
              HasSubstr("is not a file inside the folder"));
}

}  // namespace
}  // namespace cleave
