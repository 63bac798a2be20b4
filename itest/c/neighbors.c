/* Neighborhood collectives (MPI-4.1 §8.6-8.8) exchange messages with the neighbors only:
 * a rank without neighbors finishes its call without waiting for anyone, so it can then
 * send to a rank that has not called yet (this hangs if a call involves the whole
 * communicator). Also: neighborhood traffic never meets the program's messages on the
 * same communicator (a wildcard receive posted across the call takes only the program's
 * message), persistent requests started in different orders on different ranks, and the
 * blocking, nonblocking and persistent forms on a ring with a self-edge at 1 rank. */
#include "check.h"

static int wrank, wsize;

/* Ranks 0 and 1 are each other's neighbors (twice over, with two distinct blocks); the
 * others have no neighbors at all. */
static void only_neighbors_take_part(void) {
  if (wsize < 3) return;
  int deg = wrank < 2 ? 2 : 0;
  int nbr[2] = {1 - wrank, 1 - wrank}, w[2] = {1, 1};
  MPI_Comm g;
  OK(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, deg, nbr, w, deg, nbr, w,
                                    MPI_INFO_NULL, 0, &g));
  int out[2] = {10 * wrank + 1, 10 * wrank + 2}, in[2] = {-1, -1}, note = 7;
  if (wrank == 2) {
    OK(MPI_Neighbor_alltoall(out, 1, MPI_INT, in, 1, MPI_INT, g));
    OK(MPI_Send(&note, 1, MPI_INT, 0, 3, MPI_COMM_WORLD));
  } else if (wrank == 0) {
    int got = -1;
    OK(MPI_Recv(&got, 1, MPI_INT, 2, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK(got == 7);
    OK(MPI_Neighbor_alltoall(out, 1, MPI_INT, in, 1, MPI_INT, g));
  } else {
    OK(MPI_Neighbor_alltoall(out, 1, MPI_INT, in, 1, MPI_INT, g));
  }
  if (wrank < 2) {
    /* The k-th edge to a peer pairs with the k-th edge from it. */
    CHECK(in[0] == 10 * (1 - wrank) + 1 && in[1] == 10 * (1 - wrank) + 2);
  } else {
    CHECK(in[0] == -1 && in[1] == -1);
  }
  OK(MPI_Comm_free(&g));
}

/* A ring (periodic Cartesian, 1 dimension): left and right neighbors. */
static void ring(void) {
  MPI_Comm c;
  int dims[1] = {wsize}, periods[1] = {1};
  OK(MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &c));
  OK(MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN));
  int me, left = (wrank + wsize - 1) % wsize, right = (wrank + 1) % wsize;
  OK(MPI_Comm_rank(c, &me));
  CHECK(me == wrank);
  /* The program's own message on the topology communicator, received with wildcards by a
   * receive posted before the collective and completed after it. */
  MPI_Request user;
  int umsg = -1, mine = 1000 + wrank, note = 2000 + wrank;
  OK(MPI_Irecv(&umsg, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, c, &user));
  int in[2] = {-1, -1};
  OK(MPI_Neighbor_allgather(&mine, 1, MPI_INT, in, 1, MPI_INT, c));
  CHECK(in[0] == 1000 + left && in[1] == 1000 + right);
  OK(MPI_Send(&note, 1, MPI_INT, right, 9, c));
  MPI_Status st;
  OK(MPI_Wait(&user, &st));
  /* Only the program's message, not a block of the collective. */
  CHECK(umsg == 2000 + left && st.MPI_SOURCE == left && st.MPI_TAG == 9);

  /* Nonblocking: two outstanding, completed in reverse order. */
  int a[2] = {-1, -1}, b[2] = {-1, -1}, sa[2] = {wrank, -wrank}, sb = 50 + wrank;
  MPI_Request r[2];
  OK(MPI_Ineighbor_alltoall(sa, 1, MPI_INT, a, 1, MPI_INT, c, &r[0]));
  OK(MPI_Ineighbor_allgather(&sb, 1, MPI_INT, b, 1, MPI_INT, c, &r[1]));
  OK(MPI_Wait(&r[1], MPI_STATUS_IGNORE));
  OK(MPI_Wait(&r[0], MPI_STATUS_IGNORE));
  /* Send slot 0 goes left, slot 1 right; receive slot 0 is what the left sent right. */
  CHECK(a[0] == -left && a[1] == right);
  CHECK(b[0] == 50 + left && b[1] == 50 + right);
  CHECK(r[0] == MPI_REQUEST_NULL && r[1] == MPI_REQUEST_NULL);

  /* Persistent: two requests started in opposite orders on even and odd ranks, three
   * rounds, the send data changed between rounds. */
  int pa = 0, pb = 0, ina[2], inb[2];
  MPI_Request p[2];
  OK(MPI_Neighbor_allgather_init(&pa, 1, MPI_INT, ina, 1, MPI_INT, c, MPI_INFO_NULL, &p[0]));
  OK(MPI_Neighbor_allgather_init(&pb, 1, MPI_INT, inb, 1, MPI_INT, c, MPI_INFO_NULL, &p[1]));
  for (int round = 0; round < 3; round++) {
    pa = 100 * round + wrank;
    pb = -(100 * round + wrank);
    ina[0] = ina[1] = inb[0] = inb[1] = -7;
    if (wrank % 2 == 0) {
      OK(MPI_Start(&p[0]));
      OK(MPI_Start(&p[1]));
    } else {
      OK(MPI_Start(&p[1]));
      OK(MPI_Start(&p[0]));
    }
    /* A started request cannot be started again before it completes. */
    CHECK_RC(MPI_Start(&p[0]), MPI_ERR_REQUEST);
    int idx = -1;
    OK(MPI_Waitany(2, p, &idx, MPI_STATUS_IGNORE));
    CHECK(idx == 0 || idx == 1);
    OK(MPI_Waitall(2, p, MPI_STATUSES_IGNORE));
    CHECK(p[0] != MPI_REQUEST_NULL && p[1] != MPI_REQUEST_NULL); /* persistent: kept */
    CHECK(ina[0] == 100 * round + left && ina[1] == 100 * round + right);
    CHECK(inb[0] == -(100 * round + left) && inb[1] == -(100 * round + right));
  }
  /* All inactive: Waitany reports MPI_UNDEFINED. */
  int idx = 0;
  OK(MPI_Waitany(2, p, &idx, MPI_STATUS_IGNORE));
  CHECK(idx == MPI_UNDEFINED);
  OK(MPI_Request_free(&p[0]));
  OK(MPI_Request_free(&p[1]));

  /* A duplicate keeps the topology and its own neighborhood traffic. */
  MPI_Comm d;
  OK(MPI_Comm_dup(c, &d));
  int dd[2] = {-1, -1};
  OK(MPI_Neighbor_allgather(&mine, 1, MPI_INT, dd, 1, MPI_INT, d));
  CHECK(dd[0] == 1000 + left && dd[1] == 1000 + right);
  OK(MPI_Comm_free(&d));

  /* Bad input: a negative count is refused on every rank alike, nothing left in flight. */
  CHECK_RC(MPI_Neighbor_allgather(&mine, -1, MPI_INT, dd, 1, MPI_INT, c), MPI_ERR_COUNT);
  CHECK_RC(MPI_Ineighbor_allgather(&mine, 1, MPI_INT, dd, 1, MPI_INT, c, NULL), MPI_ERR_ARG);
  CHECK_RC(MPI_Neighbor_allgather(&mine, 1, MPI_INT, dd, 1, MPI_INT, MPI_COMM_WORLD),
           MPI_ERR_TOPOLOGY);
  OK(MPI_Neighbor_allgather(&mine, 1, MPI_INT, dd, 1, MPI_INT, c));
  CHECK(dd[0] == 1000 + left && dd[1] == 1000 + right);
  OK(MPI_Comm_free(&c));
}

int main(int argc, char **argv) {
  OK(MPI_Init(&argc, &argv));
  OK(MPI_Comm_rank(MPI_COMM_WORLD, &wrank));
  OK(MPI_Comm_size(MPI_COMM_WORLD, &wsize));
  OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  only_neighbors_take_part();
  ring();
  OK(MPI_Finalize());
  return 0;
}
