// The split manifest: per machine its ordered steps (run a sub-model, send or receive a region).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "spatial/partitioned_graph.h"
#include "spatial/shape_map.h"

namespace cleave {

struct ManifestStep {
  enum class Kind { kRun, kSend, kRecv };
  Kind kind = Kind::kRun;
  // run
  /// Sub-model file, relative to the split folder (an export: cleave runs the partitioned
  /// graph).
  std::string model;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  std::vector<NodeId> nodes;  ///< The partitioned graph's nodes it runs (not written out).
  // send / recv
  int peer = -1;       ///< send: the receiver; recv: the sender.
  std::string tensor;  ///< send: the sender's tensor the region is cut from.
  Box region;          ///< send: in that tensor's own coordinates.
  std::string name;    ///< The name the receiver files the region under.
  DataType dtype = DataType::kFloat;
  std::vector<int64_t> shape;
  int64_t bytes = 0;
  int tag = 0;
};

struct ManifestTensor {
  std::string name;
  DataType dtype = DataType::kFloat;
  std::vector<int64_t> shape;
};

/// A split as docs/formats.md ("Spatial split folders") describes it.
struct SplitManifest {
  std::string model;
  std::string fingerprint;
  int machines = 1;
  std::vector<ManifestTensor> inputs;
  std::vector<ManifestTensor> outputs;           ///< All complete on machine 0 at the end.
  std::vector<std::vector<ManifestStep>> steps;  ///< Per machine.
};

/// Cuts the partitioned graph into segments (each machine's nodes between two of its
/// transfers) and orders every machine's steps after one topological order of the graph, a
/// send right before its receive, so blocking sends and receives cannot deadlock. Run steps
/// get files m<machine>_s<k>.onnx and their boundary values from extract_subgraph.
SplitManifest make_manifest(const PartitionedGraph& split);

/// "float32", "int64", ...; throws Error for a type the manifest does not carry.
std::string manifest_dtype_name(DataType dtype);
nlohmann::json manifest_to_json(const SplitManifest& manifest);
/// Reads and checks a manifest (every field, machine indices, matching sends and receives);
/// throws Error naming `origin` and the field.
SplitManifest manifest_from_json(const nlohmann::json& json, const std::string& origin);
SplitManifest read_manifest(const std::string& path);

/// FNV-1a 64 of a file's bytes as "fnv1a64:<16 hex digits>"; throws Error when unreadable.
std::string file_fingerprint(const std::string& path);

/// The files of a split folder a split runs from, each checked to be there (Error naming the
/// folder and the missing file otherwise): the manifest, and the partitioned graph with its
/// plan (one worker per machine) that run on threads (`bench --split`) or ranks (`run-split`).
struct SplitFolderFiles {
  std::string manifest;
  std::string partitioned;
  std::string plan;
};
SplitFolderFiles split_folder_files(const std::string& folder);

/// Throws Error naming `folder` and `model` unless the manifest's fingerprint is the file
/// `model`'s: a split is never run or compared against another model than it was made from.
void require_split_of(const SplitManifest& manifest, const std::string& folder,
                      const std::string& model);

}  // namespace cleave
