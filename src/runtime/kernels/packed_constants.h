// Kernels that pack a constant input into a copy of their own, so its owner may free it.
#pragma once

#include <cstddef>

namespace cleave {

/// Implemented (beside Kernel) by kernels whose preparation may pack a constant input (an
/// initializer) into a copy of the kernel's own (Conv, Gemm/MatMul weights).
class PackedConstants {
 public:
  /// False where preparation packed constant input `input` and run() never reads the given one
  /// again, so its owner may free it (an MPI rank's loaded weights).
  virtual bool reads_at_run(std::size_t input) const = 0;

 protected:
  ~PackedConstants() = default;
};

}  // namespace cleave
