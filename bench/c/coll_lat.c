/* Collective latency, OSU methodology: for each collective and message size, warm-up
 * calls, then timed calls separated by nothing; the latency of one call is the maximum over
 * ranks of its time, and the output has the median (P50) over calls. Standard MPI only.
 * Usage: coll_lat [sizes...] (bytes per rank; default 8 65536 1048576) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

enum { BARRIER, BCAST, REDUCE, ALLREDUCE, GATHER, SCATTER, ALLGATHER, ALLTOALL, RSB, SCAN, NCOLL };
static const char *names[NCOLL] = {"barrier", "bcast", "reduce", "allreduce", "gather",
                                   "scatter", "allgather", "alltoall", "reduce_scatter_block",
                                   "scan"};

static void run(int c, char *s, char *r, int n, int size) {
  MPI_Comm w = MPI_COMM_WORLD;
  int ints = n / 4 > 0 ? n / 4 : 1;
  switch (c) {
    case BARRIER: MPI_Barrier(w); break;
    case BCAST: MPI_Bcast(s, n, MPI_BYTE, 0, w); break;
    case REDUCE: MPI_Reduce(s, r, ints, MPI_INT, MPI_SUM, 0, w); break;
    case ALLREDUCE: MPI_Allreduce(s, r, ints, MPI_INT, MPI_SUM, w); break;
    case GATHER: MPI_Gather(s, n, MPI_BYTE, r, n, MPI_BYTE, 0, w); break;
    case SCATTER: MPI_Scatter(s, n, MPI_BYTE, r, n, MPI_BYTE, 0, w); break;
    case ALLGATHER: MPI_Allgather(s, n, MPI_BYTE, r, n, MPI_BYTE, w); break;
    case ALLTOALL: MPI_Alltoall(s, n / size > 0 ? n / size : 1, MPI_BYTE, r, n / size > 0 ? n / size : 1, MPI_BYTE, w); break;
    case RSB: MPI_Reduce_scatter_block(s, r, ints / size > 0 ? ints / size : 1, MPI_INT, MPI_SUM, w); break;
    case SCAN: MPI_Scan(s, r, ints, MPI_INT, MPI_SUM, w); break;
  }
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  long sizes[16] = {8, 65536, 1048576};
  int nsizes = 3;
  if (argc > 1) {
    nsizes = 0;
    for (int i = 1; i < argc && nsizes < 16; i++) sizes[nsizes++] = atol(argv[i]);
  }
  long maxn = 0;
  for (int i = 0; i < nsizes; i++) maxn = sizes[i] > maxn ? sizes[i] : maxn;
  /* Room for size blocks of the largest size on both sides. */
  char *s = malloc((size_t)maxn * size + 64), *r = malloc((size_t)maxn * size + 64);
  memset(s, 1, (size_t)maxn * size + 64);
  memset(r, 0, (size_t)maxn * size + 64);
  if (rank == 0) printf("%-22s %10s %12s\n", "collective", "bytes", "p50_us");
  for (int c = 0; c < NCOLL; c++) {
    for (int k = 0; k < nsizes; k++) {
      int n = (int)sizes[k];
      if (c == BARRIER && k > 0) break;
      int iters = n >= 1 << 20 ? 50 : n >= 1 << 16 ? 200 : 2000;
      double *lat = malloc(sizeof(double) * iters);
      for (int i = 0; i < iters / 10 + 2; i++) run(c, s, r, n, size);
      for (int i = 0; i < iters; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        run(c, s, r, n, size);
        double t = (MPI_Wtime() - t0) * 1e6, tmax;
        MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        lat[i] = tmax;
      }
      if (rank == 0) {
        qsort(lat, iters, sizeof(double), cmp);
        printf("%-22s %10d %12.3f\n", names[c], c == BARRIER ? 0 : n, lat[iters / 2]);
      }
      free(lat);
    }
  }
  free(s);
  free(r);
  MPI_Finalize();
  return 0;
}
