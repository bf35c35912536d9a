// Steps every rank takes together, each bounded by the rank timeout, and per-rank figures.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "distributed/mpi_session.h"
#include "runtime/wait_policy.h"
#include "support/process_memory.h"

namespace cleave {

/// FNV-1a 64 of a text, continuing from `hash`: ranks compare what they loaded by its hash.
uint64_t hash_text(const std::string& text, uint64_t hash = 1469598103934665603ull);

std::chrono::steady_clock::time_point deadline_after(double seconds);

/// Every rank learns whether every other could start (`failure` empty) and that all loaded the
/// same files (`hash`). Throws Error on every rank, naming the first rank that failed and its
/// reason, or the rank whose files differ from rank 0's; a rank that does not answer within the
/// timeout stops the job.
void agree_to_start(const MpiSession& session, const std::string& failure, uint64_t hash,
                    double timeout_seconds);

/// agree_to_start for a rank's main loop: prints a refusal on this rank's stderr before
/// MPI_Finalize (which every rank enters before any exits; printed after it, by the CLI, a
/// rank's message was sometimes lost when mpirun stopped the job at the first non-zero exit)
/// and returns false; true when every rank may start.
bool agree_to_start_or_say_why(const MpiSession& session, const std::string& failure, uint64_t hash,
                               double timeout_seconds);

/// Runs this rank's `prepare` (which returns the hash of what it loaded), turns an exception it
/// throws into this rank's refusal, and agrees as agree_to_start_or_say_why does.
bool prepare_on_every_rank(const MpiSession& session, const std::function<uint64_t()>& prepare,
                           double timeout_seconds);

/// MPI_Ibarrier waited for until the timeout (RankTimeout naming `what`).
void barrier(const MpiSession& session, double timeout_seconds, const std::string& what);

/// On rank 0, per rank, how far that rank's steady clock is ahead of rank 0's, in seconds (0 for
/// rank 0 and the ranks on its host, which read the same clock); other ranks get an empty
/// vector. Every rank takes part: rank 0 times `rounds` round trips to each rank on another host
/// in turn, and the fastest one's midpoint against the time the rank wrote into its answer gives
/// the offset (Cristian's method: off by at most half that round trip). Each wait is bounded by
/// the timeout (RankTimeout).
std::vector<double> clock_offsets(const MpiSession& session, double timeout_seconds,
                                  int rounds = 16);

/// Rank 0's `text` on every rank (others pass anything): its length, then its bytes, each
/// broadcast waited for until the timeout (RankTimeout naming `what`). For what rank 0 decides
/// alone and the others must run alike (`--plan auto`'s candidate plans, which one is kept).
std::string broadcast_text(const MpiSession& session, const std::string& text,
                           double timeout_seconds, const std::string& what);

/// Figures one rank reports to rank 0 after its runs (fixed size and plain, so one gather of
/// bytes moves them).
struct RankFigures {
  double tasks = 0;
  double weight_bytes = 0;
  double bytes_sent = 0;
  double bytes_received = 0;
  double messages_sent = 0;
  double messages_received = 0;
  double peak_activation_bytes = 0;
  double peak_rss_bytes = 0;
  double traced_seconds = 0;
  double released_weight_bytes = 0;
  double threads = 0;
  double host_other_runnable = -1;      ///< Threads of other processes seen; -1: not sampled.
  double concat_inputs_in_place = 0;    ///< Of this rank's own tasks (MpiExecutor).
  double emulated_speed = 1;            ///< CLEAVE_EMULATED_SPEEDS's entry for the rank.
  double emulated_pause_seconds = 0;    ///< Per run of the executor.
  double values_received_in_place = 0;  ///< Per run: into a Concat's output (MpiExecutor).
  double received_bytes_copied = 0;     ///< Per run: received values a Concat copied.
  char host[64] = {};
};

/// Every rank's figures, by rank, on rank 0 (other ranks get a vector they should not read).
std::vector<RankFigures> gather_figures(const MpiSession& session, const RankFigures& mine,
                                        double timeout_seconds);

/// The intra-op threads a rank runs with, and the load they were chosen from.
struct RankThreads {
  int threads = 1;
  HostLoad host_load;
  bool sampled = false;  ///< False when nothing was sampled (fixed, or one thread asked for).
};

/// `requested` threads when `fixed`; else the host's load sampled now (sample_lasting_host_load)
/// and rank_threads_for it and the job's ranks on this host. One thread is never sampled for.
RankThreads choose_rank_threads(int requested, bool fixed, int ranks_on_host);

/// The report's line when rank 0 runs fewer threads than asked: why, and how to keep them.
std::string rank_threads_line(const RankThreads& chosen, int requested, int ranks_on_host);

}  // namespace cleave
