// .npy headers read exactly: bad shapes, trailing text and wrong data sizes name the file.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <string>

#include "ir/graph.h"
#include "runtime/npy.h"

namespace cleave {
namespace {

using ::testing::HasSubstr;

class NpyHeader : public ::testing::Test {
 protected:
  std::string path_ = (std::filesystem::temp_directory_path() /
                       ("cleave_npy_" + std::to_string(::getpid()) + "_" +
                        ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".npy"))
                          .string();
  void TearDown() override { std::filesystem::remove(path_); }

  // A version 1 file with this header text and `data_bytes` zero bytes of data.
  void write(std::string header, std::size_t data_bytes) {
    header += '\n';
    std::string contents("\x93NUMPY\x01\x00", 8);
    contents += static_cast<char>(header.size() & 0xff);
    contents += static_cast<char>(header.size() >> 8);
    contents += header;
    contents.append(data_bytes, '\0');
    std::ofstream(path_, std::ios::binary) << contents;
  }
  std::string error() {
    try {
      read_npy(path_);
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  }
};

TEST_F(NpyHeader, AWellFormedHeaderIsRead) {
  write("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 24);
  EXPECT_EQ(read_npy(path_).shape(), (std::vector<int64_t>{2, 3}));
}

TEST_F(NpyHeader, ANegativeDimensionIsRefused) {
  write("{'descr': '<f4', 'fortran_order': False, 'shape': (-1, 3, 32, 32), }", 12288);
  EXPECT_THAT(error(), HasSubstr(path_ + ": malformed .npy header at character"));
  EXPECT_THAT(error(), HasSubstr("expected a non-negative integer dimension"));
}

TEST_F(NpyHeader, ANonIntegerDimensionIsRefused) {
  write("{'descr': '<f4', 'fortran_order': False, 'shape': (2.5, 3), }", 24);
  EXPECT_THAT(error(), HasSubstr("expected ',' or ')' in the shape"));
}

TEST_F(NpyHeader, TextAfterTheDictionaryIsRefused) {
  write("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), } junk", 8);
  EXPECT_THAT(error(), HasSubstr("text after the closing '}'"));
}

TEST_F(NpyHeader, ADuplicateKeyIsRefused) {
  write("{'descr': '<f4', 'shape': (1,), 'fortran_order': False, 'shape': (2,), }", 8);
  EXPECT_THAT(error(), HasSubstr("key 'shape' appears twice"));
}

TEST_F(NpyHeader, FortranOrderIsRefused) {
  write("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", 24);
  EXPECT_THAT(error(), HasSubstr(path_ + ": Fortran-ordered arrays are not supported"));
}

TEST_F(NpyHeader, AnOverflowingShapeIsRefused) {
  write("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", 0);
  EXPECT_THAT(error(), HasSubstr(path_ + ": .npy header shape (4294967296,4294967296)"));
}

TEST_F(NpyHeader, DataShorterThanTheShapeIsRefused) {
  write("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 20);
  EXPECT_THAT(error(), HasSubstr("header says 24 data bytes for shape (2,3), file has 20"));
}

TEST(InputFileSpecs, ADuplicateInputIsRefusedNamingIt) {
  try {
    input_file_specs({"x=a.npy", "y=b.npy", "x=c.npy"});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "--input x: given twice (a.npy and c.npy); give each input once");
  }
}

}  // namespace
}  // namespace cleave
