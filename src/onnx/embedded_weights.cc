// Scanning ModelProto -> GraphProto (7) -> TensorProto (5) for raw_data (9) without reading it.
#include "onnx/embedded_weights.h"

#include <fcntl.h>
#include <fmt/core.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/wire_format_lite.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace cleave {

namespace {

using google::protobuf::internal::WireFormatLite;
using google::protobuf::io::CodedInputStream;
using google::protobuf::io::CodedOutputStream;
using google::protobuf::io::StringOutputStream;

// Field numbers of onnx.proto3.
constexpr uint32_t kModelGraph = 7;
constexpr uint32_t kGraphInitializer = 5;
constexpr uint32_t kTensorDims = 1, kTensorDataType = 2, kTensorName = 8, kTensorRawData = 9,
                   kTensorExternalData = 13, kTensorDataLocation = 14;
constexpr uint32_t kLengthDelimited = 2, kVarint = 0;
constexpr int kExternal = 1;  // TensorProto.DataLocation.EXTERNAL

uint32_t field_of(uint32_t tag) {
  return tag >> 3;
}
uint32_t wire_type_of(uint32_t tag) {
  return tag & 7;
}

// A message's bytes, `begin` bytes into the file.
struct Span {
  const char* data;
  std::size_t size;
  std::size_t begin;
};

struct Scanner {
  const std::string& file_name;
  const std::string& origin;
  std::size_t min_bytes;

  [[noreturn]] void truncated(const char* what) const {
    throw Error(
        fmt::format("{}: not a valid ONNX model: the protobuf data of {} is truncated or corrupt",
                    origin, what));
  }

  std::unique_ptr<CodedInputStream> reader(Span span) const {
    auto in = std::make_unique<CodedInputStream>(reinterpret_cast<const uint8_t*>(span.data),
                                                 static_cast<int>(span.size));
    in->SetTotalBytesLimit(INT_MAX);
    return in;
  }

  // A length-delimited field's payload, the stream being just past its tag.
  Span payload(CodedInputStream& in, Span outer, const char* what) const {
    uint32_t length = 0;
    if (!in.ReadVarint32(&length)) truncated(what);
    const auto at = static_cast<std::size_t>(in.CurrentPosition());
    if (length > outer.size - at || !in.Skip(static_cast<int>(length))) truncated(what);
    return Span{outer.data + at, length, outer.begin + at};
  }

  // One TensorProto: the same bytes, or without raw_data and with an external reference.
  std::string tensor(Span span) const {
    auto in = reader(span);
    std::string kept;
    int64_t type = 0;
    std::vector<int64_t> dims;
    bool named = false, external = false;
    std::optional<Span> raw;
    for (;;) {
      const auto before = static_cast<std::size_t>(in->CurrentPosition());
      const uint32_t tag = in->ReadTag();
      if (tag == 0) {
        if (before != span.size) truncated("an initializer");
        break;
      }
      const uint32_t field = field_of(tag), wire = wire_type_of(tag);
      if (field == kTensorRawData && wire == kLengthDelimited) {
        raw = payload(*in, span, "an initializer's raw_data");
        continue;  // Left out.
      }
      if (field == kTensorDims && wire == kVarint) {
        uint64_t dim = 0;
        if (!in->ReadVarint64(&dim)) truncated("an initializer's dims");
        dims.push_back(static_cast<int64_t>(dim));
      } else if (field == kTensorDims && wire == kLengthDelimited) {
        Span packed = payload(*in, span, "an initializer's dims");
        auto values = reader(packed);
        while (static_cast<std::size_t>(values->CurrentPosition()) < packed.size) {
          uint64_t dim = 0;
          if (!values->ReadVarint64(&dim)) truncated("an initializer's dims");
          dims.push_back(static_cast<int64_t>(dim));
        }
      } else if (field == kTensorDataType && wire == kVarint) {
        uint64_t value = 0;
        if (!in->ReadVarint64(&value)) truncated("an initializer's data_type");
        type = static_cast<int64_t>(value);
      } else if (field == kTensorDataLocation && wire == kVarint) {
        uint64_t value = 0;
        if (!in->ReadVarint64(&value)) truncated("an initializer's data_location");
        external = external || value == kExternal;
      } else if (field == kTensorName && wire == kLengthDelimited) {
        named = payload(*in, span, "an initializer's name").size > 0;
      } else {
        external = external || field == kTensorExternalData;
        if (!WireFormatLite::SkipField(in.get(), tag)) truncated("an initializer");
      }
      const auto after = static_cast<std::size_t>(in->CurrentPosition());
      kept.append(span.data + before, after - before);
    }
    if (!raw || !named || external || raw->size < min_bytes || !fits(type, dims, raw->size))
      return std::string(span.data, span.size);
    {
      StringOutputStream stream(&kept);
      CodedOutputStream out(&stream);
      const std::pair<std::string, std::string> entries[] = {{"location", file_name},
                                                             {"offset", std::to_string(raw->begin)},
                                                             {"length", std::to_string(raw->size)}};
      for (const auto& [key, value] : entries) {
        // A StringStringEntryProto: key = 1, value = 2.
        std::string entry;
        {
          StringOutputStream entry_stream(&entry);
          CodedOutputStream entry_out(&entry_stream);
          WireFormatLite::WriteString(1, key, &entry_out);
          WireFormatLite::WriteString(2, value, &entry_out);
        }
        WireFormatLite::WriteString(kTensorExternalData, entry, &out);
      }
      WireFormatLite::WriteEnum(kTensorDataLocation, kExternal, &out);
    }
    return kept;
  }

  // Whether `bytes` are exactly what dims of this element type need (else the importer says).
  static bool fits(int64_t type, const std::vector<int64_t>& dims, std::size_t bytes) {
    if (type <= 0 || type > static_cast<int64_t>(DataType::kBFloat16) ||
        type == static_cast<int64_t>(DataType::kString)) {
      return false;
    }
    uint64_t count = element_size(static_cast<DataType>(type));
    for (int64_t dim : dims) {
      if (dim < 0 || (dim > 0 && count > bytes / static_cast<uint64_t>(dim))) return false;
      count *= static_cast<uint64_t>(dim);
    }
    return count == bytes;
  }

  // A message whose length-delimited field `inner` is rewritten by `rewrite`.
  template <typename Rewrite>
  std::string message(Span span, uint32_t inner, const char* what, Rewrite rewrite) const {
    auto in = reader(span);
    std::string result;
    StringOutputStream stream(&result);
    {
      CodedOutputStream out(&stream);
      for (;;) {
        const auto before = static_cast<std::size_t>(in->CurrentPosition());
        const uint32_t tag = in->ReadTag();
        if (tag == 0) {
          if (before != span.size) truncated(what);
          break;
        }
        if (field_of(tag) == inner && wire_type_of(tag) == kLengthDelimited) {
          const std::string rewritten = rewrite(payload(*in, span, what));
          out.WriteTag(tag);
          out.WriteVarint32(static_cast<uint32_t>(rewritten.size()));
          out.WriteRaw(rewritten.data(), static_cast<int>(rewritten.size()));
          continue;
        }
        if (!WireFormatLite::SkipField(in.get(), tag)) truncated(what);
        const auto after = static_cast<std::size_t>(in->CurrentPosition());
        out.WriteRaw(span.data + before, static_cast<int>(after - before));
      }
    }
    return result;
  }
};

}  // namespace

std::string refer_to_embedded_weights(std::string_view model, const std::string& file_name,
                                      const std::string& origin, std::size_t min_bytes) {
  if (model.size() > static_cast<std::size_t>(INT_MAX)) {
    throw Error(
        fmt::format("{}: the model has {} bytes; models of 2 GiB and more are not "
                    "supported (keep the weights as external data)",
                    origin, model.size()));
  }
  Scanner scanner{file_name, origin, min_bytes};
  const Span whole{model.data(), model.size(), 0};
  return scanner.message(whole, kModelGraph, "the graph", [&](Span graph) {
    return scanner.message(graph, kGraphInitializer, "an initializer",
                           [&](Span tensor) { return scanner.tensor(tensor); });
  });
}

std::string model_without_embedded_weights(const std::string& path, std::size_t min_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(fmt::format("{}: cannot open the model file", path));
  struct stat status {};
  if (::fstat(fd, &status) != 0 || !S_ISREG(status.st_mode)) {
    ::close(fd);
    throw Error(fmt::format("{}: cannot open the model file: not a regular file", path));
  }
  const auto size = static_cast<std::size_t>(status.st_size);
  if (size == 0) {
    ::close(fd);
    throw Error(fmt::format("{}: the file is empty; expected an ONNX model", path));
  }
  void* mapped = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (mapped == MAP_FAILED) throw Error(fmt::format("{}: cannot map the model file", path));
  struct Unmap {
    void* data;
    std::size_t size;
    ~Unmap() { ::munmap(data, size); }
  } unmap{mapped, size};
  return refer_to_embedded_weights(std::string_view(static_cast<const char*>(mapped), size),
                                   std::filesystem::path(path).filename().string(), path,
                                   min_bytes);
}

}  // namespace cleave
