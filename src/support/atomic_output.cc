// Atomic outputs: temporary file or folder beside the target, fsync, rename into place.
#include "support/atomic_output.h"

#include <fcntl.h>
#include <fmt/core.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include "support/error.h"

namespace cleave {
namespace {

namespace fs = std::filesystem;

fs::path folder_of(const fs::path& target) {
  return target.parent_path().empty() ? fs::path(".") : target.parent_path();
}

// A unique hidden name beside `target` made by mkstemp/mkdtemp from this pattern.
std::vector<char> temporary_pattern(const fs::path& target) {
  const std::string pattern =
      (folder_of(target) / ("." + target.filename().string() + ".tmp-XXXXXX")).string();
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  return name;
}

}  // namespace

void require_file_target(const std::string& path) {
  const fs::path target(path);
  if (target.filename().empty()) {
    throw Error(fmt::format("{}: cannot write: the path names a folder, expected a file", path));
  }
  const fs::path folder = folder_of(target);
  std::error_code error;
  if (!fs::is_directory(folder, error)) {
    throw Error(fmt::format("{}: cannot write: folder '{}' does not exist", path, folder.string()));
  }
  if (fs::is_directory(target, error)) {
    throw Error(fmt::format("{}: cannot write: it is a folder, expected a file", path));
  }
}

namespace {

// Writes all of `contents` to `fd`; false (errno set) on a failed write.
bool write_all_to(int fd, std::string_view contents) {
  const char* data = contents.data();
  std::size_t left = contents.size();
  while (left > 0) {
    const ssize_t written = ::write(fd, data, left);
    if (written < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += written;
    left -= static_cast<std::size_t>(written);
  }
  return true;
}

// Writes `contents` into an existing device or pipe, which a rename would replace with a file
// (`cleave plan -o /dev/null` as root turned the host's /dev/null into a regular file).
void write_into(const std::string& path, std::string_view contents) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) throw Error(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  if (!write_all_to(fd, contents)) {
    const int saved = errno;
    ::close(fd);
    throw Error(fmt::format("{}: cannot write: {}", path, std::strerror(saved)));
  }
  if (::close(fd) != 0)
    throw Error(fmt::format("{}: cannot write: close failed: {}", path, std::strerror(errno)));
}

}  // namespace

void write_file_atomically(const std::string& path, std::string_view contents) {
  require_file_target(path);
  const fs::path target(path);
  std::error_code status_error;
  const fs::file_status status = fs::status(target, status_error);
  if (!status_error && fs::exists(status) && !fs::is_regular_file(status)) {
    write_into(path, contents);
    return;
  }
  const fs::path folder = folder_of(target);
  std::vector<char> name = temporary_pattern(target);
  int fd = ::mkstemp(name.data());
  if (fd < 0) {
    throw Error(fmt::format("{}: cannot create a temporary file in '{}': {}", path, folder.string(),
                            std::strerror(errno)));
  }
  auto fail = [&](const char* step) {
    const int saved = errno;
    if (fd >= 0) ::close(fd);
    ::unlink(name.data());
    throw Error(fmt::format("{}: cannot write: {} failed: {}", path, step, std::strerror(saved)));
  };
  if (!write_all_to(fd, contents)) fail("write");
  // mkstemp creates the file 0600; outputs are meant to be shared like ordinary files.
  if (::fchmod(fd, 0644) != 0) fail("chmod");
  if (::fsync(fd) != 0) fail("fsync");
  const int closing = fd;
  fd = -1;
  if (::close(closing) != 0) fail("close");
  if (std::rename(name.data(), path.c_str()) != 0) fail("rename");
}

namespace {

bool is_within(const fs::path& inner, const fs::path& folder) {
  auto [end_of_folder, ignored] =
      std::mismatch(folder.begin(), folder.end(), inner.begin(), inner.end());
  return end_of_folder == folder.end();
}

fs::path resolved(const fs::path& path) {
  std::error_code error;
  fs::path absolute = fs::absolute(path, error);
  if (error) return path.lexically_normal();
  fs::path canonical = fs::weakly_canonical(absolute, error);
  return error ? absolute.lexically_normal() : canonical;
}

// Why a folder must never be replaced, or empty when it may be.
std::string protected_reason(const fs::path& target, const std::vector<std::string>& inputs) {
  if (target == target.root_path()) return "it is the root folder";
  if (const char* home = std::getenv("HOME"); home && *home && resolved(home) == target)
    return "it is the home folder";
  std::error_code error;
  const fs::path cwd = resolved(fs::current_path(error));
  if (!error && is_within(cwd, target))
    return cwd == target ? "it is the working directory" : "it holds the working directory";
  for (const std::string& input : inputs) {
    if (!input.empty() && is_within(resolved(input), target))
      return fmt::format("it holds the input {}", input);
  }
  return "";
}

// A hidden, unique, empty sibling folder of `target` made by mkdtemp.
std::string sibling_folder(const fs::path& target, const std::string& shown) {
  std::vector<char> name = temporary_pattern(target);
  if (::mkdtemp(name.data()) == nullptr) {
    throw Error(fmt::format("{}: cannot create a temporary folder in '{}': {}", shown,
                            folder_of(target).string(), std::strerror(errno)));
  }
  ::chmod(name.data(), 0755);
  return name.data();
}

}  // namespace

AtomicFolder::AtomicFolder(std::string path, FolderRules rules) : rules_(std::move(rules)) {
  fs::path target(path);
  // "out/" names the folder "out".
  while (!target.empty() && target.filename().empty() && target != target.root_path())
    target = target.parent_path();
  if (target.empty()) throw Error("output folder: the path is empty, expected a folder");
  path_ = target.string();
  const fs::path real = resolved(target);
  resolved_ = real.string();
  std::error_code error;
  const bool exists = fs::exists(real, error);
  if (exists && !fs::is_directory(real, error)) {
    throw Error(
        fmt::format("{}: cannot write the output folder: it is a file, expected a folder", path_));
  }
  if (!exists && !fs::is_directory(real.parent_path(), error)) {
    throw Error(fmt::format("{}: cannot write the output folder: folder '{}' does not exist", path_,
                            real.parent_path().string()));
  }
  if (!exists || rules_.existing == FolderRules::Existing::kMerge) return;
  const std::string reason = protected_reason(real, rules_.inputs);
  if (!reason.empty()) {
    throw Error(
        fmt::format("{}: refusing to replace this folder, even with --force: {}", path_, reason));
  }
  if (rules_.existing == FolderRules::Existing::kRefuse && !fs::is_empty(real, error)) {
    throw Error(
        fmt::format("{}: folder exists and is not empty (use --force to replace it)", path_));
  }
}

AtomicFolder::~AtomicFolder() {
  if (committed_ || staging_.empty()) return;
  std::error_code ignored;
  fs::remove_all(staging_, ignored);
}

const std::string& AtomicFolder::staging() {
  if (staging_.empty()) staging_ = sibling_folder(resolved_, path_);
  return staging_;
}

std::string AtomicFolder::staging_path(std::string_view relative) {
  const fs::path file = fs::path(relative).lexically_normal();
  if (relative.empty() || file.is_absolute() || file.filename().empty() || file == "." ||
      *file.begin() == "..") {
    throw Error(fmt::format("{}: '{}' is not a file inside the folder", path_, relative));
  }
  const fs::path staged = fs::path(staging()) / file;
  std::error_code error;
  fs::create_directories(staged.parent_path(), error);
  if (error) {
    throw Error(
        fmt::format("{}: cannot create the folder of '{}': {}", path_, relative, error.message()));
  }
  return staged.string();
}

void AtomicFolder::write_file(std::string_view relative, std::string_view contents) {
  write_file_atomically(staging_path(relative), contents);
}

void AtomicFolder::set_executable(std::string_view relative) {
  const std::string file = staging_path(relative);
  if (::chmod(file.c_str(), 0755) != 0) {
    throw Error(
        fmt::format("{}: cannot make '{}' executable: {}", path_, relative, std::strerror(errno)));
  }
}

void AtomicFolder::commit() {
  if (committed_) return;
  staging();
  std::error_code error;
  if (!fs::exists(resolved_, error)) {
    if (std::rename(staging_.c_str(), resolved_.c_str()) != 0) {
      throw Error(fmt::format("{}: cannot move the finished folder into place: {}", path_,
                              std::strerror(errno)));
    }
    committed_ = true;
    return;
  }
  if (!fs::is_directory(resolved_, error)) {
    throw Error(
        fmt::format("{}: cannot write the output folder: it is a file, expected a folder", path_));
  }
  if (rules_.existing == FolderRules::Existing::kMerge) {
    commit_merge();
  } else {
    commit_replace();
  }
  committed_ = true;
}

// The old folder is swapped out beside the target and removed only once the new one is in place.
void AtomicFolder::commit_replace() {
  const std::string reason = protected_reason(resolved_, rules_.inputs);
  if (!reason.empty()) {
    throw Error(
        fmt::format("{}: refusing to replace this folder, even with --force: {}", path_, reason));
  }
  std::error_code error;
  if (rules_.existing == FolderRules::Existing::kRefuse && !fs::is_empty(resolved_, error)) {
    throw Error(
        fmt::format("{}: folder exists and is not empty (use --force to replace it)", path_));
  }
  const std::string old = sibling_folder(resolved_, path_);
  if (std::rename(resolved_.c_str(), old.c_str()) != 0) {
    const int saved = errno;
    fs::remove_all(old, error);
    throw Error(
        fmt::format("{}: cannot move the old folder aside: {}", path_, std::strerror(saved)));
  }
  if (std::rename(staging_.c_str(), resolved_.c_str()) != 0) {
    const int saved = errno;
    std::rename(old.c_str(), resolved_.c_str());
    throw Error(fmt::format("{}: cannot move the finished folder into place: {}", path_,
                            std::strerror(saved)));
  }
  fs::remove_all(old, error);
}

// Files join the folder; files they replace are kept aside until every file is in place, so a
// failed rename puts the folder back as it was.
void AtomicFolder::commit_merge() {
  std::error_code error;
  std::vector<fs::path> names;
  for (const fs::directory_entry& entry : fs::directory_iterator(staging_)) {
    const fs::path target = fs::path(resolved_) / entry.path().filename();
    const fs::path shown = fs::path(path_) / entry.path().filename();
    if (fs::is_directory(target, error) || fs::is_directory(entry.path(), error)) {
      throw Error(
          fmt::format("{}: cannot write: it is a folder, expected a file (nothing in {} "
                      "was changed)",
                      shown.string(), path_));
    }
    for (const std::string& input : rules_.inputs) {
      if (!input.empty() && resolved(input) == resolved(target)) {
        throw Error(fmt::format("{}: refusing to replace the input {} (nothing in {} was changed)",
                                shown.string(), input, path_));
      }
    }
    names.push_back(entry.path().filename());
  }
  const fs::path aside = sibling_folder(resolved_, path_);
  std::vector<fs::path> moved, kept_aside;
  auto undo = [&] {
    for (const fs::path& name : moved)
      std::rename((fs::path(resolved_) / name).c_str(), (fs::path(staging_) / name).c_str());
    for (const fs::path& name : kept_aside)
      std::rename((aside / name).c_str(), (fs::path(resolved_) / name).c_str());
    fs::remove_all(aside, error);
  };
  for (const fs::path& name : names) {
    const fs::path target = fs::path(resolved_) / name;
    if (fs::exists(fs::symlink_status(target, error))) {
      if (std::rename(target.c_str(), (aside / name).c_str()) != 0) {
        const int saved = errno;
        undo();
        throw Error(fmt::format("{}: cannot move the old file aside: {}",
                                (fs::path(path_) / name).string(), std::strerror(saved)));
      }
      kept_aside.push_back(name);
    }
    if (std::rename((fs::path(staging_) / name).c_str(), target.c_str()) != 0) {
      const int saved = errno;
      undo();
      throw Error(fmt::format("{}: cannot move the finished file into place: {}",
                              (fs::path(path_) / name).string(), std::strerror(saved)));
    }
    moved.push_back(name);
  }
  fs::remove_all(aside, error);
  fs::remove_all(staging_, error);
}

}  // namespace cleave
