// Device speeds far apart (1e-300 beside 1) are refused where the machine file is read.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "ir/graph.h"
#include "machine/machine.h"

namespace cleave {
namespace {

std::string error_of(const std::string& text) {
  try {
    machine_from_json(nlohmann::json::parse(text), "m.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(SpeedRatio, ATinySpeedIsRefusedNamingTheDevice) {
  EXPECT_EQ(error_of(R"({"devices": [{"name": "a"}, {"name": "b", "speed": 2},
                                     {"name": "c", "speed": 1e-300}],
                        "bandwidth": [[0,1,1],[1,0,1],[1,1,0]]})"),
            "m.json: devices[2].speed: expected at most 1e+06 times slower than the fastest "
            "device (devices[1].speed = 2), got 1e-300");
}

TEST(SpeedRatio, SpeedsWithinTheRatioAreRead) {
  EXPECT_EQ(error_of(R"({"devices": [{"name": "a", "speed": 1e-2}, {"name": "b", "speed": 1e3}],
                        "bandwidth": [[0,1],[1,0]]})"),
            "no error");
}

}  // namespace
}  // namespace cleave
