/* The default handler (MPI_ERRORS_ARE_FATAL): rank 1 (or 0 alone) sends to a rank that
 * does not exist; the job must end with one message naming MPI_Send, the argument and the
 * rank, and a non-zero exit code. The other ranks wait in a receive that never completes. */
#include "check.h"

int main(int argc, char **argv) {
  OK(MPI_Init(&argc, &argv));
  int rank, size, x = 0;
  OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  int culprit = size > 1 ? 1 : 0;
  if (rank == culprit) {
    MPI_Send(&x, 1, MPI_INT, size + 5, 0, MPI_COMM_WORLD);
    printf("UNREACHABLE: MPI_Send returned\n");
  } else {
    MPI_Recv(&x, 1, MPI_INT, culprit, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  MPI_Finalize();
  return 0;
}
