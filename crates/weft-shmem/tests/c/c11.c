/* Calls every C11 type-generic routine of OpenSHMEM 1.5 once per type of its table, with and
 * without a context where it has one, and checks what each call did. Built with -std=c11 -Wall
 * -Werror: a generic that chose the routine of another type would pass a pointer of the wrong
 * type (a warning, so an error). The symmetric objects are globals (statics of each test) and
 * heap blocks. Prints "c11 ok" on each PE. */
#include <complex.h>
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>

static int me, npes, right, left;
static shmem_ctx_t ctx;

#define CHECK(c, what)                                                                       \
    do {                                                                                     \
        if (!(c)) {                                                                          \
            fprintf(stderr, "PE %d: %s: check failed at line %d: %s\n", me, what, __LINE__, \
                    #c);                                                                     \
            exit(2);                                                                         \
        }                                                                                    \
    } while (0)

/* Every standard RMA type, by its C type (the fixed-width ones select the routine of the type
 * they name). */
#define RMA_TYPES(X)                                                                         \
    X(float, "float") X(double, "double") X(long double, "long double") X(char, "char")      \
    X(signed char, "signed char") X(short, "short") X(int, "int") X(long, "long")            \
    X(long long, "long long") X(unsigned char, "unsigned char")                              \
    X(unsigned short, "unsigned short") X(unsigned int, "unsigned int")                      \
    X(unsigned long, "unsigned long") X(unsigned long long, "unsigned long long")            \
    X(int8_t, "int8_t") X(int16_t, "int16_t") X(int32_t, "int32_t") X(int64_t, "int64_t")    \
    X(uint8_t, "uint8_t") X(uint16_t, "uint16_t") X(uint32_t, "uint32_t")                    \
    X(uint64_t, "uint64_t") X(size_t, "size_t") X(ptrdiff_t, "ptrdiff_t")
#define SYNC_TYPES(X)                                                                        \
    X(short, "short") X(int, "int") X(long, "long") X(long long, "long long")                \
    X(unsigned short, "unsigned short") X(unsigned int, "unsigned int")                      \
    X(unsigned long, "unsigned long") X(unsigned long long, "unsigned long long")            \
    X(int32_t, "int32_t") X(int64_t, "int64_t") X(uint32_t, "uint32_t") X(uint64_t, "uint64_t") \
    X(size_t, "size_t") X(ptrdiff_t, "ptrdiff_t")
#define AMO_TYPES(X)                                                                         \
    X(int, "int") X(long, "long") X(long long, "long long") X(unsigned int, "unsigned int")  \
    X(unsigned long, "unsigned long") X(unsigned long long, "unsigned long long")            \
    X(int32_t, "int32_t") X(int64_t, "int64_t") X(uint32_t, "uint32_t") X(uint64_t, "uint64_t") \
    X(size_t, "size_t") X(ptrdiff_t, "ptrdiff_t")
#define AMO_EXT_ONLY(X) X(float, "float") X(double, "double")
#define AMO_BIT_TYPES(X)                                                                     \
    X(unsigned int, "unsigned int") X(unsigned long, "unsigned long")                        \
    X(unsigned long long, "unsigned long long") X(int32_t, "int32_t") X(int64_t, "int64_t")  \
    X(uint32_t, "uint32_t") X(uint64_t, "uint64_t")
#define OLD_AMO_TYPES(X) X(int, "int") X(long, "long") X(long long, "long long")
#define MINMAX_TYPES(X)                                                                      \
    X(char, "char") X(signed char, "signed char") X(short, "short") X(int, "int")            \
    X(long, "long") X(long long, "long long") X(ptrdiff_t, "ptrdiff_t")                      \
    X(unsigned char, "unsigned char") X(unsigned short, "unsigned short")                    \
    X(unsigned int, "unsigned int") X(unsigned long, "unsigned long")                        \
    X(unsigned long long, "unsigned long long") X(int8_t, "int8_t") X(int16_t, "int16_t")    \
    X(int32_t, "int32_t") X(int64_t, "int64_t") X(uint8_t, "uint8_t") X(uint16_t, "uint16_t") \
    X(uint32_t, "uint32_t") X(uint64_t, "uint64_t") X(size_t, "size_t") X(float, "float")     \
    X(double, "double") X(long double, "long double")
#define BIT_REDUCE_TYPES(X)                                                                  \
    X(unsigned char, "unsigned char") X(unsigned short, "unsigned short")                    \
    X(unsigned int, "unsigned int") X(unsigned long, "unsigned long")                        \
    X(unsigned long long, "unsigned long long") X(int8_t, "int8_t") X(int16_t, "int16_t")    \
    X(int32_t, "int32_t") X(int64_t, "int64_t") X(uint8_t, "uint8_t") X(uint16_t, "uint16_t") \
    X(uint32_t, "uint32_t") X(uint64_t, "uint64_t") X(size_t, "size_t")

/* value i of PE p's source, in every RMA type */
#define V(T, p, i) ((T)(((p) * 8 + (i)) % 100 + 1))

/* shmem_put, get, p, g, put_nbi, get_nbi, iput, iget, put_signal(_nbi): each with and
 * without a context; then the team collectives on the type. */
#define RMA_TEST(T, NAME)                                                                    \
    {                                                                                        \
        static T dst[8];                                                                     \
        static uint64_t sig;                                                                 \
        T src[8], back[8];                                                                   \
        for (int i = 0; i < 8; i++) src[i] = V(T, me, i);                                    \
        shmem_barrier_all();                                                                 \
        shmem_put(dst, src, 2, right);                                                       \
        shmem_put(ctx, dst + 2, src + 2, 2, right);                                          \
        shmem_p(dst + 4, src[4], right);                                                     \
        shmem_p(ctx, dst + 5, src[5], right);                                                \
        shmem_put_nbi(dst + 6, src + 6, 1, right);                                           \
        shmem_put_nbi(ctx, dst + 7, src + 7, 1, right);                                      \
        shmem_ctx_quiet(ctx);                                                                \
        shmem_barrier_all();                                                                 \
        for (int i = 0; i < 8; i++) CHECK(dst[i] == V(T, left, i), NAME " put");            \
        shmem_get(back, dst, 2, right);                                                      \
        shmem_get(ctx, back + 2, dst + 2, 2, right);                                         \
        back[4] = shmem_g(dst + 4, right);                                                   \
        back[5] = shmem_g(ctx, (const T *)dst + 5, right);                                   \
        shmem_get_nbi(back + 6, dst + 6, 1, right);                                          \
        shmem_get_nbi(ctx, back + 7, dst + 7, 1, right);                                     \
        shmem_quiet();                                                                       \
        shmem_ctx_quiet(ctx);                                                                \
        for (int i = 0; i < 8; i++) CHECK(back[i] == V(T, me, i), NAME " get");             \
        shmem_barrier_all();                                                                 \
        shmem_iput(dst, src, 2, 1, 2, right);     /* dst[0] = src[0], dst[2] = src[1] */      \
        shmem_iput(ctx, dst + 4, src + 4, 2, 1, 2, right); /* dst[4], dst[6] */               \
        shmem_barrier_all();                                                                 \
        CHECK(dst[0] == V(T, left, 0) && dst[2] == V(T, left, 1), NAME " iput");            \
        CHECK(dst[4] == V(T, left, 4) && dst[6] == V(T, left, 5), NAME " ctx iput");        \
        shmem_iget(back, dst, 1, 2, 2, right);    /* back[0..1] = dst[0], dst[2] */           \
        shmem_iget(ctx, back + 2, dst + 4, 1, 2, 2, right);                                  \
        CHECK(back[0] == V(T, me, 0) && back[1] == V(T, me, 1), NAME " iget");              \
        CHECK(back[2] == V(T, me, 4) && back[3] == V(T, me, 5), NAME " ctx iget");          \
        shmem_barrier_all();                                                                 \
        shmem_put_signal(dst, src + 1, 2, &sig, 1, SHMEM_SIGNAL_ADD, right);                 \
        shmem_put_signal_nbi(dst + 2, src + 3, 2, &sig, 1, SHMEM_SIGNAL_ADD, right);         \
        shmem_put_signal(ctx, dst + 4, src + 5, 1, &sig, 1, SHMEM_SIGNAL_ADD, right);        \
        shmem_put_signal_nbi(ctx, dst + 5, src + 6, 1, &sig, 1, SHMEM_SIGNAL_ADD, right);    \
        shmem_ctx_quiet(ctx);                                                                \
        shmem_quiet();                                                                       \
        shmem_signal_wait_until(&sig, SHMEM_CMP_EQ, 4);                                      \
        for (int i = 0; i < 6; i++) CHECK(dst[i] == V(T, left, i + 1), NAME " put_signal"); \
        sig = 0;                                                                             \
        shmem_barrier_all();                                                                 \
        T *all = shmem_calloc(8 * npes, sizeof(T));                                          \
        T *mine = shmem_malloc(8 * npes * sizeof(T));                                        \
        for (int i = 0; i < 8 * npes; i++) mine[i] = V(T, me, i);                            \
        shmem_barrier_all();                                                                 \
        CHECK(shmem_broadcast(SHMEM_TEAM_WORLD, all, mine, 3, npes - 1) == 0, NAME);         \
        for (int i = 0; i < 3; i++) CHECK(all[i] == V(T, npes - 1, i), NAME " broadcast");  \
        CHECK(shmem_fcollect(SHMEM_TEAM_WORLD, all, mine, 2) == 0, NAME);                    \
        for (int p = 0; p < npes; p++)                                                       \
            for (int i = 0; i < 2; i++)                                                      \
                CHECK(all[2 * p + i] == V(T, p, i), NAME " fcollect");                       \
        CHECK(shmem_collect(SHMEM_TEAM_WORLD, all, mine, 1) == 0, NAME);                     \
        for (int p = 0; p < npes; p++) CHECK(all[p] == V(T, p, 0), NAME " collect");         \
        CHECK(shmem_alltoall(SHMEM_TEAM_WORLD, all, mine, 2) == 0, NAME);                    \
        for (int p = 0; p < npes; p++)                                                       \
            for (int i = 0; i < 2; i++)                                                      \
                CHECK(all[2 * p + i] == V(T, p, 2 * me + i), NAME " alltoall");              \
        CHECK(shmem_alltoalls(SHMEM_TEAM_WORLD, all, mine, 1, 2, 1) == 0, NAME);             \
        for (int p = 0; p < npes; p++) CHECK(all[p] == V(T, p, 2 * me), NAME " alltoalls");  \
        shmem_free(mine);                                                                    \
        shmem_free(all);                                                                     \
    }

/* shmem_wait_until, test, wait and their set and vector forms: PE p sets flags[p] on every
 * PE, then each waits for and tests every flag. */
#define SYNC_TEST(T, NAME)                                                                   \
    {                                                                                        \
        static T flags[64];                                                                  \
        static T ones[64];                                                                   \
        size_t idx[64];                                                                      \
        for (int i = 0; i < npes; i++) ones[i] = 1;                                          \
        shmem_barrier_all();                                                                 \
        for (int p = 0; p < npes; p++) shmem_p(&flags[me], (T)1, p);                         \
        shmem_quiet();                                                                       \
        shmem_wait_until(&flags[left], SHMEM_CMP_EQ, (T)1);                                  \
        shmem_wait(&flags[left], (T)0);                                                      \
        CHECK(shmem_test(&flags[left], SHMEM_CMP_NE, (T)0), NAME " test");                   \
        shmem_wait_until_all(flags, npes, NULL, SHMEM_CMP_EQ, (T)1);                         \
        CHECK(shmem_wait_until_any(flags, npes, NULL, SHMEM_CMP_EQ, (T)1) < (size_t)npes,    \
              NAME " wait_until_any");                                                       \
        CHECK(shmem_wait_until_some(flags, npes, idx, NULL, SHMEM_CMP_EQ, (T)1) ==           \
                  (size_t)npes, NAME " wait_until_some");                                    \
        shmem_wait_until_all_vector(flags, npes, NULL, SHMEM_CMP_EQ, ones);                  \
        CHECK(shmem_wait_until_any_vector(flags, npes, NULL, SHMEM_CMP_EQ, ones) <           \
                  (size_t)npes, NAME " wait_until_any_vector");                              \
        CHECK(shmem_wait_until_some_vector(flags, npes, idx, NULL, SHMEM_CMP_EQ, ones) ==    \
                  (size_t)npes, NAME " wait_until_some_vector");                             \
        CHECK(shmem_test_all(flags, npes, NULL, SHMEM_CMP_EQ, (T)1) == 1, NAME " test_all"); \
        CHECK(shmem_test_any(flags, npes, NULL, SHMEM_CMP_GT, (T)1) == SIZE_MAX,             \
              NAME " test_any");                                                             \
        CHECK(shmem_test_some(flags, npes, idx, NULL, SHMEM_CMP_EQ, (T)1) == (size_t)npes,   \
              NAME " test_some");                                                            \
        CHECK(shmem_test_all_vector(flags, npes, NULL, SHMEM_CMP_EQ, ones) == 1,             \
              NAME " test_all_vector");                                                      \
        CHECK(shmem_test_any_vector(flags, npes, NULL, SHMEM_CMP_NE, ones) == SIZE_MAX,      \
              NAME " test_any_vector");                                                      \
        CHECK(shmem_test_some_vector(flags, npes, idx, NULL, SHMEM_CMP_EQ, ones) ==          \
                  (size_t)npes, NAME " test_some_vector");                                   \
        shmem_barrier_all();                                                                 \
        for (int i = 0; i < npes; i++) flags[i] = 0;                                         \
    }

/* A sequence of AMOs on this PE's word on its right neighbour (only this PE touches it),
 * through the default context (C = nothing) or ctx. */
#define AMO_SEQ(T, NAME, ...)                                                                \
    {                                                                                        \
        static T w;                                                                          \
        T f = 0;                                                                             \
        shmem_barrier_all();                                                                 \
        shmem_atomic_set(__VA_ARGS__ &w, (T)10, right);                                      \
        CHECK(shmem_atomic_fetch(__VA_ARGS__ &w, right) == (T)10, NAME " fetch");            \
        CHECK(shmem_atomic_swap(__VA_ARGS__ &w, (T)20, right) == (T)10, NAME " swap");       \
        CHECK(shmem_atomic_compare_swap(__VA_ARGS__ &w, (T)20, (T)30, right) == (T)20,       \
              NAME " compare_swap");                                                         \
        CHECK(shmem_atomic_fetch_inc(__VA_ARGS__ &w, right) == (T)30, NAME " fetch_inc");    \
        shmem_atomic_inc(__VA_ARGS__ &w, right);                                             \
        CHECK(shmem_atomic_fetch_add(__VA_ARGS__ &w, (T)5, right) == (T)32, NAME " fetch_add"); \
        shmem_atomic_add(__VA_ARGS__ &w, (T)3, right);                                       \
        shmem_atomic_fetch_nbi(__VA_ARGS__ &f, &w, right);                                   \
        shmem_quiet();                                                                       \
        shmem_ctx_quiet(ctx);                                                                \
        CHECK(f == (T)40, NAME " fetch_nbi");                                                \
        shmem_atomic_swap_nbi(__VA_ARGS__ &f, &w, (T)50, right);                             \
        shmem_quiet();                                                                       \
        shmem_ctx_quiet(ctx);                                                                \
        CHECK(f == (T)40, NAME " swap_nbi");                                                 \
        shmem_atomic_compare_swap_nbi(__VA_ARGS__ &f, &w, (T)50, (T)60, right);              \
        shmem_quiet();                                                                       \
        shmem_ctx_quiet(ctx);                                                                \
        CHECK(f == (T)50, NAME " compare_swap_nbi");                                         \
        shmem_atomic_fetch_inc_nbi(__VA_ARGS__ &f, &w, right);                               \
        shmem_quiet();                                                                       \
        shmem_ctx_quiet(ctx);                                                                \
        CHECK(f == (T)60, NAME " fetch_inc_nbi");                                            \
        shmem_atomic_fetch_add_nbi(__VA_ARGS__ &f, &w, (T)9, right);                         \
        shmem_quiet();                                                                       \
        shmem_ctx_quiet(ctx);                                                                \
        CHECK(f == (T)61, NAME " fetch_add_nbi");                                            \
        shmem_barrier_all();                                                                 \
        CHECK(w == (T)70, NAME " final value");                                              \
    }
#define AMO_TEST(T, NAME) AMO_SEQ(T, NAME, ) AMO_SEQ(T, NAME " ctx", ctx,)

#define AMO_EXT_SEQ(T, NAME, ...)                                                            \
    {                                                                                        \
        static T w;                                                                          \
        T f = 0;                                                                             \
        shmem_barrier_all();                                                                 \
        shmem_atomic_set(__VA_ARGS__ &w, (T)1.5, right);                                     \
        CHECK(shmem_atomic_fetch(__VA_ARGS__ &w, right) == (T)1.5, NAME " fetch");           \
        CHECK(shmem_atomic_swap(__VA_ARGS__ &w, (T)2.5, right) == (T)1.5, NAME " swap");     \
        shmem_atomic_fetch_nbi(__VA_ARGS__ &f, &w, right);                                   \
        shmem_quiet();                                                                       \
        shmem_ctx_quiet(ctx);                                                                \
        CHECK(f == (T)2.5, NAME " fetch_nbi");                                               \
        shmem_atomic_swap_nbi(__VA_ARGS__ &f, &w, (T)3.5, right);                            \
        shmem_quiet();                                                                       \
        shmem_ctx_quiet(ctx);                                                                \
        CHECK(f == (T)2.5, NAME " swap_nbi");                                                \
        shmem_barrier_all();                                                                 \
        CHECK(w == (T)3.5, NAME " final value");                                             \
    }
#define AMO_EXT_TEST(T, NAME) AMO_EXT_SEQ(T, NAME, ) AMO_EXT_SEQ(T, NAME " ctx", ctx,)

#define AMO_BIT_SEQ(T, NAME, ...)                                                            \
    {                                                                                        \
        static T w;                                                                          \
        T f = 0;                                                                             \
        shmem_barrier_all();                                                                 \
        shmem_atomic_set(__VA_ARGS__ &w, (T)0, right);                                       \
        shmem_atomic_or(__VA_ARGS__ &w, (T)0xF0, right);                                     \
        CHECK(shmem_atomic_fetch_or(__VA_ARGS__ &w, (T)0x0F, right) == (T)0xF0, NAME " fetch_or"); \
        shmem_atomic_and(__VA_ARGS__ &w, (T)0x3C, right);                                    \
        CHECK(shmem_atomic_fetch_and(__VA_ARGS__ &w, (T)0x0F, right) == (T)0x3C,             \
              NAME " fetch_and");                                                            \
        shmem_atomic_xor(__VA_ARGS__ &w, (T)0xFF, right);                                    \
        CHECK(shmem_atomic_fetch_xor(__VA_ARGS__ &w, (T)0x03, right) == (T)0xF3,             \
              NAME " fetch_xor");                                                            \
        shmem_atomic_fetch_or_nbi(__VA_ARGS__ &f, &w, (T)0x100, right);                      \
        shmem_quiet();                                                                       \
        shmem_ctx_quiet(ctx);                                                                \
        CHECK(f == (T)0xF0, NAME " fetch_or_nbi");                                           \
        shmem_atomic_fetch_and_nbi(__VA_ARGS__ &f, &w, (T)0x1F0, right);                     \
        shmem_quiet();                                                                       \
        shmem_ctx_quiet(ctx);                                                                \
        CHECK(f == (T)0x1F0, NAME " fetch_and_nbi");                                         \
        shmem_atomic_fetch_xor_nbi(__VA_ARGS__ &f, &w, (T)0x1, right);                       \
        shmem_quiet();                                                                       \
        shmem_ctx_quiet(ctx);                                                                \
        CHECK(f == (T)0x1F0, NAME " fetch_xor_nbi");                                         \
        shmem_barrier_all();                                                                 \
        CHECK(w == (T)0x1F1, NAME " final value");                                           \
    }
#define AMO_BIT_TEST(T, NAME) AMO_BIT_SEQ(T, NAME, ) AMO_BIT_SEQ(T, NAME " ctx", ctx,)

/* The deprecated generic AMO names (1.4). */
#define OLD_AMO_TEST(T, NAME)                                                                \
    {                                                                                        \
        static T w;                                                                          \
        shmem_barrier_all();                                                                 \
        shmem_set(&w, (T)4, right);                                                          \
        CHECK(shmem_fetch(&w, right) == (T)4, NAME " shmem_fetch");                          \
        CHECK(shmem_swap(&w, (T)5, right) == (T)4, NAME " shmem_swap");                      \
        CHECK(shmem_cswap(&w, (T)5, (T)6, right) == (T)5, NAME " shmem_cswap");              \
        CHECK(shmem_finc(&w, right) == (T)6, NAME " shmem_finc");                            \
        shmem_inc(&w, right);                                                                \
        CHECK(shmem_fadd(&w, (T)2, right) == (T)8, NAME " shmem_fadd");                      \
        shmem_add(&w, (T)1, right);                                                          \
        shmem_barrier_all();                                                                 \
        CHECK(w == (T)11, NAME " final value");                                              \
    }
#define OLD_AMO_EXT_TEST(T, NAME)                                                            \
    {                                                                                        \
        static T w;                                                                          \
        shmem_barrier_all();                                                                 \
        shmem_set(&w, (T)0.5, right);                                                        \
        CHECK(shmem_fetch(&w, right) == (T)0.5, NAME " shmem_fetch");                        \
        CHECK(shmem_swap(&w, (T)1.5, right) == (T)0.5, NAME " shmem_swap");                  \
        shmem_barrier_all();                                                                 \
        CHECK(w == (T)1.5, NAME " final value");                                             \
    }

/* Sum, prod, min, max of (PE + 1) over every PE. */
#define MINMAX_TEST(T, NAME)                                                                 \
    {                                                                                        \
        static T src[2], dst[2];                                                             \
        T prod = 1;                                                                          \
        for (int p = 1; p <= npes; p++) prod = (T)(prod * p);                                \
        src[0] = (T)(me + 1);                                                                \
        src[1] = (T)(npes - me);                                                             \
        shmem_barrier_all();                                                                 \
        CHECK(shmem_sum_reduce(SHMEM_TEAM_WORLD, dst, src, 2) == 0, NAME);                   \
        CHECK(dst[0] == (T)(npes * (npes + 1) / 2) && dst[1] == dst[0], NAME " sum");       \
        CHECK(shmem_prod_reduce(SHMEM_TEAM_WORLD, dst, src, 2) == 0, NAME);                  \
        CHECK(dst[0] == prod && dst[1] == prod, NAME " prod");                               \
        CHECK(shmem_min_reduce(SHMEM_TEAM_WORLD, dst, src, 2) == 0, NAME);                   \
        CHECK(dst[0] == (T)1 && dst[1] == (T)1, NAME " min");                                \
        CHECK(shmem_max_reduce(SHMEM_TEAM_WORLD, dst, src, 2) == 0, NAME);                   \
        CHECK(dst[0] == (T)npes && dst[1] == (T)npes, NAME " max");                          \
    }

/* And, or, xor of (1 << PE). */
#define BIT_REDUCE_TEST(T, NAME)                                                             \
    {                                                                                        \
        static T src[1], dst[1];                                                             \
        src[0] = (T)(1u << me);                                                              \
        shmem_barrier_all();                                                                 \
        CHECK(shmem_or_reduce(SHMEM_TEAM_WORLD, dst, src, 1) == 0, NAME);                    \
        CHECK(dst[0] == (T)((1u << npes) - 1), NAME " or");                                  \
        CHECK(shmem_xor_reduce(SHMEM_TEAM_WORLD, dst, src, 1) == 0, NAME);                   \
        CHECK(dst[0] == (T)((1u << npes) - 1), NAME " xor");                                 \
        CHECK(shmem_and_reduce(SHMEM_TEAM_WORLD, dst, src, 1) == 0, NAME);                   \
        CHECK(dst[0] == (T)(npes == 1 ? 1 : 0), NAME " and");                                \
    }

/* Sum and prod of (PE + 1)(1 + i) on the complex types. */
#define COMPLEX_TEST(T, NAME)                                                                \
    {                                                                                        \
        static T src[1], dst[1];                                                             \
        T sum = 0, prod = 1;                                                                 \
        for (int p = 1; p <= npes; p++) {                                                    \
            sum += (T)p * (1 + I);                                                           \
            prod *= (T)p * (1 + I);                                                          \
        }                                                                                    \
        src[0] = (T)(me + 1) * (1 + I);                                                      \
        shmem_barrier_all();                                                                 \
        CHECK(shmem_sum_reduce(SHMEM_TEAM_WORLD, dst, src, 1) == 0, NAME);                   \
        CHECK(dst[0] == sum, NAME " sum");                                                   \
        CHECK(shmem_prod_reduce(SHMEM_TEAM_WORLD, dst, src, 1) == 0, NAME);                  \
        CHECK(dst[0] == prod, NAME " prod");                                                 \
    }

int main(void) {
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    right = (me + 1) % npes;
    left = (me + npes - 1) % npes;
    CHECK(npes <= 8, "at most 8 PEs (1 << PE fits every bitwise type)");
    CHECK(shmem_ctx_create(0, &ctx) == 0, "shmem_ctx_create");

    RMA_TYPES(RMA_TEST)
    SYNC_TYPES(SYNC_TEST)
    AMO_TYPES(AMO_TEST)
    AMO_EXT_ONLY(AMO_EXT_TEST)
    AMO_BIT_TYPES(AMO_BIT_TEST)
    OLD_AMO_TYPES(OLD_AMO_TEST)
    AMO_EXT_ONLY(OLD_AMO_EXT_TEST)
    MINMAX_TYPES(MINMAX_TEST)
    BIT_REDUCE_TYPES(BIT_REDUCE_TEST)
    COMPLEX_TEST(double _Complex, "double _Complex")
    COMPLEX_TEST(float _Complex, "float _Complex")

    /* shmem_sync: on a team, and the deprecated active-set form. */
    static long psync[SHMEM_SYNC_SIZE];
    CHECK(shmem_sync(SHMEM_TEAM_WORLD) == 0, "shmem_sync(team)");
    shmem_sync(0, 0, npes, psync);

    shmem_ctx_destroy(ctx);
    shmem_barrier_all();
    printf("c11 ok\n");
    shmem_finalize();
    return 0;
}
