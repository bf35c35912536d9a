// The .npy format: a magic string, a Python-dict header, then raw little-endian data.
#include "runtime/npy.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>

#include "support/atomic_output.h"

namespace cleave {

namespace {

struct NpyType {
  std::string_view code;
  DataType dtype;
};

constexpr NpyType kTypes[] = {
    {"<f4", DataType::kFloat},   {"<f8", DataType::kDouble}, {"<i4", DataType::kInt32},
    {"<i8", DataType::kInt64},   {"|b1", DataType::kBool},   {"|u1", DataType::kUInt8},
    {"|i1", DataType::kInt8},    {"<i2", DataType::kInt16},  {"<u2", DataType::kUInt16},
    {"<f2", DataType::kFloat16},
};

std::string header_field(const std::string& header, const std::string& key,
                         const std::string& path) {
  std::regex pattern("'" + key + "'\\s*:\\s*('[^']*'|True|False|\\([^)]*\\))");
  std::smatch match;
  if (!std::regex_search(header, match, pattern)) {
    throw Error(fmt::format("{}: .npy header has no '{}' field", path, key));
  }
  return match[1].str();
}

}  // namespace

Tensor read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("{}: cannot open file", path));
  char magic[8];
  if (!in.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0) {
    throw Error(fmt::format("{}: not a .npy file (bad magic)", path));
  }
  uint32_t header_length = 0;
  if (magic[6] == 1) {
    unsigned char bytes[2];
    if (!in.read(reinterpret_cast<char*>(bytes), 2))
      throw Error(fmt::format("{}: truncated header", path));
    header_length = bytes[0] | (bytes[1] << 8);
  } else if (magic[6] == 2 || magic[6] == 3) {
    unsigned char bytes[4];
    if (!in.read(reinterpret_cast<char*>(bytes), 4))
      throw Error(fmt::format("{}: truncated header", path));
    header_length = bytes[0] | (bytes[1] << 8) | (bytes[2] << 16) | (uint32_t(bytes[3]) << 24);
  } else {
    throw Error(fmt::format("{}: unsupported .npy version {}", path, int(magic[6])));
  }
  if (header_length > (1u << 20))
    throw Error(fmt::format("{}: .npy header is implausibly long", path));
  std::string header(header_length, '\0');
  if (!in.read(header.data(), header_length))
    throw Error(fmt::format("{}: truncated header", path));

  std::string descr = header_field(header, "descr", path);
  descr = descr.substr(1, descr.size() - 2);
  if (descr == "<b1") descr = "|b1";
  const NpyType* type = nullptr;
  for (const auto& candidate : kTypes) {
    if (candidate.code == descr) type = &candidate;
  }
  if (!type) throw Error(fmt::format("{}: unsupported .npy dtype '{}'", path, descr));
  if (header_field(header, "fortran_order", path) != "False") {
    throw Error(
        fmt::format("{}: Fortran-ordered arrays are not supported; save with C order", path));
  }
  std::string shape_text = header_field(header, "shape", path);
  std::vector<int64_t> shape;
  std::regex number("\\d+");
  for (auto it = std::sregex_iterator(shape_text.begin(), shape_text.end(), number);
       it != std::sregex_iterator(); ++it) {
    shape.push_back(std::stoll(it->str()));
  }
  std::size_t bytes = plain_byte_size(type->dtype, shape);
  auto data_start = in.tellg();
  in.seekg(0, std::ios::end);
  auto available = static_cast<std::size_t>(in.tellg() - data_start);
  if (available != bytes) {
    throw Error(fmt::format("{}: header says {} data bytes for shape ({}), file has {}", path,
                            bytes, fmt::join(shape, ","), available));
  }
  in.seekg(data_start);
  Tensor tensor = Tensor::allocate(type->dtype, shape);
  if (bytes && !in.read(static_cast<char*>(tensor.raw()), bytes)) {
    throw Error(fmt::format("{}: could not read the data", path));
  }
  return tensor;
}

void write_npy(const std::string& path, const Tensor& tensor) {
  if (tensor.is_blocked()) throw Error(fmt::format("{}: cannot write a blocked tensor", path));
  const NpyType* type = nullptr;
  for (const auto& candidate : kTypes) {
    if (candidate.dtype == tensor.dtype()) type = &candidate;
  }
  if (!type) {
    throw Error(fmt::format("{}: tensors of type {} cannot be written as .npy", path,
                            dtype_name(tensor.dtype())));
  }
  std::string shape = fmt::format("{}", fmt::join(tensor.shape(), ", "));
  if (tensor.rank() == 1) shape += ",";
  std::string header =
      fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}", type->code, shape);
  // Pad so that the data starts on a 64-byte boundary, as numpy does.
  std::size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';

  std::string contents("\x93NUMPY\x01\x00", 8);
  contents += static_cast<char>(header.size() & 0xff);
  contents += static_cast<char>(header.size() >> 8);
  contents += header;
  contents.append(static_cast<const char*>(tensor.raw()), tensor.byte_size());
  write_file_atomically(path, contents);
}

std::string file_name_for(const std::string& value_name) {
  std::string name;
  for (char c : value_name) {
    bool allowed = std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
    name += allowed ? c : '_';
  }
  if (name.empty() || name == "." || name == "..") name = "_" + name;
  return name;
}

}  // namespace cleave
