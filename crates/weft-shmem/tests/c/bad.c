/* Bad input: a put to a PE out of range, to a non-symmetric address, heap exhaustion. The
 * first argument picks the case; each must end the job with a message naming PE and address. */
#include <shmem.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    shmem_init();
    long *x = shmem_malloc(8), local = 1;
    if (argc > 1 && strcmp(argv[1], "pe") == 0) shmem_long_p(x, 1, shmem_n_pes() + 3);
    if (argc > 1 && strcmp(argv[1], "addr") == 0) shmem_long_p(&local, 1, 0);
    if (argc > 1 && strcmp(argv[1], "heap") == 0) shmem_malloc((size_t)1 << 40);
    printf("PE %d: not reached\n", shmem_my_pe());
    shmem_finalize();
    return 0;
}
