// Located JSON reading: every error names the file, the field path and what was expected.
#include "support/json_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <string>

#include "ir/graph.h"
#include "support_test_util.h"

namespace cleave {
namespace {

using support_testing::error_of;
using support_testing::Scratch;
using support_testing::write_all;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(JsonFile, ReadsAFile) {
  Scratch scratch;
  write_all(scratch.file("a.json"), R"({"x": [1, 2]})");
  EXPECT_EQ(read_json_file(scratch.file("a.json"), "plan file")["x"][1], 2);
}

TEST(JsonFile, AFolderMissingFileAndBadJsonAreNamed) {
  Scratch scratch;
  std::filesystem::create_directory(scratch.file("dir.json"));
  EXPECT_THAT(error_of([&] { read_json_file(scratch.file("dir.json"), "plan file"); }),
              HasSubstr("dir.json: is a folder, expected a plan file"));
  EXPECT_THAT(error_of([&] { read_json_file(scratch.file("none.json"), "plan file"); }),
              HasSubstr("none.json: cannot open the plan file"));
  write_all(scratch.file("bad.json"), "{\"a\": ");
  const std::string bad = error_of([&] { read_json_file(scratch.file("bad.json"), "plan file"); });
  EXPECT_THAT(bad, AllOf(HasSubstr("bad.json: not valid JSON (expected a plan file)"),
                         HasSubstr("line 1"), Not(HasSubstr("json.exception"))));
}

TEST(JsonField, PathsNameTheFieldThatIsWrong) {
  const nlohmann::json json = nlohmann::json::parse(R"({"tasks": [{"time": [1, -2]}]})");
  const JsonField root(json, "t.json");
  const JsonField time = root.at("tasks").at(0).at("time");
  EXPECT_EQ(time.at(0).non_negative(), 1.0);
  EXPECT_EQ(error_of([&] { time.at(1).non_negative(); }),
            "t.json: tasks[0].time[1]: expected a finite number >= 0, got -2");
  EXPECT_THAT(error_of([&] { time.at(2); }),
              HasSubstr("t.json: tasks[0].time[2]: missing, the array has 2 elements"));
  EXPECT_THAT(error_of([&] { root.at("devices"); }),
              HasSubstr("t.json: devices: missing, expected a field \"devices\""));
}

TEST(JsonField, TheWrongKindOfRootIsNamed) {
  for (const char* text : {"[]", "null", "3"}) {
    const nlohmann::json json = nlohmann::json::parse(text);
    EXPECT_THAT(error_of([&] { JsonField(json, "p.json").at("task_graph"); }),
                AllOf(HasSubstr("p.json: expected an object, got"), Not(HasSubstr("exception"))))
        << text;
  }
}

TEST(JsonField, IntegersAreBounded) {
  const nlohmann::json json = nlohmann::json::parse(R"({"n": 100000, "f": 1.5, "big": 1e308})");
  const JsonField root(json, "p.json");
  EXPECT_EQ(root.at("n").integer(1, 100000), 100000);
  EXPECT_EQ(error_of([&] { root.at("n").integer(1, 1024); }),
            "p.json: n: expected an integer from 1 to 1024, got 100000");
  EXPECT_THAT(error_of([&] { root.at("f").integer(1, 1024); }), HasSubstr("got 1.5"));
  EXPECT_THAT(error_of([&] { root.at("big").integer(1, 1024); }), HasSubstr("p.json: big"));
}

TEST(JsonField, OptionalFieldsMayBeAbsentOrNull) {
  const nlohmann::json json = nlohmann::json::parse(R"({"a": null})");
  const JsonField root(json, "p.json");
  EXPECT_TRUE(root.find("a").has_value());
  EXPECT_FALSE(root.find("a", /*null_is_missing=*/true).has_value());
  EXPECT_FALSE(root.find("b").has_value());
}

}  // namespace
}  // namespace cleave
