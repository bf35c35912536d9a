// The .npy format: a magic string, a Python-dict header, then raw little-endian data.
#include "runtime/npy.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <array>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string_view>
#include <utility>

#include "support/atomic_output.h"

namespace cleave {

namespace {

struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;
};

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

// The header is a Python dict literal: {'descr': '<f4', 'fortran_order': False, 'shape': (2,)}.
// Parsed exactly, so that a shape like (-1,3) or trailing text is an error, not a guess.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& path) : text_(text), path_(path) {}

  NpyHeader parse() {
    NpyHeader header;
    bool seen[3] = {false, false, false};
    expect('{');
    while (skip_space(), peek() != '}') {
      const std::string key = quoted();
      expect(':');
      int index = -1;
      if (key == "descr") {
        index = 0;
        header.descr = quoted();
      } else if (key == "fortran_order") {
        index = 1;
        header.fortran_order = boolean();
      } else if (key == "shape") {
        index = 2;
        header.shape = shape();
      } else {
        fail(fmt::format("unknown key '{}'", key));
      }
      if (seen[index]) fail(fmt::format("key '{}' appears twice", key));
      seen[index] = true;
      skip_space();
      if (peek() != ',') break;
      ++at_;
    }
    expect('}');
    skip_space();
    if (at_ != text_.size()) fail("text after the closing '}'");
    for (int i = 0; i < 3; ++i) {
      if (!seen[i]) {
        fail(fmt::format("no '{}' field", std::array{"descr", "fortran_order", "shape"}[i]));
      }
    }
    return header;
  }

 private:
  [[noreturn]] void fail(const std::string& problem) const {
    throw Error(fmt::format("{}: malformed .npy header at character {}: {}", path_, at_, problem));
  }
  char peek() const { return at_ < text_.size() ? text_[at_] : '\0'; }
  void skip_space() {
    while (at_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[at_]))) ++at_;
  }
  void expect(char c) {
    skip_space();
    if (peek() != c) fail(fmt::format("expected '{}'", c));
    ++at_;
  }
  std::string quoted() {
    skip_space();
    const char quote = peek();
    if (quote != '\'' && quote != '"') fail("expected a quoted string");
    const std::size_t end = text_.find(quote, at_ + 1);
    if (end == std::string_view::npos) fail("unterminated string");
    std::string value(text_.substr(at_ + 1, end - at_ - 1));
    at_ = end + 1;
    return value;
  }
  bool boolean() {
    skip_space();
    for (const auto& [word, value] : {std::pair{"True", true}, std::pair{"False", false}}) {
      if (text_.substr(at_).starts_with(word)) {
        at_ += std::strlen(word);
        return value;
      }
    }
    fail("expected True or False");
  }
  // (), (n,), (n, m), (n, m,): non-negative integers only.
  std::vector<int64_t> shape() {
    std::vector<int64_t> dims;
    bool comma = false;
    expect('(');
    while (skip_space(), peek() != ')') {
      if (!std::isdigit(static_cast<unsigned char>(peek()))) {
        fail("expected a non-negative integer dimension in the shape");
      }
      int64_t value = 0;
      while (std::isdigit(static_cast<unsigned char>(peek()))) {
        const int digit = peek() - '0';
        if (value > (std::numeric_limits<int64_t>::max() - digit) / 10) {
          fail("a shape dimension is too large");
        }
        value = value * 10 + digit;
        ++at_;
      }
      dims.push_back(value);
      skip_space();
      if (peek() == ',') {
        comma = true;
        ++at_;
      } else if (peek() != ')') {
        fail("expected ',' or ')' in the shape");
      }
    }
    ++at_;
    // Python reads (3) as the number 3, not a shape.
    if (dims.size() == 1 && !comma) fail("a one-dimensional shape needs a trailing comma: (n,)");
    return dims;
  }

  std::string_view text_;
  const std::string& path_;
  std::size_t at_ = 0;
};

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

  const NpyHeader parsed = HeaderParser(header, path).parse();
  std::string descr = parsed.descr;
  if (descr == "<b1") descr = "|b1";
  const NpyType* type = nullptr;
  for (const auto& candidate : kTypes) {
    if (candidate.code == descr) type = &candidate;
  }
  if (!type) throw Error(fmt::format("{}: unsupported .npy dtype '{}'", path, descr));
  if (parsed.fortran_order) {
    throw Error(
        fmt::format("{}: Fortran-ordered arrays are not supported; save with C order", path));
  }
  const std::vector<int64_t>& shape = parsed.shape;
  std::size_t bytes = 0;
  try {
    bytes = plain_byte_size(type->dtype, shape);
  } catch (const Error& e) {
    throw Error(
        fmt::format("{}: .npy header shape ({}): {}", path, fmt::join(shape, ","), e.what()));
  }
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

std::map<std::string, std::string> input_file_specs(const std::vector<std::string>& specs) {
  std::map<std::string, std::string> files;
  for (const std::string& spec : specs) {
    const std::size_t equals = spec.find('=');
    if (equals == std::string::npos || equals == 0 || equals + 1 == spec.size()) {
      throw Error(fmt::format("--input '{}': expected name=file.npy", spec));
    }
    const std::string name = spec.substr(0, equals);
    const auto [it, added] = files.emplace(name, spec.substr(equals + 1));
    if (!added) {
      throw Error(fmt::format("--input {}: given twice ({} and {}); give each input once", name,
                              it->second, spec.substr(equals + 1)));
    }
  }
  return files;
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
