/* Regression checks for review findings in the MPI library: one wire form for the padded
 * pair types (direct or inside derived types, counts, MINLOC/MAXLOC), Waitany/Waitsome/
 * Testany skipping inactive persistent requests, short messages into derived-type receives,
 * MPI_IN_PLACE for (I)Reduce_scatter_block, freed active receives that still complete,
 * NULL arguments of Waitsome not losing requests, and size*count overflow. Runs at any
 * size >= 1 (the point-to-point parts use ranks 0 and 1). */
#include "check.h"
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct di { double v; int i; };
struct li { long v; int i; };
struct si { short v; int i; };

static void pairs(int rank, int size) {
  MPI_Status st;
  struct di a[3] = {{1.5, 1}, {2.5, 2}, {3.5, 3}}, b[3];
  if (size > 1 && rank < 2) {
    /* (a) 2 items inside a contiguous type against 2 items of the type itself. */
    MPI_Datatype t;
    OK(MPI_Type_contiguous(2, MPI_DOUBLE_INT, &t));
    OK(MPI_Type_commit(&t));
    /* (c) the receiver's own struct of the same signature. */
    MPI_Datatype s;
    int bl[2] = {1, 1};
    MPI_Aint disp[2] = {offsetof(struct di, v), offsetof(struct di, i)};
    MPI_Datatype tys[2] = {MPI_DOUBLE, MPI_INT};
    OK(MPI_Type_create_struct(2, bl, disp, tys, &s));
    OK(MPI_Type_commit(&s));
    struct li la = {-7000000000L, 9}, lb = {0, 0};
    struct si sa = {-300, 17}, sb = {0, 0};
    if (rank == 0) {
      OK(MPI_Send(a, 1, t, 1, 1, MPI_COMM_WORLD));
      OK(MPI_Send(a, 1, MPI_DOUBLE_INT, 1, 2, MPI_COMM_WORLD));
      OK(MPI_Send(a, 3, MPI_DOUBLE_INT, 1, 3, MPI_COMM_WORLD));
      OK(MPI_Send(a, 2, s, 1, 4, MPI_COMM_WORLD));
      OK(MPI_Send(&la, 1, MPI_LONG_INT, 1, 5, MPI_COMM_WORLD));
      OK(MPI_Send(&sa, 1, MPI_SHORT_INT, 1, 6, MPI_COMM_WORLD));
    } else {
      memset(b, 0, sizeof b);
      OK(MPI_Recv(b, 2, MPI_DOUBLE_INT, 0, 1, MPI_COMM_WORLD, &st));
      CHECK(b[0].v == 1.5 && b[0].i == 1 && b[1].v == 2.5 && b[1].i == 2);
      /* (b) counts after one item of a padded pair. */
      int c = -5;
      OK(MPI_Recv(b, 3, MPI_DOUBLE_INT, 0, 2, MPI_COMM_WORLD, &st));
      OK(MPI_Get_count(&st, MPI_DOUBLE_INT, &c));
      CHECK(c == 1);
      OK(MPI_Get_elements(&st, MPI_DOUBLE_INT, &c));
      CHECK(c == 2);
      memset(b, 0, sizeof b);
      OK(MPI_Recv(b, 3, s, 0, 3, MPI_COMM_WORLD, &st));
      OK(MPI_Get_count(&st, s, &c));
      CHECK(c == 3);
      CHECK(b[2].v == 3.5 && b[2].i == 3 && b[1].v == 2.5 && b[1].i == 2);
      memset(b, 0, sizeof b);
      OK(MPI_Recv(b, 2, MPI_DOUBLE_INT, 0, 4, MPI_COMM_WORLD, &st));
      OK(MPI_Get_count(&st, MPI_DOUBLE_INT, &c));
      CHECK(c == 2);
      CHECK(b[0].v == 1.5 && b[1].v == 2.5 && b[1].i == 2);
      OK(MPI_Recv(&lb, 1, MPI_LONG_INT, 0, 5, MPI_COMM_WORLD, &st));
      OK(MPI_Get_count(&st, MPI_LONG_INT, &c));
      CHECK(c == 1 && lb.v == la.v && lb.i == 9);
      OK(MPI_Recv(&sb, 1, MPI_SHORT_INT, 0, 6, MPI_COMM_WORLD, &st));
      OK(MPI_Get_count(&st, MPI_SHORT_INT, &c));
      CHECK(c == 1 && sb.v == -300 && sb.i == 17);
    }
    OK(MPI_Type_free(&t));
    OK(MPI_Type_free(&s));
  }
  /* Collectives on the padded pairs: broadcast, MINLOC/MAXLOC blocking and nonblocking. */
  struct di bc[2] = {{rank == 0 ? 4.25 : 0, rank == 0 ? 42 : 0}, {rank == 0 ? -1.0 : 0, 7}};
  OK(MPI_Bcast(bc, 2, MPI_DOUBLE_INT, 0, MPI_COMM_WORLD));
  CHECK(bc[0].v == 4.25 && bc[0].i == 42 && bc[1].v == -1.0 && bc[1].i == 7);
  struct di in[2] = {{(double)(size - rank), rank}, {(double)rank, rank}}, out[2];
  OK(MPI_Allreduce(in, out, 2, MPI_DOUBLE_INT, MPI_MINLOC, MPI_COMM_WORLD));
  CHECK(out[0].v == 1.0 && out[0].i == size - 1 && out[1].v == 0.0 && out[1].i == 0);
  MPI_Request r;
  OK(MPI_Iallreduce(in, out, 2, MPI_DOUBLE_INT, MPI_MAXLOC, MPI_COMM_WORLD, &r));
  OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
  CHECK(out[0].v == size && out[0].i == 0 && out[1].v == size - 1 && out[1].i == size - 1);
  /* The same reductions through a derived type of pairs. */
  MPI_Datatype two;
  OK(MPI_Type_contiguous(2, MPI_DOUBLE_INT, &two));
  OK(MPI_Type_commit(&two));
  memset(out, 0, sizeof out);
  OK(MPI_Allreduce(in, out, 1, two, MPI_MINLOC, MPI_COMM_WORLD));
  CHECK(out[0].v == 1.0 && out[0].i == size - 1 && out[1].v == 0.0 && out[1].i == 0);
  memset(out, 0, sizeof out);
  OK(MPI_Iallreduce(in, out, 1, two, MPI_MAXLOC, MPI_COMM_WORLD, &r));
  OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
  CHECK(out[0].v == size && out[0].i == 0 && out[1].v == size - 1 && out[1].i == size - 1);
  struct di io[2] = {in[0], in[1]};
  OK(MPI_Allreduce(MPI_IN_PLACE, io, 1, two, MPI_MAXLOC, MPI_COMM_WORLD));
  CHECK(io[0].v == size && io[0].i == 0 && io[1].v == size - 1 && io[1].i == size - 1);
  OK(MPI_Type_free(&two));
  struct li lin = {(long)rank * 3, rank}, lout = {0, 0};
  OK(MPI_Allreduce(&lin, &lout, 1, MPI_LONG_INT, MPI_MAXLOC, MPI_COMM_WORLD));
  CHECK(lout.v == (long)(size - 1) * 3 && lout.i == size - 1);
}

static void inactive_persistent(int rank, int size) {
  if (size < 2 || rank > 1) return;
  if (rank == 1) {
    int a = 11, b = 22, go;
    OK(MPI_Send(&a, 1, MPI_INT, 0, 20, MPI_COMM_WORLD));
    /* The second message leaves only after rank 0's first Waitany returned. */
    OK(MPI_Recv(&go, 1, MPI_INT, 0, 29, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    OK(MPI_Send(&b, 1, MPI_INT, 0, 21, MPI_COMM_WORLD));
    OK(MPI_Recv(&go, 1, MPI_INT, 0, 29, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    OK(MPI_Send(&b, 1, MPI_INT, 0, 21, MPI_COMM_WORLD));
    return;
  }
  int x[2] = {-1, -1}, idx[2] = {-9, -9}, go = 1;
  MPI_Request q[2];
  OK(MPI_Recv_init(&x[0], 1, MPI_INT, 1, 20, MPI_COMM_WORLD, &q[0]));
  OK(MPI_Recv_init(&x[1], 1, MPI_INT, 1, 21, MPI_COMM_WORLD, &q[1]));
  /* Nothing started: every request is inactive. */
  int flag = 0, outcount = 0, k = -9, ids[2];
  OK(MPI_Testany(2, q, &k, &flag, MPI_STATUS_IGNORE));
  CHECK(flag == 1 && k == MPI_UNDEFINED);
  OK(MPI_Waitany(2, q, &k, MPI_STATUS_IGNORE));
  CHECK(k == MPI_UNDEFINED);
  OK(MPI_Waitsome(2, q, &outcount, ids, MPI_STATUSES_IGNORE));
  CHECK(outcount == MPI_UNDEFINED);
  OK(MPI_Startall(2, q));
  OK(MPI_Waitany(2, q, &idx[0], MPI_STATUS_IGNORE));
  OK(MPI_Send(&go, 1, MPI_INT, 1, 29, MPI_COMM_WORLD));
  OK(MPI_Waitany(2, q, &idx[1], MPI_STATUS_IGNORE));
  CHECK(idx[0] == 0 && idx[1] == 1 && x[0] == 11 && x[1] == 22);
  /* Waitsome after restarting only the second one reports it alone. */
  x[1] = -1;
  OK(MPI_Start(&q[1]));
  OK(MPI_Send(&go, 1, MPI_INT, 1, 29, MPI_COMM_WORLD));
  OK(MPI_Waitsome(2, q, &outcount, ids, MPI_STATUSES_IGNORE));
  CHECK(outcount == 1 && ids[0] == 1 && x[1] == 22);
  OK(MPI_Request_free(&q[0]));
  OK(MPI_Request_free(&q[1]));
}

static void short_message(int rank, int size) {
  if (size < 2 || rank > 1) return;
  MPI_Datatype t, t2;
  OK(MPI_Type_vector(1, 1, 2, MPI_INT, &t));
  OK(MPI_Type_create_resized(t, 0, 2 * sizeof(int), &t2));
  OK(MPI_Type_commit(&t2));
  if (rank == 0) {
    int s[2] = {7, 8};
    OK(MPI_Send(s, 2, MPI_INT, 1, 30, MPI_COMM_WORLD));
    OK(MPI_Send(s, 2, MPI_INT, 1, 31, MPI_COMM_WORLD));
  } else {
    int buf[20];
    MPI_Status st;
    for (int k = 0; k < 20; k++) buf[k] = -1;
    OK(MPI_Recv(buf, 10, t2, 0, 30, MPI_COMM_WORLD, &st));
    CHECK(buf[0] == 7 && buf[1] == -1 && buf[2] == 8 && buf[4] == -1 && buf[18] == -1);
    for (int k = 0; k < 20; k++) buf[k] = -1;
    MPI_Request r;
    OK(MPI_Irecv(buf, 10, t2, 0, 31, MPI_COMM_WORLD, &r));
    OK(MPI_Wait(&r, &st));
    CHECK(buf[0] == 7 && buf[2] == 8 && buf[4] == -1 && buf[18] == -1);
    int c = -1;
    OK(MPI_Get_count(&st, t2, &c));
    CHECK(c == 2);
  }
  OK(MPI_Type_free(&t));
  OK(MPI_Type_free(&t2));
}

static void rsb_in_place(int rank, int size) {
  int *v = malloc(size * sizeof(int));
  for (int i = 0; i < size; i++) v[i] = i + rank;
  OK(MPI_Reduce_scatter_block(MPI_IN_PLACE, v, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
  CHECK(v[0] == size * rank + size * (size - 1) / 2);
  for (int i = 0; i < size; i++) v[i] = 2 * i + rank;
  MPI_Request r;
  OK(MPI_Ireduce_scatter_block(MPI_IN_PLACE, v, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r));
  OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
  CHECK(v[0] == 2 * size * rank + size * (size - 1) / 2);
  free(v);
}

static void freed_receives(int rank, int size) {
  if (size < 2 || rank > 1) return;
  MPI_Datatype t, t2;
  OK(MPI_Type_vector(1, 1, 2, MPI_INT, &t));
  OK(MPI_Type_create_resized(t, 0, 2 * sizeof(int), &t2));
  OK(MPI_Type_commit(&t2));
  if (rank == 1) {
    int m[3] = {1, 2, 3};
    OK(MPI_Send(&m[0], 1, MPI_INT, 0, 50, MPI_COMM_WORLD));
    OK(MPI_Send(&m[1], 1, MPI_INT, 0, 50, MPI_COMM_WORLD));
    OK(MPI_Send(m, 3, MPI_INT, 0, 51, MPI_COMM_WORLD));
    OK(MPI_Send(&m[2], 1, MPI_INT, 0, 52, MPI_COMM_WORLD));
  } else {
    /* The freed receive still takes the first message; the next receive the second. */
    int x = -1, y = -1, d[6] = {-1, -1, -1, -1, -1, -1}, z = -1;
    MPI_Request r;
    OK(MPI_Irecv(&x, 1, MPI_INT, 1, 50, MPI_COMM_WORLD, &r));
    OK(MPI_Request_free(&r));
    CHECK(r == MPI_REQUEST_NULL);
    OK(MPI_Recv(&y, 1, MPI_INT, 1, 50, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK(y == 2 && x == 1);
    /* A freed receive of a type with holes is unpacked once its data is there. */
    OK(MPI_Irecv(d, 3, t2, 1, 51, MPI_COMM_WORLD, &r));
    OK(MPI_Request_free(&r));
    OK(MPI_Recv(&z, 1, MPI_INT, 1, 52, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK(z == 3 && d[0] == 1 && d[1] == -1 && d[2] == 2 && d[4] == 3 && d[5] == -1);
  }
  OK(MPI_Type_free(&t));
  OK(MPI_Type_free(&t2));
}

static void argument_errors(int rank) {
  OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  /* A NULL indices array must not complete (and lose) the request. */
  int a = 5, b = -1, outcount = -3;
  MPI_Request r;
  OK(MPI_Irecv(&b, 1, MPI_INT, rank, 40, MPI_COMM_WORLD, &r));
  OK(MPI_Send(&a, 1, MPI_INT, rank, 40, MPI_COMM_WORLD));
  int rc = MPI_Waitsome(1, &r, &outcount, NULL, MPI_STATUSES_IGNORE);
  CHECK(rc != MPI_SUCCESS);
  CHECK(r != MPI_REQUEST_NULL);
  MPI_Status st;
  OK(MPI_Wait(&r, &st));
  CHECK(b == 5 && st.MPI_SOURCE == rank && st.MPI_TAG == 40);
  /* size * count wraps around 2^64: an error, not a zero-byte message. */
  MPI_Count huge = (MPI_Count)1 << 62;
  int eclass = -1;
  rc = MPI_Send_c(&a, huge, MPI_INT, rank, 41, MPI_COMM_WORLD);
  OK(MPI_Error_class(rc, &eclass));
  CHECK(eclass == MPI_ERR_COUNT);
  int flag = 1;
  OK(MPI_Iprobe(rank, 41, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
  CHECK(flag == 0);
  /* A NULL request pointer is refused before the collective starts: rank 0 alone calls
   * it, so a started (then dropped) broadcast would wait for the others forever. */
  if (rank == 0) {
    int v = 1;
    rc = MPI_Ibcast(&v, 1, MPI_INT, 0, MPI_COMM_WORLD, NULL);
    CHECK(rc != MPI_SUCCESS);
  }
  OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
  /* A failed request in MPI_Waitall raises on its own communicator's handler (returns
   * here), not MPI_COMM_WORLD's (fatal now). */
  MPI_Comm d;
  OK(MPI_Comm_dup(MPI_COMM_WORLD, &d));
  OK(MPI_Comm_set_errhandler(d, MPI_ERRORS_RETURN));
  int two[2] = {8, 9}, one = -1;
  MPI_Status sts[1];
  OK(MPI_Irecv(&one, 1, MPI_INT, rank, 42, d, &r));
  OK(MPI_Send(two, 2, MPI_INT, rank, 42, d));
  rc = MPI_Waitall(1, &r, sts);
  OK(MPI_Error_class(rc, &eclass));
  CHECK(eclass == MPI_ERR_IN_STATUS && sts[0].MPI_ERROR == MPI_ERR_TRUNCATE);
  CHECK(r == MPI_REQUEST_NULL);
  /* A failure in the middle: the requests around it still complete, each status says how
   * (MPI_SUCCESS with its source and tag, or the truncation), and every handle is null. */
  int x0 = -1, x1 = -1, x2 = -1;
  MPI_Request rs[3];
  MPI_Status st3[3];
  OK(MPI_Irecv(&x0, 1, MPI_INT, rank, 43, d, &rs[0]));
  OK(MPI_Irecv(&x1, 1, MPI_INT, rank, 44, d, &rs[1]));
  OK(MPI_Irecv(&x2, 1, MPI_INT, rank, 45, d, &rs[2]));
  OK(MPI_Send(&two[0], 1, MPI_INT, rank, 43, d));
  OK(MPI_Send(two, 2, MPI_INT, rank, 44, d));
  OK(MPI_Send(&two[1], 1, MPI_INT, rank, 45, d));
  rc = MPI_Waitall(3, rs, st3);
  OK(MPI_Error_class(rc, &eclass));
  CHECK(eclass == MPI_ERR_IN_STATUS);
  CHECK(st3[0].MPI_ERROR == MPI_SUCCESS && st3[0].MPI_TAG == 43 && x0 == 8);
  CHECK(st3[1].MPI_ERROR == MPI_ERR_TRUNCATE && st3[1].MPI_TAG == 44 && st3[1].MPI_SOURCE == rank);
  CHECK(st3[2].MPI_ERROR == MPI_SUCCESS && st3[2].MPI_TAG == 45 && x2 == 9);
  CHECK(rs[0] == MPI_REQUEST_NULL && rs[1] == MPI_REQUEST_NULL && rs[2] == MPI_REQUEST_NULL);
  OK(MPI_Comm_free(&d));
}

/* MPI_Sendrecv with a derived receive type (the checked path) reports a truncated receive
 * with MPI_ERR_TRUNCATE and a status naming the source and tag. */
static void sendrecv_truncated_derived(int rank, int size) {
  MPI_Comm c; /* collective: every rank dups and frees */
  OK(MPI_Comm_dup(MPI_COMM_WORLD, &c));
  OK(MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN));
  if (size < 2 || rank > 1) {
    OK(MPI_Comm_free(&c));
    return;
  }
  int peer = 1 - rank, out[4] = {1, 2, 3, 4}, in[2] = {0, 0};
  MPI_Datatype two;
  OK(MPI_Type_contiguous(2, MPI_INT, &two));
  OK(MPI_Type_commit(&two));
  MPI_Status st;
  st.MPI_SOURCE = -7;
  st.MPI_TAG = -7;
  /* Each sends 4 ints; each receives room for 2. */
  int rc = MPI_Sendrecv(out, 4, MPI_INT, peer, 31, in, 1, two, peer, 31, c, &st), cls;
  MPI_Error_class(rc, &cls);
  CHECK(cls == MPI_ERR_TRUNCATE);
  CHECK(st.MPI_SOURCE == peer && st.MPI_TAG == 31);
  OK(MPI_Comm_free(&c));
  OK(MPI_Type_free(&two));
}

int main(int argc, char **argv) {
  OK(MPI_Init(&argc, &argv));
  int rank, size;
  OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  pairs(rank, size);
  inactive_persistent(rank, size);
  short_message(rank, size);
  rsb_in_place(rank, size);
  freed_receives(rank, size);
  argument_errors(rank);
  sendrecv_truncated_derived(rank, size);
  OK(MPI_Barrier(MPI_COMM_WORLD));
  /* An in-place Iallreduce still in flight at MPI_Finalize (erroneous, but it must not
   * free the staged copy its schedule reads before the schedule is finished). */
  int w = rank;
  MPI_Request pending;
  OK(MPI_Iallreduce(MPI_IN_PLACE, &w, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &pending));
  OK(MPI_Finalize());
  return 0;
}
