// Test hook that makes one rank fail on purpose: killed, stopped, or sending a wrong message.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "distributed/message.h"

namespace cleave {

/// Read from CLEAVE_FAULT="rank=R,run=K,task=T,action=A[,message=M]" (tests and the fault
/// demos only): on rank R, before its T-th task of run K, action kill raises SIGKILL and stop
/// SIGSTOP; from run K on, the first message the rank sends (with message=M, the M-th after
/// it, counted from 0 over every call of the executor: one that a later call sends, when a
/// Concat's input is received in place) gets the wrong type (bad-dtype), the wrong
/// shape (bad-shape) or loses its last element (short); bad-split: the split recipes of
/// `--plan auto` reach rank R naming a layer its model lacks. A malformed variable is an Error.
struct FaultInjection {
  int rank = -1;  ///< -1: no fault.
  int64_t run = 0;
  int task = 0;
  std::string action;
  int64_t message = 0;  ///< Messages of run >= `run` sent intact before the corrupted one.
  bool corrupted = false;

  static FaultInjection from_environment(int this_rank);
  void before_task(int64_t current_run, int slot) const;
  /// Alters the header (and the bytes to send) of the first message of run >= `run`.
  void corrupt(MessageHeader& header, std::size_t& payload_bytes);
  /// Whether this rank is to receive split recipes it cannot rebuild (action bad-split).
  bool breaks_split() const { return rank >= 0 && action == "bad-split"; }
};

}  // namespace cleave
