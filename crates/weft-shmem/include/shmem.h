/* OpenSHMEM 1.5 interface of weft (libshmem). Compile with oshcc, run with oshrun (weft run).
 * The routines are declared from the specification's type tables (weft/shmem_decl.h); with a
 * C11 compiler the type-generic interface (shmem_put, shmem_atomic_fetch_add, shmem_sum_reduce,
 * shmem_wait_until, ...) maps each call to the routine of its argument's type. PEs on one node
 * use mapped symmetric heaps and globals; other nodes' PEs are reached through their one-sided
 * services (see README.md). Profiling names: pshmem.h. */
#ifndef WEFT_SHMEM_H
#define WEFT_SHMEM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SHMEM_MAJOR_VERSION 1
#define SHMEM_MINOR_VERSION 5
#define SHMEM_MAX_NAME_LEN 256
#define SHMEM_VENDOR_STRING "weft"

#define SHMEM_THREAD_SINGLE 0
#define SHMEM_THREAD_FUNNELED 1
#define SHMEM_THREAD_SERIALIZED 2
#define SHMEM_THREAD_MULTIPLE 3

#define SHMEM_CMP_EQ 0
#define SHMEM_CMP_NE 1
#define SHMEM_CMP_GT 2
#define SHMEM_CMP_GE 3
#define SHMEM_CMP_LT 4
#define SHMEM_CMP_LE 5
#define _SHMEM_CMP_EQ SHMEM_CMP_EQ
#define _SHMEM_CMP_NE SHMEM_CMP_NE
#define _SHMEM_CMP_GT SHMEM_CMP_GT
#define _SHMEM_CMP_GE SHMEM_CMP_GE
#define _SHMEM_CMP_LT SHMEM_CMP_LT
#define _SHMEM_CMP_LE SHMEM_CMP_LE

#define SHMEM_SIGNAL_SET 0
#define SHMEM_SIGNAL_ADD 1

/* pSync/pWrk are accepted and unused (weft synchronises through its own engine). */
#define SHMEM_SYNC_VALUE 0L
#define SHMEM_SYNC_SIZE 8
#define SHMEM_BCAST_SYNC_SIZE 8
#define SHMEM_COLLECT_SYNC_SIZE 8
#define SHMEM_REDUCE_SYNC_SIZE 8
#define SHMEM_BARRIER_SYNC_SIZE 8
#define SHMEM_ALLTOALL_SYNC_SIZE 8
#define SHMEM_ALLTOALLS_SYNC_SIZE 8
#define SHMEM_REDUCE_MIN_WRKDATA_SIZE 8
#define _SHMEM_SYNC_VALUE SHMEM_SYNC_VALUE
#define _SHMEM_BCAST_SYNC_SIZE SHMEM_BCAST_SYNC_SIZE
#define _SHMEM_COLLECT_SYNC_SIZE SHMEM_COLLECT_SYNC_SIZE
#define _SHMEM_REDUCE_SYNC_SIZE SHMEM_REDUCE_SYNC_SIZE
#define _SHMEM_BARRIER_SYNC_SIZE SHMEM_BARRIER_SYNC_SIZE
#define _SHMEM_ALLTOALL_SYNC_SIZE SHMEM_ALLTOALL_SYNC_SIZE
#define _SHMEM_ALLTOALLS_SYNC_SIZE SHMEM_ALLTOALLS_SYNC_SIZE
#define _SHMEM_REDUCE_MIN_WRKDATA_SIZE SHMEM_REDUCE_MIN_WRKDATA_SIZE
#define _SHMEM_MAJOR_VERSION SHMEM_MAJOR_VERSION
#define _SHMEM_MINOR_VERSION SHMEM_MINOR_VERSION
#define _SHMEM_MAX_NAME_LEN SHMEM_MAX_NAME_LEN

/* Team and context handles are opaque (pointer types, so C11 calls tell a context from a
 * buffer). */
typedef struct weft_shmem_team_handle *shmem_team_t;
typedef struct weft_shmem_ctx_handle *shmem_ctx_t;
typedef struct {
    int num_contexts;
} shmem_team_config_t;
#define SHMEM_TEAM_INVALID ((shmem_team_t)0)
#define SHMEM_TEAM_WORLD ((shmem_team_t)1)
#define SHMEM_TEAM_SHARED ((shmem_team_t)2)
#define SHMEM_TEAM_NUM_CONTEXTS 1L
#define SHMEM_CTX_INVALID ((shmem_ctx_t)0)
#define SHMEM_CTX_DEFAULT ((shmem_ctx_t)1)
#define SHMEM_CTX_SERIALIZED 1L
#define SHMEM_CTX_PRIVATE 2L
#define SHMEM_CTX_NOSTORE 4L
#define SHMEM_MALLOC_ATOMICS_REMOTE 1L
#define SHMEM_MALLOC_SIGNAL_REMOTE 2L

#include "weft/shmem_decl.h"

WEFT_SHMEM_DECLARE_ALL(shmem)

/* The pre-1.2 names. */
int _my_pe(void);
int _num_pes(void);
int my_pe(void);
int num_pes(void);
void start_pes(int npes);
void *shmalloc(size_t size);
void shfree(void *ptr);
void *shrealloc(void *ptr, size_t size);
void *shmemalign(size_t alignment, size_t size);

#define shmem_sync(...) \
    WEFT_SHMEM_PICK_SYNC(__VA_ARGS__, shmem_sync, shmem_sync_takes_1_or_4_arguments, \
                         shmem_sync_takes_1_or_4_arguments, shmem_team_sync, )(__VA_ARGS__)

#if !defined(__cplusplus) && defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#include "weft/shmem_c11.h"
#endif

#ifdef __cplusplus
}
#endif
#endif
