// Compares conformance results with another runtime's on the same cases (ONNX Runtime's file).
#pragma once

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "conformance/conformance.h"

namespace cleave {

/// The cases another runtime passes, read from its results file (bench/ort/conformance.mjs
/// writes one): a line per case, "<case> <pass|fail|error> [# reason]".
std::set<std::string> read_reference_passes(const std::string& path);

/// Why a case stays outside the comparison, or "" when it is compared: issue 44 leaves out
/// the training domain (ai.onnx.preview.training) and string tensors.
std::string reference_exclusion(const std::string& directory);

struct ReferenceComparison {
  int reference_passed = 0;         ///< Compared cases the reference passes.
  int both_passed = 0;              ///< ... that cleave passes too.
  int excluded = 0;                 ///< Cases the reference passes that are left out (see above).
  std::vector<CaseResult> missing;  ///< The reference passes them, cleave does not.
};

/// Sets the results of the cases that ran beside the reference's passes; `cases` gives each
/// result's directory (as find_cases returns them).
ReferenceComparison compare_with_reference(
    const std::vector<std::pair<std::string, std::string>>& cases,
    const std::vector<CaseResult>& results, const std::set<std::string>& reference_passes);

}  // namespace cleave
