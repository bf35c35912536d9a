// Reading and writing numpy .npy files (float32, float64, int32, int64, bool, uint8, int8).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "runtime/tensor.h"

namespace cleave {

/// Reads a version 1/2/3 .npy file in C order. Throws Error naming the file and the problem
/// (bad magic, Fortran order, unsupported dtype, size mismatch with the header).
Tensor read_npy(const std::string& path);

/// Writes a plain tensor; the file appears whole or not at all (temp file + rename).
void write_npy(const std::string& path, const Tensor& tensor);

/// The `--input NAME=FILE.npy` values as NAME -> FILE. Throws Error naming the value when one
/// lacks its name or file, and naming the input when it is given twice.
std::map<std::string, std::string> input_file_specs(const std::vector<std::string>& specs);

/// A file name for a graph output: characters not allowed in file names become '_'.
std::string file_name_for(const std::string& value_name);

}  // namespace cleave
