/* A rank that ends before finalize, for the launcher tests: the last rank ends right after
 * MPI_Init as the first argument says (exit: exit(3); _exit: _exit(3); kill: SIGKILL;
 * abort: MPI_Abort(7)); the others sleep outside MPI for at most 20 minutes and then exit
 * 99, far past any test's limit, so only the runtime's liveness watch or the launcher ends
 * them. "ok" finalizes everywhere and exits 0. */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char *mode = argc > 1 ? argv[1] : "ok";
  if (!strcmp(mode, "ok")) {
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
  }
  if (rank == size - 1) {
    if (!strcmp(mode, "exit")) exit(3);
    if (!strcmp(mode, "_exit")) _exit(3);
    if (!strcmp(mode, "kill")) raise(SIGKILL);
    if (!strcmp(mode, "abort")) MPI_Abort(MPI_COMM_WORLD, 7);
  }
  for (int i = 0; i < 12000; i++) usleep(100000);
  return 99;
}
