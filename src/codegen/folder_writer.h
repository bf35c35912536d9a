// Writing a generated folder whole or not at all: staged in a sibling folder, then renamed.
#pragma once

#include <map>
#include <string>

namespace cleave {

/// The files of one generated folder, collected in memory and written in one step.
class FolderWriter {
 public:
  /// Adds (or replaces) a file at `relative_path` (may contain '/'); throws Error for an
  /// absolute path or one that climbs out with "..".
  void add(const std::string& relative_path, std::string contents);
  /// Marks a file executable when written (run.py).
  void set_executable(const std::string& relative_path);
  const std::map<std::string, std::string>& files() const { return files_; }

  /// Writes every file into a temporary sibling of `folder`, then renames it to `folder`.
  /// An existing non-empty `folder` is refused unless `replace`, in which case it is swapped
  /// out only after the new folder is complete. On any failure nothing is left behind and
  /// Error names the folder and the step.
  void write(const std::string& folder, bool replace) const;

 private:
  std::map<std::string, std::string> files_;
  std::map<std::string, bool> executable_;
};

}  // namespace cleave
