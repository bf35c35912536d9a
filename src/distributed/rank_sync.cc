// What every rank does together: agreeing to start, bounded barriers, memory and hashes.
#include "distributed/rank_sync.h"

#include <fmt/core.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <vector>

#include "ir/graph.h"

namespace cleave {

using Clock = std::chrono::steady_clock;

namespace {

// What each rank says before any work starts.
struct Readiness {
  int32_t ok = 0;
  int32_t pad = 0;
  uint64_t hash = 0;
  char message[496] = {};
};

}  // namespace

// FNV-1a: ranks compare what they loaded without sending it.
uint64_t hash_text(const std::string& text, uint64_t hash) {
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

std::chrono::steady_clock::time_point deadline_after(double seconds) {
  return Clock::now() +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

// Every rank learns whether every other could start, and that all loaded the same model and
// plan; the first failing rank's reason is every rank's error.
void agree_to_start(const MpiSession& session, const std::string& failure, uint64_t hash,
                    double timeout_seconds) {
  Readiness mine;
  mine.ok = failure.empty() ? 1 : 0;
  mine.hash = hash;
  std::strncpy(mine.message, failure.c_str(), sizeof mine.message - 1);
  std::vector<Readiness> all(static_cast<std::size_t>(session.size()));
  MPI_Request request = MPI_REQUEST_NULL;
  int code = MPI_Iallgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE,
                            session.comm(), &request);
  if (code != MPI_SUCCESS) throw Error("MPI_Iallgather failed: " + mpi_error_text(code));
  try {
    wait_until(
        request, deadline_after(timeout_seconds),
        [] { return std::string("every rank to load the model and the plan"); }, timeout_seconds);
  } catch (const RankTimeout& timeout) {
    abort_ranks(session.comm(), session.rank(), timeout.what());
  }
  for (int rank = 0; rank < session.size(); ++rank) {
    const Readiness& other = all[static_cast<std::size_t>(rank)];
    if (!other.ok) {
      const std::string reason(other.message, strnlen(other.message, sizeof other.message));
      if (rank == session.rank())
        throw Error(fmt::format("rank {} refused to start: {}", rank, reason));
      throw Error(fmt::format("rank {} refused to start, so rank {} stops too: {}", rank,
                              session.rank(), reason));
    }
  }
  for (int rank = 0; rank < session.size(); ++rank) {
    if (all[static_cast<std::size_t>(rank)].hash != all[0].hash) {
      throw Error(
          fmt::format("rank {} loaded another model or plan than rank 0 (the files "
                      "differ between the machines); refused on every rank",
                      rank));
    }
  }
}

void barrier(const MpiSession& session, double timeout_seconds, const std::string& what) {
  MPI_Request request = MPI_REQUEST_NULL;
  int code = MPI_Ibarrier(session.comm(), &request);
  if (code != MPI_SUCCESS) throw Error("MPI_Ibarrier failed: " + mpi_error_text(code));
  wait_until(
      request, deadline_after(timeout_seconds), [&] { return what; }, timeout_seconds);
}

std::vector<double> clock_offsets(const MpiSession& session, double timeout_seconds, int rounds) {
  // Ranks on one host read one steady clock (the kernel's CLOCK_MONOTONIC): their offset is 0,
  // and a round trip could only add its error to it.
  constexpr std::size_t kHost = 64;
  char mine[kHost] = {};
  std::strncpy(mine, session.host().c_str(), kHost - 1);
  std::vector<char> hosts(kHost * static_cast<std::size_t>(session.size()));
  const auto deadline = deadline_after(timeout_seconds);
  MPI_Request request = MPI_REQUEST_NULL;
  const auto post = [](int code, const char* call) {
    if (code != MPI_SUCCESS) throw Error(fmt::format("{} failed: {}", call, mpi_error_text(code)));
  };
  post(MPI_Iallgather(mine, kHost, MPI_CHAR, hosts.data(), kHost, MPI_CHAR, session.comm(),
                      &request),
       "MPI_Iallgather");
  wait_until(
      request, deadline, [] { return std::string("every rank's host name"); }, timeout_seconds);
  const auto on_rank0_host = [&](int rank) {
    return std::strncmp(hosts.data(), hosts.data() + kHost * static_cast<std::size_t>(rank),
                        kHost) == 0;
  };
  // A tag no hand-off channel uses (channels are numbered from 0; MPI_TAG_UB is at least 32767).
  constexpr int kTag = 32001;
  const auto now = [] {
    return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
  };
  // Spins: wait_until's sleeps would lengthen the round trip, and the offset's error with it.
  const auto finish = [&](MPI_Request& pending, int peer) {
    for (int done = 0;;) {
      post(MPI_Test(&pending, &done, MPI_STATUS_IGNORE), "MPI_Test");
      if (done) return;
      if (Clock::now() > deadline) {
        throw RankTimeout(fmt::format("waited more than {} s for a clock reading from rank {}",
                                      timeout_seconds, peer));
      }
    }
  };
  std::vector<double> offsets;
  if (session.rank() != 0) {
    if (on_rank0_host(session.rank())) return offsets;
    for (int round = 0; round < rounds; ++round) {
      double ping = 0;
      post(MPI_Irecv(&ping, 1, MPI_DOUBLE, 0, kTag, session.comm(), &request), "MPI_Irecv");
      finish(request, 0);
      double reading = now();
      post(MPI_Isend(&reading, 1, MPI_DOUBLE, 0, kTag, session.comm(), &request), "MPI_Isend");
      finish(request, 0);
    }
    return offsets;
  }
  offsets.assign(static_cast<std::size_t>(session.size()), 0.0);
  for (int peer = 1; peer < session.size(); ++peer) {
    if (on_rank0_host(peer)) continue;
    double fastest = std::numeric_limits<double>::infinity();
    for (int round = 0; round < rounds; ++round) {
      double ping = 0, reading = 0;
      MPI_Request answer = MPI_REQUEST_NULL;
      post(MPI_Irecv(&reading, 1, MPI_DOUBLE, peer, kTag, session.comm(), &answer), "MPI_Irecv");
      const double sent = now();
      post(MPI_Isend(&ping, 1, MPI_DOUBLE, peer, kTag, session.comm(), &request), "MPI_Isend");
      finish(request, peer);
      finish(answer, peer);
      const double back = now();
      if (back - sent < fastest) {
        fastest = back - sent;
        offsets[static_cast<std::size_t>(peer)] = reading - (sent + back) / 2;
      }
    }
  }
  return offsets;
}

std::string broadcast_text(const MpiSession& session, const std::string& text,
                           double timeout_seconds, const std::string& what) {
  const auto deadline = deadline_after(timeout_seconds);
  const auto describe = [&] { return what; };
  uint64_t length = session.rank() == 0 ? text.size() : 0;
  MPI_Request request = MPI_REQUEST_NULL;
  int code = MPI_Ibcast(&length, 1, MPI_UINT64_T, 0, session.comm(), &request);
  if (code != MPI_SUCCESS) throw Error("MPI_Ibcast failed: " + mpi_error_text(code));
  wait_until(request, deadline, describe, timeout_seconds);
  std::string received = session.rank() == 0 ? text : std::string(length, '\0');
  // MPI counts in int: a longer text goes in pieces.
  constexpr uint64_t kPiece = uint64_t{1} << 30;
  for (uint64_t at = 0; at < length; at += kPiece) {
    const int count = static_cast<int>(std::min(kPiece, length - at));
    code = MPI_Ibcast(received.data() + at, count, MPI_CHAR, 0, session.comm(), &request);
    if (code != MPI_SUCCESS) throw Error("MPI_Ibcast failed: " + mpi_error_text(code));
    wait_until(request, deadline, describe, timeout_seconds);
  }
  return received;
}

std::vector<RankFigures> gather_figures(const MpiSession& session, const RankFigures& mine,
                                        double timeout_seconds) {
  std::vector<RankFigures> all(static_cast<std::size_t>(session.size()));
  MPI_Request request = MPI_REQUEST_NULL;
  int code = MPI_Igather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, 0,
                         session.comm(), &request);
  if (code != MPI_SUCCESS) throw Error("MPI_Igather failed: " + mpi_error_text(code));
  wait_until(
      request, deadline_after(timeout_seconds), [] { return std::string("every rank's figures"); },
      timeout_seconds);
  return all;
}

bool agree_to_start_or_say_why(const MpiSession& session, const std::string& failure, uint64_t hash,
                               double timeout_seconds) {
  try {
    agree_to_start(session, failure, hash, timeout_seconds);
    return true;
  } catch (const Error& refusal) {
    fmt::print(stderr, "cleave: error: {}\n", refusal.what());
    std::fflush(stderr);
    return false;
  }
}

bool prepare_on_every_rank(const MpiSession& session, const std::function<uint64_t()>& prepare,
                           double timeout_seconds) {
  std::string failure;
  uint64_t hash = 0;
  try {
    hash = prepare();
  } catch (const std::exception& e) {
    failure = e.what();
    if (failure.empty()) failure = "unknown error";
  }
  return agree_to_start_or_say_why(session, failure, hash, timeout_seconds);
}

RankThreads choose_rank_threads(int requested, bool fixed, int ranks_on_host) {
  RankThreads chosen;
  chosen.threads = std::max(1, requested);
  if (fixed || requested <= 1) return chosen;
  chosen.host_load = sample_lasting_host_load();
  chosen.sampled = true;
  chosen.threads = rank_threads_for(requested, ranks_on_host, chosen.host_load);
  return chosen;
}

std::string rank_threads_line(const RankThreads& chosen, int requested, int ranks_on_host) {
  return fmt::format(
      "threads    {} per rank on rank 0 (asked for {}; {} other runnable thread(s) on {} core(s), "
      "shared by {} rank(s) there; --fixed-threads keeps the count)",
      chosen.threads, requested, chosen.host_load.other_runnable, chosen.host_load.cores,
      ranks_on_host);
}

}  // namespace cleave
