// Peak rates cached on disk per CPU model, ISA and thread count.
#include "cost/peak_rate_cache.h"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>

#include "runtime/cpu_isa.h"
#include "runtime/cpu_model.h"
#include "support/atomic_output.h"
#include "support/error.h"
#include "support/json_file.h"

namespace cleave {

namespace fs = std::filesystem;

namespace {

// Bumped whenever the probe measures something else, so that older files are not read as new.
constexpr int kFormat = 1;

// A CPU model name as a file name part: letters and digits kept, every other run of
// characters one '_'.
std::string file_name_part(const std::string& text) {
  std::string part;
  for (unsigned char c : text) {
    if (std::isalnum(c)) {
      part.push_back(static_cast<char>(c));
    } else if (!part.empty() && part.back() != '_') {
      part.push_back('_');
    }
  }
  while (!part.empty() && part.back() == '_') part.pop_back();
  return part.empty() ? "unknown_cpu" : part;
}

double positive_rate(const JsonField& field) {
  const double value = field.number();
  if (!(value > 0)) field.fail("a positive rate");
  return value;
}

PeakRates rates_from_json(const nlohmann::json& json, const std::string& origin, int max_threads) {
  const JsonField root(json, origin);
  root.expect_object();
  if (root.at("format").integer(0, std::numeric_limits<int>::max()) != kFormat)
    root.at("format").fail(fmt::format("format {}", kFormat));
  const JsonField flops = root.at("flops_per_second");
  if (flops.size() != static_cast<std::size_t>(max_threads))
    flops.fail(fmt::format("{} rates, one per thread count", max_threads));
  PeakRates rates;
  for (std::size_t t = 0; t < flops.size(); ++t)
    rates.flops_per_second.push_back(positive_rate(flops.at(t)));
  rates.bytes_per_second = positive_rate(root.at("bytes_per_second"));
  rates.seconds_per_op = root.at("seconds_per_op").non_negative();
  return rates;
}

nlohmann::json rates_to_json(const PeakRates& rates) {
  const CpuModel cpu = cpu_model();
  return {{"format", kFormat},
          {"cpu", cpu.name},
          {"isa", isa_cache_key()},
          {"flops_per_second", rates.flops_per_second},
          {"bytes_per_second", rates.bytes_per_second},
          {"seconds_per_op", rates.seconds_per_op}};
}

void tell(const PeakRateCache& cache, const std::string& line) {
  if (cache.warn) {
    cache.warn(line);
  } else {
    fmt::print(stderr, "cleave: warning: {}\n", line);
  }
}

}  // namespace

std::string host_cache_key() {
  return fmt::format("{}-{}", file_name_part(cpu_model().name), isa_cache_key());
}

std::string peak_rate_cache_key(int max_threads) {
  return fmt::format("{}-t{}", host_cache_key(), std::max(1, max_threads));
}

nlohmann::json cached_host_measurement(
    const std::string& file_name, const PeakRateCache& cache, const std::string& what,
    const std::function<void(const nlohmann::json&, const std::string& origin)>& check,
    const std::function<nlohmann::json()>& measure) {
  const fs::path file =
      fs::path(cache.directory.empty() ? default_cache_directory("rates") : cache.directory) /
      file_name;
  std::error_code error;
  if (fs::exists(file, error)) {
    try {
      nlohmann::json json = read_json_file(file.string(), what + " cache");
      check(json, file.string());
      return json;
    } catch (const Error& e) {
      tell(cache, fmt::format("cached {} not used, measuring again: {}", what, e.what()));
    }
  }
  nlohmann::json json = measure();
  try {
    fs::create_directories(file.parent_path());
    write_file_atomically(file.string(), json.dump(2) + "\n");
  } catch (const std::exception&) {
    // An unwritable cache only costs the measurement next time.
  }
  return json;
}

PeakRates cached_peak_rates(int max_threads, const PeakRateCache& cache,
                            const std::function<PeakRates(int)>& measure) {
  max_threads = std::max(1, max_threads);
  const nlohmann::json json = cached_host_measurement(
      peak_rate_cache_key(max_threads) + ".json", cache, "peak rates",
      [&](const nlohmann::json& read, const std::string& origin) {
        rates_from_json(read, origin, max_threads);
      },
      [&] { return rates_to_json(measure(max_threads)); });
  return rates_from_json(json, "peak rates", max_threads);
}

}  // namespace cleave
