// MPI start-up, shutdown, abort, and deadline-bounded waits.
#include "distributed/mpi_session.h"

#include <fmt/core.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <thread>

#include "ir/graph.h"
#include "runtime/wait_policy.h"
#include "support/wait_backoff.h"

namespace cleave {

bool launched_by_mpi() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"}) {
    if (std::getenv(name)) return true;
  }
  return false;
}

void prefer_eager_messages() {
  const std::string bytes = std::to_string(kEagerMessageBytes);
  // The rendezvous's first fragment and the pipeline's fragments follow the eager limit.
  for (const char* name : {"OMPI_MCA_btl_tcp_eager_limit", "OMPI_MCA_btl_tcp_rndv_eager_limit",
                           "OMPI_MCA_btl_tcp_max_send_size"}) {
    setenv(name, bytes.c_str(), /*overwrite=*/0);
  }
}

MpiSession::MpiSession() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    prefer_eager_messages();
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
      throw Error("MPI_Init failed");
    }
  }
  MPI_Comm_dup(MPI_COMM_WORLD, &comm_);
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  MPI_Comm host_comm = MPI_COMM_NULL;
  if (MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &host_comm) ==
          MPI_SUCCESS &&
      host_comm != MPI_COMM_NULL) {
    MPI_Comm_size(host_comm, &ranks_on_host_);
    MPI_Comm_free(&host_comm);
  }
}

MpiSession::~MpiSession() {
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

std::string MpiSession::host() const {
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  MPI_Get_processor_name(name, &length);
  return std::string(name, static_cast<std::size_t>(length));
}

std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    return fmt::format("MPI error {}", code);
  return std::string(text, static_cast<std::size_t>(length));
}

void abort_ranks(MPI_Comm comm, int rank, const std::string& message) {
  fmt::print(stderr, "cleave: error: rank {}: {}\n", rank, message);
  std::fflush(stderr);
  MPI_Abort(comm == MPI_COMM_NULL ? MPI_COMM_WORLD : comm, 1);
  std::_Exit(1);  // MPI_Abort does not return; in case an implementation does.
}

MPI_Status wait_until(MPI_Request& request, std::chrono::steady_clock::time_point deadline,
                      const std::function<std::string()>& what, double timeout_seconds) {
  MPI_Status status{};
  int done = 0;
  // Spin first (a message that is about to land costs no sleep), then back off to at most
  // 200 us (wait_backoff.h): a rank waiting in a pipeline should leave the core to the rank
  // that computes.
  // Where waiting threads sleep at once (an oversubscribed host, a CPU quota: wait_policy.h),
  // so does a rank.
  static const int spin_polls = wait_spin_count() > 0 ? 2000 : 0;
  for (int polls = 0;; ++polls) {
    int code = MPI_Test(&request, &done, &status);
    if (code != MPI_SUCCESS) {
      throw Error(fmt::format("MPI failed while waiting for {}: {}", what(), mpi_error_text(code)));
    }
    if (done) return status;
    if (std::chrono::steady_clock::now() > deadline) {
      throw RankTimeout(fmt::format("waited more than {} s for {}", timeout_seconds, what()));
    }
    if (polls >= spin_polls) {
      std::this_thread::sleep_for(
          std::chrono::duration<double>(wait_pause_seconds(polls - spin_polls + 1)));
    }
  }
}

}  // namespace cleave
