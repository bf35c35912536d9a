// The host's speed recorded with a profile, and the check that decides whether to reuse it.
#include "cost/profile_conditions.h"

#include <fmt/core.h>
#include <omp.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "runtime/cpu_isa.h"
#include "support/error.h"
#include "support/json_file.h"
#include "support/timing.h"

namespace cleave {

double matmul_seconds(int n, int threads, int runs) {
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  const dnnl::memory::dim size = n;
  dnnl::memory::desc square({size, size}, dnnl::memory::data_type::f32,
                            dnnl::memory::format_tag::ab);
  dnnl::memory a(square, engine), b(square, engine), c(square, engine);
  std::memset(a.get_data_handle(), 0, static_cast<std::size_t>(size * size) * 4);
  std::memset(b.get_data_handle(), 0, static_cast<std::size_t>(size * size) * 4);
  omp_set_num_threads(threads);
  dnnl::matmul multiply(
      dnnl::matmul::primitive_desc(dnnl::matmul::desc(square, square, square), engine));
  std::vector<double> times;
  for (int i = 0; i < runs + 2; ++i) {
    const auto start = std::chrono::steady_clock::now();
    multiply.execute(stream, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}});
    stream.wait();
    if (i >= 2) {
      times.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
  }
  return median_of(times);
}

double reference_kernel_seconds(int threads) {
  double seconds = 0;
  std::exception_ptr failure;
  std::thread own([&] {
    try {
      seconds = matmul_seconds(384, threads, 9);
    } catch (...) {
      failure = std::current_exception();
    }
  });
  own.join();
  if (failure) std::rethrow_exception(failure);
  return seconds;
}

double load_average() {
  std::ifstream in("/proc/loadavg");
  double one_minute = -1;
  if (!(in >> one_minute)) return -1;
  return one_minute;
}

ProfileConditions measure_profile_conditions(int threads) {
  ProfileConditions conditions;
  conditions.threads = threads;
  conditions.load_average = load_average();
  conditions.reference_seconds = reference_kernel_seconds(threads);
  return conditions;
}

ProfileReuse default_profile_reuse() {
  const char* text = std::getenv("CLEAVE_PROFILE_REUSE");
  if (!text) return ProfileReuse::kCheck;
  const std::string value = text;
  if (value == "check") return ProfileReuse::kCheck;
  if (value == "always") return ProfileReuse::kAlways;
  if (value == "never") return ProfileReuse::kNever;
  throw Error(
      fmt::format("CLEAVE_PROFILE_REUSE: expected check, always or never, got \"{}\"", value));
}

bool same_host_speed(const ProfileConditions& recorded, const ProfileConditions& now,
                     double tolerance) {
  if (recorded.threads != now.threads || !(recorded.reference_seconds > 0) ||
      !(now.reference_seconds > 0))
    return false;
  const double ratio = now.reference_seconds / recorded.reference_seconds;
  return ratio <= 1 + tolerance && ratio >= 1 / (1 + tolerance);
}

nlohmann::json conditions_to_json(const ProfileConditions& conditions) {
  return {{"reference_seconds", conditions.reference_seconds},
          {"threads", conditions.threads},
          {"load_average", conditions.load_average}};
}

ProfileConditions conditions_from_json(const JsonField& field) {
  field.expect_object();
  ProfileConditions conditions;
  conditions.reference_seconds = field.at("reference_seconds").non_negative();
  if (!(conditions.reference_seconds > 0)) field.at("reference_seconds").fail("a time above 0");
  conditions.threads = static_cast<int>(field.at("threads").integer(1, 1 << 20));
  conditions.load_average = field.at("load_average").number();
  return conditions;
}

nlohmann::json cache_use_to_json(const ProfileCacheUse& use) {
  nlohmann::json json = {{"outcome", use.outcome}};
  if (!use.reason.empty()) json["reason"] = use.reason;
  if (use.recorded) json["recorded"] = conditions_to_json(*use.recorded);
  if (use.now) json["now"] = conditions_to_json(*use.now);
  return json;
}

}  // namespace cleave
