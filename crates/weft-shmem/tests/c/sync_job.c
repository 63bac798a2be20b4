/* The job-wide synchronisation engine of weft/sync.h (weft_sync_job_*) across nodes (run with
 * hosts, e.g. a:1,b:2; argv[1] = the expected node count): rounds of barrier (nobody leaves
 * before every PE of every node entered, counted with remote atomics on PE 0), reduce of
 * longs and doubles, burst reduce of whole buffers; the node-wide calls still work beside
 * them. Prints "sync_job ok" on each PE. */
#include <shmem.h>
#include <weft/sync.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "PE %d: check failed at line %d: %s\n", shmem_my_pe(), __LINE__, #c); exit(2); } } while (0)
#define LEN 3000

static int64_t lsrc[LEN], ldst[LEN];
static double dsrc[LEN], ddst[LEN];

int main(int argc, char **argv) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    uint32_t local = weft_sync_node_size();
    CHECK(argc > 1 && weft_sync_nodes() == (uint32_t)atoi(argv[1]));
    CHECK(local >= 1 && local <= (uint32_t)n);
    long *entered = shmem_calloc(1, sizeof(long));
    for (long round = 0; round < 40; round++) {
        shmem_long_atomic_fetch_inc(entered, 0);
        weft_sync_job_barrier(1, local);
        CHECK(shmem_long_atomic_fetch(entered, 0) >= (long)n * (round + 1));
        int64_t s = weft_sync_job_reduce_long(2, me + round, WEFT_SYNC_SUM, local);
        CHECK(s == (int64_t)n * (n - 1) / 2 + (int64_t)n * round);
        double m = weft_sync_job_reduce_double(3, 0.25 * me - round, WEFT_SYNC_MAX, local);
        CHECK(m == 0.25 * (n - 1) - round);
        int64_t x = weft_sync_job_reduce_long(4, 1L << me, WEFT_SYNC_OR, local);
        CHECK(x == (1L << n) - 1);
    }
    for (int rep = 0; rep < 3; rep++) {
        for (int i = 0; i < LEN; i++) { lsrc[i] = (int64_t)(me + 1) * i + rep; dsrc[i] = me - 0.5 * i; }
        weft_sync_job_burst_reduce_long(5, lsrc, ldst, LEN, WEFT_SYNC_SUM, local);
        weft_sync_job_burst_reduce_double(6, dsrc, ddst, LEN, WEFT_SYNC_MIN, local);
        for (int i = 0; i < LEN; i++) {
            CHECK(ldst[i] == (int64_t)n * (n + 1) / 2 * i + (int64_t)n * rep);
            CHECK(ddst[i] == -0.5 * i);
        }
    }
    /* In place (src == dst) works too. */
    for (int i = 0; i < LEN; i++) ldst[i] = 2;
    weft_sync_job_burst_reduce_long(5, ldst, ldst, LEN, WEFT_SYNC_PROD, local);
    for (int i = 0; i < LEN; i++) CHECK(ldst[i] == (1L << n));
    /* Node-wide calls beside the job-wide ones. */
    weft_sync_barrier(7, local);
    CHECK(weft_sync_reduce_long(8, 1, WEFT_SYNC_SUM, local) == (int64_t)local);
    shmem_barrier_all();
    printf("sync_job ok\n");
    shmem_finalize();
    return 0;
}
