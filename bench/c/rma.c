/* One-sided (MPI-4.1 ch. 12) latency and bandwidth between rank 0 (origin) and rank 1
 * (target) on a window from MPI_Win_allocate; other ranks only take part in the collective
 * synchronisation. Each benchmark has a window of its own (fence and passive-target epochs
 * never mix on one window):
 *   rma_put_fence, rma_get_fence     MPI_Put/MPI_Get of SIZE bytes, then MPI_Win_fence
 *   rma_put_lock, rma_get_lock       the same inside one MPI_Win_lock(SHARED) epoch, then
 *                                    MPI_Win_flush (latency as OSU's osu_put_latency -s lock)
 *   rma_acc_fence, rma_acc_lock      MPI_Accumulate of one MPI_LONG with MPI_SUM
 *   rma_fop_fence, rma_fop_lock      MPI_Fetch_and_op of one MPI_LONG with MPI_SUM (the time
 *                                    per operation: its rate is the inverse)
 * Put and get run at every size of SIZES; a size above 8 KiB is a bandwidth row (name with
 * _bw appended): WINDOW operations to distinct offsets per synchronisation, reported in MB/s
 * (10^6 bytes per second). Accumulate and fetch-and-op move 8 bytes.
 *
 * The clock is read once per iteration (operation(s) + synchronisation), back to back; the
 * output is the median. Iterations run in chunks; after each chunk rank 0 broadcasts whether
 * to go on (not timed), so a benchmark stops once BUDGET_MS have passed and MIN_ITERS were
 * timed (busy-polling libraries oversubscribed take milliseconds per iteration).
 * Every result is checked: the target's window after puts, the origin's buffer after gets,
 * the sum after accumulates and the values fetch-and-op returned; a wrong one fails the run.
 * Standard MPI only: every MPI library runs the same code.
 *
 * Usage: rma [-t BUDGET_MS] [SIZES...]   (SIZES: put/get bytes, K/M suffixes; default 8 1M)
 * Output: one line per benchmark: name, bytes, value (us, or MB/s for _bw rows). */
#include "bench_util.h"

static const char *USAGE = "rma [-t BUDGET_MS] [SIZES...]";
enum { CHUNK = 200, MIN_ITERS = 200, MAX_ITERS = 20000, WINDOW = 8, BW_FROM = 8193 };
enum { PUT, GET, ACC, FOP };
enum { FENCE, LOCK };
static const char *KIND[] = {"put", "get", "acc", "fop"};
static const char *SYNC[] = {"fence", "lock"};

static double samples[MAX_ITERS];

/* One benchmark; returns the number of wrong results rank `rank` saw. Rank 0 prints. */
static int bench(int rank, int kind, int sync, long n, double budget_s) {
  int ops = n >= BW_FROM ? WINDOW : 1;
  MPI_Aint win_bytes = (MPI_Aint)n * ops;
  unsigned char *base;
  MPI_Win win;
  MPI_Win_allocate(win_bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
  unsigned char *buf = malloc((size_t)win_bytes);
  if (!buf) MPI_Abort(MPI_COMM_WORLD, 3);
  /* Initial contents: the target's window holds its pattern (gets check it), the
   * origin's buffer its own (puts send it); the accumulated long starts at 0. */
  MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win);
  for (MPI_Aint i = 0; i < win_bytes; i++) base[i] = bench_pattern(1, 0, i);
  if (kind == ACC || kind == FOP) *(long *)base = 0;
  MPI_Win_unlock(rank, win);
  for (MPI_Aint i = 0; i < win_bytes; i++) buf[i] = kind == GET ? 0 : bench_pattern(0, 1, i);
  long one = 1, fetched = 0, expect_fetch = 0;
  int bad = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  if (sync == FENCE) MPI_Win_fence(0, win);
  else if (rank == 0) MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
  long warm = 20, done = 0, total = 0;
  double start = MPI_Wtime();
  int go = 1, warming = 1;
  while (go) {
    long chunk = warming ? warm : CHUNK;
    if (!warming && MAX_ITERS - done < chunk) chunk = MAX_ITERS - done;
    double prev = MPI_Wtime();
    for (long it = 0; it < chunk; it++) {
      if (rank == 0) {
        for (int o = 0; o < ops; o++) {
          MPI_Aint off = (MPI_Aint)o * n;
          switch (kind) {
            case PUT: MPI_Put(buf + off, (int)n, MPI_BYTE, 1, off, (int)n, MPI_BYTE, win); break;
            case GET: MPI_Get(buf + off, (int)n, MPI_BYTE, 1, off, (int)n, MPI_BYTE, win); break;
            case ACC: MPI_Accumulate(&one, 1, MPI_LONG, 1, 0, 1, MPI_LONG, MPI_SUM, win); break;
            case FOP: MPI_Fetch_and_op(&one, &fetched, MPI_LONG, 1, 0, MPI_SUM, win); break;
          }
        }
      }
      if (sync == FENCE) MPI_Win_fence(0, win);
      else if (rank == 0) MPI_Win_flush(1, win);
      if (kind == FOP && rank == 0) bad += fetched != expect_fetch++;
      double now = MPI_Wtime();
      if (!warming) samples[done++] = now - prev;
      prev = now;
    }
    total += chunk;
    warming = 0;
    if (rank == 0) go = done < MAX_ITERS && (done < MIN_ITERS || MPI_Wtime() - start < budget_s);
    MPI_Bcast(&go, 1, MPI_INT, 0, MPI_COMM_WORLD);
  }
  if (sync == FENCE) MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
  else if (rank == 0) MPI_Win_unlock(1, win);
  MPI_Bcast(&total, 1, MPI_LONG, 0, MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 1) {
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win);
    if (kind == PUT)
      for (MPI_Aint i = 0; i < win_bytes; i++) bad += base[i] != bench_pattern(0, 1, i);
    if (kind == ACC || kind == FOP) bad += *(long *)base != total * ops;
    MPI_Win_unlock(1, win);
  }
  if (rank == 0 && kind == GET)
    for (MPI_Aint i = 0; i < win_bytes; i++) bad += buf[i] != bench_pattern(1, 0, i);
  if (rank == 0) {
    double p50 = bench_median(samples, (int)done);
    const char *suffix = ops > 1 ? "_bw" : "";
    double value = ops > 1 ? (double)win_bytes / p50 / 1e6 : p50 * 1e6;
    printf("rma_%s_%s%s %ld %.3f\n", KIND[kind], SYNC[sync], suffix,
           kind == ACC || kind == FOP ? 8L : n, value);
    fflush(stdout);
  }
  if (bad) fprintf(stderr, "rma: rank %d: rma_%s_%s %ld: %d wrong results\n", rank, KIND[kind], SYNC[sync], n, bad);
  MPI_Win_free(&win);
  free(buf);
  return bad;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  long sizes[16];
  int nsizes = 0;
  double budget_s = 2.0;
  for (int a = 1; a < argc; a++) {
    if (strcmp(argv[a], "-t") == 0 && a + 1 < argc) {
      long ms = atol(argv[++a]);
      if (ms <= 0) bench_usage_error(rank, "rma", "-t: expected positive milliseconds", USAGE);
      budget_s = (double)ms / 1e3;
    } else {
      long n = bench_parse_bytes(argv[a]);
      if (n <= 0 || n > (64L << 20)) bench_usage_error(rank, "rma", "bad size (1 byte to 64M, K/M suffix)", USAGE);
      if (nsizes == 16) bench_usage_error(rank, "rma", "at most 16 sizes", USAGE);
      sizes[nsizes++] = n;
    }
  }
  if (nsizes == 0) {
    sizes[nsizes++] = 8;
    sizes[nsizes++] = 1 << 20;
  }
  if (size < 2) bench_usage_error(rank, "rma", "needs at least 2 ranks", USAGE);
  if (rank == 0) printf("%-20s %10s %12s\n", "bench", "bytes", "p50_us|MB/s");
  int bad = 0;
  for (int k = 0; k < nsizes; k++)
    for (int kind = PUT; kind <= GET; kind++)
      for (int sync = FENCE; sync <= LOCK; sync++) bad += bench(rank, kind, sync, sizes[k], budget_s);
  for (int kind = ACC; kind <= FOP; kind++)
    for (int sync = FENCE; sync <= LOCK; sync++) bad += bench(rank, kind, sync, 8, budget_s);
  int bad_all = 0;
  MPI_Allreduce(&bad, &bad_all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0 && bad_all) fprintf(stderr, "rma: %d results were wrong\n", bad_all);
  MPI_Finalize();
  return bad_all ? 1 : 0;
}
