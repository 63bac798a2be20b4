/* LU decomposition (no pivoting) of an N x N diagonally dominant matrix of doubles, rows
 * distributed cyclically over the PEs, in two synchronisation styles (ALGORITHMS.md §7):
 *
 *   barrier  at step k the owner of row k puts it into every PE's pivot buffer, then all PEs
 *            meet in shmem_barrier_all before eliminating (one global barrier per step; two
 *            pivot buffers alternate so step k+1's puts cannot overwrite step k's row early);
 *   fine     the owner of row k marks the engine's tagged word k full as soon as the row is
 *            final, i.e. right after step k-1 eliminated it and before the owner eliminates
 *            its other rows (look-ahead; weft_sync_put with n-1 readers); every other PE
 *            waits for exactly that word
 *            (weft_sync_get) and fetches the row from the owner with shmem_getmem, so a PE
 *            runs ahead as soon as the rows it needs exist. Row k's word is word k % WINDOW
 *            of a small window, filled again once its readers emptied it (a put waits for
 *            empty): a fresh engine word per row costs its first toucher cold cache lines
 *            and the table's claim, 1-2 us per step against 0.2 us for a reused one
 *            (2 PEs, SCHED_FIFO), which at N=128 made the fine version 3x slower.
 *
 * Usage: oshrun -n P ./lu [N] [barrier|fine|both]. PE 0 verifies L*U = A on sample rows
 * (gathering U's rows and L's entries with gets) and prints the time of each style.
 * Exit code 0 only when every verified entry matches to 1e-9 relative. */
#include <shmem.h>
#include <weft/sync.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int N = 1024;
/* Engine words the fine version cycles through (row k uses word k % WINDOW). */
#define WINDOW 8

static double a_init(int i, int j) {
    /* Deterministic, diagonally dominant: no pivoting needed. */
    unsigned h = (unsigned)(i * 2654435761u) ^ (unsigned)(j * 40503u);
    double v = (double)(h % 1000) / 1000.0;
    return i == j ? v + N : v;
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void eliminate(double *row, const double *pivot, int k) {
    double f = row[k] / pivot[k];
    row[k] = f;                     /* L's entry, stored in place */
    for (int j = k + 1; j < N; j++) row[j] -= f * pivot[j];
}

static double factor(double *a, double *pivots, int fine, uint64_t tag_base) {
    int me = shmem_my_pe(), n = shmem_n_pes();
    int rows = (N + n - 1) / n;
    for (int r = 0; r < rows && r * n + me < N; r++)
        for (int j = 0; j < N; j++) a[(size_t)r * N + j] = a_init(r * n + me, j);
    double *local_pivot = malloc(N * sizeof(double));
    shmem_barrier_all();
    double t0 = now_s();
    for (int k = 0; k < N - 1; k++) {
        int owner = k % n, lk = k / n;
        const double *pivot;
        if (fine) {
            if (owner == me) {
                /* Row 0 is final from the start; every later row was published by its owner
                 * as soon as it was final (below). */
                if (n > 1 && k == 0) weft_sync_put(tag_base + k % WINDOW, 1, n - 1);
                pivot = &a[(size_t)lk * N];
            } else {
                weft_sync_get(tag_base + k % WINDOW);
                shmem_getmem(local_pivot + k, &a[(size_t)lk * N + k], (N - k) * sizeof(double), owner);
                pivot = local_pivot;
            }
        } else {
            double *buf = &pivots[(size_t)(k & 1) * N];
            if (owner == me) {
                for (int p = 0; p < n; p++)
                    if (p != me) shmem_putmem(buf + k, &a[(size_t)lk * N + k], (N - k) * sizeof(double), p);
                memcpy(buf + k, &a[(size_t)lk * N + k], (N - k) * sizeof(double));
            }
            shmem_barrier_all();
            pivot = buf;
        }
        /* rows below k that this PE owns */
        int first = k + 1 + ((me - (k + 1)) % n + n) % n;
        for (int i = first; i < N; i += n) {
            eliminate(&a[(size_t)(i / n) * N], pivot, k);
            /* Look-ahead, what fine-grained synchronisation allows: row k+1 is final once
             * step k has eliminated it, so its owner publishes it before eliminating its
             * other rows, and the PEs waiting for it start step k+1 meanwhile. */
            if (fine && n > 1 && i == k + 1) weft_sync_put(tag_base + (k + 1) % WINDOW, 1, n - 1);
        }
    }
    shmem_barrier_all();
    double t = now_s() - t0;
    free(local_pivot);
    return t;
}

static int verify(double *a) {
    int me = shmem_my_pe(), n = shmem_n_pes();
    int bad = 0;
    if (me == 0) {
        double *urow = malloc(N * sizeof(double)), *lrow = malloc(N * sizeof(double));
        int samples[] = {0, 1, N / 3, N / 2, N - 2, N - 1};
        for (int s = 0; s < 6; s++) {
            int i = samples[s];
            shmem_getmem(lrow, &a[(size_t)(i / n) * N], N * sizeof(double), i % n);
            for (int j = 0; j < N; j += 7) {
                double sum = 0;
                for (int t = 0; t <= (i < j ? i : j); t++) {
                    double l = t == i ? 1.0 : lrow[t];
                    double u;
                    shmem_getmem(&u, &a[(size_t)(t / n) * N + j], sizeof(double), t % n);
                    sum += l * u;
                }
                double want = a_init(i, j);
                if (fabs(sum - want) > 1e-9 * fabs(want) + 1e-9) {
                    if (bad < 5) fprintf(stderr, "LU mismatch at (%d,%d): %g vs %g\n", i, j, sum, want);
                    bad++;
                }
            }
        }
        free(urow); free(lrow);
    }
    shmem_barrier_all();
    return bad;
}

int main(int argc, char **argv) {
    if (argc > 1) N = atoi(argv[1]);
    const char *mode = argc > 2 ? argv[2] : "both";
    if (N < 2) { fprintf(stderr, "N must be at least 2\n"); return 2; }
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    int rows = (N + n - 1) / n;
    double *a = shmem_malloc((size_t)rows * N * sizeof(double));
    double *pivots = shmem_malloc(2 * (size_t)N * sizeof(double));
    int bad = 0;
    double tb = -1, tf = -1;
    if (strcmp(mode, "fine") != 0) { tb = factor(a, pivots, 0, 0); bad += verify(a); }
    if (strcmp(mode, "barrier") != 0) { tf = factor(a, pivots, 1, 1u << 20); bad += verify(a); }
    if (me == 0) {
        printf("lu N=%d PEs=%d", N, n);
        if (tb >= 0) printf(" barrier_s=%.4f", tb);
        if (tf >= 0) printf(" fine_s=%.4f", tf);
        if (tb > 0 && tf > 0) printf(" fine_speedup=%.2f", tb / tf);
        printf(" verified=%s\n", bad ? "NO" : "yes");
    }
    shmem_finalize();
    return bad ? 1 : 0;
}
