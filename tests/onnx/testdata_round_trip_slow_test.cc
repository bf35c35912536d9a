// Import → export → import over every model of Debian's libonnx-testdata.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <iostream>

#include "onnx/graph_compare.h"
#include "onnx/onnx_export.h"
#include "onnx/onnx_import.h"
#include "onnx_test_util.h"

namespace cleave {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> testdata_models() {
  std::vector<std::string> models;
  for (const char* group : {"node", "pytorch-converted", "pytorch-operator", "simple"}) {
    fs::path folder = fs::path("/usr/share/libonnx-testdata/data") / group;
    if (!fs::is_directory(folder)) continue;
    for (const auto& entry : fs::directory_iterator(folder)) {
      fs::path model = entry.path() / "model.onnx";
      if (fs::is_regular_file(model)) models.push_back(model.string());
    }
  }
  std::sort(models.begin(), models.end());
  return models;
}

onnx::ModelProto read_model(const std::string& path) {
  onnx::ModelProto model;
  std::ifstream in(path, std::ios::binary);
  model.ParseFromIstream(&in);
  return model;
}

struct CheckCounts {
  std::size_t original_passes = 0;
  std::size_t export_passes = 0;
};

// Returns the first problem of one model's round trip, or "" when all is well.
std::string round_trip(const std::string& path, const testing::TempDir& dir, CheckCounts& counts) {
  Graph first;
  // A round trip reads and writes: operators of other domains (the training cases) are kept.
  ImportOptions options;
  options.other_domains = true;
  try {
    first = import_onnx(path, options);
  } catch (const std::exception& e) {
    return std::string("import: ") + e.what();
  }
  std::string out = dir.file("round_trip.onnx");
  try {
    export_onnx(first, out);
  } catch (const std::exception& e) {
    return std::string("export: ") + e.what();
  }
  // The export must pass every check the original passes.
  auto original_error = testing::full_check_error(read_model(path));
  auto exported_error = testing::full_check_error(read_model(out));
  counts.original_passes += !original_error;
  counts.export_passes += !exported_error;
  if (!original_error && exported_error) return "check of the export: " + *exported_error;
  Graph second;
  try {
    second = import_onnx(out, options);
  } catch (const std::exception& e) {
    return std::string("re-import: ") + e.what();
  }
  std::string difference;
  if (!graphs_equal(first, second, &difference)) return "differs: " + difference;
  return {};
}

TEST(TestdataRoundTrip, EveryModelImportsExportsAndReimportsEqual) {
  std::vector<std::string> models = testdata_models();
  if (models.empty()) GTEST_SKIP() << "libonnx-testdata is not installed";
  testing::TempDir dir;
  std::size_t passed = 0;
  std::vector<std::string> failures;
  CheckCounts counts;
  for (const std::string& path : models) {
    std::string problem = round_trip(path, dir, counts);
    if (problem.empty()) {
      ++passed;
    } else {
      failures.push_back(path + ": " + problem);
    }
  }
  std::cout << "imported " << passed << " of " << models.size() << "; full check passed by "
            << counts.original_passes << " originals and " << counts.export_passes << " exports\n";
  for (const std::string& failure : failures) ADD_FAILURE() << failure;
  EXPECT_EQ(passed, models.size());
}

}  // namespace
}  // namespace cleave
