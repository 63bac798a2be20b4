/* Teams and contexts of OpenSHMEM 1.5: shmem_team_split_2d, shmem_team_get_config,
 * shmem_team_ptr, shmem_ctx_get_team, contexts of a team (PE numbers relative to the team),
 * the context forms of putmem/getmem_nbi, shmem_pcontrol, the deprecated 4-argument
 * shmem_sync and cache routines. Prints "teams ok" on each PE. */
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "PE %d: check failed at line %d: %s\n", shmem_my_pe(), __LINE__, #c); exit(2); } } while (0)

static long g[8];

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    shmem_pcontrol(0);
    shmem_pcontrol(1, "a profiler's own arguments", 2);

    /* 2D split of the world in rows of 2: x = me % 2, y = me / 2. */
    shmem_team_t xt, yt;
    shmem_team_config_t xc = {.num_contexts = 3}, yc = {.num_contexts = 5};
    CHECK(shmem_team_split_2d(SHMEM_TEAM_WORLD, 2, &xc, SHMEM_TEAM_NUM_CONTEXTS, &xt, &yc, 0, &yt) == 0);
    int row_len = (me / 2) * 2 + 2 <= n ? 2 : 1;
    CHECK(shmem_team_my_pe(xt) == me % 2 && shmem_team_n_pes(xt) == row_len);
    CHECK(shmem_team_my_pe(yt) == me / 2 && shmem_team_n_pes(yt) == (n - me % 2 + 1) / 2);
    CHECK(shmem_team_translate_pe(yt, 0, SHMEM_TEAM_WORLD) == me % 2);
    shmem_team_config_t got = {.num_contexts = -1};
    CHECK(shmem_team_get_config(xt, SHMEM_TEAM_NUM_CONTEXTS, &got) == 0 && got.num_contexts == 3);
    got.num_contexts = -1;
    CHECK(shmem_team_get_config(yt, SHMEM_TEAM_NUM_CONTEXTS, &got) == 0 && got.num_contexts == 0);
    got.num_contexts = -1;
    CHECK(shmem_team_get_config(xt, 0, &got) == 0 && got.num_contexts == -1);
    CHECK(shmem_team_get_config(SHMEM_TEAM_WORLD, SHMEM_TEAM_NUM_CONTEXTS, &got) == 0 && got.num_contexts == 0);
    /* A collective on each. */
    CHECK(shmem_team_sync(xt) == 0 && shmem_team_sync(yt) == 0);
    shmem_team_destroy(xt);
    shmem_team_destroy(yt);
    /* xrange beyond the team: one row; xrange 0: an error. */
    CHECK(shmem_team_split_2d(SHMEM_TEAM_WORLD, n + 3, NULL, 0, &xt, NULL, 0, &yt) == 0);
    CHECK(shmem_team_n_pes(xt) == n && shmem_team_n_pes(yt) == 1 && shmem_team_my_pe(yt) == 0);
    shmem_team_destroy(xt);
    shmem_team_destroy(yt);
    CHECK(shmem_team_split_2d(SHMEM_TEAM_WORLD, 0, NULL, 0, &xt, NULL, 0, &yt) != 0);
    CHECK(xt == SHMEM_TEAM_INVALID && yt == SHMEM_TEAM_INVALID);

    /* The odd PEs' team (reversed: team PE 0 is the highest odd PE), its contexts and
     * pointers. */
    int odd = n / 2, last = n % 2 ? n - 2 : n - 1;
    shmem_team_t odds = SHMEM_TEAM_INVALID;
    if (odd > 0)
        CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, last, -2, odd, NULL, 0, &odds) == 0);
    long *heap = shmem_malloc(8 * sizeof(long));
    for (int i = 0; i < 8; i++) heap[i] = g[i] = -1;
    shmem_barrier_all();
    shmem_ctx_t ctx;
    shmem_team_t back;
    CHECK(shmem_ctx_get_team(SHMEM_CTX_DEFAULT, &back) == 0 && back == SHMEM_TEAM_WORLD);
    CHECK(shmem_ctx_get_team(SHMEM_CTX_INVALID, &back) != 0 && back == SHMEM_TEAM_INVALID);
    CHECK(shmem_team_create_ctx(SHMEM_TEAM_INVALID, 0, &ctx) != 0 && ctx == SHMEM_CTX_INVALID);
    if (me % 2 == 1) {
        int tme = shmem_team_my_pe(odds);
        CHECK(tme == (last - me) / 2);
        CHECK(shmem_team_create_ctx(odds, 0, &ctx) == 0);
        CHECK(shmem_ctx_get_team(ctx, &back) == 0 && back == odds);
        /* Team PE 0 is world PE `last`: through the team's context, and through
         * shmem_team_ptr. */
        long v = 100 + me;
        shmem_ctx_long_put(ctx, &g[tme], &v, 1, 0);
        shmem_ctx_putmem_nbi(ctx, &heap[tme], &v, sizeof v, 0);
        shmem_ctx_quiet(ctx);
        long w = -1;
        shmem_ctx_getmem_nbi(ctx, &w, &heap[tme], sizeof w, 0);
        shmem_ctx_quiet(ctx);
        CHECK(w == 100 + me);
        long *p = shmem_team_ptr(odds, heap, 0);
        CHECK(p == shmem_ptr(heap, last));
        CHECK(shmem_team_ptr(odds, heap, odd) == NULL);
        CHECK(shmem_team_ptr(odds, &g[0], tme) == &g[0]);
        shmem_ctx_destroy(ctx);
    } else {
        CHECK(odds == SHMEM_TEAM_INVALID);
        CHECK(shmem_ctx_create(SHMEM_CTX_SERIALIZED, &ctx) == 0);
        CHECK(shmem_ctx_get_team(ctx, &back) == 0 && back == SHMEM_TEAM_WORLD);
        shmem_ctx_destroy(ctx);
    }
    shmem_barrier_all();
    if (me == last && odd > 0) {
        for (int i = 0; i < odd; i++) {
            CHECK(g[i] == 100 + last - 2 * i);
            CHECK(heap[i] == 100 + last - 2 * i);
        }
    }
    if (odds != SHMEM_TEAM_INVALID) shmem_team_destroy(odds);

    /* Deprecated: the active-set shmem_sync and the cache routines. */
    static long psync[SHMEM_SYNC_SIZE];
    shmem_sync(0, 0, n, psync);
    shmem_set_cache_inv();
    shmem_clear_cache_inv();
    shmem_set_cache_line_inv(heap);
    shmem_clear_cache_line_inv(heap);
    shmem_udcflush();
    shmem_udcflush_line(heap);
    shmem_free(heap);
    shmem_barrier_all();
    printf("teams ok\n");
    shmem_finalize();
    return 0;
}
