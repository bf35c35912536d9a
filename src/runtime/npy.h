// Reading and writing numpy .npy files (float32, float64, int32, int64, bool, uint8, int8).
#pragma once

#include <string>

#include "runtime/tensor.h"

namespace cleave {

/// Reads a version 1/2/3 .npy file in C order. Throws Error naming the file and the problem
/// (bad magic, Fortran order, unsupported dtype, size mismatch with the header).
Tensor read_npy(const std::string& path);

/// Writes a plain tensor; the file appears whole or not at all (temp file + rename).
void write_npy(const std::string& path, const Tensor& tensor);

/// A file name for a graph output: characters not allowed in file names become '_'.
std::string file_name_for(const std::string& value_name);

}  // namespace cleave
