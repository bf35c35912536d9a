// The comparison with another runtime's results: its file, the cases left out, the gap.
#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <string>

#include "conformance/reference.h"
#include "support/error.h"

namespace cleave {
namespace {

namespace fs = std::filesystem;

const std::string kData = "/usr/share/libonnx-testdata/data/node/";

fs::path write_file(const std::string& name, const std::string& text) {
  fs::path path = fs::temp_directory_path() / (std::to_string(::getpid()) + "_" + name);
  std::ofstream(path) << text;
  return path;
}

TEST(ReferenceResults, OnlyPassingCasesAreKept) {
  fs::path file = write_file("reference.txt",
                             "# header\nnode/a pass\nnode/b fail  # why\nnode/c error  # load\n");
  EXPECT_EQ(read_reference_passes(file.string()), (std::set<std::string>{"node/a"}));
  fs::remove(file);
}

TEST(ReferenceResults, AnUnknownStatusNamesTheLine) {
  fs::path file = write_file("bad_reference.txt", "node/a pass\nnode/b maybe\n");
  try {
    read_reference_passes(file.string());
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(":2: expected '<case> pass|fail|error', got 'node/b "
                                         "maybe'"),
              std::string::npos)
        << e.what();
  }
  fs::remove(file);
}

TEST(ReferenceExclusion, TrainingDomainAndStringTensorsAreLeftOut) {
  if (!fs::exists(kData)) GTEST_SKIP() << "libonnx-testdata is not installed";
  EXPECT_EQ(reference_exclusion(kData + "test_adam"), "training domain op Adam");
  EXPECT_EQ(reference_exclusion(kData + "test_cast_FLOAT_to_STRING"), "string tensor 'output'");
}

TEST(ReferenceExclusion, TheLossOperatorsAreCompared) {
  // NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss are ai.onnx ops, not training ones.
  if (!fs::exists(kData)) GTEST_SKIP() << "libonnx-testdata is not installed";
  EXPECT_EQ(reference_exclusion(kData + "test_nllloss_NC"), "");
  EXPECT_EQ(reference_exclusion(kData + "test_sce_mean"), "");
}

TEST(ReferenceComparison, CountsTheCasesTheReferencePassesAndCleaveDoesNot) {
  std::vector<std::pair<std::string, std::string>> cases = {
      {"/nowhere/a", "node/a"}, {"/nowhere/b", "node/b"}, {"/nowhere/c", "node/c"}};
  std::vector<CaseResult> results(3);
  results[0] = {"node/a", CaseStatus::kPass, "", true};
  results[1] = {"node/b", CaseStatus::kUnsupported, "no kernel", true};
  results[2] = {"node/c", CaseStatus::kFail, "wrong", true};
  ReferenceComparison comparison =
      compare_with_reference(cases, results, {"node/a", "node/b", "node/other"});
  EXPECT_EQ(comparison.reference_passed, 2);
  EXPECT_EQ(comparison.both_passed, 1);
  ASSERT_EQ(comparison.missing.size(), 1u);
  EXPECT_EQ(comparison.missing[0].name, "node/b");
}

}  // namespace
}  // namespace cleave
