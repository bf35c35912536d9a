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

namespace {

// The reference kernel's product size and how long it runs back to back.
constexpr int kReferenceSize = 256;
constexpr double kReferenceWindowSeconds = 0.15;

// One f32 product of two n x n matrices on oneDNN, made once and run many times.
class Matmul {
 public:
  explicit Matmul(int n)
      : engine_(dnnl::engine::kind::cpu, 0),
        stream_(engine_),
        square_({n, n}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::ab),
        a_(square_, engine_),
        b_(square_, engine_),
        c_(square_, engine_),
        multiply_(
            dnnl::matmul::primitive_desc(dnnl::matmul::desc(square_, square_, square_), engine_)) {
    std::memset(a_.get_data_handle(), 0, square_.get_size());
    std::memset(b_.get_data_handle(), 0, square_.get_size());
  }
  void run() {
    multiply_.execute(stream_, {{DNNL_ARG_SRC, a_}, {DNNL_ARG_WEIGHTS, b_}, {DNNL_ARG_DST, c_}});
    stream_.wait();
  }

 private:
  dnnl::engine engine_;
  dnnl::stream stream_;
  dnnl::memory::desc square_;
  dnnl::memory a_, b_, c_;
  dnnl::matmul multiply_;
};

}  // namespace

double matmul_seconds(int n, int threads, int runs) {
  omp_set_num_threads(threads);
  Matmul product(n);
  product.run();
  product.run();
  std::vector<double> times;
  for (int i = 0; i < runs; ++i) {
    const auto start = std::chrono::steady_clock::now();
    product.run();
    times.push_back(seconds_since(start));
  }
  return median_of(times);
}

double reference_kernel_seconds(int threads) {
  double seconds = 0;
  std::exception_ptr failure;
  std::thread own([&] {
    try {
      omp_set_num_threads(threads);
      Matmul product(kReferenceSize);
      product.run();
      product.run();
      // Back to back for a while, timed as a whole: a thread that has just woken gets its core
      // first (the scheduler's wake-up credit, a few ms), so a few short runs see a quiet host
      // beside other processes; only a window well past that sees the share of the cores they
      // leave, as the profile's runs do.
      const auto start = std::chrono::steady_clock::now();
      int runs = 0;
      double elapsed = 0;
      while (elapsed < kReferenceWindowSeconds) {
        product.run();
        ++runs;
        elapsed = seconds_since(start);
      }
      seconds = elapsed / runs;
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
