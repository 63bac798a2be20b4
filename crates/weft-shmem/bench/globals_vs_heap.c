/* Globals against the symmetric heap, side by side in one run: 8-byte put latency (PE 0
 * puts to PE 1, the time per shmem_putmem), 8-byte put rate (every PE puts to its right
 * neighbour at once) and fetch-add rate (every PE on its right neighbour's word), each
 * measured on a heap target and on a global target in alternation, round after round
 * (the order swapped every round); prints the median of each, their ratio and the median of
 * the rounds' own global / heap ratios. Rates are the sum of the PEs' own rates (a PE that
 * the scheduler takes off its core slows only its own). OpenSHMEM API only.
 * Usage: oshrun -n 2 ./globals_vs_heap [rounds] [ops_per_round] */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define SLOTS 512
static long global_target[SLOTS];

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

enum { LAT, RATE, AMO, KINDS };
static const char *names[KINDS] = {"put latency 8 B (us)", "put rate 8 B (Mputs/s, all PEs)",
                                   "fetch-add rate (Mops/s, all PEs)"};

/* One measurement of `kind` on `target` (symmetric, SLOTS longs): seconds on this PE. */
static double measure(int kind, long *target, long ops) {
    int me = shmem_my_pe(), n = shmem_n_pes();
    int right = (me + 1) % n;
    long v = me;
    shmem_barrier_all();
    double t0 = now_s();
    if (kind == LAT) {
        if (me == 0)
            for (long i = 0; i < ops; i++) shmem_putmem(&target[i % SLOTS], &v, 8, 1 % n);
        shmem_quiet();
    } else if (kind == RATE) {
        for (long i = 0; i < ops; i++) shmem_putmem(&target[i % SLOTS], &v, 8, right);
        shmem_quiet();
    } else {
        long sum = 0;
        for (long i = 0; i < ops; i++) sum += shmem_long_atomic_fetch_add(&target[(me * 8) % SLOTS], 1, right);
        if (sum < 0) abort();
    }
    double s = now_s() - t0;
    shmem_barrier_all();
    return s;
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 101;
    long ops = argc > 2 ? atol(argv[2]) : 100000;
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    long *heap_target = shmem_calloc(SLOTS, sizeof(long));
    double *res[KINDS][2];
    for (int k = 0; k < KINDS; k++)
        for (int t = 0; t < 2; t++) res[k][t] = calloc(rounds, sizeof(double));
    /* With WEFT_SYMMETRIC_GLOBALS=cma another PE's globals are reached through CMA, which
     * has no atomics: the fetch-add on globals is then left out. */
    int mapped = n == 1 || shmem_ptr(&global_target[0], (me + 1) % n) != NULL;
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < KINDS; k++)
            for (int j = 0; j < 2; j++) {
                int t = (r + j) % 2; /* 0 = heap, 1 = global; the order alternates */
                if (t == 1 && k == AMO && !mapped) continue;
                double s = measure(k, t ? global_target : heap_target, ops);
                /* latency: PE 0's time per put; rates: the sum of every PE's own rate */
                static double in, out;
                in = k == LAT ? s / ops * 1e6 : ops / s / 1e6;
                shmem_double_sum_reduce(SHMEM_TEAM_WORLD, &out, &in, 1);
                res[k][t][r] = k == LAT ? (me == 0 ? in : 0) : out;
            }
    if (me == 0) {
        printf("# %d PEs, %d rounds of %ld operations, medians; globals are %s\n", n, rounds, ops,
               mapped ? "mapped (shared)" : "reached through CMA");
        printf("%-34s %12s %12s %10s %12s\n", "measure", "heap", "global", "global/heap",
               "round ratio");
        double *ratio = calloc(rounds, sizeof(double));
        for (int k = 0; k < KINDS; k++) {
            for (int r = 0; r < rounds; r++) ratio[r] = res[k][1][r] / res[k][0][r];
            double q = median(ratio, rounds);
            double h = median(res[k][0], rounds), g = median(res[k][1], rounds);
            if (k == AMO && !mapped)
                printf("%-34s %12.4f %12s %10s %12s\n", names[k], h, "n/a", "n/a", "n/a");
            else
                printf("%-34s %12.4f %12.4f %10.3f %12.3f\n", names[k], h, g, g / h, q);
        }
        free(ratio);
    }
    shmem_free(heap_target);
    shmem_finalize();
    return 0;
}
