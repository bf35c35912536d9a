// JSON that overflows a double or fails to parse: the file, the place and the reason in words.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "support/error.h"
#include "support/json_file.h"
#include "support_test_util.h"

namespace cleave {
namespace {

using support_testing::error_of;
using support_testing::Scratch;
using support_testing::write_all;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(JsonNumbers, AnOverflowingNumberIsNamedWithItsLineAndColumn) {
  Scratch scratch;
  write_all(scratch.file("m.json"), "{\n  \"speed\": 1e400\n}\n");
  EXPECT_EQ(error_of([&] { read_json_file(scratch.file("m.json"), "machine file"); }),
            scratch.file("m.json") +
                ": line 2, column 12: number out of range: 1e400 is beyond a double's range "
                "(expected a machine file)");
}

TEST(JsonNumbers, ParsedTextNamesItsOriginWithoutParserCodes) {
  const std::string message =
      error_of([] { parse_json_text("{\"a\": [1, }", "prog.json", "stream program"); });
  EXPECT_THAT(message, AllOf(HasSubstr("prog.json: not valid JSON (expected a stream program)"),
                             HasSubstr("line 1"), Not(HasSubstr("json.exception"))));
}

}  // namespace
}  // namespace cleave
