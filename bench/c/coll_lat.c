/* Collective latency for every blocking collective of MPI, OSU 7.4 methodology: warm-up calls
 * are discarded; the timed calls run back to back with an MPI_Barrier after each (nothing
 * else between them); every rank records the time it spent in each call, and only after the
 * loop are the records combined: p50_us is the median over calls of the mean over ranks (OSU's
 * P50), avg_us the mean of those means. Two more statistics from the same records:
 * max_p50_us, the median over calls of the maximum over ranks, and span_p50_us, the median of
 * (last rank's exit - first rank's entry) on the node's monotonic clock (valid when all ranks
 * share one node): the maximum rewards a barrier that lets the root out first (its receivers
 * then find the data already there), the span does not. (Until session 6 each call was
 * followed by an MPI_Allreduce of its times, which is not OSU's loop and let each library's
 * barrier and allreduce decide which rank waited where.) The number of timed calls is fixed
 * before timing, from the warm-up calls' time and the budget, the same on every rank. After
 * timing, one more call per collective and size runs on known data and every rank checks its
 * result, so a wrong answer fails the run instead of giving a number. Standard MPI only: every MPI library runs the same code.
 *
 * Sizes are bytes per rank, as in `weft bench coll` and OSU: the whole vector for bcast,
 * reduce, allreduce, reduce_scatter(_block), scan and exscan (floats, MPI_SUM; the reduce-
 * scatters give each rank 1/np of it); one block per rank (per pair for the all-to-alls) for
 * gather(v), scatter(v), allgather(v), alltoall(v/w). Barrier runs once, as size 0.
 *
 * Usage: coll_lat [-c NAME,NAME...] [-i ITERS] [-t BUDGET_MS] [SIZES...]
 *   SIZES      bytes per rank, with K/M suffixes (default 8 64K 1M)
 *   NAME       collectives to run (default all, in the order of `names` below)
 *   ITERS      most timed calls per point (default 2000 below 64 KiB, 500 below 1 MiB, 100)
 *   BUDGET_MS  a point stops early once this much time has passed and 5 calls are timed
 *              (default 400): oversubscribed busy-polling libraries take milliseconds per
 *              call, and the budget keeps the whole run bounded for them. */
#include "bench_util.h"

enum {
  BARRIER, BCAST, REDUCE, ALLREDUCE, GATHER, GATHERV, SCATTER, SCATTERV, ALLGATHER,
  ALLGATHERV, ALLTOALL, ALLTOALLV, ALLTOALLW, REDUCE_SCATTER, REDUCE_SCATTER_BLOCK, SCAN,
  EXSCAN, NCOLL
};
static const char *names[NCOLL] = {
    "barrier",    "bcast",     "reduce",    "allreduce", "gather",         "gatherv",
    "scatter",    "scatterv",  "allgather", "allgatherv", "alltoall",      "alltoallv",
    "alltoallw",  "reduce_scatter", "reduce_scatter_block", "scan",        "exscan"};
static const char *USAGE = "coll_lat [-c NAME,NAME...] [-i ITERS] [-t BUDGET_MS] [SIZES...]";
enum { MIN_ITERS = 5, ROOT = 0 };

/* Buffers of one run. Byte buffers hold one block per rank: block d of rank r's send buffer
 * is bench_pattern(r, d, i), so each receiver knows what every block must contain. */
struct bufs {
  int rank, size;
  unsigned char *sb, *rb;
  float *sf, *rf;
  int *counts, *displs, *rcounts;
  MPI_Datatype *types;
};

/* Elements of the float vector for n bytes, and of each rank's share of it. */
static int vec_count(long n) { return n / 4 > 0 ? (int)(n / 4) : 1; }
static int share(long n, int size) { return vec_count(n) / size > 0 ? vec_count(n) / size : 1; }

static void run(int c, long n, struct bufs *b) {
  MPI_Comm w = MPI_COMM_WORLD;
  int blk = n > 0 ? (int)n : 1, cnt = vec_count(n), sh = share(n, b->size);
  unsigned char *own = b->sb + (size_t)ROOT * blk; /* block meant for the root / everyone */
  for (int d = 0; d < b->size; d++) {
    b->counts[d] = blk;
    b->displs[d] = d * blk;
    b->rcounts[d] = sh;
  }
  switch (c) {
    case BARRIER: MPI_Barrier(w); break;
    case BCAST: MPI_Bcast(b->rank == ROOT ? own : b->rb, blk, MPI_BYTE, ROOT, w); break;
    case REDUCE: MPI_Reduce(b->sf, b->rf, cnt, MPI_FLOAT, MPI_SUM, ROOT, w); break;
    case ALLREDUCE: MPI_Allreduce(b->sf, b->rf, cnt, MPI_FLOAT, MPI_SUM, w); break;
    case GATHER: MPI_Gather(own, blk, MPI_BYTE, b->rb, blk, MPI_BYTE, ROOT, w); break;
    case GATHERV:
      MPI_Gatherv(own, blk, MPI_BYTE, b->rb, b->counts, b->displs, MPI_BYTE, ROOT, w);
      break;
    case SCATTER: MPI_Scatter(b->sb, blk, MPI_BYTE, b->rb, blk, MPI_BYTE, ROOT, w); break;
    case SCATTERV:
      MPI_Scatterv(b->sb, b->counts, b->displs, MPI_BYTE, b->rb, blk, MPI_BYTE, ROOT, w);
      break;
    case ALLGATHER: MPI_Allgather(own, blk, MPI_BYTE, b->rb, blk, MPI_BYTE, w); break;
    case ALLGATHERV:
      MPI_Allgatherv(own, blk, MPI_BYTE, b->rb, b->counts, b->displs, MPI_BYTE, w);
      break;
    case ALLTOALL: MPI_Alltoall(b->sb, blk, MPI_BYTE, b->rb, blk, MPI_BYTE, w); break;
    case ALLTOALLV:
      MPI_Alltoallv(b->sb, b->counts, b->displs, MPI_BYTE, b->rb, b->counts, b->displs,
                    MPI_BYTE, w);
      break;
    case ALLTOALLW:
      /* Alltoallw's displacements are in bytes; with MPI_BYTE they equal displs. */
      for (int d = 0; d < b->size; d++) b->types[d] = MPI_BYTE;
      MPI_Alltoallw(b->sb, b->counts, b->displs, b->types, b->rb, b->counts, b->displs,
                    b->types, w);
      break;
    case REDUCE_SCATTER:
      MPI_Reduce_scatter(b->sf, b->rf, b->rcounts, MPI_FLOAT, MPI_SUM, w);
      break;
    case REDUCE_SCATTER_BLOCK:
      MPI_Reduce_scatter_block(b->sf, b->rf, sh, MPI_FLOAT, MPI_SUM, w);
      break;
    case SCAN: MPI_Scan(b->sf, b->rf, cnt, MPI_FLOAT, MPI_SUM, w); break;
    case EXSCAN: MPI_Exscan(b->sf, b->rf, cnt, MPI_FLOAT, MPI_SUM, w); break;
  }
}

/* Counts wrong bytes in block `blk_index` of rb against what rank `src` sent to `dst`. */
static int check_block(const struct bufs *b, int blk_index, int src, int dst, int blk) {
  int bad = 0;
  const unsigned char *p = b->rb + (size_t)blk_index * blk;
  for (int i = 0; i < blk; i++) bad += p[i] != bench_pattern(src, dst, i);
  return bad;
}

static int check_floats(const float *v, int count, float want) {
  int bad = 0;
  for (int i = 0; i < count; i++) bad += v[i] != want;
  return bad;
}

/* Runs collective c once on fresh receive buffers and counts this rank's wrong elements. */
static int check(int c, long n, struct bufs *b) {
  int blk = n > 0 ? (int)n : 1, cnt = vec_count(n), sh = share(n, b->size);
  int me = b->rank, np = b->size, bad = 0;
  memset(b->rb, 0, (size_t)blk * np);
  for (int i = 0; i < cnt + np; i++) b->rf[i] = -1.0f;
  run(c, n, b);
  switch (c) {
    case BARRIER: break;
    case BCAST:
      if (me != ROOT) bad += check_block(b, 0, ROOT, ROOT, blk);
      break;
    case REDUCE:
      if (me == ROOT) bad += check_floats(b->rf, cnt, (float)np);
      break;
    case ALLREDUCE: bad += check_floats(b->rf, cnt, (float)np); break;
    case GATHER:
    case GATHERV:
      if (me == ROOT)
        for (int s = 0; s < np; s++) bad += check_block(b, s, s, ROOT, blk);
      break;
    case SCATTER:
    case SCATTERV: bad += check_block(b, 0, ROOT, me, blk); break;
    case ALLGATHER:
    case ALLGATHERV:
      for (int s = 0; s < np; s++) bad += check_block(b, s, s, ROOT, blk);
      break;
    case ALLTOALL:
    case ALLTOALLV:
    case ALLTOALLW:
      for (int s = 0; s < np; s++) bad += check_block(b, s, s, me, blk);
      break;
    case REDUCE_SCATTER:
    case REDUCE_SCATTER_BLOCK: bad += check_floats(b->rf, sh, (float)np); break;
    case SCAN: bad += check_floats(b->rf, cnt, (float)(me + 1)); break;
    case EXSCAN:
      if (me > 0) bad += check_floats(b->rf, cnt, (float)me);
      break;
  }
  return bad;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  struct bufs b;
  MPI_Comm_rank(MPI_COMM_WORLD, &b.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &b.size);
  long sizes[32] = {8, 65536, 1048576};
  int nsizes = 0, want[NCOLL], any_named = 0;
  long iters_arg = 0;
  double budget_s = 0.4;
  for (int c = 0; c < NCOLL; c++) want[c] = 0;
  for (int a = 1; a < argc; a++) {
    if (strcmp(argv[a], "-c") == 0 && a + 1 < argc) {
      char *list = argv[++a];
      for (char *name = strtok(list, ","); name; name = strtok(NULL, ",")) {
        int c = 0;
        while (c < NCOLL && strcmp(names[c], name) != 0) c++;
        if (c == NCOLL) bench_usage_error(b.rank, "coll_lat", "-c: unknown collective", USAGE);
        want[c] = any_named = 1;
      }
    } else if (strcmp(argv[a], "-i") == 0 && a + 1 < argc) {
      iters_arg = atol(argv[++a]);
      if (iters_arg <= 0) bench_usage_error(b.rank, "coll_lat", "-i: expected a positive count", USAGE);
    } else if (strcmp(argv[a], "-t") == 0 && a + 1 < argc) {
      long ms = atol(argv[++a]);
      if (ms <= 0) bench_usage_error(b.rank, "coll_lat", "-t: expected positive milliseconds", USAGE);
      budget_s = (double)ms / 1e3;
    } else {
      long n = bench_parse_bytes(argv[a]);
      if (n <= 0 || n > (64L << 20)) bench_usage_error(b.rank, "coll_lat", "bad size (1 B to 64M, K/M suffix)", USAGE);
      if (nsizes == 32) bench_usage_error(b.rank, "coll_lat", "at most 32 sizes", USAGE);
      sizes[nsizes++] = n;
    }
  }
  if (nsizes == 0) nsizes = 3;
  if (!any_named)
    for (int c = 0; c < NCOLL; c++) want[c] = 1;
  long maxn = 1;
  for (int k = 0; k < nsizes; k++) maxn = sizes[k] > maxn ? sizes[k] : maxn;
  int np = b.size;
  b.sb = malloc((size_t)maxn * np);
  b.rb = malloc((size_t)maxn * np);
  size_t floats = (size_t)vec_count(maxn) + (size_t)np + 16;
  b.sf = malloc(sizeof(float) * floats);
  b.rf = malloc(sizeof(float) * floats);
  b.counts = malloc(sizeof(int) * np);
  b.displs = malloc(sizeof(int) * np);
  b.rcounts = malloc(sizeof(int) * np);
  b.types = malloc(sizeof(MPI_Datatype) * np);
  long max_iters_all = iters_arg ? iters_arg : 2000;
  /* Per call: this rank's time, then minus its entry and its exit on the node clock; after
   * the loop the sums (mine) and maxima (all three) over ranks. */
  size_t rec = (size_t)max_iters_all;
  double *mine = malloc(sizeof(double) * 3 * rec), *maxes = malloc(sizeof(double) * 3 * rec);
  double *sums = malloc(sizeof(double) * rec), *stat = malloc(sizeof(double) * rec);
  if (!b.sb || !b.rb || !b.sf || !b.rf || !b.counts || !b.displs || !b.rcounts || !b.types ||
      !mine || !maxes || !sums || !stat)
    MPI_Abort(MPI_COMM_WORLD, 3);
  for (size_t i = 0; i < floats; i++) b.sf[i] = 1.0f;
  int bad_total = 0;
  if (b.rank == 0)
    printf("%-22s %10s %12s %12s %6s %12s %12s\n", "collective", "bytes", "p50_us", "avg_us",
           "iters", "span_p50_us", "max_p50_us");
  for (int c = 0; c < NCOLL; c++) {
    if (!want[c]) continue;
    for (int k = 0; k < nsizes; k++) {
      long n = c == BARRIER ? 0 : sizes[k];
      if (c == BARRIER && k > 0) break;
      int blk = n > 0 ? (int)n : 1;
      for (int d = 0; d < np; d++)
        for (int i = 0; i < blk; i++) b.sb[(size_t)d * blk + i] = bench_pattern(b.rank, d, i);
      long max_iters = iters_arg ? iters_arg : n < 65536 ? 2000 : n < 1048576 ? 500 : 100;
      long warm = max_iters / 10 + 2;
      MPI_Barrier(MPI_COMM_WORLD);
      double w0 = MPI_Wtime();
      for (long i = 0; i < warm; i++) {
        run(c, n, &b);
        MPI_Barrier(MPI_COMM_WORLD);
      }
      /* As many timed calls as fit the budget at the slowest rank's warm-up pace (between
       * MIN_ITERS and max_iters): decided once, the same everywhere. */
      double per_call = (MPI_Wtime() - w0) / (double)warm, slowest;
      MPI_Allreduce(&per_call, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      long done = slowest > 0 ? (long)(budget_s / slowest) : max_iters;
      done = done < MIN_ITERS ? MIN_ITERS : done;
      done = done > max_iters ? max_iters : done; /* the records hold max_iters calls */
      double *t = mine, *entry = mine + done, *exit_ = mine + 2 * done;
      MPI_Barrier(MPI_COMM_WORLD);
      for (long i = 0; i < done; i++) {
        double t0 = MPI_Wtime(), n0 = bench_node_clock();
        run(c, n, &b);
        double n1 = bench_node_clock();
        t[i] = (MPI_Wtime() - t0) * 1e6;
        entry[i] = -n0;
        exit_[i] = n1;
        MPI_Barrier(MPI_COMM_WORLD);
      }
      MPI_Reduce(t, sums, (int)done, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
      MPI_Reduce(mine, maxes, (int)(3 * done), MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
      double sum = 0, p50 = 0, span50 = 0, max50 = 0;
      if (b.rank == 0) {
        for (long i = 0; i < done; i++) {
          stat[i] = sums[i] / np;
          sum += stat[i];
        }
        p50 = bench_median(stat, (int)done);
        for (long i = 0; i < done; i++) stat[i] = (maxes[done + i] + maxes[2 * done + i]) * 1e6;
        span50 = bench_median(stat, (int)done);
        max50 = bench_median(maxes, (int)done);
      }
      int bad = check(c, n, &b), bad_all = 0;
      MPI_Allreduce(&bad, &bad_all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
      bad_total += bad_all;
      if (b.rank == 0) {
        if (bad_all)
          fprintf(stderr, "coll_lat: %s at %ld B: %d wrong result elements\n", names[c], n, bad_all);
        else
          printf("%-22s %10ld %12.3f %12.3f %6ld %12.3f %12.3f\n", names[c], n, p50,
                 sum / (double)done, done, span50, max50);
        fflush(stdout);
      }
    }
  }
  free(b.sb);
  free(b.rb);
  free(b.sf);
  free(b.rf);
  free(b.counts);
  free(b.displs);
  free(b.rcounts);
  free(b.types);
  free(mine);
  free(maxes);
  free(sums);
  free(stat);
  MPI_Finalize();
  return bad_total ? 1 : 0;
}
