/* Windowed bandwidth from each even rank to the next odd one, pairs (0,1), (2,3), ... all at
 * once (OSU methodology): a window of 64 nonblocking sends (each from its own slice of the
 * send buffer into its own slice of the receive buffer) answered by a 4-byte
 * acknowledgement. Each sender times every window on its own; the output has, for the
 * slowest pair, the median (P50) of the per-window bandwidth and the bandwidth of all windows
 * together, in MB/s (10^6 bytes). Receivers check the bytes of the last window.
 * Standard MPI only: every MPI library runs the same code.
 *
 * Usage: bandwidth [-i WINDOWS] [SIZES...]
 *   SIZES    bytes per message, with K/M suffixes (default 8 64K 1M 4M)
 *   WINDOWS  timed windows per size (default 200 up to 8 KiB, 50 up to 256 KiB, 20 above);
 *            a tenth more (at least 2) are run first as warm-up. */
#include "bench_util.h"
#include <float.h>

enum { WINDOW = 64 };
static const char *USAGE = "bandwidth [-i WINDOWS] [SIZES...]";

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  long sizes[32] = {8, 65536, 1048576, 4194304};
  int nsizes = 0;
  long windows_arg = 0;
  for (int a = 1; a < argc; a++) {
    if (strcmp(argv[a], "-i") == 0 && a + 1 < argc) {
      windows_arg = atol(argv[++a]);
      if (windows_arg <= 0) bench_usage_error(rank, "bandwidth", "-i: expected a positive count", USAGE);
    } else {
      long n = bench_parse_bytes(argv[a]);
      if (n <= 0 || n > (16L << 20)) bench_usage_error(rank, "bandwidth", "bad size (1 B to 16M, K/M suffix)", USAGE);
      if (nsizes == 32) bench_usage_error(rank, "bandwidth", "at most 32 sizes", USAGE);
      sizes[nsizes++] = n;
    }
  }
  if (nsizes == 0) nsizes = 4;
  if (size < 2) bench_usage_error(rank, "bandwidth", "needs at least 2 ranks", USAGE);
  long maxn = 1;
  for (int k = 0; k < nsizes; k++) maxn = sizes[k] > maxn ? sizes[k] : maxn;
  unsigned char *buf = malloc((size_t)maxn * WINDOW);
  if (!buf) MPI_Abort(MPI_COMM_WORLD, 3);
  long max_windows = windows_arg ? windows_arg : 200;
  double *mbps = malloc(sizeof(double) * (size_t)max_windows);
  if (!mbps) MPI_Abort(MPI_COMM_WORLD, 3);
  MPI_Request req[WINDOW];
  int bad = 0;
  if (rank == 0) printf("%10s %14s %14s\n", "bytes", "p50_MB_per_s", "all_MB_per_s");
  for (int k = 0; k < nsizes; k++) {
    long n = sizes[k];
    long windows = windows_arg ? windows_arg : n <= 8192 ? 200 : n <= 262144 ? 50 : 20;
    long warm = windows / 10 > 2 ? windows / 10 : 2;
    int peer = rank ^ 1, active = peer < size, sender = rank % 2 == 0;
    if (sender)
      for (long i = 0; i < n * WINDOW; i++) buf[i] = bench_pattern(rank, peer, i);
    else
      memset(buf, 0, (size_t)(n * WINDOW));
    int ack = 0;
    double t_all = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    for (long l = -warm; active && l < windows; l++) {
      double t0 = MPI_Wtime();
      for (int i = 0; i < WINDOW; i++) {
        if (sender)
          MPI_Isend(buf + i * n, (int)n, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &req[i]);
        else
          MPI_Irecv(buf + i * n, (int)n, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &req[i]);
      }
      MPI_Waitall(WINDOW, req, MPI_STATUSES_IGNORE);
      if (sender) MPI_Recv(&ack, 1, MPI_INT, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      else MPI_Send(&ack, 1, MPI_INT, peer, 2, MPI_COMM_WORLD);
      double t = MPI_Wtime() - t0;
      if (l >= 0) {
        mbps[l] = (double)n * WINDOW / t / 1e6;
        t_all += t;
      }
    }
    if (active && !sender)
      for (long i = 0; i < n * WINDOW; i++) bad += buf[i] != bench_pattern(peer, rank, i);
    /* Receivers and an idle odd-out rank report no bandwidth: the minimum skips them. */
    double mine[2] = {DBL_MAX, DBL_MAX}, slowest[2];
    if (active && sender) {
      mine[0] = bench_median(mbps, (int)windows);
      mine[1] = (double)n * WINDOW * (double)windows / t_all / 1e6;
    }
    MPI_Reduce(mine, slowest, 2, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("%10ld %14.3f %14.3f\n", n, slowest[0], slowest[1]);
    fflush(stdout);
  }
  int bad_all = 0;
  MPI_Allreduce(&bad, &bad_all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0 && bad_all) fprintf(stderr, "bandwidth: %d received bytes were wrong\n", bad_all);
  free(buf);
  free(mbps);
  MPI_Finalize();
  return bad_all ? 1 : 0;
}
