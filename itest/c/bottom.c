/* MPI_BOTTOM with absolute addresses (MPI-4.1 §5.1.12): a struct type whose displacements
 * come from MPI_Get_address, used from MPI_BOTTOM by Send/Recv, Isend/Irecv, Sendrecv, a
 * short message into it, Bcast and Allreduce; a datatype with relative displacements at
 * MPI_BOTTOM is refused with MPI_ERR_BUFFER. Runs at any size >= 1 (point-to-point between
 * ranks 0 and 1). */
#include "check.h"
#include <string.h>

/* Three separate objects, so the type's footprint is not one of them. */
static int ival[3];
static double dval;
static char cval[5];

static MPI_Datatype absolute_type(int *ip, double *dp, char *cp) {
  int bl[3] = {3, 1, 5};
  MPI_Aint disp[3];
  MPI_Datatype tys[3] = {MPI_INT, MPI_DOUBLE, MPI_CHAR}, t;
  OK(MPI_Get_address(ip, &disp[0]));
  OK(MPI_Get_address(dp, &disp[1]));
  OK(MPI_Get_address(cp, &disp[2]));
  OK(MPI_Type_create_struct(3, bl, disp, tys, &t));
  OK(MPI_Type_commit(&t));
  return t;
}

static void fill(int seed) {
  for (int i = 0; i < 3; i++) ival[i] = seed * 10 + i;
  dval = seed + 0.5;
  for (int i = 0; i < 4; i++) cval[i] = (char)('a' + seed + i);
  cval[4] = 0;
}

static void expect(int seed) {
  for (int i = 0; i < 3; i++) CHECK(ival[i] == seed * 10 + i);
  CHECK(dval == seed + 0.5);
  for (int i = 0; i < 4; i++) CHECK(cval[i] == (char)('a' + seed + i));
}

static void clear(void) {
  memset(ival, 0, sizeof ival);
  dval = 0;
  memset(cval, 0, sizeof cval);
}

int main(int argc, char **argv) {
  int rank, size;
  MPI_Status st;
  MPI_Request rq[2];
  OK(MPI_Init(&argc, &argv));
  OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  MPI_Datatype t = absolute_type(ival, &dval, cval);

  if (size > 1 && rank < 2) {
    int peer = 1 - rank;
    /* Blocking: rank 0 sends from MPI_BOTTOM, rank 1 receives into MPI_BOTTOM. */
    if (rank == 0) {
      fill(1);
      OK(MPI_Send(MPI_BOTTOM, 1, t, peer, 1, MPI_COMM_WORLD));
    } else {
      clear();
      OK(MPI_Recv(MPI_BOTTOM, 1, t, peer, 1, MPI_COMM_WORLD, &st));
      expect(1);
      int n;
      OK(MPI_Get_count(&st, t, &n));
      CHECK(n == 1);
    }
    /* Nonblocking, both directions at once: the receive lands in a second set of objects
     * (a second absolute type), the send reads the first. */
    static int i2[3];
    static double d2;
    static char c2[5];
    MPI_Datatype t2 = absolute_type(i2, &d2, c2);
    fill(2 + rank);
    OK(MPI_Irecv(MPI_BOTTOM, 1, t2, peer, 2, MPI_COMM_WORLD, &rq[0]));
    OK(MPI_Isend(MPI_BOTTOM, 1, t, peer, 2, MPI_COMM_WORLD, &rq[1]));
    OK(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
    for (int i = 0; i < 3; i++) CHECK(i2[i] == (2 + peer) * 10 + i);
    CHECK(d2 == 2 + peer + 0.5);
    CHECK(c2[0] == (char)('a' + 2 + peer));
    /* Sendrecv from and into MPI_BOTTOM. */
    fill(5 + rank);
    memset(i2, 0, sizeof i2);
    OK(MPI_Sendrecv(MPI_BOTTOM, 1, t, peer, 3, MPI_BOTTOM, 1, t2, peer, 3, MPI_COMM_WORLD,
                    &st));
    CHECK(i2[2] == (5 + peer) * 10 + 2);
    /* A short message (3 ints) into the absolute type: only the ints change. */
    if (rank == 0) {
      int three[3] = {7, 8, 9};
      OK(MPI_Send(three, 3, MPI_INT, peer, 4, MPI_COMM_WORLD));
    } else {
      fill(6);
      OK(MPI_Recv(MPI_BOTTOM, 1, t, peer, 4, MPI_COMM_WORLD, &st));
      CHECK(ival[0] == 7 && ival[1] == 8 && ival[2] == 9);
      CHECK(dval == 6.5 && cval[0] == (char)('a' + 6));
      int n;
      OK(MPI_Get_elements(&st, t, &n));
      CHECK(n == 3);
    }
    OK(MPI_Type_free(&t2));
  }

  /* Bcast from MPI_BOTTOM: the root's objects reach everyone's. */
  if (rank == 0) fill(3); else clear();
  OK(MPI_Bcast(MPI_BOTTOM, 1, t, 0, MPI_COMM_WORLD));
  expect(3);

  /* Allreduce of a struct of two ints at absolute addresses (a reduction through the
   * type's items). */
  {
    static int a, b;
    int bl[2] = {1, 1};
    MPI_Aint disp[2];
    MPI_Datatype tys[2] = {MPI_INT, MPI_INT}, p;
    OK(MPI_Get_address(&a, &disp[0]));
    OK(MPI_Get_address(&b, &disp[1]));
    OK(MPI_Type_create_struct(2, bl, disp, tys, &p));
    OK(MPI_Type_commit(&p));
    a = rank;
    b = 1;
    OK(MPI_Allreduce(MPI_IN_PLACE, MPI_BOTTOM, 1, p, MPI_SUM, MPI_COMM_WORLD));
    CHECK(a == size * (size - 1) / 2);
    CHECK(b == size);
    OK(MPI_Type_free(&p));
  }

  /* A datatype with relative displacements at MPI_BOTTOM names no valid memory (checked
   * on a send only: in a collective the ranks that find no fault would wait for the rest). */
  {
    MPI_Datatype v;
    OK(MPI_Type_vector(2, 1, 2, MPI_INT, &v));
    OK(MPI_Type_commit(&v));
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    int rc = MPI_Send(MPI_BOTTOM, 1, v, rank, 9, MPI_COMM_WORLD);
    int cls;
    OK(MPI_Error_class(rc, &cls));
    CHECK(cls == MPI_ERR_BUFFER);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
    OK(MPI_Type_free(&v));
  }

  OK(MPI_Type_free(&t));
  OK(MPI_Finalize());
  return 0;
}
