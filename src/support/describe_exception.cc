// Mapping stray library exceptions to located, plain-word messages for the command line.
#include "support/describe_exception.h"

#include <fmt/core.h>

#include <filesystem>
#include <new>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string_view>
#include <system_error>

#include "support/error.h"
#include "support/json_file.h"

namespace cleave {
namespace {

std::string shown_path(const std::filesystem::path& path) {
  return path.empty() ? "'' (an empty path)" : path.string();
}

// what() is "filesystem error: cannot create directories: Not a directory [a] [b]": keep the
// operation, which says what cleave tried.
std::string operation_of(const std::filesystem::filesystem_error& error) {
  std::string text = error.what();
  constexpr std::string_view kPrefix = "filesystem error: ";
  if (text.starts_with(kPrefix)) text = text.substr(kPrefix.size());
  const std::string reason = error.code().message();
  const std::size_t at = text.find(": " + reason);
  return at == std::string::npos ? std::string() : text.substr(0, at);
}

// Library messages may name their functions ("std::vector::reserve"); the user needs none.
std::string without_std(std::string text) {
  for (std::size_t at = text.find("std::"); at != std::string::npos; at = text.find("std::"))
    text.erase(at, 5);
  return text;
}

}  // namespace

std::string describe_exception(const std::exception& error) {
  if (dynamic_cast<const Error*>(&error)) return error.what();
  if (dynamic_cast<const std::bad_alloc*>(&error) ||
      dynamic_cast<const std::length_error*>(&error)) {
    return "out of memory: a size or count in the input or the options asks for more memory "
           "than this machine can give";
  }
  if (const auto* fs = dynamic_cast<const std::filesystem::filesystem_error*>(&error)) {
    std::string where = shown_path(fs->path1());
    if (!fs->path2().empty()) where += " -> " + fs->path2().string();
    const std::string operation = operation_of(*fs);
    const std::string reason = fs->code().message();
    return operation.empty() ? fmt::format("{}: {}", where, reason)
                             : fmt::format("{}: {}: {}", where, operation, reason);
  }
  if (const auto* json = dynamic_cast<const nlohmann::json::exception*>(&error)) {
    return fmt::format("malformed JSON value: {}", json_exception_reason(*json));
  }
  if (const auto* system = dynamic_cast<const std::system_error*>(&error)) {
    return fmt::format("system call failed: {}", system->code().message());
  }
  return fmt::format("unexpected failure: {}", without_std(error.what()));
}

}  // namespace cleave
