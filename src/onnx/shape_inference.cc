// Shape inference in a child process: ONNX's inference code is not hardened against hostile
// models, and a crash or endless loop there must not take the importing process with it.
#include "onnx/shape_inference.h"

#include <fcntl.h>
#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <string_view>

namespace cleave {

namespace {

// Inference merges what it computes into the declared value_info and output shapes and keeps
// a wrong declaration when the two conflict; without them, what comes back is computed alone,
// and the importer compares it with the declarations.
void forget_declared_shapes(onnx::GraphProto* graph) {
  graph->clear_value_info();
  for (auto& output : *graph->mutable_output()) {
    if (output.type().has_tensor_type()) {
      output.mutable_type()->mutable_tensor_type()->clear_shape();
    }
  }
}

bool write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    ssize_t written = ::write(fd, data, size);
    if (written < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += written;
    size -= static_cast<std::size_t>(written);
  }
  return true;
}

void append_varint(std::string& out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>(value | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

// A length-delimited field: `field` of wire type 2, then `bytes`.
void append_field(std::string& out, int field, std::string_view bytes) {
  append_varint(out, static_cast<uint64_t>(field) << 3 | 2);
  append_varint(out, bytes.size());
  out.append(bytes);
}

void append_message(std::string& out, int field, const google::protobuf::MessageLite& message) {
  append_varint(out, static_cast<uint64_t>(field) << 3 | 2);
  const std::size_t size = message.ByteSizeLong();
  append_varint(out, size);
  const std::size_t at = out.size();
  out.resize(at + size);
  message.SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(out.data() + at));
}

// The part of an inferred graph that the importer reads, in GraphProto's wire format (field
// numbers of onnx.proto). Serializing the whole inferred model and parsing it again in the
// parent repeated the parse of every node's names; this sends a few bytes per node.
void append_types(std::string& out, const onnx::GraphProto& graph) {
  std::string node_bytes;
  std::string attribute_bytes;
  std::string body_bytes;
  for (const onnx::NodeProto& node : graph.node()) {
    node_bytes.clear();
    append_field(node_bytes, onnx::NodeProto::kOpTypeFieldNumber, node.op_type());
    for (const onnx::AttributeProto& attribute : node.attribute()) {
      attribute_bytes.clear();
      append_field(attribute_bytes, onnx::AttributeProto::kNameFieldNumber, attribute.name());
      if (attribute.has_g()) {
        body_bytes.clear();
        append_types(body_bytes, attribute.g());
        append_field(attribute_bytes, onnx::AttributeProto::kGFieldNumber, body_bytes);
      }
      for (const onnx::GraphProto& body : attribute.graphs()) {
        body_bytes.clear();
        append_types(body_bytes, body);
        append_field(attribute_bytes, onnx::AttributeProto::kGraphsFieldNumber, body_bytes);
      }
      append_field(node_bytes, onnx::NodeProto::kAttributeFieldNumber, attribute_bytes);
    }
    append_field(out, onnx::GraphProto::kNodeFieldNumber, node_bytes);
  }
  for (const auto& info : graph.value_info()) {
    append_message(out, onnx::GraphProto::kValueInfoFieldNumber, info);
  }
  for (const auto& info : graph.output()) {
    append_message(out, onnx::GraphProto::kOutputFieldNumber, info);
  }
}

[[noreturn]] void run_child(const onnx::ModelProto& model, int fd) {
  // Die quietly on a crash: the parent notices, and no crash handler of the parent's
  // (sanitizers, fuzzers) should treat the child's death as its own.
  for (int signal_number : {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL}) {
    ::signal(signal_number, SIG_DFL);
  }
  int code = 1;
  try {
    // The child's memory is its own copy of the parent's: inference may change the model in
    // place, and a copy of a 200k-node model was a tenth of its import. Nothing is freed:
    // the child exits below.
    auto& inferred = const_cast<onnx::ModelProto&>(model);
    forget_declared_shapes(inferred.mutable_graph());
    onnx::shape_inference::InferShapes(inferred);
    std::string bytes(sizeof(uint64_t), '\0');
    append_types(bytes, inferred.graph());
    const uint64_t size = bytes.size() - sizeof(uint64_t);
    std::memcpy(bytes.data(), &size, sizeof size);
    if (write_all(fd, bytes.data(), bytes.size())) code = 0;
  } catch (...) {
  }
  ::_exit(code);
}

}  // namespace

const onnx::GraphProto* infer_shapes_in_process(const onnx::ModelProto& model,
                                                google::protobuf::Arena& arena) {
  auto* inferred = google::protobuf::Arena::CreateMessage<onnx::ModelProto>(&arena);
  *inferred = model;
  forget_declared_shapes(inferred->mutable_graph());
  try {
    onnx::shape_inference::InferShapes(*inferred);
  } catch (const std::exception&) {
    return nullptr;
  }
  return &inferred->graph();
}

const onnx::GraphProto* infer_shapes_isolated(const onnx::ModelProto& model, double timeout_seconds,
                                              google::protobuf::Arena& arena) {
  // Build the schema registry before forking, so the child does not start with its
  // initialization half done by another thread.
  onnx::OpSchemaRegistry::Instance();
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return nullptr;
  pid_t child = ::fork();
  if (child < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return nullptr;
  }
  if (child == 0) {
    ::close(fds[0]);
    run_child(model, fds[1]);
  }
  ::close(fds[1]);

  using Clock = std::chrono::steady_clock;
  auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                     std::chrono::duration<double>(timeout_seconds));
  std::string received;
  bool finished = false;
  char buffer[1 << 16];
  while (!finished) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) break;
    pollfd poll_fd{fds[0], POLLIN, 0};
    int ready = ::poll(&poll_fd, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    ssize_t got = ::read(fds[0], buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      finished = got == 0;
      break;
    }
    received.append(buffer, static_cast<std::size_t>(got));
  }
  ::close(fds[0]);
  if (!finished) ::kill(child, SIGKILL);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (!finished || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return nullptr;

  uint64_t size = 0;
  if (received.size() < sizeof size) return nullptr;
  std::memcpy(&size, received.data(), sizeof size);
  if (received.size() - sizeof size != size || size > INT32_MAX) return nullptr;
  auto* inferred = google::protobuf::Arena::CreateMessage<onnx::GraphProto>(&arena);
  if (!inferred->ParseFromArray(received.data() + sizeof size, static_cast<int>(size))) {
    return nullptr;
  }
  return inferred;
}

}  // namespace cleave
