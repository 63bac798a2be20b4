/* weft's node synchronisation engine (ALGORITHMS.md §7), exported by libshmem: call
 * shmem_init first. Addresses are tags every participating process agrees on (any 64-bit
 * number but UINT64_MAX), not pointers. Participants of weft_sync_* are processes of one
 * node; weft_sync_job_* span every node of the job (the node completes the round locally,
 * then the nodes' first processes combine the nodes' parts with weft's collectives). Job-wide
 * and node-wide calls use separate tables: their addresses never meet. Errors (full table,
 * bad count, dead peer) print a message and end the job. */
#ifndef WEFT_SYNC_H
#define WEFT_SYNC_H
#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

enum { WEFT_SYNC_SUM = 0, WEFT_SYNC_PROD, WEFT_SYNC_MIN, WEFT_SYNC_MAX, WEFT_SYNC_AND, WEFT_SYNC_OR, WEFT_SYNC_XOR };

/* Waits until the word is empty, stores value and marks it full for `readers` gets. */
void weft_sync_put(uint64_t addr, int64_t value, uint32_t readers);
/* Waits until full, takes the value; the last expected reader marks the word empty. */
int64_t weft_sync_get(uint64_t addr);
void weft_sync_lock(uint64_t addr);
void weft_sync_unlock(uint64_t addr);
/* Returns when n processes called it on addr (one round). */
void weft_sync_barrier(uint64_t addr, uint32_t n);
/* Combines one value from each of n processes; all get the result. */
int64_t weft_sync_reduce_long(uint64_t addr, int64_t value, int op, uint32_t n);
double weft_sync_reduce_double(uint64_t addr, double value, int op, uint32_t n);
/* dst[i] = op over the n processes' src[i] (len elements each). */
void weft_sync_burst_reduce_double(uint64_t addr, const double *src, double *dst, size_t len, int op, uint32_t n);
void weft_sync_burst_reduce_long(uint64_t addr, const int64_t *src, int64_t *dst, size_t len, int op, uint32_t n);

/* Processes on this node, and nodes in the job. */
uint32_t weft_sync_node_size(void);
uint32_t weft_sync_nodes(void);
/* Job-wide rounds: n counts the participants on the caller's node (nodes may differ); every
 * node takes part, and each node's first process (local rank 0) must be one of its
 * participants. One call per process and round (not from several threads of a process). */
void weft_sync_job_barrier(uint64_t addr, uint32_t n);
int64_t weft_sync_job_reduce_long(uint64_t addr, int64_t value, int op, uint32_t n);
double weft_sync_job_reduce_double(uint64_t addr, double value, int op, uint32_t n);
/* dst[i] = op over every participant's src[i] on every node; the same bits everywhere. */
void weft_sync_job_burst_reduce_long(uint64_t addr, const int64_t *src, int64_t *dst, size_t len, int op, uint32_t n);
void weft_sync_job_burst_reduce_double(uint64_t addr, const double *src, double *dst, size_t len, int op, uint32_t n);

#ifdef __cplusplus
}
#endif
#endif
