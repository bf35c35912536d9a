// Outputs that are whole or absent: one atomic writer for single files and for folders of files.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace cleave {

/// Writes `contents` to a temporary sibling of `path` (hidden, same folder), syncs it, then
/// renames it over `path`. Throws Error naming the file and what it expected on any failure
/// (missing folder, `path` a folder, no space), after removing the temporary file: a failure
/// never leaves a partial or temporary file behind. An existing device or pipe (`-o /dev/null`,
/// a FIFO) is written into as it is, never replaced.
void write_file_atomically(const std::string& path, std::string_view contents);

/// Refuses (Error naming it) an output file path that could not be written: one that names a
/// folder or lies in a missing folder. Commands call it before their work, so that a bad -o
/// is reported at once rather than after minutes of planning or testing.
void require_file_target(const std::string& path);

/// What a folder transaction may do to a target folder that already exists.
struct FolderRules {
  enum class Existing {
    kRefuse,   ///< a non-empty folder is refused ("use --force to replace it")
    kReplace,  ///< --force: the finished folder takes the place of the old one
    kMerge,    ///< output files join the folder, replacing files of the same names
  };
  Existing existing = Existing::kRefuse;
  /// The files the command reads (model, plan, manifest, machine file...): never replaced, and
  /// a folder holding one (at any depth) is never replaced, even with --force.
  std::vector<std::string> inputs;
};

/// The one output transaction for folders: every file is staged in a hidden sibling folder and
/// commit() moves the whole into place, so a folder appears whole or not at all. The target is
/// checked when the transaction is made, before the command's work: an empty path, a file, a
/// missing parent, or (see FolderRules) an existing non-empty folder is refused; a replaced
/// folder is never `/`, `$HOME`, the working directory or one of its ancestors, nor one
/// holding an input (paths resolved through `.`, `..` and symbolic links). A transaction
/// destroyed before commit() removes what it staged; a failed commit() leaves the target as
/// it was.
class AtomicFolder {
 public:
  explicit AtomicFolder(std::string path, FolderRules rules = {});
  ~AtomicFolder();
  AtomicFolder(const AtomicFolder&) = delete;
  AtomicFolder& operator=(const AtomicFolder&) = delete;

  /// Where the file at `relative` (sub-folders allowed, never leaving the folder) is staged
  /// before commit(); its folders are created.
  std::string staging_path(std::string_view relative);
  /// Writes (or rewrites) one file of the folder into the staging folder.
  void write_file(std::string_view relative, std::string_view contents);
  /// Marks a staged file executable (a generated script).
  void set_executable(std::string_view relative);
  /// Moves everything into place (see the class comment). Throws Error, leaving the target
  /// as it was, when a file would replace a folder or an input, or a rename fails.
  void commit();

  /// The target as given (without a trailing '/'), for messages and reports.
  const std::string& path() const { return path_; }

 private:
  const std::string& staging();
  void commit_merge();
  void commit_replace();

  std::string path_;
  std::string resolved_;  // The target with links, '.' and '..' resolved: what is written.
  FolderRules rules_;
  std::string staging_;  // Made on first use, so a refusal before any output leaves nothing.
  bool committed_ = false;
};

}  // namespace cleave
