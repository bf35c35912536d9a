// Outputs that are whole or absent: one atomic writer for single files and for folders of files.
#pragma once

#include <string>
#include <string_view>

namespace cleave {

/// Writes `contents` to a temporary sibling of `path` (hidden, same folder), syncs it, then
/// renames it over `path`. Throws Error naming the file and what it expected on any failure
/// (missing folder, `path` a folder, no space), after removing the temporary file: a failure
/// never leaves a partial or temporary file behind.
void write_file_atomically(const std::string& path, std::string_view contents);

/// Refuses (Error naming it) an output file path that could not be written: one that names a
/// folder or lies in a missing folder. Commands call it before their work, so that a bad -o
/// is reported at once rather than after minutes of planning or testing.
void require_file_target(const std::string& path);

/// A folder of output files that appears whole or not at all. The files are written into a
/// hidden temporary sibling folder; commit() then renames that folder into place when `path`
/// does not exist yet, or, when `path` is an existing folder, first checks that no file to be
/// placed would replace a folder and then renames each file in. A destroyed AtomicFolder that
/// was not committed removes its temporary folder.
class AtomicFolder {
 public:
  /// Refuses (Error) a `path` that is an existing non-folder, or whose parent folder is missing
  /// and cannot be created; creates the temporary sibling folder.
  explicit AtomicFolder(std::string path);
  ~AtomicFolder();
  AtomicFolder(const AtomicFolder&) = delete;
  AtomicFolder& operator=(const AtomicFolder&) = delete;

  /// Where a file named `name` (no folders) is written before commit().
  std::string staging_path(std::string_view name) const;
  /// Writes one file of the folder (into the temporary folder).
  void write_file(std::string_view name, std::string_view contents);
  /// Moves everything into place (see the class comment). Throws Error, leaving `path` as it
  /// was, when a file would replace a folder.
  void commit();

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::string staging_;
  bool committed_ = false;
};

}  // namespace cleave
