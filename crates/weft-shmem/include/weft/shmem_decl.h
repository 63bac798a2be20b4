/* The declarations of every OpenSHMEM 1.5 routine of weft's libshmem, written once for the
 * shmem_ names (shmem.h) and the pshmem_ profiling names (pshmem.h): type tables of the
 * specification, X(P, TYPE, TYPENAME), and the routines of each family as macros over a name
 * prefix P. Included by shmem.h and pshmem.h; not meant to be included directly.
 * The library's side is written from tables of the same prototypes (crates/weft-shmem/build.rs);
 * a test compiles the two against each other. */
#ifndef WEFT_SHMEM_DECL_H
#define WEFT_SHMEM_DECL_H

/* Table 5, standard RMA types (RMA, put-with-signal, broadcast, collect, alltoall(s)): those
 * whose p and g take a value in a register, and long double (whose p and g are inline). */
#define WEFT_SHMEM_PG_TYPES(X, P) \
    X(P, float, float) X(P, double, double) X(P, char, char) \
    X(P, signed char, schar) X(P, short, short) X(P, int, int) X(P, long, long) \
    X(P, long long, longlong) X(P, unsigned char, uchar) X(P, unsigned short, ushort) \
    X(P, unsigned int, uint) X(P, unsigned long, ulong) X(P, unsigned long long, ulonglong) \
    X(P, int8_t, int8) X(P, int16_t, int16) X(P, int32_t, int32) X(P, int64_t, int64) \
    X(P, uint8_t, uint8) X(P, uint16_t, uint16) X(P, uint32_t, uint32) X(P, uint64_t, uint64) \
    X(P, size_t, size) X(P, ptrdiff_t, ptrdiff)
#define WEFT_SHMEM_RMA_TYPES(X, P) WEFT_SHMEM_PG_TYPES(X, P) X(P, long double, longdouble)

/* Table 11, point-to-point synchronization types. */
#define WEFT_SHMEM_SYNC_TYPES(X, P) \
    X(P, short, short) X(P, int, int) X(P, long, long) X(P, long long, longlong) \
    X(P, unsigned short, ushort) X(P, unsigned int, uint) X(P, unsigned long, ulong) \
    X(P, unsigned long long, ulonglong) X(P, int32_t, int32) X(P, int64_t, int64) \
    X(P, uint32_t, uint32) X(P, uint64_t, uint64) X(P, size_t, size) X(P, ptrdiff_t, ptrdiff)

/* Table 6, standard AMO types (compare_swap, fetch_inc, inc, fetch_add, add). */
#define WEFT_SHMEM_AMO_TYPES(X, P) \
    X(P, int, int) X(P, long, long) X(P, long long, longlong) X(P, unsigned int, uint) \
    X(P, unsigned long, ulong) X(P, unsigned long long, ulonglong) X(P, int32_t, int32) \
    X(P, int64_t, int64) X(P, uint32_t, uint32) X(P, uint64_t, uint64) X(P, size_t, size) \
    X(P, ptrdiff_t, ptrdiff)

/* Table 7, extended AMO types (fetch, set, swap): the standard ones and these. */
#define WEFT_SHMEM_AMO_EXT_TYPES(X, P) X(P, float, float) X(P, double, double)

/* Table 8, bitwise AMO types (and, or, xor), and size_t. */
#define WEFT_SHMEM_AMO_BIT_TYPES(X, P) \
    X(P, unsigned int, uint) X(P, unsigned long, ulong) X(P, unsigned long long, ulonglong) \
    X(P, int32_t, int32) X(P, int64_t, int64) X(P, uint32_t, uint32) X(P, uint64_t, uint64) \
    X(P, size_t, size)

/* Table 10, reduction types: max and min; sum and prod (these and the complex types); and,
 * or and xor. */
#define WEFT_SHMEM_REDUCE_MINMAX_TYPES(X, P) \
    X(P, char, char) X(P, signed char, schar) X(P, short, short) X(P, int, int) \
    X(P, long, long) X(P, long long, longlong) X(P, ptrdiff_t, ptrdiff) \
    X(P, unsigned char, uchar) X(P, unsigned short, ushort) X(P, unsigned int, uint) \
    X(P, unsigned long, ulong) X(P, unsigned long long, ulonglong) X(P, int8_t, int8) \
    X(P, int16_t, int16) X(P, int32_t, int32) X(P, int64_t, int64) X(P, uint8_t, uint8) \
    X(P, uint16_t, uint16) X(P, uint32_t, uint32) X(P, uint64_t, uint64) X(P, size_t, size) \
    X(P, float, float) X(P, double, double) X(P, long double, longdouble)
#define WEFT_SHMEM_REDUCE_COMPLEX_TYPES(X, P) \
    X(P, double _Complex, complexd) X(P, float _Complex, complexf)
#define WEFT_SHMEM_REDUCE_BIT_TYPES(X, P) \
    X(P, unsigned char, uchar) X(P, unsigned short, ushort) X(P, unsigned int, uint) \
    X(P, unsigned long, ulong) X(P, unsigned long long, ulonglong) X(P, int8_t, int8) \
    X(P, int16_t, int16) X(P, int32_t, int32) X(P, int64_t, int64) X(P, uint8_t, uint8) \
    X(P, uint16_t, uint16) X(P, uint32_t, uint32) X(P, uint64_t, uint64) X(P, size_t, size)

/* Deprecated active-set reductions: sum/prod/min/max, and/or/xor. */
#define WEFT_SHMEM_TO_ALL_TYPES(X, P) \
    X(P, short, short) X(P, int, int) X(P, long, long) X(P, long long, longlong) \
    X(P, float, float) X(P, double, double) X(P, long double, longdouble)
#define WEFT_SHMEM_TO_ALL_BIT_TYPES(X, P) \
    X(P, short, short) X(P, int, int) X(P, long, long) X(P, long long, longlong)

/* Deprecated (1.3) AMO names: finc, fadd, cswap, inc, add, fetch, set, swap; and fetch, set,
 * swap on the floating types. */
#define WEFT_SHMEM_AMO_OLD_TYPES(X, P) X(P, int, int) X(P, long, long) X(P, long long, longlong)

#define WEFT_SHMEM_DECL_RMA(P, T, N) \
    void P##_##N##_put(T *dest, const T *source, size_t nelems, int pe); \
    void P##_ctx_##N##_put(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems, int pe); \
    void P##_##N##_get(T *dest, const T *source, size_t nelems, int pe); \
    void P##_ctx_##N##_get(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems, int pe); \
    void P##_##N##_put_nbi(T *dest, const T *source, size_t nelems, int pe); \
    void P##_ctx_##N##_put_nbi(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems, int pe); \
    void P##_##N##_get_nbi(T *dest, const T *source, size_t nelems, int pe); \
    void P##_ctx_##N##_get_nbi(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems, int pe); \
    void P##_##N##_iput(T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe); \
    void P##_ctx_##N##_iput(shmem_ctx_t ctx, T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe); \
    void P##_##N##_iget(T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe); \
    void P##_ctx_##N##_iget(shmem_ctx_t ctx, T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe); \
    void P##_##N##_put_signal(T *dest, const T *source, size_t nelems, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe); \
    void P##_ctx_##N##_put_signal(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe); \
    void P##_##N##_put_signal_nbi(T *dest, const T *source, size_t nelems, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe); \
    void P##_ctx_##N##_put_signal_nbi(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe); \
    int P##_##N##_broadcast(shmem_team_t team, T *dest, const T *source, size_t nelems, int PE_root); \
    int P##_##N##_collect(shmem_team_t team, T *dest, const T *source, size_t nelems); \
    int P##_##N##_fcollect(shmem_team_t team, T *dest, const T *source, size_t nelems); \
    int P##_##N##_alltoall(shmem_team_t team, T *dest, const T *source, size_t nelems); \
    int P##_##N##_alltoalls(shmem_team_t team, T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems);

#define WEFT_SHMEM_DECL_PG(P, T, N) \
    void P##_##N##_p(T *dest, T value, int pe); \
    void P##_ctx_##N##_p(shmem_ctx_t ctx, T *dest, T value, int pe); \
    T P##_##N##_g(const T *source, int pe); \
    T P##_ctx_##N##_g(shmem_ctx_t ctx, const T *source, int pe);

/* A long double travels by value in the x87 format, which the library (written in Rust)
 * cannot take: its p and g are these inline functions over the put and get. */
#define WEFT_SHMEM_DECL_LONGDOUBLE_PG(P) \
    static inline void P##_longdouble_p(long double *dest, long double value, int pe) { \
        P##_longdouble_put(dest, &value, 1, pe); \
    } \
    static inline void P##_ctx_longdouble_p(shmem_ctx_t ctx, long double *dest, long double value, int pe) { \
        P##_ctx_longdouble_put(ctx, dest, &value, 1, pe); \
    } \
    static inline long double P##_longdouble_g(const long double *source, int pe) { \
        long double v; \
        P##_longdouble_get(&v, source, 1, pe); \
        return v; \
    } \
    static inline long double P##_ctx_longdouble_g(shmem_ctx_t ctx, const long double *source, int pe) { \
        long double v; \
        P##_ctx_longdouble_get(ctx, &v, source, 1, pe); \
        return v; \
    }

#define WEFT_SHMEM_DECL_SYNC_SET(P, T, N, V, VT) \
    void P##_##N##_wait_until_all##V(T *ivars, size_t nelems, const int *status, int cmp, VT); \
    size_t P##_##N##_wait_until_any##V(T *ivars, size_t nelems, const int *status, int cmp, VT); \
    size_t P##_##N##_wait_until_some##V(T *ivars, size_t nelems, size_t *indices, const int *status, int cmp, VT); \
    int P##_##N##_test_all##V(T *ivars, size_t nelems, const int *status, int cmp, VT); \
    size_t P##_##N##_test_any##V(T *ivars, size_t nelems, const int *status, int cmp, VT); \
    size_t P##_##N##_test_some##V(T *ivars, size_t nelems, size_t *indices, const int *status, int cmp, VT);

#define WEFT_SHMEM_DECL_SYNC(P, T, N) \
    void P##_##N##_wait_until(T *ivar, int cmp, T cmp_value); \
    void P##_##N##_wait(T *ivar, T cmp_value); \
    int P##_##N##_test(T *ivar, int cmp, T cmp_value); \
    WEFT_SHMEM_DECL_SYNC_SET(P, T, N, , T cmp_value) \
    WEFT_SHMEM_DECL_SYNC_SET(P, T, N, _vector, const T *cmp_values)

/* A fetching AMO and its _nbi form; the variable arguments are the parameters before pe,
 * each followed by a comma. */
#define WEFT_SHMEM_DECL_AMO_FETCHING(P, T, N, OP, ...) \
    T P##_##N##_atomic_##OP(__VA_ARGS__ int pe); \
    T P##_ctx_##N##_atomic_##OP(shmem_ctx_t ctx, __VA_ARGS__ int pe); \
    void P##_##N##_atomic_##OP##_nbi(T *fetch, __VA_ARGS__ int pe); \
    void P##_ctx_##N##_atomic_##OP##_nbi(shmem_ctx_t ctx, T *fetch, __VA_ARGS__ int pe);
#define WEFT_SHMEM_DECL_AMO_UPDATE(P, T, N, OP, ...) \
    void P##_##N##_atomic_##OP(__VA_ARGS__ int pe); \
    void P##_ctx_##N##_atomic_##OP(shmem_ctx_t ctx, __VA_ARGS__ int pe);

#define WEFT_SHMEM_DECL_AMO_EXT(P, T, N) \
    WEFT_SHMEM_DECL_AMO_FETCHING(P, T, N, fetch, const T *source,) \
    WEFT_SHMEM_DECL_AMO_UPDATE(P, T, N, set, T *dest, T value,) \
    WEFT_SHMEM_DECL_AMO_FETCHING(P, T, N, swap, T *dest, T value,)

#define WEFT_SHMEM_DECL_AMO_STD(P, T, N) \
    WEFT_SHMEM_DECL_AMO_EXT(P, T, N) \
    WEFT_SHMEM_DECL_AMO_FETCHING(P, T, N, compare_swap, T *dest, T cond, T value,) \
    WEFT_SHMEM_DECL_AMO_FETCHING(P, T, N, fetch_inc, T *dest,) \
    WEFT_SHMEM_DECL_AMO_UPDATE(P, T, N, inc, T *dest,) \
    WEFT_SHMEM_DECL_AMO_FETCHING(P, T, N, fetch_add, T *dest, T value,) \
    WEFT_SHMEM_DECL_AMO_UPDATE(P, T, N, add, T *dest, T value,)

#define WEFT_SHMEM_DECL_AMO_BIT(P, T, N) \
    WEFT_SHMEM_DECL_AMO_FETCHING(P, T, N, fetch_and, T *dest, T value,) \
    WEFT_SHMEM_DECL_AMO_UPDATE(P, T, N, and, T *dest, T value,) \
    WEFT_SHMEM_DECL_AMO_FETCHING(P, T, N, fetch_or, T *dest, T value,) \
    WEFT_SHMEM_DECL_AMO_UPDATE(P, T, N, or, T *dest, T value,) \
    WEFT_SHMEM_DECL_AMO_FETCHING(P, T, N, fetch_xor, T *dest, T value,) \
    WEFT_SHMEM_DECL_AMO_UPDATE(P, T, N, xor, T *dest, T value,)

#define WEFT_SHMEM_DECL_AMO_OLD_EXT(P, T, N) \
    T P##_##N##_fetch(const T *source, int pe); \
    void P##_##N##_set(T *dest, T value, int pe); \
    T P##_##N##_swap(T *dest, T value, int pe);
#define WEFT_SHMEM_DECL_AMO_OLD(P, T, N) \
    WEFT_SHMEM_DECL_AMO_OLD_EXT(P, T, N) \
    T P##_##N##_cswap(T *dest, T cond, T value, int pe); \
    T P##_##N##_finc(T *dest, int pe); \
    void P##_##N##_inc(T *dest, int pe); \
    T P##_##N##_fadd(T *dest, T value, int pe); \
    void P##_##N##_add(T *dest, T value, int pe);

#define WEFT_SHMEM_DECL_REDUCE(P, T, N, OP) \
    int P##_##N##_##OP##_reduce(shmem_team_t team, T *dest, const T *source, size_t nreduce);
#define WEFT_SHMEM_DECL_REDUCE_MINMAX(P, T, N) \
    WEFT_SHMEM_DECL_REDUCE(P, T, N, min) WEFT_SHMEM_DECL_REDUCE(P, T, N, max) \
    WEFT_SHMEM_DECL_REDUCE(P, T, N, sum) WEFT_SHMEM_DECL_REDUCE(P, T, N, prod)
#define WEFT_SHMEM_DECL_REDUCE_ARITH(P, T, N) \
    WEFT_SHMEM_DECL_REDUCE(P, T, N, sum) WEFT_SHMEM_DECL_REDUCE(P, T, N, prod)
#define WEFT_SHMEM_DECL_REDUCE_BIT(P, T, N) \
    WEFT_SHMEM_DECL_REDUCE(P, T, N, and) WEFT_SHMEM_DECL_REDUCE(P, T, N, or) \
    WEFT_SHMEM_DECL_REDUCE(P, T, N, xor)

#define WEFT_SHMEM_DECL_TO_ALL(P, T, N, OP) \
    void P##_##N##_##OP##_to_all(T *dest, const T *source, int nreduce, int PE_start, int logPE_stride, int PE_size, T *pWrk, long *pSync);
#define WEFT_SHMEM_DECL_TO_ALL_ARITH(P, T, N) \
    WEFT_SHMEM_DECL_TO_ALL(P, T, N, sum) WEFT_SHMEM_DECL_TO_ALL(P, T, N, prod)
#define WEFT_SHMEM_DECL_TO_ALL_MINMAX(P, T, N) \
    WEFT_SHMEM_DECL_TO_ALL_ARITH(P, T, N) \
    WEFT_SHMEM_DECL_TO_ALL(P, T, N, min) WEFT_SHMEM_DECL_TO_ALL(P, T, N, max)
#define WEFT_SHMEM_DECL_TO_ALL_BIT(P, T, N) \
    WEFT_SHMEM_DECL_TO_ALL(P, T, N, and) WEFT_SHMEM_DECL_TO_ALL(P, T, N, or) \
    WEFT_SHMEM_DECL_TO_ALL(P, T, N, xor)

#define WEFT_SHMEM_DECL_SIZED(P, B) \
    void P##_put##B(void *dest, const void *source, size_t nelems, int pe); \
    void P##_ctx_put##B(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe); \
    void P##_get##B(void *dest, const void *source, size_t nelems, int pe); \
    void P##_ctx_get##B(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe); \
    void P##_put##B##_nbi(void *dest, const void *source, size_t nelems, int pe); \
    void P##_ctx_put##B##_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe); \
    void P##_get##B##_nbi(void *dest, const void *source, size_t nelems, int pe); \
    void P##_ctx_get##B##_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe); \
    void P##_iput##B(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe); \
    void P##_ctx_iput##B(shmem_ctx_t ctx, void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe); \
    void P##_iget##B(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe); \
    void P##_ctx_iget##B(shmem_ctx_t ctx, void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe); \
    void P##_put##B##_signal(void *dest, const void *source, size_t nelems, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe); \
    void P##_ctx_put##B##_signal(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe); \
    void P##_put##B##_signal_nbi(void *dest, const void *source, size_t nelems, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe); \
    void P##_ctx_put##B##_signal_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);

/* The untyped routines (section numbers of OpenSHMEM 1.5 in shmem.h's comments). */
#define WEFT_SHMEM_DECL_UNTYPED(P) \
    void P##_init(void); \
    int P##_init_thread(int requested, int *provided); \
    void P##_query_thread(int *provided); \
    void P##_finalize(void); \
    int P##_my_pe(void); \
    int P##_n_pes(void); \
    void P##_global_exit(int status); \
    void P##_info_get_version(int *major, int *minor); \
    void P##_info_get_name(char *name); \
    int P##_pe_accessible(int pe); \
    int P##_addr_accessible(const void *addr, int pe); \
    void *P##_ptr(const void *dest, int pe); \
    void *P##_team_ptr(shmem_team_t team, const void *dest, int pe); \
    void P##_pcontrol(const int level, ...); \
    void *P##_malloc(size_t size); \
    void *P##_malloc_with_hints(size_t size, long hints); \
    void *P##_calloc(size_t count, size_t size); \
    void *P##_align(size_t alignment, size_t size); \
    void P##_free(void *ptr); \
    void *P##_realloc(void *ptr, size_t size); \
    void P##_putmem(void *dest, const void *source, size_t nelems, int pe); \
    void P##_getmem(void *dest, const void *source, size_t nelems, int pe); \
    void P##_putmem_nbi(void *dest, const void *source, size_t nelems, int pe); \
    void P##_getmem_nbi(void *dest, const void *source, size_t nelems, int pe); \
    void P##_ctx_putmem(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe); \
    void P##_ctx_getmem(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe); \
    void P##_ctx_putmem_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe); \
    void P##_ctx_getmem_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe); \
    void P##_putmem_signal(void *dest, const void *source, size_t nelems, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe); \
    void P##_putmem_signal_nbi(void *dest, const void *source, size_t nelems, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe); \
    void P##_ctx_putmem_signal(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe); \
    void P##_ctx_putmem_signal_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe); \
    uint64_t P##_signal_fetch(const uint64_t *sig_addr); \
    uint64_t P##_signal_wait_until(uint64_t *sig_addr, int cmp, uint64_t cmp_value); \
    void P##_wait(long *ivar, long cmp_value); \
    void P##_wait_until(long *ivar, int cmp, long cmp_value); \
    void P##_quiet(void); \
    void P##_fence(void); \
    void P##_ctx_quiet(shmem_ctx_t ctx); \
    void P##_ctx_fence(shmem_ctx_t ctx); \
    int P##_ctx_create(long options, shmem_ctx_t *ctx); \
    void P##_ctx_destroy(shmem_ctx_t ctx); \
    int P##_ctx_get_team(shmem_ctx_t ctx, shmem_team_t *team); \
    int P##_team_create_ctx(shmem_team_t team, long options, shmem_ctx_t *ctx); \
    void P##_barrier_all(void); \
    void P##_sync_all(void); \
    void P##_barrier(int PE_start, int logPE_stride, int PE_size, long *pSync); \
    void (P##_sync)(int PE_start, int logPE_stride, int PE_size, long *pSync); \
    int P##_team_sync(shmem_team_t team); \
    void P##_set_lock(long *lock); \
    void P##_clear_lock(long *lock); \
    int P##_test_lock(long *lock); \
    int P##_team_my_pe(shmem_team_t team); \
    int P##_team_n_pes(shmem_team_t team); \
    int P##_team_get_config(shmem_team_t team, long config_mask, shmem_team_config_t *config); \
    int P##_team_translate_pe(shmem_team_t src_team, int src_pe, shmem_team_t dest_team); \
    int P##_team_split_strided(shmem_team_t parent_team, int start, int stride, int size, const shmem_team_config_t *config, long config_mask, shmem_team_t *new_team); \
    int P##_team_split_2d(shmem_team_t parent_team, int xrange, const shmem_team_config_t *xaxis_config, long xaxis_mask, shmem_team_t *xaxis_team, const shmem_team_config_t *yaxis_config, long yaxis_mask, shmem_team_t *yaxis_team); \
    void P##_team_destroy(shmem_team_t team); \
    int P##_broadcastmem(shmem_team_t team, void *dest, const void *source, size_t nelems, int PE_root); \
    int P##_collectmem(shmem_team_t team, void *dest, const void *source, size_t nelems); \
    int P##_fcollectmem(shmem_team_t team, void *dest, const void *source, size_t nelems); \
    int P##_alltoallmem(shmem_team_t team, void *dest, const void *source, size_t nelems); \
    int P##_alltoallsmem(shmem_team_t team, void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems); \
    void P##_broadcast32(void *dest, const void *source, size_t nelems, int PE_root, int PE_start, int logPE_stride, int PE_size, long *pSync); \
    void P##_broadcast64(void *dest, const void *source, size_t nelems, int PE_root, int PE_start, int logPE_stride, int PE_size, long *pSync); \
    void P##_collect32(void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync); \
    void P##_collect64(void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync); \
    void P##_fcollect32(void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync); \
    void P##_fcollect64(void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync); \
    void P##_alltoall32(void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync); \
    void P##_alltoall64(void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync); \
    void P##_alltoalls32(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync); \
    void P##_alltoalls64(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync); \
    void P##_clear_cache_inv(void); \
    void P##_set_cache_inv(void); \
    void P##_clear_cache_line_inv(void *dest); \
    void P##_set_cache_line_inv(void *dest); \
    void P##_udcflush(void); \
    void P##_udcflush_line(void *dest);

/* Every routine with the name prefix P (shmem or pshmem). */
#define WEFT_SHMEM_DECLARE_ALL(P) \
    WEFT_SHMEM_DECL_UNTYPED(P) \
    WEFT_SHMEM_RMA_TYPES(WEFT_SHMEM_DECL_RMA, P) \
    WEFT_SHMEM_PG_TYPES(WEFT_SHMEM_DECL_PG, P) \
    WEFT_SHMEM_DECL_LONGDOUBLE_PG(P) \
    WEFT_SHMEM_SYNC_TYPES(WEFT_SHMEM_DECL_SYNC, P) \
    WEFT_SHMEM_AMO_TYPES(WEFT_SHMEM_DECL_AMO_STD, P) \
    WEFT_SHMEM_AMO_EXT_TYPES(WEFT_SHMEM_DECL_AMO_EXT, P) \
    WEFT_SHMEM_AMO_BIT_TYPES(WEFT_SHMEM_DECL_AMO_BIT, P) \
    WEFT_SHMEM_AMO_OLD_TYPES(WEFT_SHMEM_DECL_AMO_OLD, P) \
    WEFT_SHMEM_AMO_EXT_TYPES(WEFT_SHMEM_DECL_AMO_OLD_EXT, P) \
    WEFT_SHMEM_REDUCE_MINMAX_TYPES(WEFT_SHMEM_DECL_REDUCE_MINMAX, P) \
    WEFT_SHMEM_REDUCE_COMPLEX_TYPES(WEFT_SHMEM_DECL_REDUCE_ARITH, P) \
    WEFT_SHMEM_REDUCE_BIT_TYPES(WEFT_SHMEM_DECL_REDUCE_BIT, P) \
    WEFT_SHMEM_TO_ALL_TYPES(WEFT_SHMEM_DECL_TO_ALL_MINMAX, P) \
    WEFT_SHMEM_REDUCE_COMPLEX_TYPES(WEFT_SHMEM_DECL_TO_ALL_ARITH, P) \
    WEFT_SHMEM_TO_ALL_BIT_TYPES(WEFT_SHMEM_DECL_TO_ALL_BIT, P) \
    WEFT_SHMEM_DECL_SIZED(P, 8) WEFT_SHMEM_DECL_SIZED(P, 16) WEFT_SHMEM_DECL_SIZED(P, 32) \
    WEFT_SHMEM_DECL_SIZED(P, 64) WEFT_SHMEM_DECL_SIZED(P, 128)

/* shmem_sync(team) and the deprecated shmem_sync(PE_start, logPE_stride, PE_size, pSync):
 * chosen by the number of arguments. */
#define WEFT_SHMEM_PICK_SYNC(a, b, c, d, name, ...) name

#endif
