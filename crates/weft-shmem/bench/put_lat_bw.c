/* Put/get latency and bandwidth between PE 0 and PE 1, written against the OpenSHMEM API
 * only, so the same source builds with weft's oshcc and with any other (Open MPI's oshmem)
 * and the numbers compare like for like. Latency: average time of one blocking putmem/getmem
 * followed by quiet; bandwidth: back-to-back puts of one size, then quiet.
 * Usage: oshrun -n 2 ./put_lat_bw */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(void) {
    shmem_init();
    int me = shmem_my_pe();
    size_t max = 4 << 20;
    char *buf = shmem_malloc(max);
    char *src = malloc(max);
    memset(src, 1, max);
    shmem_barrier_all();
    if (me == 0) {
        printf("%10s %12s %12s %12s\n", "bytes", "put_us", "get_us", "put_MB/s");
        size_t sizes[] = {8, 64, 1024, 8192, 65536, 1 << 20, 4 << 20};
        for (int s = 0; s < 7; s++) {
            size_t b = sizes[s];
            int iters = b <= 8192 ? 100000 : (int)((256u << 20) / b);
            for (int i = 0; i < iters / 10; i++) { shmem_putmem(buf, src, b, 1); shmem_quiet(); }
            double t0 = now_s();
            for (int i = 0; i < iters; i++) { shmem_putmem(buf, src, b, 1); shmem_quiet(); }
            double put = (now_s() - t0) / iters;
            t0 = now_s();
            for (int i = 0; i < iters; i++) shmem_getmem(src, buf, b, 1);
            double get = (now_s() - t0) / iters;
            t0 = now_s();
            for (int i = 0; i < iters; i++) shmem_putmem(buf, src, b, 1);
            shmem_quiet();
            double bw = b * (double)iters / (now_s() - t0) / 1e6;
            printf("%10zu %12.3f %12.3f %12.1f\n", b, put * 1e6, get * 1e6, bw);
        }
    }
    shmem_barrier_all();
    shmem_free(buf);
    shmem_finalize();
    return 0;
}
