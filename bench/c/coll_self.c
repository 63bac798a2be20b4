/* Instructions per collective call, for valgrind's callgrind: on MPI_COMM_SELF (one rank,
 * so no wait whose length depends on timing), 8 B of floats, two phases per collective:
 * N equal calls (the repeated-call path) and N calls alternating 8 and 16 B (every call a
 * shape the last call did not have: selection and plan lookup each time). Each phase is
 * framed by CALLGRIND_ZERO_STATS and CALLGRIND_DUMP_STATS_AT("repeat-NAME" or
 * "alternate-NAME"), so the total of each dump divided by N is the instructions per call.
 * Without valgrind's header the macros are empty and the program only runs the calls.
 * Standard MPI only.
 *
 * Usage: coll_self [N]   (default 10000)
 *   valgrind --tool=callgrind --callgrind-out-file=cg.out ./coll_self   (one dump per phase)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#endif
#endif
#ifndef CALLGRIND_ZERO_STATS
#define CALLGRIND_ZERO_STATS
#define CALLGRIND_DUMP_STATS_AT(name) ((void)(name))
#endif

static float a[64], b[64];
static int cnt[1], dsp[1];

static const char *const names[] = {"barrier",   "bcast",    "reduce", "allreduce",
                                    "gather",    "scatter",  "allgather", "alltoall",
                                    "scan",      "exscan",   "reduce_scatter_block",
                                    "gatherv",   "allgatherv"};
enum { NNAMES = sizeof names / sizeof *names };

static void call(int op, int n) {
  MPI_Comm c = MPI_COMM_SELF;
  cnt[0] = n;
  switch (op) {
  case 0: MPI_Barrier(c); break;
  case 1: MPI_Bcast(a, n, MPI_FLOAT, 0, c); break;
  case 2: MPI_Reduce(a, b, n, MPI_FLOAT, MPI_SUM, 0, c); break;
  case 3: MPI_Allreduce(a, b, n, MPI_FLOAT, MPI_SUM, c); break;
  case 4: MPI_Gather(a, n, MPI_FLOAT, b, n, MPI_FLOAT, 0, c); break;
  case 5: MPI_Scatter(a, n, MPI_FLOAT, b, n, MPI_FLOAT, 0, c); break;
  case 6: MPI_Allgather(a, n, MPI_FLOAT, b, n, MPI_FLOAT, c); break;
  case 7: MPI_Alltoall(a, n, MPI_FLOAT, b, n, MPI_FLOAT, c); break;
  case 8: MPI_Scan(a, b, n, MPI_FLOAT, MPI_SUM, c); break;
  case 9: MPI_Exscan(a, b, n, MPI_FLOAT, MPI_SUM, c); break;
  case 10: MPI_Reduce_scatter_block(a, b, n, MPI_FLOAT, MPI_SUM, c); break;
  case 11: MPI_Gatherv(a, n, MPI_FLOAT, b, cnt, dsp, MPI_FLOAT, 0, c); break;
  default: MPI_Allgatherv(a, n, MPI_FLOAT, b, cnt, dsp, MPI_FLOAT, c); break;
  }
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  long n = argc > 1 ? atol(argv[1]) : 10000;
  if (n <= 0) {
    fprintf(stderr, "usage: coll_self [CALLS]: CALLS must be a positive count\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  for (int i = 0; i < 64; i++) a[i] = (float)i;
  char name[64];
  for (int op = 0; op < NNAMES; op++) {
    for (int i = 0; i < 100; i++) call(op, 2);
    CALLGRIND_ZERO_STATS;
    for (long i = 0; i < n; i++) call(op, 2);
    snprintf(name, sizeof name, "repeat-%s", names[op]);
    CALLGRIND_DUMP_STATS_AT(name);
    for (int i = 0; i < 100; i++) call(op, 2 + (i & 1) * 2);
    CALLGRIND_ZERO_STATS;
    for (long i = 0; i < n; i++) call(op, 2 + (int)(i & 1) * 2);
    snprintf(name, sizeof name, "alternate-%s", names[op]);
    CALLGRIND_DUMP_STATS_AT(name);
  }
  /* The result of the last allreduce-like call is known: a check that the calls ran. */
  MPI_Allreduce(a, b, 4, MPI_FLOAT, MPI_SUM, MPI_COMM_SELF);
  if (b[3] != 3.0f) {
    fprintf(stderr, "coll_self: wrong allreduce result %g\n", (double)b[3]);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  printf("coll_self: %d collectives x 2 phases x %ld calls\n", NNAMES, n);
  MPI_Finalize();
  return 0;
}
