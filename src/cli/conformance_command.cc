// `cleave conformance`: runs ONNX backend test cases and checks them against expectations.
#include <fmt/core.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "cli/commands.h"
#include "cli/option_limits.h"
#include "conformance/conformance.h"
#include "conformance/reference.h"
#include "ir/graph.h"
#include "support/atomic_output.h"

namespace cleave::cli {

namespace {

struct ConformanceSettings {
  std::vector<std::string> roots;
  std::string expectations;
  std::string write_expectations_to;
  std::string against;
  std::string filter;
  int timeout = 60;
  bool json = false;
  bool quiet = false;
};

nlohmann::json against_json(const ReferenceComparison& against) {
  nlohmann::json missing = nlohmann::json::array();
  for (const CaseResult& result : against.missing) {
    missing.push_back(
        {{"name", result.name}, {"status", status_name(result.status)}, {"reason", result.reason}});
  }
  return {{"reference_passed", against.reference_passed},
          {"both_passed", against.both_passed},
          {"excluded", against.excluded},
          {"missing", missing}};
}

void print_against(const ReferenceComparison& against, const std::string& file) {
  fmt::print("against {}: it passes {} cases ({} more left out: training domain, string tensors)\n",
             file, against.reference_passed, against.excluded);
  for (const CaseResult& result : against.missing) {
    fmt::print("MISSING {:<12} {}  ({})\n", status_name(result.status), result.name, result.reason);
  }
  fmt::print("cleave passes {} of them; {} it passes that cleave does not\n", against.both_passed,
             against.missing.size());
}

int run_conformance(const ConformanceSettings& settings) {
  // A target that cannot be written is refused before the cases run, not after.
  if (!settings.write_expectations_to.empty()) require_file_target(settings.write_expectations_to);
  std::vector<std::pair<std::string, std::string>> cases;
  for (const std::string& root : settings.roots) {
    auto found = find_cases(root);
    cases.insert(cases.end(), found.begin(), found.end());
  }
  std::map<std::string, CaseStatus> expected;
  if (!settings.expectations.empty()) expected = read_expectations(settings.expectations);
  std::set<std::string> reference;
  if (!settings.against.empty()) reference = read_reference_passes(settings.against);

  ConformanceOptions options;
  options.filter = settings.filter;
  options.timeout_seconds = settings.timeout;
  auto results = run_cases(cases, options, [&](const CaseResult& result) {
    if (settings.json || settings.quiet) return;
    fmt::print("{:<12} {}{}\n", status_name(result.status), result.name,
               result.reason.empty() ? "" : "  (" + result.reason + ")");
    std::fflush(stdout);
  });

  int passed = 0, failed = 0, unsupported = 0, in_scope = 0, in_scope_passed = 0;
  std::vector<std::string> regressions;
  for (const CaseResult& result : results) {
    passed += result.status == CaseStatus::kPass;
    failed += result.status == CaseStatus::kFail;
    unsupported += result.status == CaseStatus::kUnsupported;
    in_scope += result.in_scope;
    in_scope_passed += result.in_scope && result.status == CaseStatus::kPass;
    auto it = expected.find(result.name);
    if (it != expected.end() && it->second == CaseStatus::kPass &&
        result.status != CaseStatus::kPass) {
      regressions.push_back(result.name + ": " + result.reason);
    }
  }
  const ReferenceComparison against = compare_with_reference(cases, results, reference);
  double rate = in_scope ? 100.0 * in_scope_passed / in_scope : 0.0;
  if (!settings.write_expectations_to.empty())
    write_expectations(settings.write_expectations_to, results);

  if (settings.json) {
    nlohmann::json report = {{"cases", results.size()},    {"passed", passed},
                             {"failed", failed},           {"unsupported", unsupported},
                             {"in_scope", in_scope},       {"in_scope_passed", in_scope_passed},
                             {"in_scope_pass_rate", rate}, {"regressions", regressions}};
    nlohmann::json list = nlohmann::json::array();
    for (const CaseResult& result : results) {
      list.push_back({{"name", result.name},
                      {"status", status_name(result.status)},
                      {"in_scope", result.in_scope},
                      {"reason", result.reason}});
    }
    report["results"] = list;
    if (!settings.against.empty()) report["against"] = against_json(against);
    fmt::print("{}\n", report.dump(2));
  } else {
    fmt::print("\n{} cases: {} pass, {} fail, {} unsupported\n", results.size(), passed, failed,
               unsupported);
    fmt::print("in scope: {} of {} pass ({:.1f}%)\n", in_scope_passed, in_scope, rate);
    for (const std::string& line : regressions) fmt::print("REGRESSION {}\n", line);
    if (!settings.against.empty()) print_against(against, settings.against);
  }
  return regressions.empty() ? 0 : 1;
}

}  // namespace

void register_conformance(CLI::App& app, CommandAction& action) {
  auto settings = std::make_shared<ConformanceSettings>();
  CLI::App* command = app.add_subcommand(
      "conformance", "Run ONNX backend test cases (model.onnx + test_data_set_*)");
  command
      ->add_option("roots", settings->roots, "Case folders, suite folders, or a folder of suites")
      ->required();
  command->add_option("--expect", settings->expectations,
                      "Expectations file: exit 1 when a case expected to pass does not");
  command->add_option("--write-expectations", settings->write_expectations_to,
                      "Write the results as an expectations file");
  command->add_option("--against", settings->against,
                      "Another runtime's results (tests/conformance/ort_expectations.txt): list "
                      "the cases it passes that cleave does not");
  command->add_option("--filter", settings->filter, "Only cases whose name contains this");
  command->add_option("--timeout", settings->timeout, "Seconds per case")
      ->default_val(60)
      ->check(positive_seconds());
  command->add_flag("--json", settings->json, "Print the results as JSON");
  command->add_flag("-q,--quiet", settings->quiet, "Only the summary");
  command->callback(
      [settings, &action] { action = [settings] { return run_conformance(*settings); }; });
}

}  // namespace cleave::cli
