/* Start-up cost of an MPI job: init, one barrier, finalize, nothing else. Built with any
 * MPI (weft's mpicc, Open MPI's, MPICH's) so `weft bench startup --compare` times the same
 * program under every launcher:
 *   crates/weft-mpi/bin/mpicc bench/c/startup.c -o startup.weft
 *   mpicc.openmpi bench/c/startup.c -o startup.ompi */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
  if (MPI_Init(&argc, &argv) != MPI_SUCCESS) return 1;
  if (MPI_Barrier(MPI_COMM_WORLD) != MPI_SUCCESS) return 1;
  return MPI_Finalize() == MPI_SUCCESS ? 0 : 1;
}
