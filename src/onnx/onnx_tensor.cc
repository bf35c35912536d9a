// ONNX tensors: typed fields, raw data and external data files (checked to lie inside the
// model's folder), decoded into TensorData.
#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>

#include "onnx/onnx_detail.h"
#include "onnx/onnx_import.h"
#include "support/page_memory.h"

namespace cleave {

namespace onnx_detail {

namespace fs = std::filesystem;

std::string format_dims(const google::protobuf::RepeatedField<int64_t>& dims) {
  return fmt::format("[{}]", fmt::join(dims.begin(), dims.end(), ","));
}

namespace {

// The element count of `dims`, refusing negative dims and counts int64 cannot hold.
int64_t checked_element_count(const google::protobuf::RepeatedField<int64_t>& dims,
                              const std::string& what) {
  int64_t count = 1;
  for (int64_t dim : dims) {
    if (dim < 0)
      throw Error(fmt::format("{}: negative dimension in dims {}", what, format_dims(dims)));
  }
  for (int64_t dim : dims) {
    if (dim == 0) return 0;
    if (count > std::numeric_limits<int64_t>::max() / dim) {
      throw Error(fmt::format("{}: dims {} hold more elements than int64 can count", what,
                              format_dims(dims)));
    }
    count *= dim;
  }
  return count;
}

struct ExternalLocation {
  std::string location;
  int64_t offset = 0;
  std::optional<int64_t> length;
};

int64_t parse_external_number(const std::string& text, const std::string& key,
                              const std::string& what) {
  int64_t number = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (error != std::errc() || end != text.data() + text.size() || number < 0) {
    throw Error(fmt::format("{}: external data '{}' is '{}', expected a non-negative integer", what,
                            key, text));
  }
  return number;
}

ExternalLocation external_location(const onnx::TensorProto& tensor, const std::string& what) {
  ExternalLocation result;
  for (const auto& entry : tensor.external_data()) {
    if (entry.key() == "location") result.location = entry.value();
    if (entry.key() == "offset")
      result.offset = parse_external_number(entry.value(), "offset", what);
    if (entry.key() == "length")
      result.length = parse_external_number(entry.value(), "length", what);
  }
  if (result.location.empty()) {
    throw Error(fmt::format("{}: external data has no 'location'", what));
  }
  return result;
}

// True when `path` lies inside `folder` (both canonical), comparing whole components.
bool is_inside(const fs::path& path, const fs::path& folder) {
  auto inner = path.begin();
  for (auto outer = folder.begin(); outer != folder.end(); ++outer, ++inner) {
    if (outer->empty()) continue;  // Trailing separator of the folder.
    if (inner == path.end() || *inner != *outer) return false;
  }
  return true;
}

// Checks an external tensor's location (inside the model folder, file long enough).
ExternalWeight locate_external(const onnx::TensorProto& tensor, std::size_t expected_bytes,
                               const std::string& what, const ImportOptions& options) {
  ExternalLocation where = external_location(tensor, what);
  if (options.external_data_folder.empty()) {
    throw Error(
        fmt::format("{}: external data file '{}' needs the model's folder; import the "
                    "model from its file",
                    what, where.location));
  }
  fs::path relative(where.location);
  bool escapes =
      relative.is_absolute() || relative.has_root_name() || relative.has_root_directory();
  for (const auto& part : relative) escapes = escapes || part == "..";
  std::error_code error;
  fs::path folder = fs::weakly_canonical(fs::absolute(options.external_data_folder), error);
  fs::path file;
  if (!escapes && !error) {
    file = fs::weakly_canonical(folder / relative, error);
    escapes = error || !is_inside(file, folder);
    if (escapes && !error && !options.model_file.empty()) {
      const fs::path model = fs::weakly_canonical(fs::absolute(options.model_file), error);
      escapes = error || file != model;
    }
  }
  if (escapes) {
    throw Error(fmt::format("{}: external data file '{}' is outside the model folder '{}'", what,
                            where.location, options.external_data_folder));
  }
  if (!fs::is_regular_file(file, error)) {
    throw Error(fmt::format("{}: external data file '{}' does not exist or is not a file", what,
                            file.string()));
  }
  auto file_size = fs::file_size(file, error);
  if (error) {
    throw Error(fmt::format("{}: cannot read external data file '{}': {}", what, file.string(),
                            error.message()));
  }
  if (where.length && static_cast<uint64_t>(*where.length) != expected_bytes) {
    throw Error(fmt::format("{}: external data length {} differs from the {} bytes its dims need",
                            what, *where.length, expected_bytes));
  }
  auto offset = static_cast<uint64_t>(where.offset);
  if (offset > file_size || expected_bytes > file_size - offset) {
    throw Error(fmt::format("{}: external data needs bytes {}..{} of '{}', which has {} bytes",
                            what, offset, offset + expected_bytes, file.string(), file_size));
  }
  return ExternalWeight{file.string(), offset, expected_bytes};
}

// Copies ONNX's typed storage into little-endian elements of `width` bytes each; narrower
// element types travel widened in int32_data/uint64_data, so keep the low bytes.
template <typename Source>
std::shared_ptr<std::vector<std::byte>> pack(const google::protobuf::RepeatedField<Source>& field,
                                             std::size_t width) {
  auto bytes = std::make_shared<std::vector<std::byte>>(field.size() * width);
  std::byte* out = bytes->data();
  for (Source item : field) {
    std::memcpy(out, &item, width);  // Little-endian host: the low bytes come first.
    out += width;
  }
  return bytes;
}

}  // namespace

TensorData decode_tensor(const onnx::TensorProto& tensor, const std::string& what,
                         const ImportOptions& options) {
  int type_number = tensor.data_type();
  if (type_number <= 0 || type_number > static_cast<int>(DataType::kBFloat16)) {
    throw Error(fmt::format("{}: unsupported tensor data type {}", what, type_number));
  }
  TensorData data;
  data.dtype = static_cast<DataType>(type_number);
  int64_t count = checked_element_count(tensor.dims(), what);
  data.dims.assign(tensor.dims().begin(), tensor.dims().end());
  if (tensor.has_segment())
    throw Error(fmt::format("{}: segmented tensors are not supported", what));

  if (data.dtype == DataType::kString) {
    if (tensor.data_location() == onnx::TensorProto::EXTERNAL || tensor.has_raw_data()) {
      throw Error(fmt::format("{}: string tensors must keep their data in string_data", what));
    }
    if (tensor.string_data_size() != count) {
      throw Error(fmt::format("{}: holds {} strings, its dims {} need {}", what,
                              tensor.string_data_size(), format_dims(tensor.dims()), count));
    }
    data.strings = std::make_shared<std::vector<std::string>>(tensor.string_data().begin(),
                                                              tensor.string_data().end());
    return data;
  }

  std::size_t width = element_size(data.dtype);
  if (static_cast<uint64_t>(count) > kMaxModelBytes / width &&
      tensor.data_location() != onnx::TensorProto::EXTERNAL) {
    throw Error(fmt::format("{}: dims {} need more bytes than a model file can hold", what,
                            format_dims(tensor.dims())));
  }
  if (static_cast<uint64_t>(count) > std::numeric_limits<std::size_t>::max() / 16) {
    throw Error(fmt::format("{}: dims {} are too large", what, format_dims(tensor.dims())));
  }
  std::size_t expected_bytes = static_cast<std::size_t>(count) * width;

  if (tensor.data_location() == onnx::TensorProto::EXTERNAL) {
    ExternalWeight weight = locate_external(tensor, expected_bytes, what, options);
    if (options.unread_external && !tensor.name().empty()) {
      (*options.unread_external)[tensor.name()] = std::move(weight);
    } else {
      data.bytes = read_external_weight(weight, what);
    }
    return data;
  }
  if (tensor.has_raw_data()) {
    if (tensor.raw_data().size() != expected_bytes) {
      throw Error(fmt::format("{}: raw_data has {} bytes, its dims {} of {} need {}", what,
                              tensor.raw_data().size(), format_dims(tensor.dims()),
                              dtype_name(data.dtype), expected_bytes));
    }
    auto bytes = huge_page_bytes(expected_bytes);
    if (expected_bytes > 0) std::memcpy(bytes->data(), tensor.raw_data().data(), expected_bytes);
    data.bytes = std::move(bytes);
    return data;
  }

  // Typed storage: which field, and how many of its items make one element.
  std::string_view field_name;
  int64_t field_size = 0;
  int64_t per_element = 1;
  switch (data.dtype) {
    case DataType::kFloat:
    case DataType::kComplex64:
      field_name = "float_data";
      field_size = tensor.float_data_size();
      per_element = data.dtype == DataType::kComplex64 ? 2 : 1;
      break;
    case DataType::kDouble:
    case DataType::kComplex128:
      field_name = "double_data";
      field_size = tensor.double_data_size();
      per_element = data.dtype == DataType::kComplex128 ? 2 : 1;
      break;
    case DataType::kInt64:
      field_name = "int64_data";
      field_size = tensor.int64_data_size();
      break;
    case DataType::kUInt32:
    case DataType::kUInt64:
      field_name = "uint64_data";
      field_size = tensor.uint64_data_size();
      break;
    default:
      field_name = "int32_data";
      field_size = tensor.int32_data_size();
      break;
  }
  if (field_size != count * per_element) {
    throw Error(fmt::format("{}: holds {} items in {}, its dims {} of {} need {}", what, field_size,
                            field_name, format_dims(tensor.dims()), dtype_name(data.dtype),
                            count * per_element));
  }
  switch (data.dtype) {
    case DataType::kFloat:
    case DataType::kComplex64:
      data.bytes = pack(tensor.float_data(), sizeof(float));
      break;
    case DataType::kDouble:
    case DataType::kComplex128:
      data.bytes = pack(tensor.double_data(), sizeof(double));
      break;
    case DataType::kInt64:
      data.bytes = pack(tensor.int64_data(), width);
      break;
    case DataType::kUInt32:
    case DataType::kUInt64:
      data.bytes = pack(tensor.uint64_data(), width);
      break;
    default:
      data.bytes = pack(tensor.int32_data(), width);
      break;
  }
  return data;
}

}  // namespace onnx_detail

namespace {

[[noreturn]] void throw_unreadable(const ExternalWeight& weight, const std::string& what) {
  throw Error(fmt::format("{}: cannot read {} bytes at offset {} of external data file '{}'", what,
                          weight.bytes, weight.offset, weight.file));
}

}  // namespace

std::shared_ptr<std::vector<std::byte>> read_external_weight(const ExternalWeight& weight,
                                                             const std::string& what) {
  // Read straight into the weight's own bytes: through a bounce buffer of 4 MiB, zeroed per
  // weight, retinanet_resnet50_fpn's import spent 0.4 s zeroing it.
  auto bytes = huge_page_bytes(weight.bytes);
  if (weight.bytes == 0) return bytes;
  std::ifstream stream(weight.file, std::ios::binary);
  stream.seekg(static_cast<std::streamoff>(weight.offset));
  stream.read(reinterpret_cast<char*>(bytes->data()), static_cast<std::streamsize>(weight.bytes));
  if (!stream || static_cast<std::size_t>(stream.gcount()) != weight.bytes) {
    throw_unreadable(weight, what);
  }
  return bytes;
}

void read_external_weight_in_pieces(
    const ExternalWeight& weight, const std::string& what,
    const std::function<void(const std::byte*, std::size_t)>& piece) {
  constexpr std::size_t kPiece = std::size_t{1} << 22;
  // Left uninitialized: every byte is read into before it is used.
  auto buffer = std::make_unique_for_overwrite<std::byte[]>(std::min(weight.bytes, kPiece));
  std::ifstream stream(weight.file, std::ios::binary);
  stream.seekg(static_cast<std::streamoff>(weight.offset));
  for (std::size_t done = 0; done < weight.bytes;) {
    const std::size_t size = std::min(kPiece, weight.bytes - done);
    stream.read(reinterpret_cast<char*>(buffer.get()), static_cast<std::streamsize>(size));
    if (!stream || static_cast<std::size_t>(stream.gcount()) != size) {
      throw_unreadable(weight, what);
    }
    piece(buffer.get(), size);
    done += size;
  }
}

TensorData tensor_from_onnx(const onnx::TensorProto& tensor, const std::string& what) {
  return onnx_detail::decode_tensor(tensor, what, ImportOptions{});
}

}  // namespace cleave
