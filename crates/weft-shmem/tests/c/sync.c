/* weft/sync.h across the PEs of a node: barrier rounds, reduce, full/empty hand-off, locks,
 * burst reduce. Prints "sync ok" on each PE. With argument "die", PE n-1 exits in the middle
 * and the others must fail instead of hanging. */
#include <shmem.h>
#include <weft/sync.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "PE %d: check failed at line %d: %s\n", shmem_my_pe(), __LINE__, #c); exit(2); } } while (0)

int main(int argc, char **argv) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    if (argc > 1 && strcmp(argv[1], "die") == 0) {
        weft_sync_barrier(1, n);
        if (me == n - 1) exit(3);
        weft_sync_barrier(1, n);      /* never completes: the engine must notice */
        printf("PE %d: barrier passed without the dead PE\n", me);
        return 0;
    }
    for (int round = 0; round < 200; round++) {
        long s = weft_sync_reduce_long(10, me + round, WEFT_SYNC_SUM, n);
        CHECK(s == (long)n * (n - 1) / 2 + (long)n * round);
        weft_sync_barrier(11, n);
    }
    CHECK(weft_sync_reduce_double(12, 0.5 * me, WEFT_SYNC_MAX, n) == 0.5 * (n - 1));
    CHECK(weft_sync_reduce_long(13, me + 1, WEFT_SYNC_PROD, n) > 0);
    /* full/empty: a token passed around the ring n times; each put waits for the get */
    for (int lap = 0; lap < 5; lap++) {
        if (me == 0) weft_sync_put(100, lap * 1000, 1);
        long v = weft_sync_get(100 + me);
        CHECK(v == lap * 1000 + me);
        if (me + 1 < n) weft_sync_put(100 + me + 1, v + 1, 1);
        weft_sync_barrier(11, n);
    }
    /* one producer, n readers of each value */
    for (int i = 0; i < 20; i++) {
        if (me == 0) weft_sync_put(200, i * 7, n);
        CHECK(weft_sync_get(200) == i * 7);
        weft_sync_barrier(11, n);     /* a reader may not take a second share of one value */
    }
    /* lock: a read-modify-write of a symmetric word on PE 0 */
    long *w = shmem_calloc(1, sizeof(long));
    for (int i = 0; i < 100; i++) {
        weft_sync_lock(300);
        long v = shmem_long_g(w, 0);
        shmem_long_p(w, v + 1, 0);
        weft_sync_unlock(300);
    }
    weft_sync_barrier(11, n);
    CHECK(shmem_long_g(w, 0) == 100L * n);
    /* burst reduce over a buffer longer than one staging chunk */
    size_t len = 100000;
    double *src = malloc(len * sizeof(double)), *dst = malloc(len * sizeof(double));
    for (size_t i = 0; i < len; i++) src[i] = me + (double)i;
    weft_sync_burst_reduce_double(400, src, dst, len, WEFT_SYNC_SUM, n);
    for (size_t i = 0; i < len; i++) CHECK(dst[i] == (double)n * (n - 1) / 2 + (double)n * i);
    printf("PE %d: sync ok\n", me);
    shmem_finalize();
    return 0;
}
