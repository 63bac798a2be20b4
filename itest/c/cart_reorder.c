/* MPI_Cart_create with reorder: grid neighbours on one node where the members' nodes allow.
 * For a grid of argv dims (default: the whole job as MPI_Dims_create gives it) the program
 * counts grid edges whose ends are on different nodes (bytes a neighbour exchange moves
 * across nodes, one message per edge) with reorder 0 and 1, checks that reorder never cuts
 * more, that it cuts fewer when argv[1] says "fewer", that MPI_Cart_map agrees with the
 * reordered rank, and that a neighbour exchange on the reordered grid delivers what the
 * coordinates say. Rank 0 prints "cut identity N reordered M". */
#include "check.h"
#include <string.h>

static int node_id; /* the lowest world rank on this process's node */

/* Edges of `cart` (each once: to the +1 neighbour) whose ends are on different nodes. */
static int cut_edges(MPI_Comm cart, int ndims) {
  int cut = 0;
  for (int d = 0; d < ndims; d++) {
    int down, up, from_down = -1;
    OK(MPI_Cart_shift(cart, d, 1, &down, &up));
    OK(MPI_Sendrecv(&node_id, 1, MPI_INT, up, 1, &from_down, 1, MPI_INT, down, 1, cart,
                    MPI_STATUS_IGNORE));
    /* Count the edge (down -> me) at its upper end; a 2-long periodic dimension has one. */
    int dims[8], periods[8], coords[8];
    OK(MPI_Cart_get(cart, ndims, dims, periods, coords));
    int counted = down != MPI_PROC_NULL && !(dims[d] == 2 && periods[d] && coords[d] == 0);
    if (counted && from_down != node_id) cut++;
  }
  int all = 0;
  OK(MPI_Allreduce(&cut, &all, 1, MPI_INT, MPI_SUM, cart));
  return all;
}

/* Each rank sends its coordinates to its +1 neighbours; what arrives must be the
 * coordinates of the -1 neighbour. */
static void exchange_matches_coordinates(MPI_Comm cart, int ndims) {
  int me, coords[8], dims[8], periods[8];
  OK(MPI_Comm_rank(cart, &me));
  OK(MPI_Cart_get(cart, ndims, dims, periods, coords));
  for (int d = 0; d < ndims; d++) {
    int down, up, got[8];
    OK(MPI_Cart_shift(cart, d, 1, &down, &up));
    OK(MPI_Sendrecv(coords, ndims, MPI_INT, up, 2, got, ndims, MPI_INT, down, 2, cart,
                    MPI_STATUS_IGNORE));
    if (down != MPI_PROC_NULL) {
      int want[8];
      OK(MPI_Cart_coords(cart, down, ndims, want));
      CHECK(memcmp(got, want, ndims * sizeof(int)) == 0);
    }
  }
}

int main(int argc, char **argv) {
  int rank, size;
  OK(MPI_Init(&argc, &argv));
  OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  MPI_Comm node;
  OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  OK(MPI_Allreduce(&rank, &node_id, 1, MPI_INT, MPI_MIN, node));
  int want_fewer = argc > 1 && strcmp(argv[1], "fewer") == 0;
  int ndims = argc > 2 ? argc - 2 : 2;
  int dims[8] = {0}, periods[8] = {0};
  if (argc > 2) {
    for (int i = 0; i < ndims; i++) dims[i] = atoi(argv[2 + i]);
  } else {
    OK(MPI_Dims_create(size, ndims, dims));
  }
  int cut[2];
  for (int reorder = 0; reorder < 2; reorder++) {
    MPI_Comm cart;
    OK(MPI_Cart_create(MPI_COMM_WORLD, ndims, dims, periods, reorder, &cart));
    int grid = 1;
    for (int i = 0; i < ndims; i++) grid *= dims[i];
    int mapped;
    OK(MPI_Cart_map(MPI_COMM_WORLD, ndims, dims, periods, &mapped));
    if (cart == MPI_COMM_NULL) {
      CHECK(rank >= grid || reorder);
      if (reorder) CHECK(mapped == MPI_UNDEFINED);
      cut[reorder] = -1;
    } else {
      int me;
      OK(MPI_Comm_rank(cart, &me));
      if (reorder) CHECK(mapped == me);
      else CHECK(me == rank);
      exchange_matches_coordinates(cart, ndims);
      cut[reorder] = cut_edges(cart, ndims);
      OK(MPI_Comm_free(&cart));
    }
  }
  if (rank == 0) {
    printf("cut identity %d reordered %d\n", cut[0], cut[1]);
    CHECK(cut[1] <= cut[0]);
    if (want_fewer) CHECK(cut[1] < cut[0]);
  }
  OK(MPI_Comm_free(&node));
  OK(MPI_Finalize());
  return 0;
}
