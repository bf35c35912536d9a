// Embedded weights left in the file: a reader of some weights gets references, not payloads.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "cost/cost_table.h"
#include "onnx/embedded_weights.h"
#include "onnx/graph_compare.h"
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
using testing::write_model;

// x[n] + big[n] + small[2] (broadcast over a trailing pair) -> y; big and small embedded.
onnx::ModelProto embedded_model(int n) {
  onnx::ModelProto model = make_model();
  auto* graph = model.mutable_graph();
  add_input(graph, "x", {n});
  auto* big = graph->add_initializer();
  big->set_name("big");
  big->set_data_type(onnx::TensorProto::FLOAT);
  big->add_dims(n);
  std::vector<float> values(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) values[static_cast<std::size_t>(i)] = 0.5f * static_cast<float>(i);
  big->set_raw_data(values.data(), values.size() * sizeof(float));
  auto* small = graph->add_initializer();
  small->set_name("small");
  small->set_data_type(onnx::TensorProto::FLOAT);
  small->add_dims(1);
  float one = 1.0f;
  small->set_raw_data(&one, sizeof one);
  add_node(graph, "Add", {"x", "big"}, {"t"}, "add");
  add_node(graph, "Add", {"t", "small"}, {"y"}, "add_small");
  add_output(graph, "y", {n});
  return model;
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(EmbeddedWeights, LargeInitializersAreLeftInTheFileAndReadOnDemand) {
  TempDir dir;
  const std::string path = dir.file("model.onnx");
  write_model(embedded_model(2048), path);  // big: 8 KiB; small: 4 bytes.
  std::map<std::string, ExternalWeight> unread;
  ImportOptions options;
  options.unread_external = &unread;
  Graph lazy = import_onnx(path, options);
  ASSERT_EQ(unread.size(), 1u);
  ASSERT_TRUE(unread.count("big"));
  EXPECT_FALSE(lazy.value(*lazy.find_value("big")).initializer->bytes);
  EXPECT_TRUE(lazy.value(*lazy.find_value("small")).initializer->bytes);  // Under the minimum.
  // The reference points at the payload inside the model file itself.
  const ExternalWeight& big = unread.at("big");
  EXPECT_EQ(big.bytes, 2048u * sizeof(float));
  Graph whole = import_onnx(path);
  const auto& expected = *whole.value(*whole.find_value("big")).initializer->bytes;
  EXPECT_EQ(*read_external_weight(big, "big"), expected);
  EXPECT_EQ(file_bytes(path).compare(big.offset, big.bytes,
                                     reinterpret_cast<const char*>(expected.data()), big.bytes),
            0);
  // A plan's fingerprint, hashing the unread weight from the file, is the whole model's.
  EXPECT_EQ(graph_fingerprint(lazy,
                              [&](ValueId id, const auto& add) {
                                read_external_weight_in_pieces(unread.at(lazy.value(id).name),
                                                               lazy.value(id).name, add);
                              }),
            graph_fingerprint(whole));
}

// A model file's large weights are read from the file straight into the graph, not parsed
// from a copy of the file: the graph is the one its bytes give.
TEST(EmbeddedWeights, AModelFileImportsAsItsBytesDo) {
  TempDir dir;
  const std::string path = dir.file("model.onnx");
  write_model(embedded_model(4096), path);
  Graph from_file = import_onnx(path);
  Graph from_bytes = import_onnx_from_bytes(file_bytes(path), path, ImportOptions{});
  std::string difference;
  EXPECT_TRUE(graphs_equal(from_file, from_bytes, &difference)) << difference;
  ASSERT_TRUE(from_file.value(*from_file.find_value("big")).initializer->bytes);
  EXPECT_EQ(from_file.value(*from_file.find_value("big")).initializer->bytes->size(),
            4096u * sizeof(float));
}

// A model reached through a symbolic link from another folder (a models folder of links) reads
// its weights from the file the link points at; other files out of the folder stay refused.
TEST(EmbeddedWeights, AModelFileReachedThroughASymlinkImports) {
  TempDir dir;
  std::filesystem::create_directories(dir.file("store"));
  std::filesystem::create_directories(dir.file("links"));
  write_model(embedded_model(4096), dir.file("store/model.onnx"));
  std::filesystem::create_symlink(dir.file("store/model.onnx"), dir.file("links/model.onnx"));
  Graph linked = import_onnx(dir.file("links/model.onnx"));
  Graph direct = import_onnx(dir.file("store/model.onnx"));
  std::string difference;
  EXPECT_TRUE(graphs_equal(linked, direct, &difference)) << difference;

  onnx::ModelProto other = embedded_model(16);
  auto* big = other.mutable_graph()->mutable_initializer(0);
  big->clear_raw_data();
  big->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* location = big->add_external_data();
  location->set_key("location");
  location->set_value("weights.bin");
  std::ofstream(dir.file("store/weights.bin"), std::ios::binary) << std::string(64, '\0');
  std::filesystem::create_symlink(dir.file("store/weights.bin"), dir.file("links/weights.bin"));
  write_model(other, dir.file("links/other.onnx"));
  EXPECT_THAT(error_of([&] { import_onnx(dir.file("links/other.onnx")); }),
              HasSubstr("outside the model folder"));
}

TEST(EmbeddedWeights, ATruncatedModelFileIsRefusedByName) {
  TempDir dir;
  const std::string path = dir.file("model.onnx");
  write_model(embedded_model(2048), path);
  const std::string bytes = file_bytes(path);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes.substr(0, bytes.size() / 2);
  EXPECT_THAT(error_of([&] { import_onnx(path); }),
              AllOf(HasSubstr(path), HasSubstr("truncated or corrupt")));
}

TEST(EmbeddedWeights, RawDataOfTheWrongSizeIsLeftForTheImporterToRefuse) {
  TempDir dir;
  onnx::ModelProto model = embedded_model(2048);
  model.mutable_graph()->mutable_initializer(0)->set_raw_data(std::string(8200, '\0'));
  const std::string path = dir.file("model.onnx");
  write_model(model, path);
  std::map<std::string, ExternalWeight> unread;
  ImportOptions options;
  options.unread_external = &unread;
  EXPECT_THAT(error_of([&] { import_onnx(path, options); }),
              AllOf(HasSubstr(path), HasSubstr("'big'"), HasSubstr("raw_data has 8200 bytes")));
}

TEST(EmbeddedWeights, TruncatedModelIsRefusedByName) {
  TempDir dir;
  const std::string path = dir.file("model.onnx");
  write_model(embedded_model(2048), path);
  const std::string bytes = file_bytes(path);
  // Cut inside big's payload.
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes.substr(0, bytes.size() / 2);
  std::map<std::string, ExternalWeight> unread;
  ImportOptions options;
  options.unread_external = &unread;
  EXPECT_THAT(error_of([&] { import_onnx(path, options); }),
              AllOf(HasSubstr(path), HasSubstr("truncated or corrupt")));
}

TEST(EmbeddedWeights, RewrittenModelKeepsEveryOtherField) {
  onnx::ModelProto model = embedded_model(2048);
  model.set_producer_name("test-producer");
  std::string bytes;
  ASSERT_TRUE(model.SerializeToString(&bytes));
  std::string rewritten = refer_to_embedded_weights(bytes, "model.onnx", "model.onnx");
  onnx::ModelProto parsed;
  ASSERT_TRUE(parsed.ParseFromString(rewritten));
  EXPECT_EQ(parsed.producer_name(), "test-producer");
  EXPECT_EQ(parsed.graph().node_size(), 2);
  const onnx::TensorProto& big = parsed.graph().initializer(0);
  EXPECT_EQ(big.name(), "big");
  EXPECT_FALSE(big.has_raw_data());
  EXPECT_EQ(big.data_location(), onnx::TensorProto::EXTERNAL);
  ASSERT_EQ(big.external_data_size(), 3);
  EXPECT_EQ(big.external_data(0).value(), "model.onnx");
  EXPECT_EQ(big.external_data(2).value(), "8192");
  EXPECT_EQ(parsed.graph().initializer(1).raw_data().size(), 4u);
  EXPECT_LT(rewritten.size(), bytes.size() - 8000);
}

}  // namespace
}  // namespace cleave
