/* MPI and OpenSHMEM in one process: initialised in the order argv[1] says ("mpi" or
 * "shmem" first) and finalized in the order argv[2] says (the one named first). PE numbers
 * and MPI ranks must agree; an MPI reduction, a put to a global, an atomic on a heap word
 * and an MPI message must all work with both running. Prints "hybrid ok" on each process. */
#include <mpi.h>
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "check failed at line %d: %s\n", __LINE__, #c); exit(2); } } while (0)

static long global_in;

int main(int argc, char **argv) {
    CHECK(argc == 3);
    int mpi_first = strcmp(argv[1], "mpi") == 0;
    if (mpi_first) {
        CHECK(MPI_Init(&argc, &argv) == MPI_SUCCESS);
        shmem_init();
    } else {
        shmem_init();
        CHECK(MPI_Init(&argc, &argv) == MPI_SUCCESS);
    }
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int me = shmem_my_pe(), n = shmem_n_pes();
    CHECK(rank == me && size == n);

    long sum = 0, one = me + 1;
    CHECK(MPI_Allreduce(&one, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS);
    CHECK(sum == (long)n * (n + 1) / 2);

    long *counter = shmem_calloc(1, sizeof(long));
    long v = 100 + me;
    shmem_long_put(&global_in, &v, 1, (me + 1) % n);
    shmem_long_atomic_add(counter, me + 1, 0);
    shmem_barrier_all();
    CHECK(global_in == 100 + (me + n - 1) % n);
    if (me == 0) CHECK(*counter == sum);

    long token = -1;
    if (n > 1) {
        if (rank == 0) {
            token = 42;
            MPI_Send(&token, 1, MPI_LONG, n - 1, 7, MPI_COMM_WORLD);
        } else if (rank == n - 1) {
            MPI_Recv(&token, 1, MPI_LONG, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            CHECK(token == 42);
        }
    }
    shmem_free(counter);
    printf("hybrid ok\n");
    fflush(stdout);
    if (strcmp(argv[2], "shmem") == 0) {
        shmem_finalize();
        CHECK(MPI_Finalize() == MPI_SUCCESS);
    } else {
        CHECK(MPI_Finalize() == MPI_SUCCESS);
        shmem_finalize();
    }
    return 0;
}
