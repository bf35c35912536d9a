// Folder staging: write every file beside the target, fsync-free rename into place at the end.
#include "codegen/folder_writer.h"

#include <fmt/core.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "ir/graph.h"

namespace cleave {

namespace fs = std::filesystem;

namespace {

// A name no other writer picks at the same time: pid plus a random suffix.
fs::path sibling(const fs::path& target, const std::string& tag) {
  std::random_device device;
  return target.parent_path() /
         fmt::format(".{}.{}-{}-{:08x}", target.filename().string(), tag, ::getpid(), device());
}

}  // namespace

void FolderWriter::add(const std::string& relative_path, std::string contents) {
  fs::path path(relative_path);
  if (relative_path.empty() || path.is_absolute()) {
    throw Error(fmt::format("generated file '{}': expected a relative path", relative_path));
  }
  for (const auto& part : path) {
    if (part == "..") {
      throw Error(fmt::format("generated file '{}': must not leave its folder", relative_path));
    }
  }
  files_[relative_path] = std::move(contents);
}

void FolderWriter::set_executable(const std::string& relative_path) {
  executable_[relative_path] = true;
}

void FolderWriter::write(const std::string& folder, bool replace) const {
  fs::path target = fs::absolute(fs::path(folder)).lexically_normal();
  if (target.filename().empty()) target = target.parent_path();
  std::error_code error;
  if (!fs::is_directory(target.parent_path(), error)) {
    throw Error(fmt::format("{}: cannot write: folder '{}' does not exist", folder,
                            target.parent_path().string()));
  }
  const bool exists = fs::exists(target, error);
  if (exists && !fs::is_directory(target, error)) {
    throw Error(fmt::format("{}: exists and is not a folder", folder));
  }
  if (exists && !fs::is_empty(target, error) && !replace) {
    throw Error(
        fmt::format("{}: folder exists and is not empty (use --force to replace it)", folder));
  }
  const fs::path staging = sibling(target, "partial");
  try {
    fs::create_directories(staging);
    for (const auto& [name, contents] : files_) {
      fs::path path = staging / name;
      fs::create_directories(path.parent_path());
      std::ofstream out(path, std::ios::binary);
      out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
      out.close();
      if (!out) throw Error(fmt::format("{}: cannot write generated file '{}'", folder, name));
      if (executable_.count(name)) {
        fs::permissions(path,
                        fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec,
                        fs::perm_options::add);
      }
    }
    if (exists) {
      // Swap the old folder out only once the new one is complete; remove it afterwards.
      const fs::path old = sibling(target, "old");
      fs::rename(target, old);
      try {
        fs::rename(staging, target);
      } catch (...) {
        fs::rename(old, target);
        throw;
      }
      fs::remove_all(old, error);
    } else {
      fs::rename(staging, target);
    }
  } catch (const fs::filesystem_error& e) {
    fs::remove_all(staging, error);
    throw Error(fmt::format("{}: cannot write the generated folder: {}", folder, e.what()));
  } catch (...) {
    fs::remove_all(staging, error);
    throw;
  }
}

}  // namespace cleave
