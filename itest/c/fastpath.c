/* The point-to-point fast path (predefined contiguous datatypes) and the checked path it
 * hands everything else to: every argument error of MPI_Send/Ssend/Recv/Isend/Irecv/
 * Sendrecv and the _c forms returns its class through the communicator's error handler,
 * truncation returns MPI_ERR_TRUNCATE with the message's source and tag in the status (from
 * MPI_Recv, MPI_Sendrecv, MPI_Wait and MPI_Test), and good messages report the right source,
 * tag and count. Runs at any size >= 1: rank r talks to r ^ 1, or to itself without one. */
#include "check.h"
#include <stdint.h>
#include <string.h>

static int calls = 0, last_code = 0;
static MPI_Comm last_comm = MPI_COMM_NULL;
static void on_error(MPI_Comm *comm, int *code, ...) {
  calls++;
  last_code = *code;
  last_comm = *comm;
}

/* The status names `src` and `tag`, and holds `want` items of MPI_INT. */
static void check_status(MPI_Status *st, int src, int tag, int want) {
  int n = -1;
  CHECK(st->MPI_SOURCE == src);
  CHECK(st->MPI_TAG == tag);
  OK(MPI_Get_count(st, MPI_INT, &n));
  CHECK(n == want);
}

int main(int argc, char **argv) {
  OK(MPI_Init(&argc, &argv));
  int rank, size;
  OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  int peer = (rank ^ 1) < size ? rank ^ 1 : rank;
  MPI_Comm w = MPI_COMM_WORLD;
  OK(MPI_Comm_set_errhandler(w, MPI_ERRORS_RETURN));
  int buf[8], rb[8], flag = 0, rc;
  for (int i = 0; i < 8; i++) buf[i] = rank * 100 + i;
  MPI_Status st;
  MPI_Request req = MPI_REQUEST_NULL;
  /* In the predefined range but not a datatype, and a created handle never created. */
  MPI_Datatype bogus = (MPI_Datatype)(intptr_t)0x2ff;
  MPI_Datatype garbage = (MPI_Datatype)(intptr_t)0x4000000ffLL;
  MPI_Datatype uncommitted;
  OK(MPI_Type_contiguous(2, MPI_INT, &uncommitted));

  /* Argument errors: nothing is sent or posted by any of them. */
  CHECK_RC(MPI_Send(buf, 1, MPI_INT, size, 0, w), MPI_ERR_RANK);
  CHECK_RC(MPI_Send(buf, 1, MPI_INT, -7, 0, w), MPI_ERR_RANK);
  CHECK_RC(MPI_Send(buf, 1, MPI_INT, MPI_ANY_SOURCE, 0, w), MPI_ERR_RANK);
  CHECK_RC(MPI_Send(buf, 1, MPI_INT, peer, -1, w), MPI_ERR_TAG);
  CHECK_RC(MPI_Send(buf, 1, MPI_INT, peer, MPI_ANY_TAG, w), MPI_ERR_TAG);
  CHECK_RC(MPI_Send(buf, -1, MPI_INT, peer, 0, w), MPI_ERR_COUNT);
  CHECK_RC(MPI_Send(buf, 1, MPI_DATATYPE_NULL, peer, 0, w), MPI_ERR_TYPE);
  CHECK_RC(MPI_Send(buf, 1, bogus, peer, 0, w), MPI_ERR_TYPE);
  CHECK_RC(MPI_Send(buf, 1, garbage, peer, 0, w), MPI_ERR_TYPE);
  CHECK_RC(MPI_Send(buf, 1, uncommitted, peer, 0, w), MPI_ERR_TYPE);
  CHECK_RC(MPI_Send(NULL, 1, MPI_INT, peer, 0, w), MPI_ERR_BUFFER);
  CHECK_RC(MPI_Send(buf, 1, MPI_INT, peer, 0, MPI_COMM_NULL), MPI_ERR_COMM);
  CHECK_RC(MPI_Send_c(buf, -1, MPI_INT, peer, 0, w), MPI_ERR_COUNT);
  CHECK_RC(MPI_Ssend(buf, 1, MPI_INT, size, 0, w), MPI_ERR_RANK);
  CHECK_RC(MPI_Ssend(buf, 1, MPI_INT, peer, -3, w), MPI_ERR_TAG);
  CHECK_RC(MPI_Rsend(buf, 1, bogus, peer, 0, w), MPI_ERR_TYPE);

  CHECK_RC(MPI_Recv(rb, 1, MPI_INT, size + 3, 0, w, &st), MPI_ERR_RANK);
  CHECK_RC(MPI_Recv(rb, 1, MPI_INT, -7, 0, w, &st), MPI_ERR_RANK);
  CHECK_RC(MPI_Recv(rb, 1, MPI_INT, peer, -1, w, &st), MPI_ERR_TAG);
  CHECK_RC(MPI_Recv(rb, 1, MPI_INT, peer, -5, w, &st), MPI_ERR_TAG);
  CHECK_RC(MPI_Recv(rb, -2, MPI_INT, peer, 0, w, &st), MPI_ERR_COUNT);
  CHECK_RC(MPI_Recv(rb, 1, MPI_DATATYPE_NULL, peer, 0, w, &st), MPI_ERR_TYPE);
  CHECK_RC(MPI_Recv(rb, 1, bogus, peer, 0, w, &st), MPI_ERR_TYPE);
  CHECK_RC(MPI_Recv(NULL, 2, MPI_INT, peer, 0, w, &st), MPI_ERR_BUFFER);
  CHECK_RC(MPI_Recv(rb, 1, MPI_INT, peer, 0, MPI_COMM_NULL, &st), MPI_ERR_COMM);
  CHECK_RC(MPI_Recv_c(rb, -1, MPI_INT, peer, 0, w, &st), MPI_ERR_COUNT);

  CHECK_RC(MPI_Isend(buf, 1, MPI_INT, size, 0, w, &req), MPI_ERR_RANK);
  CHECK_RC(MPI_Isend(buf, 1, MPI_INT, peer, -1, w, &req), MPI_ERR_TAG);
  CHECK_RC(MPI_Isend(buf, -1, MPI_INT, peer, 0, w, &req), MPI_ERR_COUNT);
  CHECK_RC(MPI_Isend(buf, 1, bogus, peer, 0, w, &req), MPI_ERR_TYPE);
  CHECK_RC(MPI_Isend(buf, 1, MPI_INT, peer, 0, w, NULL), MPI_ERR_ARG);
  CHECK_RC(MPI_Issend(buf, 1, MPI_INT, -7, 0, w, &req), MPI_ERR_RANK);
  CHECK_RC(MPI_Irecv(rb, 1, MPI_INT, size, 0, w, &req), MPI_ERR_RANK);
  CHECK_RC(MPI_Irecv(rb, 1, MPI_INT, peer, -3, w, &req), MPI_ERR_TAG);
  CHECK_RC(MPI_Irecv(rb, -1, MPI_INT, peer, 0, w, &req), MPI_ERR_COUNT);
  CHECK_RC(MPI_Irecv(rb, 1, MPI_DATATYPE_NULL, peer, 0, w, &req), MPI_ERR_TYPE);
  CHECK_RC(MPI_Irecv(NULL, 1, MPI_INT, peer, 0, w, &req), MPI_ERR_BUFFER);
  CHECK_RC(MPI_Irecv(rb, 1, MPI_INT, peer, 0, MPI_COMM_NULL, &req), MPI_ERR_COMM);
  CHECK(req == MPI_REQUEST_NULL);

  CHECK_RC(MPI_Sendrecv(buf, 1, MPI_INT, size, 0, rb, 1, MPI_INT, peer, 0, w, &st), MPI_ERR_RANK);
  CHECK_RC(MPI_Sendrecv(buf, 1, MPI_INT, peer, 0, rb, 1, MPI_INT, -9, 0, w, &st), MPI_ERR_RANK);
  CHECK_RC(MPI_Sendrecv(buf, 1, MPI_INT, peer, -1, rb, 1, MPI_INT, peer, 0, w, &st), MPI_ERR_TAG);
  CHECK_RC(MPI_Sendrecv(buf, 1, MPI_INT, peer, 0, rb, 1, MPI_INT, peer, -1, w, &st), MPI_ERR_TAG);
  CHECK_RC(MPI_Sendrecv(buf, -1, MPI_INT, peer, 0, rb, 1, MPI_INT, peer, 0, w, &st), MPI_ERR_COUNT);
  CHECK_RC(MPI_Sendrecv(buf, 1, MPI_INT, peer, 0, rb, 1, bogus, peer, 0, w, &st), MPI_ERR_TYPE);

  /* Good messages: source, tag, count and data. */
  memset(rb, 0, sizeof rb);
  OK(MPI_Irecv(rb, 8, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, w, &req));
  OK(MPI_Send(buf, 5, MPI_INT, peer, 7, w));
  OK(MPI_Wait(&req, &st));
  CHECK(req == MPI_REQUEST_NULL);
  check_status(&st, peer, 7, 5);
  for (int i = 0; i < 5; i++) CHECK(rb[i] == peer * 100 + i);
  CHECK(rb[5] == 0);

  OK(MPI_Isend(buf, 3, MPI_INT, peer, 9, w, &req));
  OK(MPI_Recv(rb, 8, MPI_INT, peer, MPI_ANY_TAG, w, &st));
  check_status(&st, peer, 9, 3);
  OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
  CHECK(req == MPI_REQUEST_NULL);

  OK(MPI_Irecv(rb, 8, MPI_INT, peer, 10, w, &req));
  OK(MPI_Ssend(buf, 2, MPI_INT, peer, 10, w));
  do OK(MPI_Test(&req, &flag, &st)); while (!flag);
  CHECK(req == MPI_REQUEST_NULL);
  check_status(&st, peer, 10, 2);

  OK(MPI_Sendrecv(buf, 2, MPI_INT, peer, 13, rb, 8, MPI_INT, peer, 13, w, &st));
  check_status(&st, peer, 13, 2);
  OK(MPI_Sendrecv(NULL, 0, MPI_INT, peer, 15, NULL, 0, MPI_INT, MPI_ANY_SOURCE, 15, w, &st));
  check_status(&st, peer, 15, 0);

  /* MPI_PROC_NULL takes the checked path and completes at once. */
  OK(MPI_Send(buf, 1, MPI_INT, MPI_PROC_NULL, 0, w));
  OK(MPI_Recv(rb, 1, MPI_INT, MPI_PROC_NULL, 0, w, &st));
  check_status(&st, MPI_PROC_NULL, MPI_ANY_TAG, 0);

  /* A padded pair is packed on the wire (the checked path). */
  struct {
    double d;
    int i;
  } pairs[2] = {{1.5 + rank, rank}, {2.5, -rank}}, got[2];
  memset(got, 0, sizeof got);
  OK(MPI_Sendrecv(pairs, 2, MPI_DOUBLE_INT, peer, 18, got, 2, MPI_DOUBLE_INT, peer, 18, w, &st));
  CHECK(got[0].d == 1.5 + peer && got[0].i == peer && got[1].d == 2.5 && got[1].i == -peer);

  /* Truncation: MPI_ERR_TRUNCATE, and the status names the message. */
  OK(MPI_Isend(buf, 4, MPI_INT, peer, 11, w, &req));
  st.MPI_SOURCE = st.MPI_TAG = -99;
  CHECK_RC(MPI_Recv(rb, 2, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, w, &st), MPI_ERR_TRUNCATE);
  CHECK(st.MPI_SOURCE == peer && st.MPI_TAG == 11);
  OK(MPI_Wait(&req, MPI_STATUS_IGNORE));

  OK(MPI_Irecv(rb, 1, MPI_INT, peer, 12, w, &req));
  OK(MPI_Send(buf, 2, MPI_INT, peer, 12, w));
  st.MPI_SOURCE = st.MPI_TAG = -99;
  do rc = MPI_Test(&req, &flag, &st);
  while (rc == MPI_SUCCESS && !flag);
  CHECK_RC(rc, MPI_ERR_TRUNCATE);
  CHECK(req == MPI_REQUEST_NULL);
  CHECK(st.MPI_SOURCE == peer && st.MPI_TAG == 12);

  st.MPI_SOURCE = st.MPI_TAG = -99;
  CHECK_RC(MPI_Sendrecv(buf, 3, MPI_INT, peer, 14, rb, 1, MPI_INT, MPI_ANY_SOURCE, 14, w, &st),
           MPI_ERR_TRUNCATE);
  CHECK(st.MPI_SOURCE == peer && st.MPI_TAG == 14);

  /* A receive nobody matches: MPI_Test says not yet and keeps it; it can be cancelled. */
  OK(MPI_Irecv(rb, 1, MPI_INT, peer, 30, w, &req));
  OK(MPI_Test(&req, &flag, &st));
  CHECK(!flag && req != MPI_REQUEST_NULL);
  OK(MPI_Cancel(&req));
  OK(MPI_Wait(&req, &st));
  OK(MPI_Test_cancelled(&st, &flag));
  CHECK(flag && req == MPI_REQUEST_NULL);

  /* Errors go to the handler of the communicator they happen on. */
  MPI_Comm d;
  MPI_Errhandler eh;
  OK(MPI_Comm_dup(w, &d));
  OK(MPI_Comm_create_errhandler(on_error, &eh));
  OK(MPI_Comm_set_errhandler(d, eh));
  CHECK_RC(MPI_Send(buf, 1, MPI_INT, size, 0, d), MPI_ERR_RANK);
  CHECK(calls == 1 && last_code == MPI_ERR_RANK && last_comm == d);
  CHECK_RC(MPI_Irecv(rb, 1, bogus, peer, 0, d, &req), MPI_ERR_TYPE);
  CHECK(calls == 2 && last_code == MPI_ERR_TYPE);
  OK(MPI_Isend(buf, 4, MPI_INT, peer, 16, d, &req));
  CHECK_RC(MPI_Recv(rb, 1, MPI_INT, peer, 16, d, &st), MPI_ERR_TRUNCATE);
  CHECK(calls == 3 && last_code == MPI_ERR_TRUNCATE && last_comm == d);
  CHECK(st.MPI_SOURCE == peer && st.MPI_TAG == 16);
  OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
  OK(MPI_Irecv(rb, 1, MPI_INT, peer, 17, d, &req));
  OK(MPI_Send(buf, 2, MPI_INT, peer, 17, d));
  CHECK_RC(MPI_Wait(&req, &st), MPI_ERR_TRUNCATE);
  CHECK(calls == 4 && last_code == MPI_ERR_TRUNCATE && last_comm == d);
  CHECK(req == MPI_REQUEST_NULL && st.MPI_SOURCE == peer && st.MPI_TAG == 17);
  /* ...and not to another communicator's. */
  CHECK_RC(MPI_Send(buf, 1, MPI_INT, peer, -1, w), MPI_ERR_TAG);
  CHECK(calls == 4);

  OK(MPI_Type_free(&uncommitted));
  OK(MPI_Errhandler_free(&eh));
  OK(MPI_Comm_free(&d));
  OK(MPI_Barrier(w));
  if (rank == 0) printf("fast path checks passed\n");
  OK(MPI_Finalize());
  return 0;
}
