// External tensor data: loaded from the model's folder, and only from there.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "onnx/onnx_import.h"
#include "onnx_test_util.h"

namespace cleave {
namespace {

using testing::add_input;
using testing::add_node;
using testing::add_output;
using ::testing::AllOf;
using testing::error_of;
using ::testing::HasSubstr;
using testing::make_model;
using testing::TempDir;
using testing::write_bytes;
using testing::write_model;

// x[4] + w[4] -> y, with w stored in `location` at `offset`.
onnx::ModelProto external_model(const std::string& location, int64_t offset = 0,
                                std::optional<int64_t> length = std::nullopt) {
  onnx::ModelProto model = make_model();
  auto* graph = model.mutable_graph();
  add_input(graph, "x", {4});
  auto* w = graph->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(4);
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto add_entry = [&](const char* key, const std::string& value) {
    auto* entry = w->add_external_data();
    entry->set_key(key);
    entry->set_value(value);
  };
  add_entry("location", location);
  if (offset != 0) add_entry("offset", std::to_string(offset));
  if (length) add_entry("length", std::to_string(*length));
  add_node(graph, "Add", {"x", "w"}, {"y"}, "add");
  add_output(graph, "y", {4});
  return model;
}

std::string four_floats() {
  float values[4] = {1.5f, -2.0f, 3.25f, 4.0f};
  return std::string(reinterpret_cast<const char*>(values), sizeof values);
}

TEST(ExternalData, LoadsFromTheModelFolder) {
  TempDir dir;
  std::filesystem::create_directories(dir.path() / "weights");
  write_bytes(dir.file("weights/w.bin"), "PAD!" + four_floats());
  write_model(external_model("weights/w.bin", 4, 16), dir.file("model.onnx"));
  Graph g = import_onnx(dir.file("model.onnx"));
  const TensorData& w = *g.value(*g.find_value("w")).initializer;
  ASSERT_EQ(w.as<float>().size(), 4u);
  EXPECT_EQ(w.as<float>()[0], 1.5f);
  EXPECT_EQ(w.as<float>()[3], 4.0f);
}

TEST(ExternalData, ParentFolderPathIsRefused) {
  TempDir dir;
  std::filesystem::create_directories(dir.path() / "model");
  write_bytes(dir.file("x.bin"), four_floats());
  std::string path = dir.file("model/model.onnx");
  write_model(external_model("../x.bin"), path);
  EXPECT_THAT(error_of([&] { import_onnx(path); }),
              AllOf(HasSubstr(path), HasSubstr("'w'"), HasSubstr("'../x.bin'"),
                    HasSubstr("outside the model folder")));
}

TEST(ExternalData, AbsolutePathIsRefused) {
  TempDir dir;
  write_bytes(dir.file("x.bin"), four_floats());
  std::string path = dir.file("model.onnx");
  write_model(external_model(dir.file("x.bin")), path);
  EXPECT_THAT(error_of([&] { import_onnx(path); }),
              AllOf(HasSubstr(path), HasSubstr("'w'"), HasSubstr("outside the model folder")));
}

TEST(ExternalData, SymlinkLeadingOutsideIsRefused) {
  TempDir outside;
  write_bytes(outside.file("secret.bin"), four_floats());
  TempDir dir;
  std::filesystem::create_symlink(outside.file("secret.bin"), dir.file("link.bin"));
  std::string path = dir.file("model.onnx");
  write_model(external_model("link.bin"), path);
  EXPECT_THAT(error_of([&] { import_onnx(path); }), AllOf(HasSubstr(path), HasSubstr("'link.bin'"),
                                                          HasSubstr("outside the model folder")));
}

TEST(ExternalData, RangeBeyondTheFileIsRefused) {
  TempDir dir;
  write_bytes(dir.file("w.bin"), four_floats());
  std::string path = dir.file("model.onnx");
  write_model(external_model("w.bin", 8), path);
  EXPECT_THAT(error_of([&] { import_onnx(path); }),
              AllOf(HasSubstr(path), HasSubstr("'w'"), HasSubstr("which has 16 bytes")));
}

TEST(ExternalData, LengthDisagreeingWithDimsIsRefused) {
  TempDir dir;
  write_bytes(dir.file("w.bin"), four_floats() + four_floats());
  std::string path = dir.file("model.onnx");
  write_model(external_model("w.bin", 0, 32), path);
  EXPECT_THAT(error_of([&] { import_onnx(path); }),
              AllOf(HasSubstr(path), HasSubstr("'w'"), HasSubstr("length 32")));
}

TEST(ExternalData, MissingFileIsReported) {
  TempDir dir;
  std::string path = dir.file("model.onnx");
  write_model(external_model("absent.bin"), path);
  EXPECT_THAT(error_of([&] { import_onnx(path); }),
              AllOf(HasSubstr(path), HasSubstr("absent.bin"), HasSubstr("does not exist")));
}

TEST(ExternalData, ModelFromMemoryNeedsAFolder) {
  EXPECT_THAT(error_of([&] { import_onnx(external_model("w.bin"), "memory"); }),
              AllOf(HasSubstr("memory"), HasSubstr("'w'"), HasSubstr("needs the model's folder")));
}

}  // namespace
}  // namespace cleave
