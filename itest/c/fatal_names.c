/* The fatal handler's message names the call the program made when weft runs it as the
 * work of another entry: argv[1] "bcast": MPI_Bcast under MPI_THREAD_MULTIPLE (run as its
 * nonblocking twin's work) with a root that is not a rank; "allgather_c": MPI_Allgather_c
 * (run as MPI_Allgather's work) with MPI_DATATYPE_NULL; "wait": MPI_Wait under
 * MPI_THREAD_MULTIPLE (polled by MPI_Test's work) on a request that is not one; "attr_put":
 * MPI_Attr_put (MPI_Comm_set_attr's work) with a keyval that is not one; "type_size_x":
 * MPI_Type_size_x (MPI_Type_size_c's work) of MPI_DATATYPE_NULL. Every rank makes the bad
 * call. */
#include "check.h"
#include <stdint.h>
#include <string.h>

int main(int argc, char **argv) {
  int provided, size, x[8] = {0}, y[64] = {0};
  OK(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
  OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  if (argc > 1 && strcmp(argv[1], "bcast") == 0) {
    CHECK(provided == MPI_THREAD_MULTIPLE);
    MPI_Bcast(x, 1, MPI_INT, size + 5, MPI_COMM_WORLD);
  } else if (argc > 1 && strcmp(argv[1], "allgather_c") == 0) {
    MPI_Allgather_c(x, 1, MPI_DATATYPE_NULL, y, 1, MPI_DATATYPE_NULL, MPI_COMM_WORLD);
  } else if (argc > 1 && strcmp(argv[1], "wait") == 0) {
    MPI_Request bad = (MPI_Request)(intptr_t)0x7eadbeef;
    CHECK(provided == MPI_THREAD_MULTIPLE);
    MPI_Wait(&bad, MPI_STATUS_IGNORE);
  } else if (argc > 1 && strcmp(argv[1], "attr_put") == 0) {
    MPI_Attr_put(MPI_COMM_WORLD, 987654, x);
  } else if (argc > 1 && strcmp(argv[1], "type_size_x") == 0) {
    MPI_Count n;
    MPI_Type_size_x(MPI_DATATYPE_NULL, &n);
  } else {
    CHECK(0 && "usage: fatal_names bcast|allgather_c|wait|attr_put|type_size_x");
  }
  printf("UNREACHABLE: the bad call returned\n");
  MPI_Finalize();
  return 0;
}
