// MPI start-up and shutdown for cleave's ranks, and waits on MPI requests bounded by a deadline.
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <stdexcept>
#include <string>

namespace cleave {

/// Whether this process was started by an MPI launcher (mpirun, srun); a plain `cleave run`
/// never initializes MPI.
bool launched_by_mpi();

/// Call before MPI_Init. OpenMPI's TCP transport sends a message over its eager limit (64 KiB)
/// by rendezvous, whose data moves only while the sender is inside an MPI call: a rank that
/// posts a send and goes on computing leaves its peer waiting for that whole computation
/// (a batch-8 spatial split ran 1.5x slower for it). Raises the limits to
/// kEagerMessageBytes, unless the user set them (mpirun --mca or OMPI_MCA_* variables).
void prefer_eager_messages();
inline constexpr std::size_t kEagerMessageBytes = std::size_t{4} << 20;

/// MPI_Init on construction (funneled threads: only the calling thread talks MPI; kernels use
/// OpenMP threads of their own), MPI_Finalize on destruction. Errors on the communicator are
/// returned rather than fatal, so a dead peer becomes a message naming it.
class MpiSession {
 public:
  MpiSession();
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  MPI_Comm comm() const { return comm_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  /// The ranks of this job on this rank's host (itself included): they share its cores.
  int ranks_on_host() const { return ranks_on_host_; }
  std::string host() const;

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  int ranks_on_host_ = 1;
};

/// MPI's text for an error code.
std::string mpi_error_text(int code);

/// Prints `message` as cleave's error on stderr (prefixed with the rank) and ends every rank
/// of the job with MPI_Abort: the way out of a run that cannot finish.
[[noreturn]] void abort_ranks(MPI_Comm comm, int rank, const std::string& message);

/// A rank waited longer than the rank timeout for a peer.
class RankTimeout : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Waits for one request by polling MPI_Test (spinning briefly, then sleeping a little more
/// each time, up to 200 us) until `deadline`. Throws RankTimeout on timeout and Error on an MPI
/// error, both describing the wait with `what()` (e.g. "value 'x' from rank 1 ..."). Returns
/// the request's status.
MPI_Status wait_until(MPI_Request& request, std::chrono::steady_clock::time_point deadline,
                      const std::function<std::string()>& what, double timeout_seconds);

}  // namespace cleave
