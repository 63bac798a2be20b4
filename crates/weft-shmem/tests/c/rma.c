/* Every OpenSHMEM call family weft implements, at any PE count: asserts results, prints
 * "rma ok" on each PE. */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "PE %d: check failed at line %d: %s\n", shmem_my_pe(), __LINE__, #c); exit(2); } } while (0)

static long global_arr[8];          /* symmetric through the executable's image */
static int global_flag;
long pSync[SHMEM_BCAST_SYNC_SIZE];
long lock_word;

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    int right = (me + 1) % n, left = (me + n - 1) % n;
    int major, minor; char name[SHMEM_MAX_NAME_LEN];
    shmem_info_get_version(&major, &minor);
    shmem_info_get_name(name);
    CHECK(major == 1 && minor == 5 && strcmp(name, "weft") == 0);
    CHECK(_my_pe() == me && _num_pes() == n);

    long *x = shmem_malloc(16 * sizeof(long));
    int *ints = shmem_calloc(4, sizeof(int));
    double *d = shmem_align(64, 4 * sizeof(double));
    CHECK(((uintptr_t)d & 63) == 0);
    CHECK(ints[0] == 0 && ints[3] == 0);
    CHECK(shmem_pe_accessible(right) && shmem_addr_accessible(x, right));
    CHECK(!shmem_addr_accessible(&me, right));    /* the stack is not symmetric */
    CHECK(shmem_ptr(x, right) != NULL);

    /* put/get/p/g, typed and sized, nbi, strided */
    long src[16];
    for (int i = 0; i < 16; i++) src[i] = me * 100 + i;
    shmem_long_put(x, src, 16, right);
    shmem_barrier_all();
    for (int i = 0; i < 16; i++) CHECK(x[i] == left * 100 + i);
    long back[16];
    shmem_long_get(back, x, 16, right);
    for (int i = 0; i < 16; i++) CHECK(back[i] == me * 100 + i);
    shmem_barrier_all();
    shmem_int_p(&ints[1], 7 + me, right);
    shmem_double_put_nbi(d, (double[]){1.5, 2.5}, 2, right);
    shmem_quiet();
    shmem_barrier_all();
    CHECK(ints[1] == 7 + left && d[1] == 2.5);
    CHECK(shmem_int_g(&ints[1], right) == 7 + me);
    long strided[4] = {1, 2, 3, 4};
    shmem_barrier_all();
    shmem_long_iput(x, strided, 2, 1, 4, right);   /* x[0], x[2], x[4], x[6] */
    shmem_barrier_all();
    CHECK(x[0] == 1 && x[2] == 2 && x[6] == 4 && x[1] == left * 100 + 1);
    long got[4];
    shmem_long_iget(got, x, 1, 2, 4, me);
    CHECK(got[3] == 4);
    uint32_t w32 = 0xabcd0000u + me;
    shmem_barrier_all();
    shmem_put32(&ints[2], &w32, 1, right);
    shmem_barrier_all();
    CHECK((uint32_t)ints[2] == 0xabcd0000u + left);

    /* globals and statics are symmetric */
    long gsrc[8];
    for (int i = 0; i < 8; i++) gsrc[i] = me * 10 + i;
    shmem_long_put(global_arr, gsrc, 8, right);
    shmem_barrier_all();
    for (int i = 0; i < 8; i++) CHECK(global_arr[i] == left * 10 + i);
    CHECK(shmem_long_g(&global_arr[3], right) == me * 10 + 3);
    shmem_barrier_all();

    /* atomics on PE 0's counter: every PE adds */
    long *counter = shmem_calloc(1, sizeof(long));
    shmem_long_atomic_add(counter, me + 1, 0);
    shmem_long_atomic_inc(counter, 0);
    (void)shmem_long_finc(counter, 0);            /* deprecated name */
    shmem_barrier_all();
    if (me == 0) CHECK(*counter == (long)n * (n + 1) / 2 + 2L * n);
    long before = shmem_long_atomic_fetch(counter, 0);
    shmem_barrier_all();
    if (me == 0) {
        CHECK(shmem_long_atomic_compare_swap(counter, before, -5, 0) == before);
        CHECK(shmem_long_atomic_swap(counter, 9, 0) == -5);
        shmem_long_atomic_set(counter, 0xf0, 0);
        CHECK(shmem_ulong_atomic_fetch_and((unsigned long *)counter, 0x30, 0) == 0xf0);
        CHECK(shmem_ulong_atomic_fetch_xor((unsigned long *)counter, 1, 0) == 0x30);
        CHECK(shmem_double_atomic_swap(&d[3], 4.25, me) == 0.0);
        CHECK(shmem_double_atomic_fetch(&d[3], me) == 4.25);
    }
    shmem_barrier_all();

    /* nonblocking fetching atomics (1.5): every PE takes a ticket from PE 0's word, the old
     * values land in local (non-symmetric) fetch buffers by the quiet */
    int *tickets = shmem_calloc(2, sizeof(int));
    int mine[2] = {-1, -1};
    shmem_int_atomic_fetch_inc_nbi(&mine[0], &tickets[0], 0);
    shmem_ctx_int_atomic_fetch_add_nbi(SHMEM_CTX_DEFAULT, &mine[1], &tickets[1], 10, 0);
    shmem_quiet();
    CHECK(mine[0] >= 0 && mine[0] < n);
    CHECK(mine[1] % 10 == 0 && mine[1] >= 0 && mine[1] < 10 * n);
    shmem_barrier_all();
    if (me == 0) CHECK(tickets[0] == n && tickets[1] == 10 * n);
    shmem_barrier_all();
    if (me == n - 1) {
        long old = 0; unsigned long bits = 0; double dv = 0; int cs = 0;
        shmem_long_atomic_swap_nbi(&old, counter, 77, 0);
        shmem_quiet();
        CHECK(old == 0x31);
        shmem_long_atomic_compare_swap_nbi(&old, counter, 76, 5, 0);     /* no match */
        shmem_long_atomic_compare_swap_nbi(&old, counter, 77, 6, 0);     /* match */
        shmem_quiet();
        CHECK(old == 77 && shmem_long_atomic_fetch(counter, 0) == 6);
        shmem_ulong_atomic_fetch_or_nbi(&bits, (unsigned long *)counter, 0x10, 0);
        shmem_ulong_atomic_fetch_and_nbi(&bits, (unsigned long *)counter, 0x12, 0);
        shmem_ctx_ulong_atomic_fetch_xor_nbi(SHMEM_CTX_DEFAULT, &bits, (unsigned long *)counter, 0x3, 0);
        shmem_quiet();
        CHECK(bits == 0x12 && shmem_long_atomic_fetch(counter, 0) == 0x11);
        shmem_double_atomic_fetch_nbi(&dv, &d[3], 0);
        shmem_int_atomic_fetch_nbi(&cs, &tickets[0], 0);
        shmem_quiet();
        CHECK(cs == n && dv == 4.25);                                     /* PE 0's d[3] */
    }
    shmem_barrier_all();

    /* put with signal; wait_until never misses the update */
    uint64_t *sig = shmem_calloc(1, sizeof(uint64_t));
    int *data = shmem_calloc(64, sizeof(int));
    int payload[64];
    for (int i = 0; i < 64; i++) payload[i] = me + i;
    shmem_putmem_signal(data, payload, sizeof payload, sig, 1, SHMEM_SIGNAL_ADD, right);
    CHECK(shmem_signal_wait_until(sig, SHMEM_CMP_GE, 1) == 1);
    for (int i = 0; i < 64; i++) CHECK(data[i] == left + i);
    shmem_int_p(&global_flag, 1, right);           /* a static flag, written through CMA */
    shmem_int_wait_until(&global_flag, SHMEM_CMP_EQ, 1);
    shmem_barrier_all();
    int *flags = shmem_calloc(n, sizeof(int));
    shmem_int_p(&flags[me], 1, 0);
    if (me == 0) {
        shmem_int_wait_until_all(flags, n, NULL, SHMEM_CMP_EQ, 1);
        CHECK(shmem_int_test_all(flags, n, NULL, SHMEM_CMP_EQ, 1));
        CHECK(shmem_int_test(&flags[0], SHMEM_CMP_EQ, 1));
        size_t idx[64];
        CHECK(shmem_int_wait_until_some(flags, n, idx, NULL, SHMEM_CMP_EQ, 1) == (size_t)n && idx[n - 1] == (size_t)(n - 1));
        CHECK(shmem_int_test_some(flags, n, idx, NULL, SHMEM_CMP_EQ, 2) == 0);
    }
    shmem_barrier_all();

    /* locks: a critical section increments a plain heap word of PE 0 */
    long *plain = shmem_calloc(1, sizeof(long));
    for (int i = 0; i < 50; i++) {
        shmem_set_lock(&lock_word);
        long v = shmem_long_g(plain, 0);
        shmem_long_p(plain, v + 1, 0);
        shmem_clear_lock(&lock_word);
    }
    shmem_barrier_all();
    if (me == 0) CHECK(*plain == 50L * n);
    /* test_lock takes a free lock (0) and leaves a held one (1); one PE at a time, as every
     * PE testing at once races for the one lock. */
    for (int p = 0; p < n; p++) {
        if (me == p) CHECK(shmem_test_lock(&lock_word) == 0);
        shmem_barrier_all();
        if (me != p) CHECK(shmem_test_lock(&lock_word) == 1);
        shmem_barrier_all();
        if (me == p) shmem_clear_lock(&lock_word);
        shmem_barrier_all();
    }

    /* team collectives on the world and on a strided split */
    long *bsrc = shmem_malloc(4 * sizeof(long)), *bdst = shmem_malloc(4 * n * sizeof(long));
    for (int i = 0; i < 4; i++) bsrc[i] = me * 1000 + i;
    shmem_broadcastmem(SHMEM_TEAM_WORLD, bdst, bsrc, 4 * sizeof(long), n - 1);
    CHECK(bdst[2] == (n - 1) * 1000 + 2);
    shmem_fcollectmem(SHMEM_TEAM_WORLD, bdst, bsrc, 4 * sizeof(long));
    for (int p = 0; p < n; p++) CHECK(bdst[4 * p + 1] == p * 1000 + 1);
    int *ibc = shmem_malloc(2 * n * sizeof(int));
    int mine2[2] = {me, -me};
    shmem_int_fcollect(SHMEM_TEAM_WORLD, ibc, mine2, 2);
    for (int p = 0; p < n; p++) CHECK(ibc[2 * p] == p && ibc[2 * p + 1] == -p);
    shmem_int_broadcast(SHMEM_TEAM_WORLD, ibc, mine2, 2, 0);
    CHECK(ibc[0] == 0 && ibc[1] == 0);
    shmem_int_collect(SHMEM_TEAM_WORLD, ibc, mine2, me % 2 + 1);
    for (int p = 0, at = 0; p < n; at += p % 2 + 1, p++) CHECK(ibc[at] == p);
    long *sum = shmem_malloc(4 * sizeof(long));
    shmem_long_sum_reduce(SHMEM_TEAM_WORLD, sum, bsrc, 4);
    CHECK(sum[1] == 1000L * n * (n - 1) / 2 + n);
    shmem_long_max_reduce(SHMEM_TEAM_WORLD, sum, bsrc, 4);
    CHECK(sum[0] == (n - 1) * 1000L);
    long *a2a_src = shmem_malloc(n * sizeof(long)), *a2a_dst = shmem_malloc(n * sizeof(long));
    for (int p = 0; p < n; p++) a2a_src[p] = me * 10 + p;
    shmem_alltoallmem(SHMEM_TEAM_WORLD, a2a_dst, a2a_src, sizeof(long));
    for (int p = 0; p < n; p++) CHECK(a2a_dst[p] == p * 10 + me);
    shmem_team_t evens;
    shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (n + 1) / 2, NULL, 0, &evens);
    if (me % 2 == 0) {
        CHECK(evens != SHMEM_TEAM_INVALID && shmem_team_my_pe(evens) == me / 2);
        CHECK(shmem_team_n_pes(evens) == (n + 1) / 2);
        CHECK(shmem_team_translate_pe(evens, 0, SHMEM_TEAM_WORLD) == 0);
        int one = 1, count = 0;
        shmem_int_sum_reduce(evens, &ints[3], &one, 1);
        count = ints[3];
        CHECK(count == (n + 1) / 2);
        shmem_team_destroy(evens);
    } else {
        CHECK(evens == SHMEM_TEAM_INVALID);
    }
    shmem_barrier_all();

    /* deprecated active-set calls with pSync */
    for (int i = 0; i < SHMEM_BCAST_SYNC_SIZE; i++) pSync[i] = SHMEM_SYNC_VALUE;
    long *old = shmem_malloc(2 * n * sizeof(long));
    shmem_barrier_all();
    shmem_broadcast64(old, bsrc, 2, 0, 0, 0, n, pSync);
    if (me != 0) CHECK(old[1] == 1);
    shmem_fcollect64(old, bsrc, 2, 0, 0, n, pSync);
    for (int p = 0; p < n; p++) CHECK(old[2 * p] == p * 1000);
    shmem_alltoall64(a2a_dst, a2a_src, 1, 0, 0, n, pSync);
    for (int p = 0; p < n; p++) CHECK(a2a_dst[p] == p * 10 + me);
    static long to_all_src[2], to_all_dst[2], pwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
    to_all_src[0] = me; to_all_src[1] = -me;
    shmem_long_sum_to_all(to_all_dst, to_all_src, 2, 0, 0, n, pwrk, pSync);
    CHECK(to_all_dst[0] == (long)n * (n - 1) / 2 && to_all_dst[1] == -(long)n * (n - 1) / 2);
    shmem_barrier(0, 0, n, pSync);

    /* contexts */
    shmem_ctx_t ctx;
    CHECK(shmem_ctx_create(SHMEM_CTX_PRIVATE, &ctx) == 0);
    shmem_ctx_long_p(ctx, &x[15], 42, right);
    shmem_ctx_quiet(ctx);
    shmem_ctx_destroy(ctx);
    shmem_barrier_all();
    CHECK(x[15] == 42);

    x = shmem_realloc(x, 1 << 16);
    CHECK(x[15] == 42);
    shmem_free(x); shmem_free(ints); shmem_free(d); shmem_free(counter);
    printf("PE %d: rma ok\n", me);
    shmem_finalize();
    return 0;
}
