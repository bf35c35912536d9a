// read_manifest: the one manifest type and reader, steps in order with their transfers.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "spatial/manifest.h"

namespace cleave {
namespace {

namespace fs = std::filesystem;

TEST(ManifestRead, StepsKeepTheirOrderSubModelAndRegions) {
  const fs::path folder =
      fs::temp_directory_path() / ("cleave_split_folder_" + std::to_string(::getpid()));
  fs::create_directories(folder / "sub");
  std::ofstream(folder / "manifest.json") << R"({"format": "cleave-split", "version": 1,
    "model": "m.onnx", "fingerprint": "", "machines": 2,
    "inputs": [{"name": "x", "dtype": "float32", "shape": [2, 4]}],
    "outputs": [{"name": "y", "dtype": "float32", "shape": [2, 4]}],
    "steps": [
      [{"op": "run", "model": "sub/m0.onnx", "inputs": ["x"], "outputs": ["y"]},
       {"op": "send", "to": 1, "tensor": "y", "region": [[1, 2], [0, 4]], "name": "z",
        "dtype": "float32", "shape": [1, 4], "bytes": 16, "tag": 3}],
      [{"op": "recv", "from": 0, "name": "z", "dtype": "float32", "shape": [1, 4],
        "bytes": 16, "tag": 3}]]})";
  const SplitManifest manifest = read_manifest((folder / "manifest.json").string());
  ASSERT_EQ(manifest.steps.size(), 2u);
  ASSERT_EQ(manifest.steps[0].size(), 2u);
  EXPECT_EQ(manifest.steps[0][0].model, "sub/m0.onnx");
  const ManifestStep& send = manifest.steps[0][1];
  EXPECT_EQ(send.kind, ManifestStep::Kind::kSend);
  EXPECT_EQ(send.region, (Box{{1, 2}, {0, 4}}));
  EXPECT_EQ(manifest.steps[1][0].kind, ManifestStep::Kind::kRecv);
  fs::remove_all(folder);
}

}  // namespace
}  // namespace cleave
