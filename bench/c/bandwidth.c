/* Windowed bandwidth from rank 0 to rank 1 (OSU methodology): a window of 64 nonblocking
 * sends answered by one acknowledgement, repeated; prints MB/s per size. Standard MPI only.
 * Usage: bandwidth [max_bytes] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  long max = argc > 1 ? atol(argv[1]) : 4 << 20;
  enum { WINDOW = 64 };
  if (size < 2) {
    MPI_Finalize();
    return 1;
  }
  char *buf = malloc((size_t)max * WINDOW);
  memset(buf, 2, (size_t)max * WINDOW);
  MPI_Request req[WINDOW];
  if (rank == 0) printf("%10s %14s\n", "bytes", "MB_per_s");
  for (long n = 1; n <= max; n *= 4) {
    int loops = n >= 1 << 20 ? 5 : 50, ack = 0;
    double t0 = 0;
    for (int l = -2; l < loops; l++) {
      if (l == 0) {
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
      }
      for (int i = 0; i < WINDOW; i++) {
        if (rank == 0)
          MPI_Isend(buf + i * n, (int)n, MPI_BYTE, 1, 1, MPI_COMM_WORLD, &req[i]);
        else if (rank == 1)
          MPI_Irecv(buf + i * n, (int)n, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &req[i]);
      }
      if (rank <= 1) MPI_Waitall(WINDOW, req, MPI_STATUSES_IGNORE);
      if (rank == 0) MPI_Recv(&ack, 1, MPI_INT, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      if (rank == 1) MPI_Send(&ack, 1, MPI_INT, 0, 2, MPI_COMM_WORLD);
    }
    double t = MPI_Wtime() - t0;
    if (rank == 0) printf("%10ld %14.1f\n", n, (double)n * WINDOW * loops / t / 1e6);
  }
  free(buf);
  MPI_Finalize();
  return 0;
}
