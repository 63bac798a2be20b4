/* Ping-pong latency between the rank pairs (0,1), (2,3), ... all at once (OSU methodology:
 * warm-up round trips are discarded); with an odd number of ranks the last one idles. The
 * clock is read once per round trip, back to back, as `weft bench p2p --test latency` does
 * with the Rust API, so the two are comparable and their difference at 8 B is the cost of the
 * MPI layer. Output: the median (P50) and mean of the one-way latency (half a round trip)
 * per size, of the slowest pair (as weft bench p2p reports). Every rank checks the bytes it
 * received.
 *
 * Round trips run in chunks of CHUNK; between chunks the pair leader tells its partner
 * whether to go on (that exchange is not timed), so a size stops early once BUDGET_MS have
 * passed and 1000 round trips are timed: oversubscribed busy-polling libraries take
 * milliseconds per round trip, and the budget keeps the run bounded for them.
 * Standard MPI only: every MPI library runs the same code.
 *
 * Usage: pingpong [-m] [-i ITERS] [-t BUDGET_MS] [SIZES...]
 *   -m         initialise with MPI_Init_thread(MPI_THREAD_MULTIPLE) instead of MPI_Init (what
 *              thread safety costs a single-threaded program); the level provided is printed
 *   SIZES      bytes, with K/M suffixes (default 8)
 *   ITERS      most timed round trips per size (default 10000 up to 8 KiB, 1000 above, as
 *              weft bench p2p); a tenth more are run first as warm-up
 *   BUDGET_MS  default 2000 */
#include "bench_util.h"

static const char *USAGE = "pingpong [-m] [-i ITERS] [-t BUDGET_MS] [SIZES...]";
enum { CHUNK = 1000, MIN_ITERS = 1000, TAG_DATA = 1, TAG_GO = 2 };

/* One round trip; the leader sends first. */
static void round_trip(int leader, int peer, unsigned char *sbuf, unsigned char *rbuf, int n) {
  if (leader) {
    MPI_Send(sbuf, n, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD);
    MPI_Recv(rbuf, n, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else {
    MPI_Recv(rbuf, n, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Send(sbuf, n, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD);
  }
}

int main(int argc, char **argv) {
  int multiple = 0, provided = MPI_THREAD_SINGLE;
  for (int a = 1; a < argc; a++)
    if (strcmp(argv[a], "-m") == 0) multiple = 1;
  if (multiple)
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  else
    MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  long sizes[32];
  int nsizes = 0;
  long iters_arg = 0;
  double budget_s = 2.0;
  for (int a = 1; a < argc; a++) {
    if (strcmp(argv[a], "-m") == 0) {
      continue;
    } else if (strcmp(argv[a], "-i") == 0 && a + 1 < argc) {
      iters_arg = atol(argv[++a]);
      if (iters_arg <= 0) bench_usage_error(rank, "pingpong", "-i: expected a positive count", USAGE);
    } else if (strcmp(argv[a], "-t") == 0 && a + 1 < argc) {
      long ms = atol(argv[++a]);
      if (ms <= 0) bench_usage_error(rank, "pingpong", "-t: expected positive milliseconds", USAGE);
      budget_s = (double)ms / 1e3;
    } else {
      long n = bench_parse_bytes(argv[a]);
      if (n < 0 || n > (1L << 30)) bench_usage_error(rank, "pingpong", "bad size (bytes, K/M suffix, at most 1G)", USAGE);
      if (nsizes == 32) bench_usage_error(rank, "pingpong", "at most 32 sizes", USAGE);
      sizes[nsizes++] = n;
    }
  }
  if (nsizes == 0) sizes[nsizes++] = 8;
  if (size < 2) bench_usage_error(rank, "pingpong", "needs at least 2 ranks", USAGE);
  long maxn = 1;
  for (int k = 0; k < nsizes; k++) maxn = sizes[k] > maxn ? sizes[k] : maxn;
  unsigned char *sbuf = malloc((size_t)maxn), *rbuf = malloc((size_t)maxn);
  long max_iters = iters_arg ? iters_arg : 10000;
  double *one_way = malloc(sizeof(double) * (size_t)max_iters);
  if (!sbuf || !rbuf || !one_way) MPI_Abort(MPI_COMM_WORLD, 3);
  int bad = 0;
  if (rank == 0 && multiple)
    printf("# thread level provided: %s\n", provided == MPI_THREAD_MULTIPLE ? "multiple" : "lower");
  if (rank == 0) printf("%10s %12s %12s\n", "bytes", "p50_us", "avg_us");
  for (int k = 0; k < nsizes; k++) {
    int n = (int)sizes[k];
    long iters = iters_arg ? iters_arg : n <= 8192 ? 10000 : 1000;
    long warm = iters / 10 > 1 ? iters / 10 : 1;
    int peer = rank ^ 1, active = peer < size, leader = rank % 2 == 0;
    for (long i = 0; i < n; i++) sbuf[i] = bench_pattern(rank, peer, i);
    memset(rbuf, 0, (size_t)n);
    MPI_Barrier(MPI_COMM_WORLD);
    double mine[2] = {0, 0}, slowest[2];
    if (active) {
      for (long i = 0; i < warm; i++) round_trip(leader, peer, sbuf, rbuf, n);
      long done = 0;
      double start = MPI_Wtime(), timed = 0;
      int go = 1;
      while (go) {
        long chunk = iters - done < CHUNK ? iters - done : CHUNK;
        double prev = MPI_Wtime(), first = prev;
        for (long i = 0; i < chunk; i++) {
          round_trip(leader, peer, sbuf, rbuf, n);
          double now = MPI_Wtime();
          one_way[done++] = (now - prev) * 1e6 / 2.0;
          prev = now;
        }
        timed += prev - first;
        /* The leader decides; the partner follows, so both stop after the same chunk. */
        if (leader) {
          go = done < iters && (done < MIN_ITERS || MPI_Wtime() - start < budget_s);
          MPI_Send(&go, 1, MPI_INT, peer, TAG_GO, MPI_COMM_WORLD);
        } else {
          MPI_Recv(&go, 1, MPI_INT, peer, TAG_GO, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
      }
      for (long i = 0; i < n; i++) bad += rbuf[i] != bench_pattern(peer, rank, i);
      mine[0] = bench_median(one_way, (int)done);
      mine[1] = timed * 1e6 / 2.0 / (double)done;
    }
    MPI_Reduce(mine, slowest, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("%10d %12.3f %12.3f\n", n, slowest[0], slowest[1]);
    fflush(stdout);
  }
  int bad_all = 0;
  MPI_Allreduce(&bad, &bad_all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0 && bad_all) fprintf(stderr, "pingpong: %d received bytes were wrong\n", bad_all);
  free(sbuf);
  free(rbuf);
  free(one_way);
  MPI_Finalize();
  return bad_all ? 1 : 0;
}
