/* One-sided communication between PEs of different nodes (run with hosts a:H,b:H so PE i and
 * PE i + n/2 are on different nodes): put/get of many sizes, p/g, iput/iget, nbi + quiet,
 * globals, every atomic from every PE on one word (exact results), 32-bit atomics,
 * put_signal ping-pong with signal_wait_until, wait_until woken by a remote p, contexts with
 * their own quiet, a lock, the deprecated active-set collectives. Prints "rma_nodes ok" on each PE. */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "PE %d: check failed at line %d: %s\n", shmem_my_pe(), __LINE__, #c); exit(2); } } while (0)

static long global_arr[8];
static long global_flag;

static unsigned char pat(size_t i, int seed) { return (unsigned char)(i * 131u + (unsigned)seed * 7u + (i >> 9)); }

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    CHECK(n % 2 == 0);
    int partner = (me + n / 2) % n;   /* on the other node */
    CHECK(shmem_pe_accessible(partner));
    CHECK(shmem_ptr(global_arr, partner) == NULL);

    /* put/get of many sizes into the partner's heap */
    size_t sizes[] = {1, 7, 1001, 65537, 1 << 20};
    unsigned char *buf = shmem_malloc(1 << 20);
    unsigned char *src = malloc(1 << 20), *back = malloc(1 << 20);
    for (int s = 0; s < 5; s++) {
        size_t len = sizes[s];
        for (size_t i = 0; i < len; i++) src[i] = pat(i, me + s);
        shmem_putmem(buf, src, len, partner);
        shmem_barrier_all();
        for (size_t i = 0; i < len; i++) CHECK(buf[i] == pat(i, partner + s));
        shmem_getmem(back, buf, len, partner);
        CHECK(memcmp(back, src, len) == 0);
        shmem_barrier_all();
    }
    shmem_putmem(buf, src, 0, partner);   /* zero bytes: nothing happens */

    /* p/g, nbi + quiet, strided */
    long *x = shmem_calloc(16, sizeof(long));
    for (int i = 0; i < 16; i++) shmem_long_p(&x[i], me * 100 + i, partner);   /* coalesced */
    shmem_quiet();
    CHECK(shmem_long_g(&x[15], partner) == me * 100 + 15);
    shmem_barrier_all();
    for (int i = 0; i < 16; i++) CHECK(x[i] == partner * 100 + i);
    long strided[4] = {1, 2, 3, 4}, got[4];
    shmem_barrier_all();
    shmem_long_iput(x, strided, 2, 1, 4, partner);
    shmem_long_put_nbi(&x[9], strided, 2, partner);
    shmem_quiet();
    shmem_long_iget(got, x, 1, 2, 4, partner);
    CHECK(got[0] == 1 && got[3] == 4);
    shmem_barrier_all();
    CHECK(x[6] == 4 && x[1] == partner * 100 + 1 && x[10] == 2);

    /* globals of the partner */
    long gsrc[8];
    for (int i = 0; i < 8; i++) gsrc[i] = me * 10 + i;
    shmem_long_put(global_arr, gsrc, 8, partner);
    shmem_barrier_all();
    for (int i = 0; i < 8; i++) CHECK(global_arr[i] == partner * 10 + i);
    CHECK(shmem_long_g(&global_arr[3], partner) == me * 10 + 3);
    shmem_barrier_all();

    /* every atomic from every PE on PE 0's words */
    long *counter = shmem_calloc(4, sizeof(long));
    int *c32 = shmem_calloc(2, sizeof(int));
    for (int i = 0; i < 100; i++) {
        shmem_long_atomic_add(counter, me + 1, 0);
        shmem_int_atomic_inc(c32, 0);
    }
    (void)shmem_long_atomic_fetch_inc(counter, 0);
    (void)shmem_long_fadd(counter, 2, 0);
    for (int k = 0; k < 20; k++) {
        for (;;) {
            long old = shmem_long_atomic_fetch(counter, 0);
            if (shmem_long_atomic_compare_swap(counter, old, old + 1000, 0) == old) break;
        }
    }
    shmem_ulong_atomic_or((unsigned long *)&counter[1], 1ul << me, 0);
    (void)shmem_ulong_atomic_fetch_xor((unsigned long *)&counter[1], 1ul << (me + 16), 0);
    shmem_ulong_atomic_xor((unsigned long *)&counter[1], 1ul << (me + 16), 0);
    shmem_ulong_atomic_and((unsigned long *)&counter[1], ~(1ul << (me + 32)), 0);
    (void)shmem_long_atomic_swap(&counter[2], me, 0);
    shmem_barrier_all();
    long sum = 0;
    for (int p = 0; p < n; p++) sum += 100L * (p + 1) + 1 + 2 + 20 * 1000;
    CHECK(shmem_long_atomic_fetch(counter, 0) == sum);
    CHECK(shmem_int_atomic_fetch(c32, 0) == 100 * n);
    CHECK(shmem_ulong_atomic_fetch((unsigned long *)&counter[1], 0) == (1ul << n) - 1);
    long sw = shmem_long_atomic_fetch(&counter[2], 0);
    CHECK(sw >= 0 && sw < n);
    shmem_barrier_all();
    if (me == 0) shmem_long_atomic_set(&counter[3], 77, partner);
    shmem_barrier_all();
    if (me == n / 2) CHECK(counter[3] == 77);
    shmem_barrier_all();

    /* put_signal ping-pong: data then signal; the partner sees the data once it sees the signal */
    uint64_t *sig = shmem_calloc(1, sizeof(uint64_t));
    int *data = shmem_calloc(256, sizeof(int));
    int lower = me < partner;
    int payload[256];
    for (int round = 1; round <= 30; round++) {
        if ((round % 2 == 1) == lower) {
            for (int i = 0; i < 256; i++) payload[i] = round * 1000 + i + me;
            shmem_putmem_signal(data, payload, sizeof payload, sig, (uint64_t)round, SHMEM_SIGNAL_SET, partner);
        } else {
            shmem_signal_wait_until(sig, SHMEM_CMP_EQ, (uint64_t)round);
            for (int i = 0; i < 256; i++) CHECK(data[i] == round * 1000 + i + partner);
        }
    }
    shmem_barrier_all();

    /* wait_until woken by the partner's p (no quiet: the waiting side's wait sends it) */
    for (int round = 1; round <= 10; round++) {
        if (lower) {
            shmem_long_p(&global_flag, round, partner);
            shmem_long_wait_until(&global_flag, SHMEM_CMP_EQ, round);
        } else {
            shmem_long_wait_until(&global_flag, SHMEM_CMP_EQ, round);
            shmem_long_p(&global_flag, round, partner);
        }
    }
    shmem_barrier_all();

    /* contexts: their own lanes and quiet */
    shmem_ctx_t c1, c2;
    CHECK(shmem_ctx_create(0, &c1) == 0 && shmem_ctx_create(0, &c2) == 0 && c1 != c2);
    for (int i = 0; i < 8; i++) shmem_ctx_long_p(i % 2 ? c1 : c2, &x[i], 5000 + i + me, partner);
    shmem_ctx_quiet(c1);
    shmem_ctx_quiet(c2);
    CHECK(shmem_ctx_long_g(c1, &x[7], partner) == 5007 + me);
    (void)shmem_ctx_long_atomic_fetch_add(c2, &counter[2], 1000, 0);
    shmem_ctx_putmem_signal(c1, data, payload, 8, sig, 1, SHMEM_SIGNAL_ADD, partner);
    shmem_ctx_destroy(c1);
    shmem_ctx_destroy(c2);
    shmem_barrier_all();
    CHECK(x[6] == 5006 + partner && *sig == (uint64_t)(lower ? 31 : 30));
    if (me == 0) CHECK(counter[2] >= 1000L * n && counter[2] < 1000L * n + n);

    /* a lock across the nodes guards a read-modify-write of PE 0's word */
    long *lk = shmem_calloc(1, sizeof(long)), *guarded = shmem_calloc(1, sizeof(long));
    for (int k = 0; k < 20; k++) {
        if (k % 2) shmem_set_lock(lk);
        else while (shmem_test_lock(lk)) ;
        long v = shmem_long_g(guarded, 0);
        shmem_long_p(guarded, v + 1, 0);
        shmem_clear_lock(lk);
    }
    shmem_barrier_all();
    if (me == 0) CHECK(*guarded == 20L * n && *lk == 0);

    /* deprecated active-set calls across the nodes: barrier, broadcast, fcollect, to_all */
    static long psync[SHMEM_REDUCE_SYNC_SIZE], pwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
    long *as_src = shmem_malloc(2 * sizeof(long)), *as_dst = shmem_malloc(2 * n * sizeof(long));
    for (int k = 0; k < 5; k++) {
        as_src[0] = me * 10 + k;
        as_src[1] = -me - k;
        shmem_barrier(0, 0, n, psync);
        shmem_broadcast64(as_dst, as_src, 2, n - 1, 0, 0, n, psync);
        if (me != n - 1) CHECK(as_dst[0] == (n - 1) * 10 + k && as_dst[1] == -(n - 1) - k);
        shmem_fcollect64(as_dst, as_src, 2, 0, 0, n, psync);
        for (int p = 0; p < n; p++) CHECK(as_dst[2 * p] == p * 10 + k && as_dst[2 * p + 1] == -p - k);
        shmem_long_sum_to_all(as_dst, as_src, 1, 0, 0, n, pwrk, psync);
        CHECK(as_dst[0] == 10L * n * (n - 1) / 2 + (long)k * n);
        if (n >= 4) {   /* the odd PEs only: stride 2 */
            if (me % 2 == 1) {
                shmem_long_max_to_all(as_dst, as_src, 1, 1, 1, n / 2, pwrk, psync);
                CHECK(as_dst[0] == (n - 1 - (n % 2 == 0 ? 0 : 1)) * 10 + k);
            }
        }
        shmem_barrier_all();
    }

    /* a collective across the nodes */
    long one = me + 1, total = 0;
    shmem_long_sum_reduce(SHMEM_TEAM_WORLD, &total, &one, 1);
    CHECK(total == (long)n * (n + 1) / 2);

    shmem_barrier_all();
    printf("rma_nodes ok\n");
    free(src);
    free(back);
    shmem_finalize();
    return 0;
}
