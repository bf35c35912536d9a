// Atomic outputs: temporary file or folder beside the target, fsync, rename into place.
#include "support/atomic_output.h"

#include <fcntl.h>
#include <fmt/core.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
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

void write_file_atomically(const std::string& path, std::string_view contents) {
  require_file_target(path);
  const fs::path target(path);
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
  const char* data = contents.data();
  std::size_t left = contents.size();
  while (left > 0) {
    const ssize_t written = ::write(fd, data, left);
    if (written < 0) {
      if (errno == EINTR) continue;
      fail("write");
    }
    data += written;
    left -= static_cast<std::size_t>(written);
  }
  // mkstemp creates the file 0600; outputs are meant to be shared like ordinary files.
  if (::fchmod(fd, 0644) != 0) fail("chmod");
  if (::fsync(fd) != 0) fail("fsync");
  const int closing = fd;
  fd = -1;
  if (::close(closing) != 0) fail("close");
  if (std::rename(name.data(), path.c_str()) != 0) fail("rename");
}

AtomicFolder::AtomicFolder(std::string path) : path_(std::move(path)) {
  fs::path target(path_);
  // "out/" names the folder "out".
  if (target.filename().empty()) target = target.parent_path();
  if (target.empty()) throw Error("output folder: empty path");
  std::error_code error;
  if (fs::exists(target, error) && !fs::is_directory(target, error)) {
    throw Error(
        fmt::format("{}: cannot write the output folder: it is a file, expected a folder", path_));
  }
  const fs::path parent = folder_of(target);
  if (!fs::is_directory(parent, error)) {
    fs::create_directories(parent, error);
    if (error) {
      throw Error(fmt::format("{}: cannot create the parent folder '{}': {}", path_,
                              parent.string(), error.message()));
    }
  }
  std::vector<char> name = temporary_pattern(target);
  if (::mkdtemp(name.data()) == nullptr) {
    throw Error(fmt::format("{}: cannot create a temporary folder in '{}': {}", path_,
                            parent.string(), std::strerror(errno)));
  }
  ::chmod(name.data(), 0755);
  staging_ = name.data();
  path_ = target.string();
}

AtomicFolder::~AtomicFolder() {
  if (committed_) return;
  std::error_code ignored;
  fs::remove_all(staging_, ignored);
}

std::string AtomicFolder::staging_path(std::string_view name) const {
  const fs::path file(name);
  if (name.empty() || file.has_parent_path() || name == "." || name == "..") {
    throw Error(fmt::format("{}: '{}' is not a plain file name", path_, name));
  }
  return (fs::path(staging_) / file).string();
}

void AtomicFolder::write_file(std::string_view name, std::string_view contents) {
  write_file_atomically(staging_path(name), contents);
}

void AtomicFolder::commit() {
  if (committed_) return;
  std::error_code error;
  if (!fs::exists(path_, error)) {
    if (std::rename(staging_.c_str(), path_.c_str()) != 0) {
      throw Error(fmt::format("{}: cannot move the finished folder into place: {}", path_,
                              std::strerror(errno)));
    }
    committed_ = true;
    return;
  }
  if (!fs::is_directory(path_, error)) {
    throw Error(
        fmt::format("{}: cannot write the output folder: it is a file, expected a folder", path_));
  }
  // Check every target before moving any file, so a refusal leaves `path_` untouched.
  std::vector<fs::path> files;
  for (const fs::directory_entry& entry : fs::directory_iterator(staging_)) {
    const fs::path target = fs::path(path_) / entry.path().filename();
    if (fs::is_directory(target, error)) {
      throw Error(
          fmt::format("{}: cannot write: it is a folder, expected a file (nothing in {} "
                      "was changed)",
                      target.string(), path_));
    }
    files.push_back(entry.path());
  }
  for (const fs::path& file : files) {
    const fs::path target = fs::path(path_) / file.filename();
    if (std::rename(file.c_str(), target.c_str()) != 0) {
      throw Error(fmt::format("{}: cannot move the finished file into place: {}", target.string(),
                              std::strerror(errno)));
    }
  }
  fs::remove_all(staging_, error);
  committed_ = true;
}

}  // namespace cleave
