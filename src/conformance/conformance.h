// Runs ONNX backend test cases (model.onnx + test_data_set_*/{input,output}_*.pb) and compares.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace cleave {

enum class CaseStatus { kPass, kFail, kUnsupported };

std::string_view status_name(CaseStatus status);

struct CaseResult {
  std::string name;  ///< "<suite>/<case>", e.g. "node/test_conv_with_strides_padding".
  CaseStatus status = CaseStatus::kFail;
  std::string reason;    ///< Why it failed or is unsupported; empty on a pass.
  bool in_scope = true;  ///< Ops all in the runtime's scope; tensors real or bool (no bf16).
};

struct ConformanceOptions {
  double relative_tolerance = 1e-3;  ///< As the ONNX backend tests use.
  double absolute_tolerance = 1e-5;
  int timeout_seconds = 60;  ///< Per case; a case past it fails (it never hangs the run).
  std::string filter;        ///< Only cases whose name contains this.
};

/// Runs one case directory in the current process. Throws nothing: every problem is a result.
CaseResult run_case(const std::string& directory, const std::string& name,
                    const ConformanceOptions& options);

/// Finds the case directories under `root` (a suite folder, or a folder of suites).
std::vector<std::pair<std::string, std::string>> find_cases(const std::string& root);

/// Runs each case in a child process so a crash or a hang becomes a failure of that case.
std::vector<CaseResult> run_cases(const std::vector<std::pair<std::string, std::string>>& cases,
                                  const ConformanceOptions& options,
                                  const std::function<void(const CaseResult&)>& on_result);

/// A results file's lines, in file order: one line per case, "<name> <status> [# reason]",
/// blank and '#' lines skipped, each status one of `statuses` (an Error naming the file and
/// line otherwise). `what` names the file when it cannot be opened.
std::vector<std::pair<std::string, std::string>> read_case_lines(
    const std::string& path, const std::string& what, const std::vector<std::string>& statuses);

/// Expectations file: one line per case, "<name> <pass|fail|unsupported> [# reason]".
std::map<std::string, CaseStatus> read_expectations(const std::string& path);
void write_expectations(const std::string& path, const std::vector<CaseResult>& results);

}  // namespace cleave
