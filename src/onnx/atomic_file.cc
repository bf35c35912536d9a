// Atomic file replacement: temporary file in the target's folder, fsync, rename.
#include "onnx/atomic_file.h"

#include <fcntl.h>
#include <fmt/core.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <vector>

#include "ir/graph.h"

namespace cleave {

void write_file_atomically(const std::string& path, std::string_view contents) {
  namespace fs = std::filesystem;
  fs::path target(path);
  if (target.filename().empty()) {
    throw Error(fmt::format("{}: cannot write: the path names a folder, expected a file", path));
  }
  fs::path folder = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  std::error_code error;
  if (!fs::is_directory(folder, error)) {
    throw Error(fmt::format("{}: cannot write: folder '{}' does not exist", path, folder.string()));
  }
  if (fs::is_directory(target, error)) {
    throw Error(fmt::format("{}: cannot write: it is a folder", path));
  }
  std::string pattern = (folder / ("." + target.filename().string() + ".tmp-XXXXXX")).string();
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  int fd = ::mkstemp(name.data());
  if (fd < 0) {
    throw Error(fmt::format("{}: cannot create a temporary file in '{}': {}", path, folder.string(),
                            std::strerror(errno)));
  }
  auto fail = [&](const char* step) {
    int saved = errno;
    if (fd >= 0) ::close(fd);
    ::unlink(name.data());
    throw Error(fmt::format("{}: cannot write: {} failed: {}", path, step, std::strerror(saved)));
  };
  const char* data = contents.data();
  std::size_t left = contents.size();
  while (left > 0) {
    ssize_t written = ::write(fd, data, left);
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
  int closing = fd;
  fd = -1;
  if (::close(closing) != 0) fail("close");
  if (std::rename(name.data(), path.c_str()) != 0) fail("rename");
}

}  // namespace cleave
