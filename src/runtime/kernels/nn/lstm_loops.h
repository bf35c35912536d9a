// LSTM as one matrix product of the whole input and the recurrence in cleave's own vector loops.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>

#include "runtime/kernel.h"
#include "runtime/kernels/nn/recurrent_dnnl.h"

namespace cleave {

/// Largest batch the loops take: each step's product reads all of R once per pair of batch
/// rows, where a GEMM over every row reads it once; only batch 2 was measured, and larger
/// batches keep to oneDNN's primitive.
inline constexpr int64_t kLstmLoopsMaxBatch = 8;
/// Hidden units a block of the loops holds (one AVX-512 vector, two AVX2 ones).
inline constexpr int64_t kLstmLoopsLanes = 16;
/// Vectors of hidden units a thread of the recurrence takes at least: each step ends in a
/// barrier of the recurrence's threads, which a thread's share of R · H must outweigh.
inline constexpr int64_t kLstmLoopsBlocksPerThread = 4;

/// Threads that share an LSTM's recurrence on an intra-op team of `team`: one per
/// kLstmLoopsBlocksPerThread blocks of kLstmLoopsLanes hidden units, at least 1, at most `team`.
int recurrence_threads(int team, int64_t hidden_blocks);

/// The blocks [first, second) that member `member` of a region of `members` threads computes when
/// `active` of them share the recurrence: the first `active` members split the blocks evenly, the
/// others get none. The region has all of the node's team (one thread or all, as intra_op_team:
/// a region of a size in between makes libgomp end and recreate pool threads), the idle members
/// only meeting at each step's barrier.
std::pair<int64_t, int64_t> recurrence_blocks(int64_t member, int64_t members, int64_t active,
                                              int64_t hidden_blocks);

/// Whether the loops compute an LSTM of these sizes whose attributes and inputs oneDNN's
/// primitive takes (`dnnl_recurrent_blocker` empty): no peepholes, no sequence lengths, a batch
/// of at most kLstmLoopsMaxBatch, and a recurrence that `team` threads share, meeting once a
/// step at barriers they spin at (`team_spins`: an OpenMP spin count above 0; a team that
/// sleeps there is woken at every step). On one thread oneDNN's primitive was faster (1.14x
/// less CPU time on the held-out lstm on an Intel host; 0.50 against 0.61 ms on Zen 5). Pure,
/// for tests.
bool lstm_loops_fit(const RecurrentDims& dims, bool peepholes, bool lengths, int team,
                    bool team_spins);

/// The node on the loops: X · Wᵀ + Wb + Rb for every step and direction in one oneDNN matmul (on
/// the node's intra-op team: the part of the work that does not wait for the previous step),
/// then each step's H · Rᵀ and gates, blocks of 16 hidden units, the units split among
/// recurrence_threads threads of the team. nullptr where lstm_loops_fit (for the calling
/// thread's OpenMP team and spin count, spin_count_in_effect) or dnnl_recurrent_blocker rule it
/// out.
std::unique_ptr<Kernel> create_lstm_loops(const KernelContext& context, const RecurrentDims& dims);

}  // namespace cleave
