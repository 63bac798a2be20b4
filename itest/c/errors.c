/* The invalid-argument walk: with MPI_ERRORS_RETURN every family returns the error class
 * the standard names, a user error handler is called with it, and a spawn of a program
 * that does not exist returns MPI_ERR_SPAWN. Runs at any size >= 1. */
#include "check.h"

static int handler_calls = 0, handler_code = 0;
static void on_error(MPI_Comm *comm, int *code, ...) {
  (void)comm;
  handler_calls++;
  handler_code = *code;
}

int main(int argc, char **argv) {
  OK(MPI_Init(&argc, &argv));
  int rank, size;
  OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  MPI_Errhandler eh;
  OK(MPI_Comm_get_errhandler(MPI_COMM_WORLD, &eh));
  CHECK(eh == MPI_ERRORS_RETURN);
  MPI_Comm w = MPI_COMM_WORLD;
  int buf[8] = {0}, flag, n;
  MPI_Status st;
  MPI_Request req;

  /* Point-to-point. */
  CHECK_RC(MPI_Send(buf, 1, MPI_INT, size, 0, w), MPI_ERR_RANK);
  CHECK_RC(MPI_Send(buf, 1, MPI_INT, -7, 0, w), MPI_ERR_RANK);
  CHECK_RC(MPI_Send(buf, 1, MPI_INT, 0, -1, w), MPI_ERR_TAG);
  CHECK_RC(MPI_Send(buf, -1, MPI_INT, 0, 0, w), MPI_ERR_COUNT);
  CHECK_RC(MPI_Send(buf, 1, MPI_DATATYPE_NULL, 0, 0, w), MPI_ERR_TYPE);
  CHECK_RC(MPI_Send(NULL, 4, MPI_INT, 0, 0, w), MPI_ERR_BUFFER);
  CHECK_RC(MPI_Send(buf, 1, MPI_INT, 0, 0, MPI_COMM_NULL), MPI_ERR_COMM);
  CHECK_RC(MPI_Recv(buf, 1, MPI_INT, size + 3, 0, w, &st), MPI_ERR_RANK);
  CHECK_RC(MPI_Recv(buf, 1, MPI_INT, 0, -5, w, &st), MPI_ERR_TAG);
  CHECK_RC(MPI_Isend(buf, 1, MPI_INT, size, 0, w, &req), MPI_ERR_RANK);
  CHECK_RC(MPI_Irecv(buf, 1, MPI_INT, 0, -3, w, &req), MPI_ERR_TAG);
  CHECK_RC(MPI_Probe(size, 0, w, &st), MPI_ERR_RANK);
  CHECK_RC(MPI_Iprobe(0, -9, w, &flag, &st), MPI_ERR_TAG);
  MPI_Request bogus = (MPI_Request)(intptr_t)0x3000000ff;
  CHECK_RC(MPI_Wait(&bogus, &st), MPI_ERR_REQUEST);
  CHECK_RC(MPI_Start(&bogus), MPI_ERR_REQUEST);
  CHECK_RC(MPI_Get_count(&st, (MPI_Datatype)(intptr_t)0x999, &n), MPI_ERR_TYPE);
  CHECK_RC(MPI_Bsend(buf, 1, MPI_INT, 0, 0, w), MPI_ERR_BUFFER);
  /* Truncation surfaces from MPI_Wait too. */
  OK(MPI_Irecv(buf, 1, MPI_INT, rank, 3, w, &req));
  OK(MPI_Send(buf, 2, MPI_INT, rank, 3, w));
  CHECK_RC(MPI_Wait(&req, &st), MPI_ERR_TRUNCATE);
  CHECK(req == MPI_REQUEST_NULL);

  /* Collectives. */
  CHECK_RC(MPI_Bcast(buf, 1, MPI_INT, size, w), MPI_ERR_ROOT);
  CHECK_RC(MPI_Bcast(buf, 1, MPI_INT, -1, w), MPI_ERR_ROOT);
  CHECK_RC(MPI_Reduce(buf, buf + 4, 1, MPI_INT, MPI_SUM, size, w), MPI_ERR_ROOT);
  CHECK_RC(MPI_Allreduce(buf, buf + 4, 1, MPI_INT, MPI_OP_NULL, w), MPI_ERR_OP);
  CHECK_RC(MPI_Allreduce(buf, buf + 4, 1, MPI_INT, (MPI_Op)(intptr_t)0x5000000ff, w), MPI_ERR_OP);
  CHECK_RC(MPI_Allreduce(buf, buf + 4, 1, MPI_INT, MPI_MINLOC, w), MPI_ERR_OP);
  CHECK_RC(MPI_Allreduce(buf, buf + 4, 1, MPI_FLOAT, MPI_BAND, w), MPI_ERR_OP);
  CHECK_RC(MPI_Allreduce(buf, buf + 4, -2, MPI_INT, MPI_SUM, w), MPI_ERR_COUNT);
  CHECK_RC(MPI_Gather(buf, 1, MPI_INT, buf, 1, MPI_INT, size + 1, w), MPI_ERR_ROOT);
  CHECK_RC(MPI_Barrier(MPI_COMM_NULL), MPI_ERR_COMM);
  CHECK_RC(MPI_Allgather_c(buf, (MPI_Count)1 << 40, MPI_INT, buf, 1, MPI_INT, w), MPI_ERR_COUNT);

  /* Communicators, groups, topologies, datatypes, info. */
  MPI_Comm freed;
  OK(MPI_Comm_dup(w, &freed));
  MPI_Comm stale = freed;
  OK(MPI_Comm_free(&freed));
  CHECK_RC(MPI_Barrier(stale), MPI_ERR_COMM);
  CHECK_RC(MPI_Comm_free(&w), MPI_ERR_COMM);
  CHECK_RC(MPI_Comm_split(w, -5, 0, &freed), MPI_ERR_ARG);
  MPI_Group g;
  OK(MPI_Comm_group(w, &g));
  int bad[1] = {size};
  MPI_Group g2;
  CHECK_RC(MPI_Group_incl(g, 1, bad, &g2), MPI_ERR_RANK);
  CHECK_RC(MPI_Group_size(MPI_GROUP_NULL, &n), MPI_ERR_GROUP);
  OK(MPI_Group_free(&g));
  int dims[2] = {0, 0};
  CHECK_RC(MPI_Dims_create(0, 2, dims), MPI_ERR_ARG);
  dims[0] = 5;
  CHECK_RC(MPI_Dims_create(12, 2, dims), MPI_ERR_DIMS);
  int coords[2];
  CHECK_RC(MPI_Cart_coords(w, 0, 2, coords), MPI_ERR_TOPOLOGY);
  MPI_Datatype t;
  CHECK_RC(MPI_Type_contiguous(-1, MPI_INT, &t), MPI_ERR_COUNT);
  OK(MPI_Type_contiguous(2, MPI_INT, &t));
  CHECK_RC(MPI_Send(buf, 1, t, rank, 0, w), MPI_ERR_TYPE); /* not committed */
  OK(MPI_Type_free(&t));
  MPI_Datatype predefined = MPI_INT;
  CHECK_RC(MPI_Type_free(&predefined), MPI_ERR_TYPE);
  MPI_Info info;
  OK(MPI_Info_create(&info));
  CHECK_RC(MPI_Info_delete(info, "missing"), MPI_ERR_INFO_NOKEY);
  CHECK_RC(MPI_Info_set(info, "", "v"), MPI_ERR_INFO_KEY);
  OK(MPI_Info_free(&info));
  CHECK_RC(MPI_Info_free(&info), MPI_ERR_INFO);
  CHECK_RC(MPI_Comm_set_errhandler(w, (MPI_Errhandler)(intptr_t)0x7000000ff), MPI_ERR_ERRHANDLER);
  CHECK_RC(MPI_Comm_get_attr(w, 12345, &n, &flag), MPI_ERR_KEYVAL);
  CHECK_RC(MPI_Error_class(99999, &n), MPI_ERR_ARG);

  /* A program that cannot start fails the spawn on every rank. */
  {
    MPI_Comm inter;
    CHECK_RC(MPI_Comm_spawn("weft-no-such-program", MPI_ARGV_NULL, 1, MPI_INFO_NULL, 0, w,
                            &inter, MPI_ERRCODES_IGNORE),
             MPI_ERR_SPAWN);
  }
  /* MPI_LASTUSEDCODE is set and at least MPI_ERR_LASTCODE (MPI-4.1 §9.5). */
  {
    int *last = NULL;
    OK(MPI_Comm_get_attr(w, MPI_LASTUSEDCODE, &last, &flag));
    CHECK(flag && last && *last >= MPI_ERR_LASTCODE);
  }
  /* A generalized request needs its three callbacks. */
  {
    MPI_Request greq = MPI_REQUEST_NULL;
    CHECK_RC(MPI_Grequest_start(NULL, NULL, NULL, NULL, &greq), MPI_ERR_ARG);
    CHECK(greq == MPI_REQUEST_NULL);
  }
  /* A datatype with holes where only contiguous ones are taken yet. */
  MPI_Datatype vec;
  OK(MPI_Type_vector(2, 1, 2, MPI_INT, &vec));
  OK(MPI_Type_commit(&vec));
  int cnt[1] = {1}, dsp[1] = {0};
  if (size == 1)
    CHECK_RC(MPI_Gatherv(buf, 1, vec, buf + 4, cnt, dsp, vec, 0, w), MPI_ERR_UNSUPPORTED_OPERATION);
  OK(MPI_Type_free(&vec));

  /* A user handler sees the class, and the call still returns it. */
  MPI_Errhandler mine;
  OK(MPI_Comm_create_errhandler(on_error, &mine));
  OK(MPI_Comm_set_errhandler(w, mine));
  CHECK_RC(MPI_Send(buf, 1, MPI_INT, size, 0, w), MPI_ERR_RANK);
  CHECK(handler_calls == 1 && handler_code == MPI_ERR_RANK);
  OK(MPI_Comm_call_errhandler(w, MPI_ERR_OTHER));
  CHECK(handler_calls == 2 && handler_code == MPI_ERR_OTHER);
  OK(MPI_Errhandler_free(&mine));
  CHECK(mine == MPI_ERRHANDLER_NULL);
  OK(MPI_Comm_set_errhandler(w, MPI_ERRORS_RETURN));

  OK(MPI_Barrier(w));
  OK(MPI_Finalize());
  if (rank == 0) printf("errors: all invalid-argument checks passed\n");
  return 0;
}
