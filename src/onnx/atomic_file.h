// Writing output files so that a failure never leaves a partial file behind.
#pragma once

#include <string>
#include <string_view>

namespace cleave {

/// Writes `contents` to a temporary file in the folder of `path`, then renames it over `path`.
/// Throws Error naming the file on any failure, after removing the temporary file.
void write_file_atomically(const std::string& path, std::string_view contents);

}  // namespace cleave
