/* MPI ping-pong between ranks 0 and 1: the link model's latency and bandwidth, measured.
   Build: mpicc -O2 pingpong.c -o pingpong; run under mpirun -np 2 (or emulated_cluster.sh).
   Prints one line per message size: bytes, round trip in us (median of the repeats), and the
   one-way bandwidth in bytes/s; then a fit of one-way time = latency + bytes / bandwidth; then
   the round trip of 8 bytes to a receiver that waits as cleave's ranks wait for a message
   (src/distributed/mpi_session.cc, wait_until: 2,000 polls, then sleeps growing by 10 us to
   200 us) while the sender computes for 5 ms first: a waiting rank's wake-up, which the
   spinning ping-pong above never pays. Last, the CPU of a wait that sleeps at once, as a rank
   under a CPU quota waits (the link model's wake_seconds): rank 1 waits so for 8 bytes that
   rank 0 sends after computing 5 ms, 21 times; its CPU over the wait, per poll of the backoff's
   nominal schedule for the wait's length (src/support/wait_backoff.h: the timer's slack, which
   makes each sleep longer and the polls fewer, is in the figure). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Waits for `request` as a cleave rank waits: `spin_polls` polls, then sleeps growing by 10 us
   to 200 us between polls. */
static void wait_as_a_rank_waits(MPI_Request* request, int spin_polls) {
  long pause_us = 0;
  for (int polls = 0;; ++polls) {
    int done = 0;
    MPI_Test(request, &done, MPI_STATUS_IGNORE);
    if (done) return;
    if (polls >= spin_polls) {
      pause_us = pause_us + 10 < 200 ? pause_us + 10 : 200;
      struct timespec pause = {0, pause_us * 1000};
      nanosleep(&pause, NULL);
    }
  }
}

/* Receives `bytes` from `from` as a cleave rank without a quota waits for a message. */
static void receive_as_a_rank_waits(char* buffer, long bytes, int from) {
  MPI_Request request;
  MPI_Irecv(buffer, (int)bytes, MPI_BYTE, from, 1, MPI_COMM_WORLD, &request);
  wait_as_a_rank_waits(&request, 2000);
}

/* Polls of a sleeping wait of `seconds` on the backoff's nominal pauses (wait_backoff.h's
   sleeping_wait_polls). */
static double nominal_polls(double seconds) {
  double polls = 1, slept = 0;
  for (long pause_us = 10; slept < seconds; pause_us = pause_us + 10 < 200 ? pause_us + 10 : 200) {
    slept += pause_us * 1e-6;
    ++polls;
  }
  return polls;
}

static double cpu_seconds(void) {
  struct timespec now;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return now.tv_sec + now.tv_nsec * 1e-9;
}

static int compare(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const int repeats = 21;
  const long sizes[] = {8, 1024, 16384, 131072, 1048576, 4194304};
  const int count = sizeof sizes / sizeof sizes[0];
  char* buffer = calloc(sizes[count - 1], 1);
  double one_way[16];
  for (int s = 0; s < count; ++s) {
    double times[64];
    for (int i = 0; i < repeats; ++i) {
      MPI_Barrier(MPI_COMM_WORLD);
      double start = MPI_Wtime();
      if (rank == 0) {
        MPI_Send(buffer, (int)sizes[s], MPI_BYTE, 1, 0, MPI_COMM_WORLD);
        MPI_Recv(buffer, (int)sizes[s], MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else if (rank == 1) {
        MPI_Recv(buffer, (int)sizes[s], MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(buffer, (int)sizes[s], MPI_BYTE, 0, 0, MPI_COMM_WORLD);
      }
      times[i] = MPI_Wtime() - start;
    }
    qsort(times, repeats, sizeof times[0], compare);
    one_way[s] = times[repeats / 2] / 2;
    if (rank == 0)
      printf("bytes %ld round_trip_us %.1f bandwidth_Bps %.3e\n", sizes[s], times[repeats / 2] * 1e6,
             sizes[s] / one_way[s]);
  }
  {
    double times[64];
    for (int i = 0; i < repeats; ++i) {
      MPI_Barrier(MPI_COMM_WORLD);
      double start = 0;
      if (rank == 0) {
        /* Computing while rank 1 waits long enough to sleep between its polls. */
        for (double until = MPI_Wtime() + 5e-3; MPI_Wtime() < until;) {
        }
        start = MPI_Wtime();
        MPI_Send(buffer, 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
        MPI_Recv(buffer, 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        times[i] = MPI_Wtime() - start;
      } else if (rank == 1) {
        receive_as_a_rank_waits(buffer, 8, 0);
        MPI_Send(buffer, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
      }
    }
    if (rank == 0) {
      qsort(times, repeats, sizeof times[0], compare);
      printf("waiting_receiver bytes 8 round_trip_us %.1f\n", times[repeats / 2] * 1e6);
    }
  }
  {
    double cpu_per_poll[64];
    for (int i = 0; i < repeats; ++i) {
      MPI_Barrier(MPI_COMM_WORLD);
      if (rank == 0) {
        for (double until = MPI_Wtime() + 5e-3; MPI_Wtime() < until;) {
        }
        MPI_Send(buffer, 8, MPI_BYTE, 1, 2, MPI_COMM_WORLD);
      } else if (rank == 1) {
        MPI_Request request;
        MPI_Irecv(buffer, 8, MPI_BYTE, 0, 2, MPI_COMM_WORLD, &request);
        const double wall = MPI_Wtime(), cpu = cpu_seconds();
        wait_as_a_rank_waits(&request, 0);
        cpu_per_poll[i] = (cpu_seconds() - cpu) / nominal_polls(MPI_Wtime() - wall);
      }
    }
    if (rank == 1) {
      qsort(cpu_per_poll, repeats, sizeof cpu_per_poll[0], compare);
      MPI_Send(&cpu_per_poll[repeats / 2], 1, MPI_DOUBLE, 0, 3, MPI_COMM_WORLD);
    } else if (rank == 0) {
      double median = 0;
      MPI_Recv(&median, 1, MPI_DOUBLE, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      printf("wake_cpu_us %.2f\n", median * 1e6);
    }
  }
  if (rank == 0) {
    /* Least squares over the sizes. */
    double n = count, sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (int s = 0; s < count; ++s) {
      sx += sizes[s];
      sy += one_way[s];
      sxx += (double)sizes[s] * sizes[s];
      sxy += sizes[s] * one_way[s];
    }
    double slope = (n * sxy - sx * sy) / (n * sxx - sx * sx);
    double intercept = (sy - slope * sx) / n;
    printf("fit latency_us %.1f bandwidth_Bps %.3e\n", intercept * 1e6, 1 / slope);
  }
  free(buffer);
  MPI_Finalize();
  return 0;
}
