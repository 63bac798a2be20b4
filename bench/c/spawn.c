/* The time one process takes to spawn children and have them ready: MPI_Comm_spawn of N
 * copies of this program (argv[1], default 4), the children's MPI_Init, an
 * MPI_Intercomm_merge and a barrier on the merge, measured by the parent with MPI_Wtime
 * from before the spawn to after the barrier. Prints "spawn N SECONDS". Standard MPI only
 * (bench/spawn_compare.sh builds it against each library). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm parent, inter, merged;
  MPI_Comm_get_parent(&parent);
  if (parent != MPI_COMM_NULL) {
    MPI_Intercomm_merge(parent, 1, &merged);
    MPI_Barrier(merged);
    MPI_Comm_free(&merged);
    MPI_Comm_disconnect(&parent);
    MPI_Finalize();
    return 0;
  }
  int n = argc > 1 ? atoi(argv[1]) : 4;
  double t0 = MPI_Wtime();
  int rc = MPI_Comm_spawn(argv[0], MPI_ARGV_NULL, n, MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter,
                          MPI_ERRCODES_IGNORE);
  if (rc != MPI_SUCCESS) {
    fprintf(stderr, "spawn failed: %d\n", rc);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  MPI_Intercomm_merge(inter, 0, &merged);
  MPI_Barrier(merged);
  double t1 = MPI_Wtime();
  int size;
  MPI_Comm_size(merged, &size);
  if (size != n + 1) {
    fprintf(stderr, "merged size %d, want %d\n", size, n + 1);
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  MPI_Comm_free(&merged);
  MPI_Comm_disconnect(&inter);
  printf("spawn %d %.6f\n", n, t1 - t0);
  MPI_Finalize();
  return 0;
}
