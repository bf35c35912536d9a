// The MILP's bound from a shared link: every message between tasks crosses the one medium in turn.
#pragma once

#include <vector>

#include "plan/schedule/milp_problem.h"
#include "plan/schedule/milp_program.h"

namespace cleave::milp_detail {

// On a shared link (Machine::queues_on_one_link), a lower bound on the simulator's makespan that
// is linear in where each task's messages go. Every message between tasks (one per producer and
// reading device) takes its turn on the medium (SharedMedium) once its producer has computed,
// so the last is across no earlier than the first producer can have computed plus every
// message's time on the medium, less the burst; it is there a latency later, and its reader then
// runs for at least the least time and tail of any reading task. A message is priced at its
// producer's smallest value over the fastest link into its device, so the bound holds whatever
// the sender. `seconds` is empty without a shared link.
struct MediumBound {
  std::vector<std::vector<double>> seconds;  // [task][device]: its message there, on the medium
  double base = 0;  // the first producer computed, and the least reading task's time and tail
  double once = 0;  // the latency, less the burst's head start (where any message crosses)
};

MediumBound medium_bound(const Problem& problem, const HeadsAndTails& bounds);

// The bound for one assignment of tasks to devices; 0 where no message crosses.
double medium_makespan(const Problem& problem, const MediumBound& bound,
                       const std::vector<int>& device);

// Per task and device a reader of it may run on, medium[task][device] >= x[reader][device] -
// x[task][device] (continuous), `any` >= each, and C >= base + once * any + the sum of
// seconds * medium.
void add_medium_rows(Program& program, const Problem& problem, const MediumBound& bound);

}  // namespace cleave::milp_detail
