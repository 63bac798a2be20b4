/* A program profiled by the specification's pshmem example (linked with it): its
 * shmem_long_put calls go to the profiler's definition, which forwards them to
 * pshmem_long_put; shmem_pcontrol is the library's no-op. Prints "pshmem ok". */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
    static long dest[4];
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    long src[4] = {me, me + 1, me + 2, me + 3};
    shmem_pcontrol(1);
    shmem_long_put(dest, src, 4, (me + 1) % n);
    shmem_barrier_all();
    int left = (me + n - 1) % n;
    for (int i = 0; i < 4; i++)
        if (dest[i] != left + i) {
            fprintf(stderr, "PE %d: dest[%d] = %ld\n", me, i, dest[i]);
            return 1;
        }
    printf("pshmem ok\n");
    shmem_finalize();
    return 0;
}
