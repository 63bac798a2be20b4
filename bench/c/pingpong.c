/* Ping-pong latency between ranks 0 and 1 (OSU methodology: warm-up, then timed round
 * trips). Every round trip is timed on its own, so the output has the median (P50) and the
 * mean of the one-way latency (half a round trip), the same statistics as
 * `weft bench p2p --test latency`. Standard MPI only: every MPI library runs the same code.
 * Usage: pingpong [max_bytes] [iters]   (sizes 0, 1, 2, 4, ... max_bytes) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  long max = argc > 1 ? atol(argv[1]) : 1 << 20;
  int iters = argc > 2 ? atoi(argv[2]) : 10000;
  if (size < 2) {
    if (rank == 0) fprintf(stderr, "pingpong needs 2 ranks\n");
    MPI_Finalize();
    return 1;
  }
  char *buf = malloc(max > 0 ? max : 1);
  double *lat = malloc(sizeof(double) * iters);
  memset(buf, 1, max > 0 ? max : 1);
  if (rank == 0) printf("%10s %12s %12s\n", "bytes", "p50_us", "avg_us");
  for (long n = 0; n <= max; n = n ? n * 2 : 1) {
    int it = n > 8192 ? (iters / 10 > 10 ? iters / 10 : 10) : iters;
    int warm = it / 10 + 1;
    double sum = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = -warm; i < it; i++) {
      double t0 = MPI_Wtime();
      if (rank == 0) {
        MPI_Send(buf, (int)n, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
        MPI_Recv(buf, (int)n, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else if (rank == 1) {
        MPI_Recv(buf, (int)n, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(buf, (int)n, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
      }
      if (i >= 0) {
        lat[i] = (MPI_Wtime() - t0) * 1e6 / 2.0;
        sum += lat[i];
      }
    }
    qsort(lat, it, sizeof lat[0], cmp);
    if (rank == 0) printf("%10ld %12.3f %12.3f\n", n, lat[it / 2], sum / it);
    if (n == max) break;
  }
  free(buf);
  free(lat);
  MPI_Finalize();
  return 0;
}
