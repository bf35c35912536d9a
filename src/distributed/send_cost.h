// cleave's own cost per message sent between ranks, measured on its hand-off (the link model's).
#pragma once

#include <cstdint>
#include <vector>

namespace cleave {

class MpiSession;  // distributed/mpi_session.h: this header stays free of <mpi.h> for the CLI

/// What measure_send_cost runs: rank 0 publishes `messages` small values (each `elements`
/// floats) to rank 1 through MpiHandOff, per round, `rounds` rounds.
struct SendCostProbe {
  int messages = 16;
  int rounds = 21;
  int64_t elements = 16;
};

/// Rank 0's seconds per message sent: each round's median of its publish() calls (header,
/// derived datatype, MPI_Isend, the test of earlier sends: the path every task with a reader
/// on another rank takes), then the median over the rounds; `per_round` gets the rounds'
/// medians. Rank 1 receives as a rank does (await). Needs two ranks or more (ranks past 1
/// only take part in the barriers); throws Error on one. Other ranks return 0.
double measure_send_cost(const MpiSession& mpi, const SendCostProbe& probe,
                         std::vector<double>* per_round = nullptr);

/// `cleave info --send-cost` under mpirun: rank 0 prints the figure (text: "send_us X", the
/// line link_machine.py reads beside pingpong.c's; with `json`, {"send_seconds", "per_round"}).
int print_send_cost(bool json);

}  // namespace cleave
