/* The C11 type-generic interface of OpenSHMEM 1.5 (included by shmem.h for C11 and later):
 * each generic is a _Generic selection on the type of its buffer argument, over the distinct C
 * types of the specification's table (int32_t is int, int64_t and ptrdiff_t are long, size_t
 * and uint64_t unsigned long, ...: one association each), with an optional leading context
 * argument. A call on a type the table does not list fails to compile: it selects
 * shmem_c11_type_not_in_the_table, which takes no argument. */
#ifndef WEFT_SHMEM_C11_H
#define WEFT_SHMEM_C11_H

static inline void shmem_c11_type_not_in_the_table(void) {}

#define WEFT_C11_ARG0(a, ...) a
#define WEFT_C11_ARG1(a, b, ...) b
/* One association, and one also for a pointer to const (source buffers). */
#define WEFT_C11_PTR(T, F) T *: F,
#define WEFT_C11_CPTR(T, F) T *: F, const T *: F,

/* The distinct types of each table: A(TYPE, routine), the routine named PRE##TYPENAME##SUF. */
#define WEFT_C11_RMA(A, PRE, SUF) \
    A(float, PRE##float##SUF) A(double, PRE##double##SUF) A(long double, PRE##longdouble##SUF) \
    A(char, PRE##char##SUF) A(signed char, PRE##schar##SUF) A(short, PRE##short##SUF) \
    A(int, PRE##int##SUF) A(long, PRE##long##SUF) A(long long, PRE##longlong##SUF) \
    A(unsigned char, PRE##uchar##SUF) A(unsigned short, PRE##ushort##SUF) \
    A(unsigned int, PRE##uint##SUF) A(unsigned long, PRE##ulong##SUF) \
    A(unsigned long long, PRE##ulonglong##SUF)
#define WEFT_C11_SYNC(A, PRE, SUF) \
    A(short, PRE##short##SUF) A(int, PRE##int##SUF) A(long, PRE##long##SUF) \
    A(long long, PRE##longlong##SUF) A(unsigned short, PRE##ushort##SUF) \
    A(unsigned int, PRE##uint##SUF) A(unsigned long, PRE##ulong##SUF) \
    A(unsigned long long, PRE##ulonglong##SUF)
#define WEFT_C11_AMO(A, PRE, SUF) \
    A(int, PRE##int##SUF) A(long, PRE##long##SUF) A(long long, PRE##longlong##SUF) \
    A(unsigned int, PRE##uint##SUF) A(unsigned long, PRE##ulong##SUF) \
    A(unsigned long long, PRE##ulonglong##SUF)
#define WEFT_C11_AMO_EXT(A, PRE, SUF) \
    WEFT_C11_AMO(A, PRE, SUF) A(float, PRE##float##SUF) A(double, PRE##double##SUF)
/* Bitwise AMOs: unsigned int/long/long long, and int32_t (int), int64_t (long). */
#define WEFT_C11_AMO_BIT(A, PRE, SUF) \
    A(unsigned int, PRE##uint##SUF) A(unsigned long, PRE##ulong##SUF) \
    A(unsigned long long, PRE##ulonglong##SUF) A(int, PRE##int32##SUF) A(long, PRE##int64##SUF)
#define WEFT_C11_AMO_OLD(A, PRE, SUF) \
    A(int, PRE##int##SUF) A(long, PRE##long##SUF) A(long long, PRE##longlong##SUF)
#define WEFT_C11_AMO_OLD_EXT(A, PRE, SUF) \
    WEFT_C11_AMO_OLD(A, PRE, SUF) A(float, PRE##float##SUF) A(double, PRE##double##SUF)
#define WEFT_C11_REDUCE_MINMAX(A, PRE, SUF) \
    A(char, PRE##char##SUF) A(signed char, PRE##schar##SUF) A(short, PRE##short##SUF) \
    A(int, PRE##int##SUF) A(long, PRE##long##SUF) A(long long, PRE##longlong##SUF) \
    A(unsigned char, PRE##uchar##SUF) A(unsigned short, PRE##ushort##SUF) \
    A(unsigned int, PRE##uint##SUF) A(unsigned long, PRE##ulong##SUF) \
    A(unsigned long long, PRE##ulonglong##SUF) A(float, PRE##float##SUF) \
    A(double, PRE##double##SUF) A(long double, PRE##longdouble##SUF)
#define WEFT_C11_REDUCE_ARITH(A, PRE, SUF) \
    WEFT_C11_REDUCE_MINMAX(A, PRE, SUF) A(double _Complex, PRE##complexd##SUF) \
    A(float _Complex, PRE##complexf##SUF)
/* and/or/xor reductions: the unsigned types, and int8_t .. int64_t (signed char .. long). */
#define WEFT_C11_REDUCE_BIT(A, PRE, SUF) \
    A(unsigned char, PRE##uchar##SUF) A(unsigned short, PRE##ushort##SUF) \
    A(unsigned int, PRE##uint##SUF) A(unsigned long, PRE##ulong##SUF) \
    A(unsigned long long, PRE##ulonglong##SUF) A(signed char, PRE##int8##SUF) \
    A(short, PRE##int16##SUF) A(int, PRE##int32##SUF) A(long, PRE##int64##SUF)

/* A generic on argument 0 (ASSOC: WEFT_C11_PTR or WEFT_C11_CPTR) whose calls may start with a
 * context: then on argument 1. */
#define WEFT_C11_CTX_GENERIC(TABLE, ASSOC, SUF, ...) \
    _Generic(WEFT_C11_ARG0(__VA_ARGS__, 0), \
        shmem_ctx_t: _Generic(WEFT_C11_ARG1(__VA_ARGS__, 0, 0), \
            TABLE(ASSOC, shmem_ctx_, SUF) \
            default: shmem_c11_type_not_in_the_table), \
        TABLE(ASSOC, shmem_, SUF) \
        default: shmem_c11_type_not_in_the_table)(__VA_ARGS__)
/* A generic on argument 0 (no context form). */
#define WEFT_C11_GENERIC0(TABLE, SUF, ...) \
    _Generic(WEFT_C11_ARG0(__VA_ARGS__, 0), \
        TABLE(WEFT_C11_PTR, shmem_, SUF) \
        default: shmem_c11_type_not_in_the_table)(__VA_ARGS__)
/* A generic on argument 1 (team collectives: the team comes first). */
#define WEFT_C11_GENERIC1(TABLE, SUF, ...) \
    _Generic(WEFT_C11_ARG1(__VA_ARGS__, 0, 0), \
        TABLE(WEFT_C11_PTR, shmem_, SUF) \
        default: shmem_c11_type_not_in_the_table)(__VA_ARGS__)

/* RMA (9.6), put-with-signal (9.7). */
#define shmem_put(...) WEFT_C11_CTX_GENERIC(WEFT_C11_RMA, WEFT_C11_PTR, _put, __VA_ARGS__)
#define shmem_get(...) WEFT_C11_CTX_GENERIC(WEFT_C11_RMA, WEFT_C11_PTR, _get, __VA_ARGS__)
#define shmem_put_nbi(...) WEFT_C11_CTX_GENERIC(WEFT_C11_RMA, WEFT_C11_PTR, _put_nbi, __VA_ARGS__)
#define shmem_get_nbi(...) WEFT_C11_CTX_GENERIC(WEFT_C11_RMA, WEFT_C11_PTR, _get_nbi, __VA_ARGS__)
#define shmem_p(...) WEFT_C11_CTX_GENERIC(WEFT_C11_RMA, WEFT_C11_PTR, _p, __VA_ARGS__)
#define shmem_g(...) WEFT_C11_CTX_GENERIC(WEFT_C11_RMA, WEFT_C11_CPTR, _g, __VA_ARGS__)
#define shmem_iput(...) WEFT_C11_CTX_GENERIC(WEFT_C11_RMA, WEFT_C11_PTR, _iput, __VA_ARGS__)
#define shmem_iget(...) WEFT_C11_CTX_GENERIC(WEFT_C11_RMA, WEFT_C11_PTR, _iget, __VA_ARGS__)
#define shmem_put_signal(...) \
    WEFT_C11_CTX_GENERIC(WEFT_C11_RMA, WEFT_C11_PTR, _put_signal, __VA_ARGS__)
#define shmem_put_signal_nbi(...) \
    WEFT_C11_CTX_GENERIC(WEFT_C11_RMA, WEFT_C11_PTR, _put_signal_nbi, __VA_ARGS__)

/* AMOs (9.8): on the buffer (dest, source or, for the _nbi forms, fetch). */
#define shmem_atomic_fetch(...) \
    WEFT_C11_CTX_GENERIC(WEFT_C11_AMO_EXT, WEFT_C11_CPTR, _atomic_fetch, __VA_ARGS__)
#define shmem_atomic_set(...) \
    WEFT_C11_CTX_GENERIC(WEFT_C11_AMO_EXT, WEFT_C11_PTR, _atomic_set, __VA_ARGS__)
#define shmem_atomic_swap(...) \
    WEFT_C11_CTX_GENERIC(WEFT_C11_AMO_EXT, WEFT_C11_PTR, _atomic_swap, __VA_ARGS__)
#define shmem_atomic_compare_swap(...) \
    WEFT_C11_CTX_GENERIC(WEFT_C11_AMO, WEFT_C11_PTR, _atomic_compare_swap, __VA_ARGS__)
#define shmem_atomic_fetch_inc(...) \
    WEFT_C11_CTX_GENERIC(WEFT_C11_AMO, WEFT_C11_PTR, _atomic_fetch_inc, __VA_ARGS__)
#define shmem_atomic_inc(...) \
    WEFT_C11_CTX_GENERIC(WEFT_C11_AMO, WEFT_C11_PTR, _atomic_inc, __VA_ARGS__)
#define shmem_atomic_fetch_add(...) \
    WEFT_C11_CTX_GENERIC(WEFT_C11_AMO, WEFT_C11_PTR, _atomic_fetch_add, __VA_ARGS__)
#define shmem_atomic_add(...) \
    WEFT_C11_CTX_GENERIC(WEFT_C11_AMO, WEFT_C11_PTR, _atomic_add, __VA_ARGS__)
#define shmem_atomic_fetch_and(...) \
    WEFT_C11_CTX_GENERIC(WEFT_C11_AMO_BIT, WEFT_C11_PTR, _atomic_fetch_and, __VA_ARGS__)
#define shmem_atomic_and(...) \
    WEFT_C11_CTX_GENERIC(WEFT_C11_AMO_BIT, WEFT_C11_PTR, _atomic_and, __VA_ARGS__)
#define shmem_atomic_fetch_or(...) \
    WEFT_C11_CTX_GENERIC(WEFT_C11_AMO_BIT, WEFT_C11_PTR, _atomic_fetch_or, __VA_ARGS__)
#define shmem_atomic_or(...) \
    WEFT_C11_CTX_GENERIC(WEFT_C11_AMO_BIT, WEFT_C11_PTR, _atomic_or, __VA_ARGS__)
#define shmem_atomic_fetch_xor(...) \
    WEFT_C11_CTX_GENERIC(WEFT_C11_AMO_BIT, WEFT_C11_PTR, _atomic_fetch_xor, __VA_ARGS__)
#define shmem_atomic_xor(...) \
    WEFT_C11_CTX_GENERIC(WEFT_C11_AMO_BIT, WEFT_C11_PTR, _atomic_xor, __VA_ARGS__)
#define shmem_atomic_fetch_nbi(...) \
    WEFT_C11_CTX_GENERIC(WEFT_C11_AMO_EXT, WEFT_C11_PTR, _atomic_fetch_nbi, __VA_ARGS__)
#define shmem_atomic_swap_nbi(...) \
    WEFT_C11_CTX_GENERIC(WEFT_C11_AMO_EXT, WEFT_C11_PTR, _atomic_swap_nbi, __VA_ARGS__)
#define shmem_atomic_compare_swap_nbi(...) \
    WEFT_C11_CTX_GENERIC(WEFT_C11_AMO, WEFT_C11_PTR, _atomic_compare_swap_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_inc_nbi(...) \
    WEFT_C11_CTX_GENERIC(WEFT_C11_AMO, WEFT_C11_PTR, _atomic_fetch_inc_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_add_nbi(...) \
    WEFT_C11_CTX_GENERIC(WEFT_C11_AMO, WEFT_C11_PTR, _atomic_fetch_add_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_and_nbi(...) \
    WEFT_C11_CTX_GENERIC(WEFT_C11_AMO_BIT, WEFT_C11_PTR, _atomic_fetch_and_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_or_nbi(...) \
    WEFT_C11_CTX_GENERIC(WEFT_C11_AMO_BIT, WEFT_C11_PTR, _atomic_fetch_or_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_xor_nbi(...) \
    WEFT_C11_CTX_GENERIC(WEFT_C11_AMO_BIT, WEFT_C11_PTR, _atomic_fetch_xor_nbi, __VA_ARGS__)

/* Deprecated (1.4) generic AMO names. */
#define shmem_fetch(...) WEFT_C11_GENERIC0_C(WEFT_C11_AMO_OLD_EXT, _fetch, __VA_ARGS__)
#define shmem_set(...) WEFT_C11_GENERIC0(WEFT_C11_AMO_OLD_EXT, _set, __VA_ARGS__)
#define shmem_swap(...) WEFT_C11_GENERIC0(WEFT_C11_AMO_OLD_EXT, _swap, __VA_ARGS__)
#define shmem_cswap(...) WEFT_C11_GENERIC0(WEFT_C11_AMO_OLD, _cswap, __VA_ARGS__)
#define shmem_finc(...) WEFT_C11_GENERIC0(WEFT_C11_AMO_OLD, _finc, __VA_ARGS__)
#define shmem_inc(...) WEFT_C11_GENERIC0(WEFT_C11_AMO_OLD, _inc, __VA_ARGS__)
#define shmem_fadd(...) WEFT_C11_GENERIC0(WEFT_C11_AMO_OLD, _fadd, __VA_ARGS__)
#define shmem_add(...) WEFT_C11_GENERIC0(WEFT_C11_AMO_OLD, _add, __VA_ARGS__)
#define WEFT_C11_GENERIC0_C(TABLE, SUF, ...) \
    _Generic(WEFT_C11_ARG0(__VA_ARGS__, 0), \
        TABLE(WEFT_C11_CPTR, shmem_, SUF) \
        default: shmem_c11_type_not_in_the_table)(__VA_ARGS__)

/* Collectives (9.9): on dest, after the team. */
#define shmem_broadcast(...) WEFT_C11_GENERIC1(WEFT_C11_RMA, _broadcast, __VA_ARGS__)
#define shmem_collect(...) WEFT_C11_GENERIC1(WEFT_C11_RMA, _collect, __VA_ARGS__)
#define shmem_fcollect(...) WEFT_C11_GENERIC1(WEFT_C11_RMA, _fcollect, __VA_ARGS__)
#define shmem_alltoall(...) WEFT_C11_GENERIC1(WEFT_C11_RMA, _alltoall, __VA_ARGS__)
#define shmem_alltoalls(...) WEFT_C11_GENERIC1(WEFT_C11_RMA, _alltoalls, __VA_ARGS__)
#define shmem_and_reduce(...) WEFT_C11_GENERIC1(WEFT_C11_REDUCE_BIT, _and_reduce, __VA_ARGS__)
#define shmem_or_reduce(...) WEFT_C11_GENERIC1(WEFT_C11_REDUCE_BIT, _or_reduce, __VA_ARGS__)
#define shmem_xor_reduce(...) WEFT_C11_GENERIC1(WEFT_C11_REDUCE_BIT, _xor_reduce, __VA_ARGS__)
#define shmem_max_reduce(...) WEFT_C11_GENERIC1(WEFT_C11_REDUCE_MINMAX, _max_reduce, __VA_ARGS__)
#define shmem_min_reduce(...) WEFT_C11_GENERIC1(WEFT_C11_REDUCE_MINMAX, _min_reduce, __VA_ARGS__)
#define shmem_sum_reduce(...) WEFT_C11_GENERIC1(WEFT_C11_REDUCE_ARITH, _sum_reduce, __VA_ARGS__)
#define shmem_prod_reduce(...) WEFT_C11_GENERIC1(WEFT_C11_REDUCE_ARITH, _prod_reduce, __VA_ARGS__)

/* Point-to-point synchronization (9.10): on the variable(s). shmem_wait_until and shmem_wait
 * on a long keep their untyped 1.4 routines, declared above, as the long association. */
#define shmem_wait_until(...) WEFT_C11_GENERIC0(WEFT_C11_SYNC, _wait_until, __VA_ARGS__)
#define shmem_wait(...) WEFT_C11_GENERIC0(WEFT_C11_SYNC, _wait, __VA_ARGS__)
#define shmem_test(...) WEFT_C11_GENERIC0(WEFT_C11_SYNC, _test, __VA_ARGS__)
#define shmem_wait_until_all(...) WEFT_C11_GENERIC0(WEFT_C11_SYNC, _wait_until_all, __VA_ARGS__)
#define shmem_wait_until_any(...) WEFT_C11_GENERIC0(WEFT_C11_SYNC, _wait_until_any, __VA_ARGS__)
#define shmem_wait_until_some(...) WEFT_C11_GENERIC0(WEFT_C11_SYNC, _wait_until_some, __VA_ARGS__)
#define shmem_wait_until_all_vector(...) \
    WEFT_C11_GENERIC0(WEFT_C11_SYNC, _wait_until_all_vector, __VA_ARGS__)
#define shmem_wait_until_any_vector(...) \
    WEFT_C11_GENERIC0(WEFT_C11_SYNC, _wait_until_any_vector, __VA_ARGS__)
#define shmem_wait_until_some_vector(...) \
    WEFT_C11_GENERIC0(WEFT_C11_SYNC, _wait_until_some_vector, __VA_ARGS__)
#define shmem_test_all(...) WEFT_C11_GENERIC0(WEFT_C11_SYNC, _test_all, __VA_ARGS__)
#define shmem_test_any(...) WEFT_C11_GENERIC0(WEFT_C11_SYNC, _test_any, __VA_ARGS__)
#define shmem_test_some(...) WEFT_C11_GENERIC0(WEFT_C11_SYNC, _test_some, __VA_ARGS__)
#define shmem_test_all_vector(...) WEFT_C11_GENERIC0(WEFT_C11_SYNC, _test_all_vector, __VA_ARGS__)
#define shmem_test_any_vector(...) WEFT_C11_GENERIC0(WEFT_C11_SYNC, _test_any_vector, __VA_ARGS__)
#define shmem_test_some_vector(...) \
    WEFT_C11_GENERIC0(WEFT_C11_SYNC, _test_some_vector, __VA_ARGS__)

#endif
