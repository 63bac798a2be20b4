/* Many threads put concurrently (each its own slots of every other PE), atomics from all
 * threads on one counter, and a signal ping-pong that must never miss a wake-up. Prints
 * "threads ok" on each PE. */
#include <shmem.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "PE %d: check failed at line %d: %s\n", shmem_my_pe(), __LINE__, #c); exit(2); } } while (0)
#define THREADS 4
#define PUTS 5000

static long *slots, *counter;
static int me, n;

static void *worker(void *arg) {
    long t = (long)arg;
    for (int p = 0; p < n; p++) {
        if (p == me) continue;
        for (long i = 0; i < PUTS; i++)
            shmem_long_p(&slots[(me * THREADS + t) * PUTS + i], me * 1000000L + t * 100000L + i, p);
    }
    for (int i = 0; i < 1000; i++) shmem_long_atomic_inc(counter, 0);
    shmem_quiet();
    return NULL;
}

int main(void) {
    int provided;
    shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided);
    CHECK(provided == SHMEM_THREAD_MULTIPLE);
    me = shmem_my_pe(); n = shmem_n_pes();
    slots = shmem_calloc((size_t)n * THREADS * PUTS, sizeof(long));
    counter = shmem_calloc(1, sizeof(long));
    pthread_t th[THREADS];
    for (long t = 0; t < THREADS; t++) pthread_create(&th[t], NULL, worker, (void *)t);
    for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
    shmem_barrier_all();
    for (int p = 0; p < n; p++) {
        if (p == me) continue;
        for (long t = 0; t < THREADS; t++)
            for (long i = 0; i < PUTS; i++)
                CHECK(slots[(p * THREADS + t) * PUTS + i] == p * 1000000L + t * 100000L + i);
    }
    if (me == 0) CHECK(*counter == 1000L * THREADS * n);
    /* ping-pong between PE 0 and PE 1 with signals: each side waits for the other's count */
    uint64_t *sig = shmem_calloc(1, sizeof(uint64_t));
    long *box = shmem_calloc(1, sizeof(long));
    if (n >= 2 && me < 2) {
        int other = 1 - me;
        for (uint64_t round = 1; round <= 20000; round++) {
            if ((round % 2 == 1) == (me == 0)) {
                long v = (long)round;
                shmem_putmem_signal(box, &v, sizeof v, sig, round, SHMEM_SIGNAL_SET, other);
            } else {
                shmem_uint64_wait_until(sig, SHMEM_CMP_GE, round);
                CHECK(*box == (long)round);
            }
        }
    }
    shmem_barrier_all();
    printf("PE %d: threads ok\n", me);
    shmem_finalize();
    return 0;
}
