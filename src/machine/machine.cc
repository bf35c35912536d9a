// Reading, checking and writing machine files, and the default machine of CPU workers.
#include "machine/machine.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "ir/graph.h"
#include "support/atomic_output.h"
#include "support/json_file.h"
#include "support/limits.h"
#include "support/wait_backoff.h"

namespace cleave {
namespace {

double positive_number(const nlohmann::json& value, const std::string& where) {
  if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() <= 0) {
    throw Error(fmt::format("{}: expected a positive number, got {}", where, show_json(value)));
  }
  return value.get<double>();
}

int64_t positive_integer(const nlohmann::json& value, const std::string& where) {
  if (!value.is_number_integer() || value.get<int64_t>() <= 0) {
    throw Error(fmt::format("{}: expected a positive integer, got {}", where, show_json(value)));
  }
  return value.get<int64_t>();
}

int64_t non_negative_integer(const nlohmann::json& value, const std::string& where) {
  if (!value.is_number_integer() || value.get<int64_t>() < 0) {
    throw Error(
        fmt::format("{}: expected a non-negative integer, got {}", where, show_json(value)));
  }
  return value.get<int64_t>();
}

const nlohmann::json& array_field(const nlohmann::json& object, const char* key,
                                  const std::string& where) {
  const nlohmann::json& value = object.at(key);
  if (!value.is_array()) {
    throw Error(fmt::format("{}.{}: expected an array, got {}", where, key, show_json(value)));
  }
  return value;
}

const std::set<std::string> kDeviceKeys = {"name",         "kind",      "speed",
                                           "memory_bytes", "threads",   "cores",
                                           "batch_sizes",  "simulated", "roofline"};
const std::set<std::string> kRooflineKeys = {"flops_per_second", "bytes_per_second",
                                             "seconds_per_op"};
const std::set<std::string> kMachineKeys = {
    "name",         "devices",      "bandwidth",   "latency",         "endpoint_bandwidth",
    "wake_seconds", "send_seconds", "shared_link", "link_burst_bytes"};

void reject_unknown_keys(const nlohmann::json& object, const std::set<std::string>& known,
                         const std::string& where) {
  for (const auto& [key, value] : object.items()) {
    if (!known.contains(key)) {
      throw Error(
          fmt::format("{}: unknown field \"{}\" (known: {})", where, key, fmt::join(known, ", ")));
    }
  }
}

// Each speed is positive and finite already; the slowest must still be within kMaxSpeedRatio
// of the fastest, so that times scaled by them stay representable.
void check_speed_ratio(const std::vector<Device>& devices, const std::string& origin) {
  std::size_t fastest = 0, slowest = 0;
  for (std::size_t i = 1; i < devices.size(); ++i) {
    if (devices[i].speed > devices[fastest].speed) fastest = i;
    if (devices[i].speed < devices[slowest].speed) slowest = i;
  }
  if (devices[fastest].speed > devices[slowest].speed * kMaxSpeedRatio) {
    throw Error(fmt::format(
        "{}: devices[{}].speed: expected at most {:g} times slower than the fastest device "
        "(devices[{}].speed = {:g}), got {:g}",
        origin, slowest, kMaxSpeedRatio, fastest, devices[fastest].speed, devices[slowest].speed));
  }
}

// `json[key]`, a finite number at least 0; else an Error naming `origin`, the key and `what` the
// number counts.
double non_negative_number(const nlohmann::json& json, const char* key, const std::string& origin,
                           const char* what) {
  const nlohmann::json& value = json.at(key);
  if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() < 0) {
    throw Error(fmt::format("{}: {}: expected a non-negative number of {}, got {}", origin, key,
                            what, show_json(value)));
  }
  return value.get<double>();
}

}  // namespace

double Machine::transfer_time(std::size_t from, std::size_t to, double bytes) const {
  if (from == to) return 0;
  const double link = bandwidth.at(from).at(to);
  if (!(link > 0)) return std::numeric_limits<double>::infinity();
  const double delay = latency.empty() ? 0.0 : latency.at(from).at(to);
  return delay + bytes / link;
}

double Machine::arrival_delay(std::size_t from, std::size_t to, double bytes) const {
  if (!shared_memory || from == to) return transfer_time(from, to, bytes);
  return latency.empty() ? 0.0 : latency.at(from).at(to);
}

double Machine::read_time(std::size_t from, std::size_t to, double bytes) const {
  if (!shared_memory || from == to) return 0;
  return transfer_time(from, to, bytes) - arrival_delay(from, to, bytes);
}

double Machine::endpoint_seconds(double bytes) const {
  if (shared_memory || !(endpoint_bandwidth > 0)) return 0;
  return bytes / endpoint_bandwidth;
}

double Machine::copy_seconds(std::size_t device, double bytes) const {
  const double seconds = endpoint_seconds(bytes);
  const double speed = devices.at(device).speed;
  return seconds > 0 && speed > 0 && speed < 1 ? seconds / speed : seconds;
}

double Machine::sender_seconds(std::size_t device, double bytes) const {
  if (shared_memory) return 0;
  const double speed = devices.at(device).speed;
  const double per_message =
      send_seconds > 0 && speed > 0 && speed < 1 ? send_seconds / speed : send_seconds;
  return copy_seconds(device, bytes) + per_message;
}

bool Machine::prices_message_ends() const {
  return !shared_memory && (endpoint_bandwidth > 0 || wake_seconds > 0 || send_seconds > 0);
}

double Machine::wake_up_seconds(std::size_t device, double wait) const {
  if (!(wait > 0) || !(wake_seconds > 0) || shared_memory) return 0;
  const double speed = devices.at(device).speed;
  if (speed >= 1) return wake_seconds;
  return wake_seconds * sleeping_wait_polls(wait) / speed;
}

double Machine::message_taken(std::size_t device, double start, double there, double bytes) const {
  const double copied = start + copy_seconds(device, bytes);
  return there > copied ? there + wake_up_seconds(device, there - start) : copied;
}

double endpoint_bandwidth_from_json(const nlohmann::json& json, const std::string& origin) {
  const nlohmann::json& value = json.at("endpoint_bandwidth");
  if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() < 0) {
    throw Error(fmt::format(
        "{}: endpoint_bandwidth: expected a non-negative number of bytes/s (0: not priced), got {}",
        origin, show_json(value)));
  }
  return value.get<double>();
}

void message_ends_from_json(const nlohmann::json& json, const std::string& origin,
                            Machine& machine) {
  if (json.contains("endpoint_bandwidth"))
    machine.endpoint_bandwidth = endpoint_bandwidth_from_json(json, origin);
  if (json.contains("send_seconds")) {
    machine.send_seconds = non_negative_number(json, "send_seconds", origin,
                                               "seconds per message sent (0: not priced)");
  }
  if (json.contains("wake_seconds")) {
    machine.wake_seconds = non_negative_number(
        json, "wake_seconds", origin, "seconds per poll of a sleeping wait (0: not priced)");
  }
}

void message_ends_to_json(const Machine& machine, nlohmann::json& json) {
  if (machine.endpoint_bandwidth > 0) json["endpoint_bandwidth"] = machine.endpoint_bandwidth;
  if (machine.wake_seconds > 0) json["wake_seconds"] = machine.wake_seconds;
  if (machine.send_seconds > 0) json["send_seconds"] = machine.send_seconds;
  if (machine.shared_link) json["shared_link"] = true;
  if (machine.link_burst_bytes > 0) json["link_burst_bytes"] = machine.link_burst_bytes;
}

void shared_link_from_json(const nlohmann::json& json, const std::string& origin,
                           Machine& machine) {
  if (json.contains("shared_link")) {
    const nlohmann::json& value = json.at("shared_link");
    if (!value.is_boolean()) {
      throw Error(fmt::format(
          "{}: shared_link: expected true (every message crosses one medium in turn) or false "
          "(a link per pair and direction), got {}",
          origin, show_json(value)));
    }
    machine.shared_link = value.get<bool>();
  }
  if (!json.contains("link_burst_bytes")) return;
  const double burst = non_negative_number(json, "link_burst_bytes", origin,
                                           "bytes (the shared link's token bucket depth)");
  if (!machine.shared_link && burst > 0) {
    throw Error(
        fmt::format("{}: link_burst_bytes: a burst is priced on a shared link only; expected "
                    "\"shared_link\": true beside it",
                    origin));
  }
  machine.link_burst_bytes = burst;
}

bool Machine::identical(std::size_t a, std::size_t b) const {
  const Device& first = devices.at(a);
  const Device& second = devices.at(b);
  return first.kind == second.kind && first.speed == second.speed &&
         first.roofline.flops_per_second == second.roofline.flops_per_second &&
         first.roofline.bytes_per_second == second.roofline.bytes_per_second &&
         first.roofline.seconds_per_op == second.roofline.seconds_per_op &&
         first.memory_bytes == second.memory_bytes && first.batch_sizes == second.batch_sizes;
}

Device device_from_json(const nlohmann::json& json, const std::string& where) {
  if (!json.is_object()) {
    throw Error(fmt::format("{}: expected an object, got {}", where, show_json(json)));
  }
  Device device;
  if (!json.contains("name") || !json["name"].is_string() ||
      json["name"].get<std::string>().empty()) {
    throw Error(fmt::format("{}.name: expected a non-empty string", where));
  }
  device.name = json["name"].get<std::string>();
  if (json.contains("kind")) {
    if (!json["kind"].is_string()) {
      throw Error(
          fmt::format("{}.kind: expected a string, got {}", where, show_json(json["kind"])));
    }
    device.kind = json["kind"].get<std::string>();
  }
  if (json.contains("speed")) device.speed = positive_number(json["speed"], where + ".speed");
  if (json.contains("memory_bytes")) {
    device.memory_bytes = positive_number(json["memory_bytes"], where + ".memory_bytes");
  }
  if (json.contains("threads")) {
    const int64_t threads = positive_integer(json["threads"], where + ".threads");
    if (threads > 1 << 16) {
      throw Error(fmt::format("{}.threads: {} is implausibly many", where, threads));
    }
    device.threads = static_cast<int>(threads);
  }
  if (json.contains("cores")) {
    const nlohmann::json& cores = array_field(json, "cores", where);
    for (std::size_t i = 0; i < cores.size(); ++i) {
      const int64_t core = non_negative_integer(cores[i], fmt::format("{}.cores[{}]", where, i));
      if (core > 1 << 20) {
        throw Error(fmt::format("{}.cores[{}]: {} is not a plausible core number", where, i, core));
      }
      device.cores.push_back(static_cast<int>(core));
    }
  }
  if (json.contains("batch_sizes")) {
    const nlohmann::json& sizes = array_field(json, "batch_sizes", where);
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      device.batch_sizes.push_back(
          positive_integer(sizes[i], fmt::format("{}.batch_sizes[{}]", where, i)));
    }
  }
  if (json.contains("simulated")) {
    if (!json["simulated"].is_boolean()) {
      throw Error(fmt::format("{}.simulated: expected true or false, got {}", where,
                              show_json(json["simulated"])));
    }
    device.simulated = json["simulated"].get<bool>();
  }
  if (json.contains("roofline")) {
    const nlohmann::json& roofline = json["roofline"];
    const std::string inner = where + ".roofline";
    if (!roofline.is_object()) {
      throw Error(
          fmt::format("{}: expected an object with flops_per_second, bytes_per_second "
                      "and seconds_per_op, got {}",
                      inner, show_json(roofline)));
    }
    reject_unknown_keys(roofline, kRooflineKeys, inner);
    for (const char* key : {"flops_per_second", "bytes_per_second"}) {
      if (!roofline.contains(key)) throw Error(fmt::format("{}.{}: missing", inner, key));
    }
    device.roofline.flops_per_second =
        positive_number(roofline["flops_per_second"], inner + ".flops_per_second");
    device.roofline.bytes_per_second =
        positive_number(roofline["bytes_per_second"], inner + ".bytes_per_second");
    if (roofline.contains("seconds_per_op")) {
      const nlohmann::json& value = roofline["seconds_per_op"];
      if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() < 0) {
        throw Error(fmt::format("{}.seconds_per_op: expected a non-negative number, got {}", inner,
                                show_json(value)));
      }
      device.roofline.seconds_per_op = value.get<double>();
    }
  }
  return device;
}

nlohmann::json device_to_json(const Device& device) {
  nlohmann::json json = {{"name", device.name}, {"kind", device.kind}, {"speed", device.speed}};
  if (std::isfinite(device.memory_bytes)) json["memory_bytes"] = device.memory_bytes;
  json["threads"] = device.threads;
  if (!device.cores.empty()) json["cores"] = device.cores;
  if (!device.batch_sizes.empty()) json["batch_sizes"] = device.batch_sizes;
  if (device.simulated) json["simulated"] = true;
  if (device.roofline.declared()) {
    json["roofline"] = {{"flops_per_second", device.roofline.flops_per_second},
                        {"bytes_per_second", device.roofline.bytes_per_second},
                        {"seconds_per_op", device.roofline.seconds_per_op}};
  }
  return json;
}

std::vector<std::vector<double>> link_matrix_from_json(const nlohmann::json& json, std::size_t n,
                                                       const std::string& where) {
  // One number: every pair of devices linked alike (a cluster of hundreds of ranks on one
  // switch, whose matrix would run to megabytes).
  if (json.is_number()) {
    const double value = json.get<double>();
    if (!std::isfinite(value) || value < 0)
      throw Error(
          fmt::format("{}: expected a non-negative number, got {}", where, show_json(json)));
    std::vector<std::vector<double>> matrix(n, std::vector<double>(n, value));
    for (std::size_t d = 0; d < n; ++d) matrix[d][d] = 0;
    return matrix;
  }
  if (!json.is_array() || json.size() != n) {
    throw Error(fmt::format("{}: expected a {}x{} matrix (one row per device), got {}", where, n, n,
                            show_json(json)));
  }
  std::vector<std::vector<double>> matrix(n, std::vector<double>(n, 0.0));
  for (std::size_t row = 0; row < n; ++row) {
    if (!json[row].is_array() || json[row].size() != n) {
      throw Error(fmt::format("{}[{}]: expected a row of {} numbers, got {}", where, row, n,
                              show_json(json[row])));
    }
    for (std::size_t column = 0; column < n; ++column) {
      const nlohmann::json& value = json[row][column];
      if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() < 0) {
        throw Error(fmt::format("{}[{}][{}]: expected a non-negative number, got {}", where, row,
                                column, show_json(value)));
      }
      if (row != column) matrix[row][column] = value.get<double>();
    }
  }
  return matrix;
}

Machine machine_from_json(const nlohmann::json& json, const std::string& origin) {
  if (!json.is_object()) {
    throw Error(
        fmt::format("{}: expected a JSON object with \"devices\" and \"bandwidth\"", origin));
  }
  reject_unknown_keys(json, kMachineKeys, origin);
  Machine machine;
  if (json.contains("name")) {
    if (!json["name"].is_string()) {
      throw Error(
          fmt::format("{}: name: expected a string, got {}", origin, show_json(json["name"])));
    }
    machine.name = json["name"].get<std::string>();
  }
  if (!json.contains("devices") || !json["devices"].is_array() || json["devices"].empty()) {
    throw Error(fmt::format("{}: devices: expected a non-empty array of devices", origin));
  }
  std::set<std::string> names;
  for (std::size_t i = 0; i < json["devices"].size(); ++i) {
    const std::string where = fmt::format("{}: devices[{}]", origin, i);
    if (json["devices"][i].is_object()) reject_unknown_keys(json["devices"][i], kDeviceKeys, where);
    Device device = device_from_json(json["devices"][i], where);
    if (!names.insert(device.name).second) {
      throw Error(fmt::format("{}.name: duplicate device name \"{}\"", where, device.name));
    }
    machine.devices.push_back(std::move(device));
  }
  check_speed_ratio(machine.devices, origin);
  const std::size_t n = machine.devices.size();
  if (json.contains("bandwidth")) {
    machine.bandwidth = link_matrix_from_json(json["bandwidth"], n, origin + ": bandwidth");
  } else if (n > 1) {
    throw Error(
        fmt::format("{}: bandwidth: missing; a machine of {} devices needs a {}x{} matrix "
                    "of bytes/s (0 = no link)",
                    origin, n, n, n));
  } else {
    machine.bandwidth.assign(n, std::vector<double>(n, 0.0));
  }
  if (json.contains("latency")) {
    machine.latency = link_matrix_from_json(json["latency"], n, origin + ": latency");
  } else {
    machine.latency.assign(n, std::vector<double>(n, 0.0));
  }
  message_ends_from_json(json, origin, machine);
  shared_link_from_json(json, origin, machine);
  return machine;
}

nlohmann::json machine_to_json(const Machine& machine) {
  nlohmann::json devices = nlohmann::json::array();
  for (const Device& device : machine.devices) devices.push_back(device_to_json(device));
  nlohmann::json json = {{"name", machine.name}, {"devices", devices}};
  json["bandwidth"] = machine.bandwidth;
  bool any_latency = false;
  for (const auto& row : machine.latency) {
    for (double value : row) any_latency = any_latency || value != 0;
  }
  if (any_latency) json["latency"] = machine.latency;
  message_ends_to_json(machine, json);
  return json;
}

Machine read_machine(const std::string& path) {
  return machine_from_json(read_json_file(path, "machine file"), path);
}

void write_machine(const Machine& machine, const std::string& path) {
  write_file_atomically(path, machine_to_json(machine).dump(2) + "\n");
}

Machine cpu_machine(int workers, int threads_each, const HostLinks& links) {
  if (workers < 1 || threads_each < 1) {
    throw Error(
        fmt::format("cpu machine: expected at least 1 worker of at least 1 thread, got {} "
                    "workers of {} threads",
                    workers, threads_each));
  }
  // Workers on one host share memory: a hand-off costs the reader the other core's cache
  // lines plus a wake-up. Unless this host was calibrated, both are HostLinks' rough guesses.
  Machine machine;
  machine.name = fmt::format("cpu x{}", workers);
  machine.link_source = links.source;
  machine.task_seconds = links.task_seconds;
  machine.run_seconds = links.run_seconds;
  machine.shared_memory = true;
  const auto n = static_cast<std::size_t>(workers);
  for (int i = 0; i < workers; ++i) {
    Device device;
    device.name = fmt::format("cpu{}", i);
    device.kind = "cpu";
    device.threads = threads_each;
    machine.devices.push_back(device);
  }
  machine.bandwidth.assign(n, std::vector<double>(n, links.bandwidth));
  machine.latency.assign(n, std::vector<double>(n, links.latency));
  for (std::size_t i = 0; i < n; ++i) {
    machine.bandwidth[i][i] = 0;
    machine.latency[i][i] = 0;
  }
  return machine;
}

}  // namespace cleave
