/* A rank that ends before finalize, for the launcher tests: the last rank ends right after
 * MPI_Init as the first argument says (exit: exit(3); _exit: _exit(3); kill: SIGKILL;
 * abort: MPI_Abort(7)); the others sleep outside MPI for at most 20 minutes and then exit
 * 99, far past any test's limit, so only the runtime's liveness watch or the launcher ends
 * them. "ok" finalizes everywhere and exits 0.
 *
 * With a directory as the second argument (one every rank sees, empty), the last rank ends
 * only once every other rank is out of MPI_Init: each of them leaves a file `ready-RANK`
 * there when its MPI_Init returned, and the last rank keeps MPI progressing (MPI_Iprobe)
 * until it has seen them all. Without that, the last rank could end while a rank still
 * waits in MPI_Init's collectives for bytes the last rank had queued (a network peer's
 * bytes go out when its progress runs), and that rank would report a lost peer with its
 * own code before the launcher learned the last rank's. */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
  const char *dir = argc > 2 ? argv[2] : NULL;
  char path[4096];
  if (dir && rank != size - 1) {
    snprintf(path, sizeof path, "%s/ready-%d", dir, rank);
    FILE *f = fopen(path, "w");
    if (!f) {
      perror(path);
      return 98;
    }
    fclose(f);
  }
  if (dir && rank == size - 1) {
    /* At most 10 minutes, then end anyway (the test's limit is far shorter). */
    for (int i = 0; i < 600000; i++) {
      int seen = 0, flag;
      struct stat st;
      for (int r = 0; r < size - 1; r++) {
        snprintf(path, sizeof path, "%s/ready-%d", dir, r);
        seen += stat(path, &st) == 0;
      }
      if (seen == size - 1) break;
      MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
      usleep(1000);
    }
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
