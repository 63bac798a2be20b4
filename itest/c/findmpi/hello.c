#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int r, n, s = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  MPI_Allreduce(&r, &s, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (r == 0) printf("hello from %d ranks, sum %d\n", n, s);
  MPI_Finalize();
  return s == n * (n - 1) / 2 ? 0 : 1;
}
