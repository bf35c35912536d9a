// Stray library exceptions become plain words: no "std::", codes or "bad_alloc" for a user.
#include "support/describe_exception.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <new>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <system_error>

#include "support/error.h"

namespace cleave {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

auto plain_words() {
  return AllOf(Not(HasSubstr("std::")), Not(HasSubstr("internal error")),
               Not(HasSubstr("bad_alloc")), Not(HasSubstr("json.exception")),
               Not(HasSubstr("filesystem error")));
}

TEST(DescribeException, ErrorKeepsItsMessage) {
  EXPECT_EQ(describe_exception(Error("m.json: steps[3]: expected x, got y")),
            "m.json: steps[3]: expected x, got y");
}

TEST(DescribeException, AllocationFailuresSayOutOfMemory) {
  EXPECT_THAT(describe_exception(std::bad_alloc()),
              AllOf(HasSubstr("out of memory"), plain_words()));
  EXPECT_THAT(describe_exception(std::length_error("vector::reserve")),
              AllOf(HasSubstr("out of memory"), plain_words()));
}

TEST(DescribeException, FileSystemErrorsNameThePathAndTheReason) {
  const std::filesystem::filesystem_error error("cannot create directories", "/tmp/a_file/out",
                                                std::make_error_code(std::errc::not_a_directory));
  EXPECT_EQ(describe_exception(error),
            "/tmp/a_file/out: cannot create directories: Not a directory");
  const std::filesystem::filesystem_error empty("cannot make absolute path", "",
                                                std::make_error_code(std::errc::invalid_argument));
  EXPECT_THAT(describe_exception(empty),
              AllOf(HasSubstr("an empty path"), HasSubstr("Invalid argument"), plain_words()));
}

TEST(DescribeException, JsonErrorsLoseTheirCodes) {
  try {
    nlohmann::json(nlohmann::json::object()).at("steps");
    FAIL() << "no exception";
  } catch (const std::exception& e) {
    EXPECT_THAT(describe_exception(e), AllOf(HasSubstr("key 'steps' not found"), plain_words()));
  }
}

TEST(DescribeException, OtherExceptionsDropStdPrefixes) {
  EXPECT_THAT(describe_exception(std::runtime_error("std::thread failed")),
              AllOf(HasSubstr("thread failed"), plain_words()));
}

}  // namespace
}  // namespace cleave
