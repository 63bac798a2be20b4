/* Collectives and signal forms checked against what OpenSHMEM 1.5 (and 1.4 for the deprecated
 * names) says they produce: active-set shmem_collect32/64 (each PE its own count, zero
 * included, strided sets), strided alltoalls (team: shmem_alltoallsmem, shmem_TYPE_alltoalls
 * on the world and a split team; active set: shmem_alltoalls32/64), the bitwise
 * shmem_TYPE_{and,or,xor}_to_all, and put-with-signal in its typed, sized, context and _nbi
 * forms. Runs at any PE count, on one node or several. Prints "coll ok" on each PE. */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "PE %d: check failed at line %d: %s\n", shmem_my_pe(), __LINE__, #c); exit(2); } } while (0)

static long pSync[SHMEM_COLLECT_SYNC_SIZE];
static int pWrk_int[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
static short pWrk_short[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
static long pWrk_long[SHMEM_REDUCE_MIN_WRKDATA_SIZE];

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    int32_t *c32s = shmem_malloc(64 * sizeof(int32_t));
    int32_t *c32d = shmem_malloc(512 * sizeof(int32_t));
    int64_t *c64s = shmem_malloc(64 * sizeof(int64_t));
    int64_t *c64d = shmem_malloc(512 * sizeof(int64_t));

    /* collect32 over every PE: PE p contributes p + 1 elements 1000p + k, in PE order. */
    for (int k = 0; k <= me; k++) c32s[k] = 1000 * me + k;
    for (int i = 0; i < 512; i++) c32d[i] = -1;
    shmem_barrier_all();
    shmem_collect32(c32d, c32s, (size_t)me + 1, 0, 0, n, pSync);
    int at = 0;
    for (int p = 0; p < n; p++)
        for (int k = 0; k <= p; k++) CHECK(c32d[at++] == 1000 * p + k);
    CHECK(c32d[at] == -1);

    /* collect64 over the even PEs (logPE_stride 1), PE 2 contributing nothing. */
    int evens = (n + 1) / 2;
    for (int i = 0; i < 512; i++) c64d[i] = -1;
    if (me % 2 == 0) {
        size_t cnt = me == 2 ? 0 : (size_t)me / 2 + 2;
        for (size_t k = 0; k < cnt; k++) c64s[k] = ((int64_t)me << 40) + (int64_t)k;
        shmem_collect64(c64d, c64s, cnt, 0, 1, evens, pSync);
        at = 0;
        for (int p = 0; p < n; p += 2) {
            size_t pc = p == 2 ? 0 : (size_t)p / 2 + 2;
            for (size_t k = 0; k < pc; k++) CHECK(c64d[at++] == ((int64_t)p << 40) + (int64_t)k);
        }
        CHECK(c64d[at] == -1);
    }
    shmem_barrier_all();

    /* Team alltoalls: element k of the block for PE j is source[(j*nelems + k)*sst]; it lands
     * at dest[(i*nelems + k)*dst] of PE j (i = the sender); the gaps stay untouched. */
    const int nel = 2, dstr = 2, sstr = 3;
    int *as = shmem_malloc(sizeof(int) * (size_t)(n * nel * sstr));
    int *ad = shmem_malloc(sizeof(int) * (size_t)(n * nel * dstr));
    for (int i = 0; i < n * nel * sstr; i++) as[i] = -5;
    for (int j = 0; j < n; j++)
        for (int k = 0; k < nel; k++) as[(j * nel + k) * sstr] = me * 10000 + j * 100 + k;
    for (int i = 0; i < n * nel * dstr; i++) ad[i] = -9;
    CHECK(shmem_int_alltoalls(SHMEM_TEAM_WORLD, ad, as, dstr, sstr, (size_t)nel) == 0);
    for (int i = 0; i < n; i++)
        for (int k = 0; k < nel; k++) {
            CHECK(ad[(i * nel + k) * dstr] == i * 10000 + me * 100 + k);
            CHECK(ad[(i * nel + k) * dstr + 1] == -9);
        }

    /* shmem_alltoallsmem: bytes, dst 1, sst 2, one element per PE. */
    unsigned char *bs = shmem_malloc((size_t)(2 * n)), *bd = shmem_malloc((size_t)n);
    for (int j = 0; j < n; j++) { bs[2 * j] = (unsigned char)(16 * me + j); bs[2 * j + 1] = 0xee; }
    CHECK(shmem_alltoallsmem(SHMEM_TEAM_WORLD, bd, bs, 1, 2, 1) == 0);
    for (int i = 0; i < n; i++) CHECK(bd[i] == (unsigned char)(16 * i + me));

    /* shmem_long_alltoalls on a split team of the even PEs (team ranks, not world ranks). */
    long *ls = shmem_malloc(sizeof(long) * (size_t)(2 * n));
    long *ld = shmem_malloc(sizeof(long) * (size_t)(2 * n));
    shmem_team_t even = SHMEM_TEAM_INVALID;
    shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, evens, NULL, 0, &even);
    if (me % 2 == 0) {
        CHECK(even != SHMEM_TEAM_INVALID);
        int tme = shmem_team_my_pe(even);
        for (int j = 0; j < evens; j++) ls[j] = 100 * tme + j;
        for (int i = 0; i < 2 * evens; i++) ld[i] = -3;
        CHECK(shmem_long_alltoalls(even, ld, ls, 2, 1, 1) == 0);
        for (int i = 0; i < evens; i++) { CHECK(ld[2 * i] == 100 * i + tme); CHECK(ld[2 * i + 1] == -3); }
        shmem_team_destroy(even);
    } else {
        CHECK(even == SHMEM_TEAM_INVALID);
    }
    shmem_barrier_all();

    /* alltoalls64 over every PE: dst 1, sst 2, 3 elements per block. */
    for (int j = 0; j < n; j++)
        for (int k = 0; k < 3; k++) { c64s[(j * 3 + k) * 2] = ((int64_t)me << 32) + 10 * j + k; c64s[(j * 3 + k) * 2 + 1] = -8; }
    shmem_barrier_all();
    shmem_alltoalls64(c64d, c64s, 1, 2, 3, 0, 0, n, pSync);
    for (int i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) CHECK(c64d[i * 3 + k] == ((int64_t)i << 32) + 10 * me + k);
    shmem_barrier_all();

    /* alltoalls32 over the odd PEs: dst 3, sst 1, 2 elements per block. */
    int odds = n / 2;
    if (me % 2 == 1) {
        int idx = me / 2;
        for (int j = 0; j < odds; j++)
            for (int k = 0; k < 2; k++) c32s[j * 2 + k] = 1000 * idx + 10 * j + k;
        for (int i = 0; i < 512; i++) c32d[i] = -4;
        shmem_alltoalls32(c32d, c32s, 3, 1, 2, 1, 1, odds, pSync);
        for (int i = 0; i < odds; i++)
            for (int k = 0; k < 2; k++) {
                CHECK(c32d[(i * 2 + k) * 3] == 1000 * i + 10 * idx + k);
                CHECK(c32d[(i * 2 + k) * 3 + 1] == -4);
            }
    }
    shmem_barrier_all();

    /* Bitwise *_to_all: PE p contributes (1 << p) | (k << 8) for element k. */
    int *is = shmem_malloc(4 * sizeof(int)), *id = shmem_malloc(4 * sizeof(int));
    for (int k = 0; k < 4; k++) is[k] = (1 << me) | (k << 8);
    shmem_barrier_all();
    int all = (1 << n) - 1;
    shmem_int_or_to_all(id, is, 4, 0, 0, n, pWrk_int, pSync);
    for (int k = 0; k < 4; k++) CHECK(id[k] == (all | (k << 8)));
    shmem_int_and_to_all(id, is, 4, 0, 0, n, pWrk_int, pSync);
    for (int k = 0; k < 4; k++) CHECK(id[k] == ((n == 1 ? 1 : 0) | (k << 8)));
    shmem_int_xor_to_all(id, is, 4, 0, 0, n, pWrk_int, pSync);
    for (int k = 0; k < 4; k++) CHECK(id[k] == (all | (n % 2 ? k << 8 : 0)));
    short *ss = shmem_malloc(2 * sizeof(short)), *sd = shmem_malloc(2 * sizeof(short));
    long *lxs = shmem_malloc(sizeof(long)), *lxd = shmem_malloc(sizeof(long));
    ss[0] = (short)(1 << me); ss[1] = 0x70;
    *lxs = 3L << (2 * me);
    shmem_barrier_all();
    if (me % 2 == 0) {
        shmem_short_or_to_all(sd, ss, 2, 0, 1, evens, pWrk_short, pSync);
        short want = 0;
        for (int p = 0; p < n; p += 2) want |= (short)(1 << p);
        CHECK(sd[0] == want && sd[1] == 0x70);
    }
    /* shmem_char_max_reduce (char joined the 1.5 sum/prod/min/max types). */
    char *cs = shmem_malloc(2), *cd = shmem_malloc(2);
    cs[0] = (char)(10 + me); cs[1] = (char)(-me);
    CHECK(shmem_char_max_reduce(SHMEM_TEAM_WORLD, cd, cs, 2) == 0);
    CHECK(cd[0] == (char)(10 + n - 1) && cd[1] == 0);
    CHECK(shmem_char_sum_reduce(SHMEM_TEAM_WORLD, cd, cs, 1) == 0);
    CHECK(cd[0] == (char)(10 * n + n * (n - 1) / 2));
    shmem_long_xor_to_all(lxd, lxs, 1, 0, 0, n, pWrk_long, pSync);
    long lwant = 0;
    for (int p = 0; p < n; p++) lwant ^= 3L << (2 * p);
    CHECK(*lxd == lwant);
    shmem_barrier_all();

    /* put-with-signal, each form once: PE me writes to PE next, adding 1 to its signal;
     * whoever sees the signal sees the data. */
    int next = (me + 1) % n, prev = (me + n - 1) % n;
    uint64_t *sig = shmem_calloc(6, sizeof(uint64_t));   /* one word per form: contexts are separate streams */
    long *pl = shmem_calloc(4, sizeof(long));
    int *pi = shmem_calloc(4, sizeof(int));
    double *pd = shmem_calloc(4, sizeof(double));
    uint32_t *p32 = shmem_calloc(4, sizeof(uint32_t));
    unsigned char *pm = shmem_calloc(16, 1);
    short *psh = shmem_calloc(4, sizeof(short));
    shmem_ctx_t ctx;
    CHECK(shmem_ctx_create(0, &ctx) == 0);
    long vl[4] = {me, me + 1, me + 2, me + 3};
    shmem_long_put_signal(pl, vl, 4, &sig[0], 1, SHMEM_SIGNAL_ADD, next);
    shmem_signal_wait_until(&sig[0], SHMEM_CMP_GE, 1);
    for (int i = 0; i < 4; i++) CHECK(pl[i] == prev + i);
    int vi[4] = {-me, 7, 8, 9};
    shmem_int_put_signal_nbi(pi, vi, 4, &sig[1], 1, SHMEM_SIGNAL_ADD, next);
    shmem_signal_wait_until(&sig[1], SHMEM_CMP_GE, 1);
    CHECK(pi[0] == -prev && pi[3] == 9);
    double vd[4] = {0.5 * me, 1, 2, 3};
    shmem_ctx_double_put_signal(ctx, pd, vd, 4, &sig[2], 1, SHMEM_SIGNAL_ADD, next);
    shmem_signal_wait_until(&sig[2], SHMEM_CMP_GE, 1);
    CHECK(pd[0] == 0.5 * prev && pd[3] == 3);
    uint32_t v32[4] = {(uint32_t)me + 40, 1, 2, 3};
    shmem_put32_signal(p32, v32, 4, &sig[3], 1, SHMEM_SIGNAL_ADD, next);
    shmem_signal_wait_until(&sig[3], SHMEM_CMP_GE, 1);
    CHECK(p32[0] == (uint32_t)prev + 40);
    unsigned char vm[16];
    for (int i = 0; i < 16; i++) vm[i] = (unsigned char)(me * 16 + i);
    shmem_ctx_putmem_signal_nbi(ctx, pm, vm, 16, &sig[4], 1, SHMEM_SIGNAL_ADD, next);
    shmem_signal_wait_until(&sig[4], SHMEM_CMP_GE, 1);
    for (int i = 0; i < 16; i++) CHECK(pm[i] == (unsigned char)(prev * 16 + i));
    short vs[4] = {(short)(me + 5), 0, 0, 6};
    shmem_ctx_short_put_signal_nbi(ctx, psh, vs, 4, &sig[5], 100, SHMEM_SIGNAL_SET, next);
    CHECK(shmem_signal_wait_until(&sig[5], SHMEM_CMP_EQ, 100) == 100);
    CHECK(psh[0] == prev + 5 && psh[3] == 6);
    shmem_ctx_destroy(ctx);

    /* The deprecated waits: shmem_wait / shmem_TYPE_wait wait while the word equals the
     * value, shmem_wait_until compares like shmem_long_wait_until. */
    long *wl = shmem_calloc(2, sizeof(long));
    int *wi = shmem_calloc(1, sizeof(int));
    shmem_long_p(&wl[0], 5, next);
    shmem_int_p(wi, 3, next);
    shmem_long_p(&wl[1], 9, next);
    shmem_quiet();
    shmem_wait(&wl[0], 0);
    CHECK(wl[0] == 5);
    shmem_int_wait(wi, 0);
    CHECK(*wi == 3);
    shmem_wait_until(&wl[1], SHMEM_CMP_EQ, 9);
    shmem_barrier_all();

    printf("coll ok\n");
    shmem_finalize();
    return 0;
}
