/* Deaths the launcher must report by their first cause (issue 28 item 5). Rank 0 makes sure
 * every peer has a TCP connection to it, then closes every descriptor it has (its peers see
 * the connection end and abort through MPI's fatal handler with MPI_ERR_PROC_ABORTED) and
 * only some milliseconds later dies: `exit3` with exit(3) and no MPI_Finalize, `kill` by
 * SIGKILL. The survivors' aborts reach the launcher before rank 0's death: the job must still
 * end with rank 0's code (3, or 137 for SIGKILL), not with the survivors' 58.
 * Run with WEFT_TRANSPORTS=tcp. */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "exit3";
  int rank, size, token = 0;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (rank == 0) {
    for (int p = 1; p < size; p++) {
      MPI_Recv(&token, 1, MPI_INT, p, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(&token, 1, MPI_INT, p, 1, MPI_COMM_WORLD);
    }
    printf("rank 0 dies by %s\n", mode);
    fflush(stdout);
    for (int fd = 3; fd < 1024; fd++) close(fd);
    struct timespec pause = {0, 30 * 1000 * 1000};
    nanosleep(&pause, NULL);
    if (strcmp(mode, "kill") == 0) raise(SIGKILL);
    exit(3);
  }
  MPI_Send(&token, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
  MPI_Recv(&token, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  /* Rank 0 never sends this: the receive fails when its connection ends (fatal handler). */
  MPI_Recv(&token, 1, MPI_INT, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  printf("UNREACHABLE rank %d\n", rank);
  MPI_Finalize();
  return 0;
}
