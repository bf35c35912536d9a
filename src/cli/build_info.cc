// Build and machine facts for `cleave info`, `cleave --version` and `cleave run --json`.
#include "cli/build_info.h"

#include <fmt/core.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <thread>

#include "ir/graph.h"
#include "runtime/cpu_isa.h"
#include "runtime/cpu_model.h"
#include "runtime/wait_policy.h"
#include "support/cpu_quota.h"

// The build type is set for this file by CMakeLists.txt; the commit comes from a header that
// every build rewrites when the commit changed.
#if __has_include("cleave_git_commit.h")
#include "cleave_git_commit.h"  // Written by the build (cmake/git_commit.cmake).
#endif
#ifndef CLEAVE_GIT_COMMIT
#define CLEAVE_GIT_COMMIT ""
#endif
#ifndef CLEAVE_BUILD_TYPE
#define CLEAVE_BUILD_TYPE ""
#endif

namespace cleave::cli {

namespace {

constexpr const char* kVersion = "0.1";

std::string compiler() {
#if defined(__clang__)
  return fmt::format("clang {}.{}.{}", __clang_major__, __clang_minor__, __clang_patchlevel__);
#elif defined(__GNUC__)
  return fmt::format("gcc {}.{}.{}", __GNUC__, __GNUC_MINOR__, __GNUC_PATCHLEVEL__);
#else
  return "unknown";
#endif
}

std::string onednn_version() {
  const dnnl_version_t* version = dnnl_version();
  std::string text = fmt::format("{}.{}.{}", version->major, version->minor, version->patch);
  if (version->hash && std::string(version->hash) != "N/A")
    text += fmt::format(" ({})", version->hash);
  return text;
}

}  // namespace

nlohmann::json isa_json() {
  nlohmann::json isa;
  isa["effective"] = isa_name(effective_isa());
  isa["cpu"] = isa_name(hardware_isa());
  isa["capped"] = isa_capped();
  std::optional<dnnl::cpu_isa> cap;
  try {
    cap = isa_cap_from_environment();
  } catch (const Error&) {
    // Reported by apply_isa_cap at startup.
  }
  isa["cap"] = cap ? nlohmann::json(isa_name(*cap)) : nlohmann::json(nullptr);
  isa["vector"] = vector_isa_name(vector_isa());
  isa["channel_block"] = native_channel_block();
  return isa;
}

nlohmann::json build_info_json() {
  nlohmann::json info;
  info["version"] = kVersion;
  info["commit"] = std::string(CLEAVE_GIT_COMMIT).empty() ? nlohmann::json(nullptr)
                                                          : nlohmann::json(CLEAVE_GIT_COMMIT);
  info["build_type"] = CLEAVE_BUILD_TYPE;
  info["compiler"] = compiler();
  info["onednn"] = onednn_version();
  info["isa"] = isa_json();
  const CpuModel cpu = cpu_model();
  info["cpu"] = {{"model", cpu.name}, {"family", cpu.family}};
  const CpuBudget& budget = cpu_budget();
  info["cores"] = budget.usable;
  info["affinity_cores"] = budget.affinity;
  // A container's CPU limit: the cgroup quota in cores, and the file it was read from.
  info["cpu_quota"] = budget.quota_cores ? nlohmann::json{{"cores", *budget.quota_cores},
                                                          {"file", budget.quota_source}}
                                         : nlohmann::json(nullptr);
  info["hardware_threads"] = std::thread::hardware_concurrency();
  info["openmp_threads"] = omp_get_max_threads();
  // What a waiting OpenMP thread does: the count from GOMP_SPINCOUNT/OMP_WAIT_POLICY (the
  // cleave command sets it from the host's load when the user did not, runtime/wait_policy.h).
  info["openmp_spin_count"] = spin_count_in_effect();
  return info;
}

std::string build_info_text() {
  const nlohmann::json info = build_info_json();
  const nlohmann::json& isa = info["isa"];
  std::string text;
  auto line = [&text](std::string_view name, const std::string& value) {
    text += fmt::format("{:<15} {}\n", std::string(name) + ":", value);
  };
  line("cleave", info["version"].get<std::string>() +
                     (info["commit"].is_null()
                          ? std::string()
                          : fmt::format(" (commit {})", info["commit"].get<std::string>())));
  line("build", info["build_type"].get<std::string>().empty()
                    ? std::string("unknown")
                    : info["build_type"].get<std::string>());
  line("compiler", info["compiler"].get<std::string>());
  line("oneDNN", info["onednn"].get<std::string>());
  std::string isa_text = isa["effective"].get<std::string>();
  if (isa["capped"].get<bool>()) {
    isa_text += fmt::format(" (capped by {}; the CPU has {})", isa["cap"].get<std::string>(),
                            isa["cpu"].get<std::string>());
  }
  line("ISA", isa_text);
  line("vector code", isa["vector"].get<std::string>());
  line("channel block", std::to_string(isa["channel_block"].get<int64_t>()));
  const std::string model = info["cpu"]["model"].get<std::string>();
  const std::string family = info["cpu"]["family"].get<std::string>();
  line("CPU", (model.empty() ? std::string("unknown") : model) +
                  (family.empty() ? std::string() : fmt::format(" (family {})", family)));
  std::string cores = fmt::format("{} usable of {}", info["cores"].get<int>(),
                                  info["hardware_threads"].get<unsigned>());
  if (!info["cpu_quota"].is_null()) {
    cores += fmt::format(" (cgroup CPU quota {:.2f} cores, {})",
                         info["cpu_quota"]["cores"].get<double>(),
                         info["cpu_quota"]["file"].get<std::string>());
  }
  line("cores", cores);
  line("OpenMP threads", std::to_string(info["openmp_threads"].get<int>()));
  line("OpenMP spin", fmt::format("{} iterations before a waiting thread sleeps",
                                  info["openmp_spin_count"].get<long>()));
  return text;
}

std::string version_line() {
  std::string line = fmt::format("cleave {}", kVersion);
  if (!std::string(CLEAVE_GIT_COMMIT).empty())
    line += fmt::format(" (commit {})", CLEAVE_GIT_COMMIT);
  if (!std::string(CLEAVE_BUILD_TYPE).empty()) line += fmt::format(", {}", CLEAVE_BUILD_TYPE);
  line += fmt::format(", oneDNN {}, ISA {}", onednn_version(), isa_name(effective_isa()));
  if (isa_capped()) line += " (capped)";
  line += fmt::format(", {} cores", usable_cores());
  return line;
}

}  // namespace cleave::cli
