/* Point-to-point: blocking ring, nonblocking exchange with every wait/test family, probes
 * and counts, sendrecv(_replace), cancel, persistent requests, buffered sends, PROC_NULL,
 * and truncation under MPI_ERRORS_RETURN. Runs at any size >= 1. */
#include "check.h"
#include <string.h>

int main(int argc, char **argv) {
  OK(MPI_Init(&argc, &argv));
  int rank, size;
  OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  int right = (rank + 1) % size, left = (rank + size - 1) % size;
  MPI_Status st;

  /* Blocking ring: even ranks send first. */
  int out[4] = {rank, rank * 10, rank * 100, -rank}, in[4] = {0};
  if (size > 1 && rank % 2 == 0) {
    OK(MPI_Send(out, 4, MPI_INT, right, 5, MPI_COMM_WORLD));
    OK(MPI_Recv(in, 4, MPI_INT, left, 5, MPI_COMM_WORLD, &st));
  } else if (size > 1) {
    OK(MPI_Recv(in, 4, MPI_INT, left, 5, MPI_COMM_WORLD, &st));
    OK(MPI_Send(out, 4, MPI_INT, right, 5, MPI_COMM_WORLD));
  }
  if (size > 1) {
    CHECK(in[0] == left && in[1] == left * 10 && in[3] == -left);
    CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 5);
    int count = -1;
    OK(MPI_Get_count(&st, MPI_INT, &count));
    CHECK(count == 4);
    OK(MPI_Get_count(&st, MPI_DOUBLE, &count));
    CHECK(count == 2);
    OK(MPI_Get_elements(&st, MPI_INT, &count));
    CHECK(count == 4);
  }

  /* Nonblocking exchange with both neighbours, large and small, then Waitall. */
  enum { BIG = 1 << 18 };
  double *sbig = malloc(BIG * sizeof(double)), *rbig = malloc(BIG * sizeof(double));
  for (int i = 0; i < BIG; i++) sbig[i] = rank + i * 0.5;
  long small_out = 1000 + rank, small_in = 0;
  MPI_Request reqs[4];
  OK(MPI_Irecv(rbig, BIG, MPI_DOUBLE, left, 7, MPI_COMM_WORLD, &reqs[0]));
  OK(MPI_Irecv(&small_in, 1, MPI_LONG, right, 8, MPI_COMM_WORLD, &reqs[1]));
  OK(MPI_Isend(sbig, BIG, MPI_DOUBLE, right, 7, MPI_COMM_WORLD, &reqs[2]));
  OK(MPI_Isend(&small_out, 1, MPI_LONG, left, 8, MPI_COMM_WORLD, &reqs[3]));
  MPI_Status sts[4];
  OK(MPI_Waitall(4, reqs, sts));
  for (int i = 0; i < 4; i++) CHECK(reqs[i] == MPI_REQUEST_NULL);
  CHECK(rbig[0] == left && rbig[BIG - 1] == left + (BIG - 1) * 0.5);
  CHECK(small_in == 1000 + right);
  CHECK(sts[0].MPI_SOURCE == left && sts[1].MPI_SOURCE == right && sts[1].MPI_TAG == 8);

  /* Waitany / Testsome / Testany / Test. */
  int a = -1, b = -1, mine = rank;
  OK(MPI_Irecv(&a, 1, MPI_INT, left, 11, MPI_COMM_WORLD, &reqs[0]));
  OK(MPI_Irecv(&b, 1, MPI_INT, right, 12, MPI_COMM_WORLD, &reqs[1]));
  OK(MPI_Send(&mine, 1, MPI_INT, right, 11, MPI_COMM_WORLD));
  OK(MPI_Send(&mine, 1, MPI_INT, left, 12, MPI_COMM_WORLD));
  int idx = -1, done = 0;
  OK(MPI_Waitany(2, reqs, &idx, &st));
  CHECK(idx == 0 || idx == 1);
  CHECK(reqs[idx] == MPI_REQUEST_NULL);
  while (!done) {
    int outcount = 0, indices[2];
    OK(MPI_Testsome(2, reqs, &outcount, indices, sts));
    if (outcount == MPI_UNDEFINED) break;
    done = outcount > 0;
  }
  CHECK(a == left && b == right);
  OK(MPI_Testany(2, reqs, &idx, &done, &st));
  CHECK(done == 1 && idx == MPI_UNDEFINED); /* all null */
  MPI_Request nullreq = MPI_REQUEST_NULL;
  OK(MPI_Test(&nullreq, &done, &st));
  CHECK(done == 1 && st.MPI_SOURCE == MPI_ANY_SOURCE && st.MPI_TAG == MPI_ANY_TAG);
  OK(MPI_Wait(&nullreq, MPI_STATUS_IGNORE));

  /* Probe then receive with the probed count; Iprobe of nothing is false. */
  char text[32];
  snprintf(text, sizeof text, "hello from %d", rank);
  OK(MPI_Isend(text, (int)strlen(text) + 1, MPI_CHAR, right, 21, MPI_COMM_WORLD, &reqs[0]));
  OK(MPI_Probe(MPI_ANY_SOURCE, 21, MPI_COMM_WORLD, &st));
  int n = 0;
  OK(MPI_Get_count(&st, MPI_CHAR, &n));
  CHECK(st.MPI_SOURCE == left && n > 10);
  char got[32];
  OK(MPI_Recv(got, n, MPI_CHAR, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
  char want[32];
  snprintf(want, sizeof want, "hello from %d", left);
  CHECK(strcmp(got, want) == 0);
  OK(MPI_Wait(&reqs[0], MPI_STATUS_IGNORE));
  OK(MPI_Iprobe(MPI_ANY_SOURCE, 999, MPI_COMM_WORLD, &done, &st));
  CHECK(done == 0);

  /* Matched probe: the probed message is received by MPI_Mrecv, nothing else can take it. */
  int mp = rank * 3, mq = -1, flagm = 0;
  MPI_Message msg;
  OK(MPI_Send(&mp, 1, MPI_INT, right, 71, MPI_COMM_WORLD));
  OK(MPI_Mprobe(left, 71, MPI_COMM_WORLD, &msg, &st));
  OK(MPI_Get_count(&st, MPI_INT, &n));
  CHECK(n == 1 && st.MPI_SOURCE == left && msg != MPI_MESSAGE_NULL);
  OK(MPI_Iprobe(left, 71, MPI_COMM_WORLD, &flagm, MPI_STATUS_IGNORE));
  CHECK(flagm == 0); /* already taken out of matching */
  OK(MPI_Mrecv(&mq, 1, MPI_INT, &msg, &st));
  CHECK(mq == left * 3 && msg == MPI_MESSAGE_NULL);
  OK(MPI_Improbe(left, 72, MPI_COMM_WORLD, &flagm, &msg, &st));
  CHECK(flagm == 0);

  /* Sendrecv and Sendrecv_replace around the ring. */
  int x = rank, y = -1;
  OK(MPI_Sendrecv(&x, 1, MPI_INT, right, 31, &y, 1, MPI_INT, left, 31, MPI_COMM_WORLD, &st));
  CHECK(y == left && st.MPI_SOURCE == left);
  int z[2] = {rank, rank + 1};
  OK(MPI_Sendrecv_replace(z, 2, MPI_INT, right, 32, left, 32, MPI_COMM_WORLD, &st));
  CHECK(z[0] == left && z[1] == left + 1);

  /* Cancel of a receive nobody matches. */
  int never;
  MPI_Request c;
  OK(MPI_Irecv(&never, 1, MPI_INT, MPI_ANY_SOURCE, 4242, MPI_COMM_WORLD, &c));
  OK(MPI_Cancel(&c));
  OK(MPI_Wait(&c, &st));
  int cancelled = 0;
  OK(MPI_Test_cancelled(&st, &cancelled));
  CHECK(cancelled == 1);

  /* Persistent requests, started three times. */
  int pv = 0, ps = 0;
  MPI_Request pr[2];
  OK(MPI_Recv_init(&pv, 1, MPI_INT, left, 41, MPI_COMM_WORLD, &pr[0]));
  OK(MPI_Rsend_init(&ps, 1, MPI_INT, right, 41, MPI_COMM_WORLD, &pr[1]));
  for (int it = 0; it < 3; it++) {
    ps = rank * 100 + it;
    OK(MPI_Startall(2, pr));
    OK(MPI_Waitall(2, pr, MPI_STATUSES_IGNORE));
    CHECK(pv == left * 100 + it);
    CHECK(pr[0] != MPI_REQUEST_NULL); /* persistent handles stay */
  }
  OK(MPI_Start(&pr[0]));
  OK(MPI_Send(&rank, 1, MPI_INT, right, 41, MPI_COMM_WORLD));
  OK(MPI_Wait(&pr[0], MPI_STATUS_IGNORE));
  CHECK(pv == left);
  OK(MPI_Request_free(&pr[0]));
  OK(MPI_Request_free(&pr[1]));
  CHECK(pr[0] == MPI_REQUEST_NULL);

  /* Buffered sends: fit while there is room, MPI_ERR_BUFFER beyond it. */
  int bufsize = 2 * (64 * (int)sizeof(int) + MPI_BSEND_OVERHEAD);
  void *bbuf = malloc(bufsize);
  OK(MPI_Buffer_attach(bbuf, bufsize));
  int bdata[64], brecv[64];
  for (int i = 0; i < 64; i++) bdata[i] = rank + i;
  OK(MPI_Bsend(bdata, 64, MPI_INT, right, 51, MPI_COMM_WORLD));
  bdata[0] = -5; /* the message was copied: changing the buffer does not change it */
  OK(MPI_Recv(brecv, 64, MPI_INT, left, 51, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
  CHECK(brecv[0] == left && brecv[63] == left + 63);
  MPI_Request ib;
  OK(MPI_Ibsend(bdata, 64, MPI_INT, right, 53, MPI_COMM_WORLD, &ib));
  OK(MPI_Wait(&ib, MPI_STATUS_IGNORE));
  OK(MPI_Recv(brecv, 64, MPI_INT, left, 53, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
  CHECK(brecv[0] == -5 && brecv[1] == left + 1);
  OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  int huge[1024];
  CHECK_RC(MPI_Bsend(huge, 1024, MPI_INT, right, 52, MPI_COMM_WORLD), MPI_ERR_BUFFER);
  void *back;
  int backsize;
  OK(MPI_Buffer_detach(&back, &backsize));
  CHECK(back == bbuf && backsize == bufsize);
  free(bbuf);

  /* MPI_PROC_NULL completes at once with the standard status. */
  OK(MPI_Send(out, 4, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD));
  OK(MPI_Recv(in, 4, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &st));
  CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG);
  OK(MPI_Get_count(&st, MPI_INT, &n));
  CHECK(n == 0);

  /* Truncation: a 4-int message into a 2-int buffer. */
  OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
  OK(MPI_Send(out, 4, MPI_INT, 0, 61, MPI_COMM_SELF));
  st.MPI_SOURCE = -77;
  st.MPI_TAG = -77;
  CHECK_RC(MPI_Recv(in, 2, MPI_INT, 0, 61, MPI_COMM_SELF, &st), MPI_ERR_TRUNCATE);
  CHECK(st.MPI_SOURCE == 0 && st.MPI_TAG == 61); /* the truncated message is named */
  {
    MPI_Request tr;
    OK(MPI_Send(out, 4, MPI_INT, 0, 63, MPI_COMM_SELF));
    OK(MPI_Irecv(in, 2, MPI_INT, 0, 63, MPI_COMM_SELF, &tr));
    st.MPI_SOURCE = -77;
    st.MPI_TAG = -77;
    CHECK_RC(MPI_Wait(&tr, &st), MPI_ERR_TRUNCATE);
    CHECK(st.MPI_SOURCE == 0 && st.MPI_TAG == 63);
  }

  /* Large-count forms. */
  OK(MPI_Send_c(out, (MPI_Count)4, MPI_INT, 0, 62, MPI_COMM_SELF));
  OK(MPI_Recv_c(in, (MPI_Count)4, MPI_INT, 0, 62, MPI_COMM_SELF, &st));
  MPI_Count nc = 0;
  OK(MPI_Get_count_c(&st, MPI_INT, &nc));
  CHECK(nc == 4 && in[1] == out[1]);

  /* Synchronous sends: MPI_Issend cannot complete before the receiver posts its receive,
     which rank 1 does only after the barrier that rank 0 enters after testing. */
  if (size >= 2 && rank < 2) {
    int v = 77 + rank, got = -1, flag = 0;
    MPI_Request sr;
    if (rank == 0) {
      OK(MPI_Issend(&v, 1, MPI_INT, 1, 70, MPI_COMM_WORLD, &sr));
      for (int i = 0; i < 2000; i++) {
        OK(MPI_Test(&sr, &flag, MPI_STATUS_IGNORE));
        CHECK(flag == 0);
      }
    }
    OK(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) {
      OK(MPI_Wait(&sr, MPI_STATUS_IGNORE));
      OK(MPI_Ssend(&v, 1, MPI_INT, 1, 71, MPI_COMM_WORLD));
      OK(MPI_Ssend_init(&v, 1, MPI_INT, 1, 72, MPI_COMM_WORLD, &sr));
      for (int k = 0; k < 3; k++) {
        OK(MPI_Start(&sr));
        OK(MPI_Wait(&sr, MPI_STATUS_IGNORE));
      }
      OK(MPI_Request_free(&sr));
    } else {
      OK(MPI_Recv(&got, 1, MPI_INT, 0, 70, MPI_COMM_WORLD, &st));
      CHECK(got == 77);
      OK(MPI_Recv(&got, 1, MPI_INT, 0, 71, MPI_COMM_WORLD, &st));
      CHECK(got == 77);
      for (int k = 0; k < 3; k++) {
        got = -1;
        OK(MPI_Recv(&got, 1, MPI_INT, 0, 72, MPI_COMM_WORLD, &st));
        CHECK(got == 77);
      }
    }
  } else {
    OK(MPI_Barrier(MPI_COMM_WORLD));
  }
  OK(MPI_Ssend(out, 0, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD));

  free(sbig);
  free(rbig);
  OK(MPI_Finalize());
  return 0;
}
