/* OpenSHMEM 1.5 rules weft broke before, one check each (issue 34): zero-byte allocations,
 * alignments above the page size, queries and splits of invalid teams, fairness of the _any
 * waits, shmem_ptr on this PE's own objects, a heap that fits common benchmark buffers.
 * Prints "conform ok" on each PE. */
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "PE %d: check failed at line %d: %s\n", shmem_my_pe(), __LINE__, #c); exit(2); } } while (0)

static long own_global;

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();

    /* Zero bytes: NULL (every PE still calls, so every PE still synchronises). */
    CHECK(shmem_malloc(0) == NULL);
    CHECK(shmem_calloc(0, 8) == NULL);
    CHECK(shmem_calloc(8, 0) == NULL);
    CHECK(shmem_align(64, 0) == NULL);
    CHECK(shmem_malloc_with_hints(0, SHMEM_MALLOC_ATOMICS_REMOTE) == NULL);
    CHECK(shmem_realloc(NULL, 0) == NULL);
    CHECK(shmem_realloc(shmem_malloc(8), 0) == NULL);

    /* Alignments above the page size hold on every PE: the block is symmetric. */
    for (size_t a = 4096; a <= (size_t)4 << 20; a <<= 1) {
        char *p = shmem_align(a, 100);
        CHECK(p != NULL && ((uintptr_t)p & (a - 1)) == 0);
        shmem_char_p(p + 99, (char)(me + 1), (me + 1) % n);
        shmem_barrier_all();
        CHECK(p[99] == (char)((me + n - 1) % n + 1));
        shmem_free(p);
    }
    long *h = shmem_malloc_with_hints(64, SHMEM_MALLOC_ATOMICS_REMOTE | SHMEM_MALLOC_SIGNAL_REMOTE);
    CHECK(h != NULL);
    *h = 0;
    shmem_barrier_all();
    shmem_long_atomic_inc(h, 0);
    shmem_barrier_all();
    if (me == 0) CHECK(*h == n);
    shmem_free(h);

    /* Team queries on SHMEM_TEAM_INVALID are -1 (or NULL, or nonzero), not an abort. */
    long *buf = shmem_malloc(64);
    shmem_team_config_t conf;
    CHECK(shmem_team_my_pe(SHMEM_TEAM_INVALID) == -1);
    CHECK(shmem_team_n_pes(SHMEM_TEAM_INVALID) == -1);
    CHECK(shmem_team_translate_pe(SHMEM_TEAM_INVALID, 0, SHMEM_TEAM_WORLD) == -1);
    CHECK(shmem_team_translate_pe(SHMEM_TEAM_WORLD, 0, SHMEM_TEAM_INVALID) == -1);
    CHECK(shmem_team_translate_pe(SHMEM_TEAM_WORLD, n, SHMEM_TEAM_WORLD) == -1);
    CHECK(shmem_team_get_config(SHMEM_TEAM_INVALID, SHMEM_TEAM_NUM_CONTEXTS, &conf) != 0);
    CHECK(shmem_team_ptr(SHMEM_TEAM_INVALID, buf, 0) == NULL);
    CHECK(shmem_team_sync(SHMEM_TEAM_INVALID) != 0);
    shmem_team_destroy(SHMEM_TEAM_INVALID);

    /* A triplet that does not fit the parent: nonzero and SHMEM_TEAM_INVALID, no team. */
    shmem_team_t t = SHMEM_TEAM_WORLD;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, n + 1, NULL, 0, &t) != 0);
    CHECK(t == SHMEM_TEAM_INVALID);
    t = SHMEM_TEAM_WORLD;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, n, 1, 1, NULL, 0, &t) != 0 && t == SHMEM_TEAM_INVALID);
    t = SHMEM_TEAM_WORLD;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, 0, NULL, 0, &t) != 0 && t == SHMEM_TEAM_INVALID);
    if (n > 1) {
        t = SHMEM_TEAM_WORLD;
        CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 0, 2, NULL, 0, &t) != 0 && t == SHMEM_TEAM_INVALID);
    }
    t = SHMEM_TEAM_WORLD;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_INVALID, 0, 1, 1, NULL, 0, &t) != 0 && t == SHMEM_TEAM_INVALID);
    /* and a good one still works afterwards */
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, n, NULL, 0, &t) == 0);
    CHECK(shmem_team_n_pes(t) == n && shmem_team_my_pe(t) == me);
    shmem_team_destroy(t);

    /* _any on variables that all stay satisfied: a program that waits again must see every
     * index (a lowest-index choice would return 0 forever). */
    static int flags[16];
    const size_t k = 16;
    for (size_t i = 0; i < k; i++) flags[i] = 1;
    int seen[16] = {0}, distinct = 0;
    for (size_t round = 0; round < 4 * k && distinct < (int)k; round++) {
        size_t i = (round & 1) ? shmem_int_test_any(flags, k, NULL, SHMEM_CMP_EQ, 1)
                               : shmem_int_wait_until_any(flags, k, NULL, SHMEM_CMP_EQ, 1);
        CHECK(i < k);
        if (!seen[i]) { seen[i] = 1; distinct++; }
    }
    CHECK(distinct == (int)k);
    int cmp_values[16];
    for (size_t i = 0; i < k; i++) cmp_values[i] = 1;
    distinct = 0;
    for (size_t i = 0; i < k; i++) seen[i] = 0;
    for (size_t round = 0; round < 2 * k && distinct < (int)k; round++) {
        size_t i = shmem_int_test_any_vector(flags, k, NULL, SHMEM_CMP_EQ, cmp_values);
        CHECK(i < k);
        if (!seen[i]) { seen[i] = 1; distinct++; }
    }
    CHECK(distinct == (int)k);

    /* shmem_ptr on this PE's own objects: their own addresses. */
    CHECK(shmem_ptr(&own_global, me) == &own_global);
    CHECK(shmem_ptr(buf, me) == buf);
    CHECK(shmem_addr_accessible(&own_global, me));

    /* The default heap takes common benchmark buffers (OSU's put/get tests allocate a few
     * MiB per buffer; a 4 MiB x 64 window is 256 MiB). */
    char *big = shmem_malloc((size_t)256 << 20);
    CHECK(big != NULL);
    shmem_free(big);

    shmem_free(buf);
    shmem_barrier_all();
    printf("conform ok\n");
    shmem_finalize();
    return 0;
}
