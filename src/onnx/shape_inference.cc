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

namespace cleave {

namespace {

// Tensor payloads are what makes models big; the parent already has them.
void strip_tensor_data(onnx::GraphProto* graph) {
  graph->clear_initializer();
  graph->clear_sparse_initializer();
  for (auto& node : *graph->mutable_node()) {
    for (auto& attribute : *node.mutable_attribute()) {
      attribute.clear_t();
      attribute.clear_tensors();
      attribute.clear_sparse_tensor();
      attribute.clear_sparse_tensors();
      if (attribute.has_g()) strip_tensor_data(attribute.mutable_g());
      for (auto& body : *attribute.mutable_graphs()) strip_tensor_data(&body);
    }
  }
}

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

[[noreturn]] void run_child(const onnx::ModelProto& model, int fd) {
  // Die quietly on a crash: the parent notices, and no crash handler of the parent's
  // (sanitizers, fuzzers) should treat the child's death as its own.
  for (int signal_number : {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL}) {
    ::signal(signal_number, SIG_DFL);
  }
  int code = 1;
  try {
    // Never freed: the child exits below, and destroying a large model message by message
    // took a tenth of a 200k-node import.
    onnx::ModelProto& inferred = *new onnx::ModelProto(model);
    forget_declared_shapes(inferred.mutable_graph());
    onnx::shape_inference::InferShapes(inferred);
    strip_tensor_data(inferred.mutable_graph());
    std::string bytes;
    if (inferred.SerializeToString(&bytes)) {
      uint64_t size = bytes.size();
      if (write_all(fd, reinterpret_cast<const char*>(&size), sizeof size) &&
          write_all(fd, bytes.data(), bytes.size())) {
        code = 0;
      }
    }
  } catch (...) {
  }
  ::_exit(code);
}

}  // namespace

onnx::ModelProto* infer_shapes_in_process(const onnx::ModelProto& model,
                                          google::protobuf::Arena& arena) {
  auto* inferred = google::protobuf::Arena::CreateMessage<onnx::ModelProto>(&arena);
  *inferred = model;
  forget_declared_shapes(inferred->mutable_graph());
  try {
    onnx::shape_inference::InferShapes(*inferred);
  } catch (const std::exception&) {
    return nullptr;
  }
  return inferred;
}

onnx::ModelProto* infer_shapes_isolated(const onnx::ModelProto& model, double timeout_seconds,
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
  auto* inferred = google::protobuf::Arena::CreateMessage<onnx::ModelProto>(&arena);
  if (!inferred->ParseFromArray(received.data() + sizeof size, static_cast<int>(size))) {
    return nullptr;
  }
  return inferred;
}

}  // namespace cleave
