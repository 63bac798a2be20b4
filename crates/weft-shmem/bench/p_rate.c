/* Message rate of 8-byte shmem_long_p from PE 0 to PE 1 with 1, 2, 4 and 8 initiating
 * threads (each to its own slots), OpenSHMEM API only, so it builds with any oshcc.
 * Usage: oshrun -n 2 ./p_rate [puts_per_thread] */
#include <shmem.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define SLOTS 4096
static long *target;
static long puts_per_thread = 2000000;

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void *initiator(void *arg) {
    long t = (long)arg;
    long *base = target + t * SLOTS;
    for (long i = 0; i < puts_per_thread; i++) shmem_long_p(&base[i % SLOTS], i + 1, 1);
    shmem_quiet();
    return NULL;
}

int main(int argc, char **argv) {
    if (argc > 1) puts_per_thread = atol(argv[1]);
    int provided;
    shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided);
    target = shmem_calloc(8 * SLOTS, sizeof(long));
    shmem_barrier_all();
    if (shmem_my_pe() == 0) {
        printf("# shmem_long_p to PE 1, %ld puts per thread, thread level %d\n%8s %12s\n",
               puts_per_thread, provided, "threads", "Mputs/s");
        int counts[] = {1, 2, 4, 8};
        for (int c = 0; c < 4; c++) {
            int n = counts[c];
            if (n > 1 && provided != SHMEM_THREAD_MULTIPLE) break;
            pthread_t th[8];
            double t0 = now_s();
            for (long t = 0; t < n; t++) pthread_create(&th[t], NULL, initiator, (void *)t);
            for (int t = 0; t < n; t++) pthread_join(th[t], NULL);
            double s = now_s() - t0;
            printf("%8d %12.2f\n", n, n * puts_per_thread / s / 1e6);
        }
    }
    shmem_barrier_all();
    if (shmem_my_pe() == 1 && target[0] == 0) { fprintf(stderr, "no put arrived\n"); return 1; }
    shmem_finalize();
    return 0;
}
