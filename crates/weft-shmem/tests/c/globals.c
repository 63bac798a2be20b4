/* Globals and statics as symmetric as the heap: puts, gets, atomics (fetching and not, 4 and 8
 * bytes), put-with-signal into a global signal word, waiting on a global, a lock in a global,
 * shmem_ptr to a same-node PE's global; on one node and across nodes. Prints "globals ok" on
 * each PE. With argument "die", PE 1 exits before shmem_init (its shared globals file must not
 * outlive the job); with "cma" (run with WEFT_SYMMETRIC_GLOBALS=cma), an atomic on another PE's
 * global must be refused with a message naming the knob. */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "PE %d: check failed at line %d: %s\n", shmem_my_pe(), __LINE__, #c); exit(2); } } while (0)

long counter;                 /* .bss */
int counter32;
long data[1024] = {1};        /* .data */
static uint64_t signal_word;
static long lock;
static long ring[4];
static char big_bss[1 << 22]; /* untouched: stays zero, never copied */

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "die") == 0 && getenv("WEFT_RANK") && strcmp(getenv("WEFT_RANK"), "1") == 0)
        _exit(3);
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    int right = (me + 1) % n, left = (me + n - 1) % n;
    CHECK(data[0] == 1 && big_bss[12345] == 0);

    if (strcmp(mode, "cma") == 0) {
        shmem_long_atomic_add(&counter, 1, right); /* refused when right is another PE */
        printf("globals ok\n");
        shmem_finalize();
        return 0;
    }

    /* Every PE adds to PE 0's counters. */
    shmem_long_atomic_add(&counter, me + 1, 0);
    shmem_int_atomic_fetch_add(&counter32, 2, 0);
    long before = shmem_long_atomic_fetch_inc(&counter, 0);
    CHECK(before >= 1);
    shmem_barrier_all();
    if (me == 0) CHECK(counter == (long)n * (n + 1) / 2 + n && counter32 == 2 * n);
    CHECK(shmem_long_atomic_fetch(&counter, 0) == (long)n * (n + 1) / 2 + n);
    CHECK(shmem_long_atomic_compare_swap(&ring[me], 0, 5, me) == 0 && ring[me] == 5);
    shmem_barrier_all();

    /* Put-with-signal into a global, waited for on a global. */
    long payload[64];
    for (int i = 0; i < 64; i++) payload[i] = me * 1000 + i;
    shmem_long_put_signal(&data[64], payload, 64, &signal_word, 1, SHMEM_SIGNAL_ADD, right);
    shmem_signal_wait_until(&signal_word, SHMEM_CMP_EQ, 1);
    for (int i = 0; i < 64; i++) CHECK(data[64 + i] == left * 1000 + i);
    long got[64];
    shmem_long_get(got, &data[64], 64, right);
    for (int i = 0; i < 64; i++) CHECK(got[i] == me * 1000 + i);
    shmem_barrier_all();

    /* A global lock around a read-modify-write of PE 0's global. */
    for (int k = 0; k < 10; k++) {
        shmem_set_lock(&lock);
        long v = shmem_long_g(&ring[3], 0);
        shmem_long_p(&ring[3], v + 1, 0);
        shmem_clear_lock(&lock);
    }
    shmem_barrier_all();
    if (me == 0) CHECK(ring[3] == 10L * n);

    /* shmem_ptr: this PE's own global is its address; a same-node PE's is a mapping of it. */
    CHECK(shmem_ptr(&data[0], me) == &data[0]);
    long *peer = shmem_ptr(&data[64], right);
    if (peer != NULL) CHECK(peer[0] == me * 1000);
    shmem_barrier_all();
    printf("globals ok%s\n", peer != NULL || n == 1 ? " (mapped)" : "");
    shmem_finalize();
    return 0;
}
