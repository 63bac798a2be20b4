/* The profiling interface of OpenSHMEM 1.5 (section 10): every routine of shmem.h under its
 * name-shifted entry point pshmem_*, with the types and constants it needs. A tool defines
 * the shmem_* routines it wants to observe and calls the pshmem_* ones from them. The C11
 * type-generic interface is made of macros and has no pshmem_ form (OpenSHMEM 1.5 10.3). */
#ifndef WEFT_PSHMEM_H
#define WEFT_PSHMEM_H

#include "shmem.h"

#ifdef __cplusplus
extern "C" {
#endif

WEFT_SHMEM_DECLARE_ALL(pshmem)

#define pshmem_sync(...) \
    WEFT_SHMEM_PICK_SYNC(__VA_ARGS__, pshmem_sync, pshmem_sync_takes_1_or_4_arguments, \
                         pshmem_sync_takes_1_or_4_arguments, pshmem_team_sync, )(__VA_ARGS__)

#ifdef __cplusplus
}
#endif
#endif
