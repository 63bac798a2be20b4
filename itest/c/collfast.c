/* The blocking collectives' fast path (predefined contiguous datatype, one datatype and count
 * on both sides) and the checked path it hands the rest to: results are right on both
 * (in place, two datatypes of one signature, non-roots passing garbage receive arguments,
 * MPI_MINLOC pairs), and every argument error still gets its class through the
 * communicator's error handler (bad root, negative count, NULL buffer, operation not defined
 * on the type, MPI_DATATYPE_NULL, a freed communicator). Runs at any size >= 1. */
#include "check.h"
#include <stdint.h>
#include <string.h>

static int calls = 0, last_code = 0;
static void on_error(MPI_Comm *comm, int *code, ...) {
  (void)comm;
  calls++;
  last_code = *code;
}

/* The error class of the last handled error; expects exactly one call since `before`. */
static int handled(int before) {
  int cls = -1;
  CHECK(calls == before + 1);
  OK(MPI_Error_class(last_code, &cls));
  return cls;
}

int main(int argc, char **argv) {
  OK(MPI_Init(&argc, &argv));
  int me, np;
  OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
  OK(MPI_Comm_size(MPI_COMM_WORLD, &np));
  MPI_Comm w;
  OK(MPI_Comm_dup(MPI_COMM_WORLD, &w));
  MPI_Errhandler eh;
  OK(MPI_Comm_create_errhandler(on_error, &eh));
  OK(MPI_Comm_set_errhandler(w, eh));
  int root = np - 1;

  /* Good calls of every fast collective, odd counts and a zero count. */
  for (int count = 0; count <= 7; count += 7) {
    int v[7], out[7 * 8], all[7 * 8];
    for (int i = 0; i < count; i++) v[i] = me == root ? 1000 + i : -1;
    OK(MPI_Bcast(v, count, MPI_INT, root, w));
    for (int i = 0; i < count; i++) CHECK(v[i] == 1000 + i);
    for (int i = 0; i < count; i++) v[i] = me + i;
    OK(MPI_Allreduce(v, out, count, MPI_INT, MPI_SUM, w));
    for (int i = 0; i < count; i++) CHECK(out[i] == np * (np - 1) / 2 + np * i);
    memset(out, 0, sizeof out);
    /* Non-roots pass a NULL receive buffer: it is ignored there. */
    OK(MPI_Reduce(v, me == root ? out : NULL, count, MPI_INT, MPI_MAX, root, w));
    if (me == root)
      for (int i = 0; i < count; i++) CHECK(out[i] == np - 1 + i);
    /* Non-roots pass garbage receive arguments to gather, send ones to scatter. */
    OK(MPI_Gather(v, count, MPI_INT, me == root ? all : NULL, me == root ? count : -5,
                  me == root ? MPI_INT : MPI_DATATYPE_NULL, root, w));
    if (me == root)
      for (int r = 0; r < np; r++)
        for (int i = 0; i < count; i++) CHECK(all[r * count + i] == r + i);
    OK(MPI_Scatter(me == root ? all : NULL, me == root ? count : -5,
                   me == root ? MPI_INT : MPI_DATATYPE_NULL, out, count, MPI_INT, root, w));
    for (int i = 0; i < count; i++) CHECK(out[i] == me + i);
    OK(MPI_Allgather(v, count, MPI_INT, all, count, MPI_INT, w));
    for (int r = 0; r < np; r++)
      for (int i = 0; i < count; i++) CHECK(all[r * count + i] == r + i);
    int send[8], recv[8];
    for (int d = 0; d < np; d++) send[d] = me * 10 + d;
    OK(MPI_Alltoall(send, 1, MPI_INT, recv, 1, MPI_INT, w));
    for (int s = 0; s < np; s++) CHECK(recv[s] == s * 10 + me);
    OK(MPI_Barrier(w));
  }

  /* The checked path: in place, two datatypes of one signature, pairs. */
  {
    double d[3] = {me, 2.0 * me, 0.5};
    OK(MPI_Allreduce(MPI_IN_PLACE, d, 3, MPI_DOUBLE, MPI_SUM, w));
    CHECK(d[0] == np * (np - 1) / 2.0 && d[2] == 0.5 * np);
    int v = me + 1, all[8];
    MPI_Datatype two;
    OK(MPI_Type_contiguous(4, MPI_BYTE, &two));
    OK(MPI_Type_commit(&two));
    OK(MPI_Allgather(&v, 1, MPI_INT, all, 1, two, w));
    for (int r = 0; r < np; r++) CHECK(all[r] == r + 1);
    OK(MPI_Type_free(&two));
    struct { float v; int i; } p = {(float)(me % 2), me}, q;
    OK(MPI_Allreduce(&p, &q, 1, MPI_FLOAT_INT, MPI_MINLOC, w));
    CHECK(q.v == 0.0f && q.i == 0);
  }

  /* Argument errors keep their classes. */
  int c = calls, x[4] = {0};
  CHECK(MPI_Bcast(x, 1, MPI_INT, np, w) != MPI_SUCCESS);
  CHECK(handled(c) == MPI_ERR_ROOT);
  c = calls;
  CHECK(MPI_Bcast(x, -1, MPI_INT, 0, w) != MPI_SUCCESS);
  CHECK(handled(c) == MPI_ERR_COUNT);
  c = calls;
  CHECK(MPI_Allreduce(NULL, x, 2, MPI_INT, MPI_SUM, w) != MPI_SUCCESS);
  CHECK(handled(c) == MPI_ERR_BUFFER);
  float f[2] = {1, 2}, g[2];
  c = calls;
  CHECK(MPI_Allreduce(f, g, 2, MPI_FLOAT, MPI_BAND, w) != MPI_SUCCESS);
  CHECK(handled(c) == MPI_ERR_OP);
  c = calls;
  CHECK(MPI_Reduce(f, g, 2, MPI_DATATYPE_NULL, MPI_SUM, 0, w) != MPI_SUCCESS);
  CHECK(handled(c) == MPI_ERR_TYPE);
  c = calls;
  CHECK(MPI_Gather(x, 1, MPI_INT, x, 1, MPI_INT, -1, w) != MPI_SUCCESS);
  CHECK(handled(c) == MPI_ERR_ROOT);
  /* A freed communicator goes to MPI_COMM_WORLD's handler, here errors-return. */
  OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  MPI_Comm gone;
  OK(MPI_Comm_dup(MPI_COMM_WORLD, &gone));
  MPI_Comm stale = gone;
  OK(MPI_Comm_free(&gone));
  int rc = MPI_Barrier(stale), cls = -1;
  OK(MPI_Error_class(rc, &cls));
  CHECK(cls == MPI_ERR_COMM);
  /* Everyone is still in step after the errors. */
  int one = 1, sum = 0;
  OK(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, w));
  CHECK(sum == np);
  OK(MPI_Errhandler_free(&eh));
  OK(MPI_Comm_free(&w));
  OK(MPI_Finalize());
  if (me == 0) printf("collfast ok at %d ranks\n", np);
  return 0;
}
