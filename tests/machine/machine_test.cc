// Machine files: reading, writing, validation messages, the shipped machines, cpu_machine.
#include "machine/machine.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "ir/graph.h"
#include "test_paths.h"

namespace cleave {
namespace {

using ::testing::HasSubstr;

Machine parse(const std::string& text) {
  return machine_from_json(nlohmann::json::parse(text), "m.json");
}

std::string error_of(const std::string& text) {
  try {
    parse(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

const char* const kTwoDevices = R"({
  "name": "pair",
  "devices": [{"name": "cpu", "kind": "cpu", "speed": 1, "threads": 4, "cores": [0, 1, 2, 3]},
              {"name": "gpu", "kind": "gpu", "speed": 8, "memory_bytes": 16e9,
               "batch_sizes": [1, 4, 8], "simulated": true}],
  "bandwidth": [[0, 16e9], [8e9, 0]],
  "latency": [[0, 1e-5], [2e-5, 0]]
})";

TEST(MachineTest, ReadsEveryDeviceField) {
  const Machine machine = parse(kTwoDevices);
  ASSERT_EQ(machine.size(), 2u);
  EXPECT_EQ(machine.name, "pair");
  EXPECT_EQ(machine.devices[0].threads, 4);
  EXPECT_EQ(machine.devices[0].cores, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_TRUE(std::isinf(machine.devices[0].memory_bytes));
  EXPECT_EQ(machine.devices[1].kind, "gpu");
  EXPECT_EQ(machine.devices[1].speed, 8);
  EXPECT_EQ(machine.devices[1].memory_bytes, 16e9);
  EXPECT_EQ(machine.devices[1].batch_sizes, (std::vector<int64_t>{1, 4, 8}));
  EXPECT_TRUE(machine.devices[1].simulated);
}

TEST(MachineTest, TransferTimeIsLatencyPlusBytesOverBandwidth) {
  const Machine machine = parse(kTwoDevices);
  EXPECT_DOUBLE_EQ(machine.transfer_time(0, 1, 16e9), 1 + 1e-5);
  EXPECT_DOUBLE_EQ(machine.transfer_time(1, 0, 8e9), 1 + 2e-5);
  EXPECT_EQ(machine.transfer_time(1, 1, 8e9), 0);
}

TEST(MachineTest, ZeroBandwidthMeansNoLink) {
  const Machine machine = parse(R"({"devices": [{"name": "a"}, {"name": "b"}],
                                    "bandwidth": [[0, 0], [5, 0]]})");
  EXPECT_TRUE(std::isinf(machine.transfer_time(0, 1, 1)));
  EXPECT_DOUBLE_EQ(machine.transfer_time(1, 0, 10), 2);
}

TEST(MachineTest, LatencyDefaultsToZeroAndDiagonalIsIgnored) {
  const Machine machine = parse(R"({"devices": [{"name": "a"}, {"name": "b"}],
                                    "bandwidth": [[123, 10], [10, 7]]})");
  EXPECT_EQ(machine.bandwidth[0][0], 0);
  EXPECT_EQ(machine.latency[0][1], 0);
  EXPECT_DOUBLE_EQ(machine.transfer_time(0, 1, 10), 1);
}

TEST(MachineTest, JsonRoundTripKeepsEverything) {
  const Machine machine = parse(kTwoDevices);
  const Machine again = machine_from_json(machine_to_json(machine), "again");
  EXPECT_EQ(machine_to_json(again), machine_to_json(machine));
  EXPECT_EQ(again.latency, machine.latency);
  EXPECT_EQ(again.devices[0].cores, machine.devices[0].cores);
}

TEST(MachineTest, WriteThenReadFromFile) {
  const std::string path =
      (std::filesystem::temp_directory_path() / "cleave_machine_test.json").string();
  write_machine(parse(kTwoDevices), path);
  const Machine read = read_machine(path);
  EXPECT_EQ(read.devices[1].name, "gpu");
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  std::filesystem::remove(path);
}

TEST(MachineTest, IdenticalComparesKindSpeedMemoryAndBatches) {
  const Machine machine = cpu_machine(3, 2);
  EXPECT_TRUE(machine.identical(0, 2));
  const Machine pair = parse(kTwoDevices);
  EXPECT_FALSE(pair.identical(0, 1));
}

const char* const kRooflineDevice = R"({
  "devices": [{"name": "gpu", "roofline": {"flops_per_second": 1e13, "bytes_per_second": 1e12,
                                           "seconds_per_op": 1e-5}}]
})";

TEST(MachineTest, ReadsARooflineAndWritesItBack) {
  const Machine machine = parse(kRooflineDevice);
  const Roofline& roofline = machine.devices[0].roofline;
  EXPECT_TRUE(roofline.declared());
  EXPECT_EQ(roofline.flops_per_second, 1e13);
  EXPECT_EQ(roofline.bytes_per_second, 1e12);
  EXPECT_EQ(roofline.seconds_per_op, 1e-5);
  EXPECT_FALSE(parse(kTwoDevices).devices[0].roofline.declared());
  const Machine again = machine_from_json(machine_to_json(machine), "again");
  EXPECT_EQ(machine_to_json(again), machine_to_json(machine));
}

TEST(MachineTest, DevicesWithDifferentRooflinesAreNotInterchangeable) {
  const Machine machine = parse(R"({
    "devices": [{"name": "a", "roofline": {"flops_per_second": 1e13, "bytes_per_second": 1e12}},
                {"name": "b", "roofline": {"flops_per_second": 1e13, "bytes_per_second": 1e12}},
                {"name": "c", "roofline": {"flops_per_second": 2e13, "bytes_per_second": 1e12}}],
    "bandwidth": [[0, 1, 1], [1, 0, 1], [1, 1, 0]]})");
  EXPECT_TRUE(machine.identical(0, 1));
  EXPECT_FALSE(machine.identical(0, 2));
}

TEST(MachineErrorTest, RooflineNeedsPositiveRates) {
  EXPECT_EQ(error_of(R"({"devices": [{"name": "g", "roofline": {"flops_per_second": 0,
                                                               "bytes_per_second": 1}}]})"),
            "m.json: devices[0].roofline.flops_per_second: expected a positive number, got 0");
  EXPECT_EQ(error_of(R"({"devices": [{"name": "g", "roofline": {"flops_per_second": 1}}]})"),
            "m.json: devices[0].roofline.bytes_per_second: missing");
  EXPECT_EQ(error_of(R"({"devices": [{"name": "g", "roofline": {"flops_per_second": 1,
                        "bytes_per_second": 1, "seconds_per_op": -1}}]})"),
            "m.json: devices[0].roofline.seconds_per_op: expected a non-negative number, got -1");
  EXPECT_THAT(error_of(R"({"devices": [{"name": "g", "roofline": 5}]})"),
              HasSubstr("m.json: devices[0].roofline: expected an object"));
  EXPECT_THAT(error_of(R"({"devices": [{"name": "g", "roofline": {"flops_per_second": 1,
                          "bytes_per_second": 1, "flops": 2}}]})"),
              HasSubstr("m.json: devices[0].roofline: unknown field \"flops\""));
}

TEST(MachineTest, CpuMachineHasFastLinksBetweenIdenticalWorkers) {
  const Machine machine = cpu_machine(4, 2);
  ASSERT_EQ(machine.size(), 4u);
  EXPECT_EQ(machine.devices[3].name, "cpu3");
  EXPECT_EQ(machine.devices[3].threads, 2);
  EXPECT_EQ(machine.bandwidth[0][3], 20e9);
  EXPECT_EQ(machine.latency[2][1], 2e-6);
  EXPECT_EQ(machine.bandwidth[1][1], 0);
}

TEST(MachineTest, CpuMachineRefusesZeroWorkers) {
  EXPECT_THROW(cpu_machine(0, 1), Error);
}

TEST(MachineTest, EndpointBandwidthPricesEachEndOfAMessage) {
  const Machine plain = parse(kTwoDevices);
  EXPECT_EQ(plain.endpoint_bandwidth, 0);
  EXPECT_EQ(plain.endpoint_seconds(1e6), 0);
  EXPECT_FALSE(machine_to_json(plain).contains("endpoint_bandwidth"));
  nlohmann::json json = nlohmann::json::parse(kTwoDevices);
  json["endpoint_bandwidth"] = 5e9;
  const Machine priced = machine_from_json(json, "m.json");
  EXPECT_DOUBLE_EQ(priced.endpoint_seconds(1e6), 2e-4);
  EXPECT_EQ(machine_from_json(machine_to_json(priced), "again").endpoint_bandwidth, 5e9);
  Machine shared = priced;
  shared.shared_memory = true;  // Threads share values: no message, no copy at its ends.
  EXPECT_EQ(shared.endpoint_seconds(1e6), 0);
}

// A device below speed 1 (a CPU quota, a shared core) copies a message's end out of its share;
// one at speed 1 or more copies at endpoint_bandwidth; unpriced stays 0 everywhere.
TEST(MachineTest, CopySecondsTakeTheCopyingDevicesShare) {
  nlohmann::json json = nlohmann::json::parse(kTwoDevices);
  json["devices"][1]["speed"] = 0.5;
  EXPECT_EQ(machine_from_json(json, "m.json").copy_seconds(1, 1e6), 0);
  json["endpoint_bandwidth"] = 5e9;
  json["devices"][0]["speed"] = 2;
  const Machine priced = machine_from_json(json, "m.json");
  EXPECT_DOUBLE_EQ(priced.copy_seconds(0, 1e6), 2e-4);
  EXPECT_DOUBLE_EQ(priced.copy_seconds(1, 1e6), 4e-4);
  // A message received while busy: the copy at the reader's share.
  EXPECT_DOUBLE_EQ(priced.message_taken(1, 1.0, 0.5, 1e6), 1.0 + 4e-4);
  EXPECT_DOUBLE_EQ(priced.message_taken(0, 1.0, 0.5, 1e6), 1.0 + 2e-4);
  Machine shared = priced;
  shared.shared_memory = true;
  EXPECT_EQ(shared.copy_seconds(1, 1e6), 0);
}

// A sleeping wait's polls: every one from a device's share of a core below speed 1, only the
// one that finds the message on a core of its own; none without a wait or the field.
TEST(MachineTest, WakeSecondsPriceTheWaitsPolls) {
  nlohmann::json json = nlohmann::json::parse(kTwoDevices);
  json["devices"][1]["speed"] = 0.5;
  EXPECT_FALSE(machine_from_json(json, "m.json").prices_message_ends());
  EXPECT_EQ(machine_from_json(json, "m.json").wake_up_seconds(1, 5e-3), 0);
  json["wake_seconds"] = 1e-5;
  const Machine priced = machine_from_json(json, "m.json");
  EXPECT_TRUE(priced.prices_message_ends());
  EXPECT_DOUBLE_EQ(priced.wake_up_seconds(1, 5e-3), 36 * 1e-5 / 0.5);
  EXPECT_DOUBLE_EQ(priced.wake_up_seconds(0, 5e-3), 1e-5);
  EXPECT_EQ(priced.wake_up_seconds(1, 0), 0);
  EXPECT_EQ(priced.endpoint_seconds(1e6), 0);  // the bytes' copies stay unpriced
  EXPECT_EQ(machine_from_json(machine_to_json(priced), "again").wake_seconds, 1e-5);
  Machine shared = priced;
  shared.shared_memory = true;
  EXPECT_FALSE(shared.prices_message_ends());
  EXPECT_EQ(shared.wake_up_seconds(1, 5e-3), 0);
  for (const char* bad : {"-1", "\"slow\"", "null"}) {
    json["wake_seconds"] = nlohmann::json::parse(bad);
    try {
      machine_from_json(json, "m.json");
      ADD_FAILURE() << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr("m.json: wake_seconds: expected a non-negative number"))
          << bad;
    }
  }
}

TEST(MachineTest, ASharedLinkIsReadAndWrittenBack) {
  nlohmann::json json = nlohmann::json::parse(kTwoDevices);
  EXPECT_FALSE(machine_from_json(json, "m.json").shared_link);
  json["shared_link"] = true;
  const Machine shared = machine_from_json(json, "m.json");
  EXPECT_TRUE(shared.shared_link);
  EXPECT_TRUE(machine_from_json(machine_to_json(shared), "again").shared_link);
  json["shared_link"] = false;
  EXPECT_FALSE(machine_to_json(machine_from_json(json, "m.json")).contains("shared_link"));
}

TEST(MachineTest, ALinkBurstIsReadAndWrittenBack) {
  nlohmann::json json = nlohmann::json::parse(kTwoDevices);
  json["shared_link"] = true;
  json["link_burst_bytes"] = 125000;
  const Machine bucket = machine_from_json(json, "m.json");
  EXPECT_EQ(bucket.link_burst_bytes, 125000);
  EXPECT_EQ(machine_from_json(machine_to_json(bucket), "again").link_burst_bytes, 125000);
}

TEST(MachineTest, TheCostPerMessageSentIsReadWrittenBackAndPaidAtTheSendersSpeed) {
  nlohmann::json json = nlohmann::json::parse(kTwoDevices);
  json["send_seconds"] = 3e-5;
  json["endpoint_bandwidth"] = 1e6;
  Machine machine = machine_from_json(json, "m.json");
  EXPECT_EQ(machine.send_seconds, 3e-5);
  EXPECT_TRUE(machine.prices_message_ends());
  EXPECT_EQ(machine_from_json(machine_to_json(machine), "again").send_seconds, 3e-5);
  // Its copy (100 bytes at 1e6 bytes/s) and the cost per message; at half speed both double.
  EXPECT_DOUBLE_EQ(machine.sender_seconds(0, 100), 1e-4 + 3e-5);
  machine.devices[0].speed = 0.5;
  EXPECT_DOUBLE_EQ(machine.sender_seconds(0, 100), 2 * (1e-4 + 3e-5));
  machine.shared_memory = true;  // workers of one process send nothing
  EXPECT_EQ(machine.sender_seconds(0, 100), 0);
}

TEST(MachineErrorTest, TheCostPerMessageSentIsANonNegativeNumber) {
  for (const char* bad : {"-1", "\"30us\"", "null"}) {
    nlohmann::json json = nlohmann::json::parse(kTwoDevices);
    json["send_seconds"] = nlohmann::json::parse(bad);
    try {
      machine_from_json(json, "m.json");
      ADD_FAILURE() << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr("m.json: send_seconds: expected a non-negative number"))
          << bad;
    }
  }
}

TEST(MachineErrorTest, ALinkBurstIsANonNegativeNumberOnASharedLink) {
  for (const char* bad : {"-1", "\"1mbit\"", "null"}) {
    nlohmann::json json = nlohmann::json::parse(kTwoDevices);
    json["shared_link"] = true;
    json["link_burst_bytes"] = nlohmann::json::parse(bad);
    try {
      machine_from_json(json, "m.json");
      ADD_FAILURE() << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr("m.json: link_burst_bytes: expected a non-negative number"))
          << bad;
    }
  }
  nlohmann::json json = nlohmann::json::parse(kTwoDevices);
  json["link_burst_bytes"] = 125000;
  try {
    machine_from_json(json, "m.json");
    ADD_FAILURE() << "a burst without a shared link was accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("m.json: link_burst_bytes: a burst is priced on a shared link "
                                    "only; expected \"shared_link\": true"));
  }
}

TEST(MachineErrorTest, SharedLinkMustBeTrueOrFalse) {
  for (const char* bad : {"1", "\"yes\"", "null"}) {
    nlohmann::json json = nlohmann::json::parse(kTwoDevices);
    json["shared_link"] = nlohmann::json::parse(bad);
    try {
      machine_from_json(json, "m.json");
      ADD_FAILURE() << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr("m.json: shared_link: expected true")) << bad;
    }
  }
}

TEST(MachineErrorTest, EndpointBandwidthMustBeANonNegativeNumber) {
  for (const char* bad : {"-1", "\"fast\"", "[1]"}) {
    nlohmann::json json = nlohmann::json::parse(kTwoDevices);
    json["endpoint_bandwidth"] = nlohmann::json::parse(bad);
    try {
      machine_from_json(json, "m.json");
      ADD_FAILURE() << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr("m.json: endpoint_bandwidth: expected a non-negative "
                                      "number of bytes/s"))
          << bad;
    }
  }
}

TEST(MachineErrorTest, NegativeSpeedNamesFileDeviceAndField) {
  EXPECT_EQ(error_of(R"({"devices": [{"name": "a"}, {"name": "b"}, {"name": "c", "speed": -1}],
                        "bandwidth": [[0,1,1],[1,0,1],[1,1,0]]})"),
            "m.json: devices[2].speed: expected a positive number, got -1");
}

TEST(MachineErrorTest, WrongBandwidthRowLength) {
  EXPECT_THAT(error_of(R"({"devices": [{"name": "a"}, {"name": "b"}],
                           "bandwidth": [[0, 1], [1]]})"),
              HasSubstr("m.json: bandwidth[1]: expected a row of 2 numbers"));
}

TEST(MachineErrorTest, WrongBandwidthRowCount) {
  EXPECT_THAT(error_of(R"({"devices": [{"name": "a"}, {"name": "b"}], "bandwidth": [[0, 1]]})"),
              HasSubstr("m.json: bandwidth: expected a 2x2 matrix"));
}

TEST(MachineErrorTest, NegativeLatency) {
  EXPECT_THAT(error_of(R"({"devices": [{"name": "a"}, {"name": "b"}],
                           "bandwidth": [[0, 1], [1, 0]], "latency": [[0, -2], [0, 0]]})"),
              HasSubstr("m.json: latency[0][1]: expected a non-negative number, got -2"));
}

TEST(MachineErrorTest, MissingBandwidthForTwoDevices) {
  EXPECT_THAT(error_of(R"({"devices": [{"name": "a"}, {"name": "b"}]})"),
              HasSubstr("m.json: bandwidth: missing"));
}

TEST(MachineErrorTest, StringWhereNumberExpected) {
  EXPECT_THAT(
      error_of(R"({"devices": [{"name": "a", "memory_bytes": "lots"}]})"),
      HasSubstr("m.json: devices[0].memory_bytes: expected a positive number, got \"lots\""));
}

TEST(MachineErrorTest, FractionalThreads) {
  EXPECT_THAT(error_of(R"({"devices": [{"name": "a", "threads": 1.5}]})"),
              HasSubstr("devices[0].threads: expected a positive integer, got 1.5"));
}

TEST(MachineErrorTest, NegativeCore) {
  EXPECT_THAT(error_of(R"({"devices": [{"name": "a", "cores": [0, -1]}]})"),
              HasSubstr("devices[0].cores[1]: expected a non-negative integer, got -1"));
}

TEST(MachineErrorTest, ZeroBatchSize) {
  EXPECT_THAT(error_of(R"({"devices": [{"name": "a", "batch_sizes": [0]}]})"),
              HasSubstr("devices[0].batch_sizes[0]: expected a positive integer, got 0"));
}

TEST(MachineErrorTest, SimulatedMustBeBoolean) {
  EXPECT_THAT(error_of(R"({"devices": [{"name": "a", "simulated": "yes"}]})"),
              HasSubstr("devices[0].simulated: expected true or false"));
}

TEST(MachineErrorTest, DuplicateDeviceName) {
  EXPECT_THAT(error_of(R"({"devices": [{"name": "a"}, {"name": "a"}],
                           "bandwidth": [[0, 1], [1, 0]]})"),
              HasSubstr("devices[1].name: duplicate device name \"a\""));
}

TEST(MachineErrorTest, MissingName) {
  EXPECT_THAT(error_of(R"({"devices": [{"speed": 1}]})"),
              HasSubstr("m.json: devices[0].name: expected a non-empty string"));
}

TEST(MachineErrorTest, UnknownFieldIsATypo) {
  EXPECT_THAT(error_of(R"({"devices": [{"name": "a", "memory": 5}]})"),
              HasSubstr("m.json: devices[0]: unknown field \"memory\""));
}

TEST(MachineErrorTest, NoDevices) {
  EXPECT_THAT(error_of(R"({"devices": []})"), HasSubstr("m.json: devices: expected a non-empty"));
}

TEST(MachineErrorTest, NotAnObject) {
  EXPECT_THAT(error_of("[1, 2]"), HasSubstr("m.json: expected a JSON object"));
}

TEST(MachineErrorTest, UnreadableFileNamesThePath) {
  try {
    read_machine("/nonexistent/cleave.json");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("/nonexistent/cleave.json: cannot open"));
  }
}

TEST(MachineErrorTest, InvalidJsonNamesThePath) {
  const std::string path =
      (std::filesystem::temp_directory_path() / "cleave_machine_bad.json").string();
  {
    std::ofstream out(path);
    out << "{\"devices\": [";
  }
  try {
    read_machine(path);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr(path + ": not valid JSON"));
  }
  std::filesystem::remove(path);
}

TEST(ShippedMachinesTest, CpuT4A100UsesThePapersRelativeSpeeds) {
  const Machine machine =
      read_machine(std::string(CLEAVE_SOURCE_DIR) + "/machines/cpu_t4_a100.json");
  ASSERT_EQ(machine.size(), 3u);
  // DiviML Table II (RWNNs): the CPU is 7.10x and the T4 1.26x slower than the A100.
  EXPECT_NEAR(machine.devices[2].speed / machine.devices[0].speed, 7.10, 1e-4);
  EXPECT_NEAR(machine.devices[2].speed / machine.devices[1].speed, 1.26, 1e-4);
  EXPECT_EQ(machine.bandwidth[0][2], 32e9);
}

TEST(ShippedMachinesTest, Gpt3HasSixNodesOfFourWithFasterLinksInsideANode) {
  const Machine machine = read_machine(std::string(CLEAVE_SOURCE_DIR) + "/machines/gpt3_6x4.json");
  ASSERT_EQ(machine.size(), 24u);
  EXPECT_GT(machine.bandwidth[0][3], machine.bandwidth[0][4]);
  EXPECT_EQ(machine.bandwidth[4][7], machine.bandwidth[0][1]);
  EXPECT_TRUE(machine.identical(0, 23));
}

TEST(ShippedMachinesTest, ThisMachineHasTwoPinnedSingleThreadWorkers) {
  const Machine machine =
      read_machine(std::string(CLEAVE_SOURCE_DIR) + "/machines/this_machine.json");
  ASSERT_EQ(machine.size(), 2u);
  EXPECT_EQ(machine.devices[0].cores, std::vector<int>{0});
  EXPECT_EQ(machine.devices[1].cores, std::vector<int>{1});
  EXPECT_EQ(machine.devices[1].threads, 1);
}

}  // namespace
}  // namespace cleave
