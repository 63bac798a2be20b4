/* Generalized requests (MPI-4.1 §13.2): MPI_Grequest_start/complete with MPI_Wait,
 * MPI_Test, MPI_Request_get_status, MPI_Cancel (whose callback completes the request),
 * MPI_Request_free before and after completion, a mix with ordinary requests in
 * Waitall/Waitany/Testall/Testany, completion from another thread waking a waiter, the
 * callbacks' error codes, and the status query_fn fills (source, tag, cancelled, count via
 * MPI_Status_set_elements). Rank-local: runs at any size. */
#include "check.h"
#include <pthread.h>
#include <string.h>
#include <unistd.h>

struct extra {
  MPI_Request req; /* the request itself, for cancel_fn */
  int queries, frees, cancels, cancel_flag, cancelled;
  int free_rc;
};

static int query_fn(void *p, MPI_Status *st) {
  struct extra *x = p;
  x->queries++;
  st->MPI_SOURCE = 3;
  st->MPI_TAG = 77;
  MPI_Status_set_cancelled(st, x->cancelled);
  MPI_Status_set_elements(st, MPI_INT, 5);
  return MPI_SUCCESS;
}

static int free_fn(void *p) {
  struct extra *x = p;
  x->frees++;
  return x->free_rc;
}

/* Cancels by completing the request (the usual pattern). */
static int cancel_fn(void *p, int complete) {
  struct extra *x = p;
  x->cancels++;
  x->cancel_flag = complete;
  if (!complete) {
    x->cancelled = 1;
    return MPI_Grequest_complete(x->req);
  }
  return MPI_SUCCESS;
}

static void start(struct extra *x) {
  memset(x, 0, sizeof *x);
  OK(MPI_Grequest_start(query_fn, free_fn, cancel_fn, x, &x->req));
  CHECK(x->req != MPI_REQUEST_NULL);
}

static void check_status(const MPI_Status *st) {
  int n, c;
  CHECK(st->MPI_SOURCE == 3 && st->MPI_TAG == 77);
  OK(MPI_Get_count(st, MPI_INT, &n));
  CHECK(n == 5);
  OK(MPI_Test_cancelled(st, &c));
  CHECK(c == 0);
}

static void *complete_later(void *p) {
  usleep(50 * 1000);
  /* MPI_Grequest_complete touches only the request: the waiter on the main thread wakes. */
  if (MPI_Grequest_complete(*(MPI_Request *)p) != MPI_SUCCESS) abort();
  return NULL;
}

static int error_class(int rc) {
  int c;
  OK(MPI_Error_class(rc, &c));
  return c;
}

int main(int argc, char **argv) {
  int provided, rank, flag, idx;
  struct extra x, y;
  MPI_Status st;
  OK(MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided));
  CHECK(provided == MPI_THREAD_SERIALIZED);
  OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));

  /* Test and get_status before completion; get_status after (query only); Wait. */
  start(&x);
  OK(MPI_Test(&x.req, &flag, &st));
  CHECK(!flag && x.req != MPI_REQUEST_NULL);
  OK(MPI_Request_get_status(x.req, &flag, &st));
  CHECK(!flag && x.queries == 0);
  MPI_Request copy = x.req;
  OK(MPI_Grequest_complete(x.req));
  memset(&st, 0, sizeof st);
  OK(MPI_Request_get_status(x.req, &flag, &st));
  CHECK(flag && x.queries == 1 && x.frees == 0);
  check_status(&st);
  memset(&st, 0, sizeof st);
  OK(MPI_Wait(&x.req, &st));
  CHECK(x.req == MPI_REQUEST_NULL && x.queries == 2 && x.frees == 1 && x.cancels == 0);
  check_status(&st);
  /* The handle is gone: completing it again is an error. */
  OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
  OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  CHECK(error_class(MPI_Grequest_complete(copy)) == MPI_ERR_REQUEST);

  /* Test completes it; a second MPI_Grequest_complete is an error. */
  start(&x);
  OK(MPI_Grequest_complete(x.req));
  CHECK(error_class(MPI_Grequest_complete(x.req)) == MPI_ERR_REQUEST);
  OK(MPI_Test(&x.req, &flag, MPI_STATUS_IGNORE));
  CHECK(flag && x.req == MPI_REQUEST_NULL && x.queries == 1 && x.frees == 1);

  /* Cancel: cancel_fn sees "not complete" and completes it; the status says cancelled. */
  start(&x);
  OK(MPI_Cancel(&x.req));
  CHECK(x.cancels == 1 && x.cancel_flag == 0);
  OK(MPI_Cancel(&x.req));
  CHECK(x.cancels == 2 && x.cancel_flag == 1);
  OK(MPI_Wait(&x.req, &st));
  OK(MPI_Test_cancelled(&st, &flag));
  CHECK(flag && x.frees == 1);

  /* Free before completion: free_fn runs at MPI_Grequest_complete. Free after: at once. */
  start(&x);
  copy = x.req;
  OK(MPI_Request_free(&x.req));
  CHECK(x.req == MPI_REQUEST_NULL && x.frees == 0);
  start(&y); /* a new request must get a handle of its own */
  CHECK(y.req != copy);
  OK(MPI_Grequest_complete(copy));
  CHECK(x.frees == 1 && x.queries == 0);
  OK(MPI_Grequest_complete(y.req));
  OK(MPI_Request_free(&y.req));
  CHECK(y.req == MPI_REQUEST_NULL && y.frees == 1 && y.queries == 0);

  /* Mixed with ordinary requests: a receive from myself and a generalized request. */
  {
    int out = 41 + rank, in = -1;
    MPI_Request rq[3];
    start(&x);
    OK(MPI_Irecv(&in, 1, MPI_INT, rank, 5, MPI_COMM_WORLD, &rq[0]));
    rq[1] = x.req;
    /* Testany/Testall: nothing is complete (the receive has no message yet). */
    OK(MPI_Testany(2, rq, &idx, &flag, MPI_STATUS_IGNORE));
    CHECK(!flag);
    OK(MPI_Grequest_complete(x.req));
    OK(MPI_Testall(2, rq, &flag, MPI_STATUSES_IGNORE));
    CHECK(!flag && x.frees == 0);
    /* Waitany finds the generalized request. */
    OK(MPI_Waitany(2, rq, &idx, &st));
    CHECK(idx == 1 && rq[1] == MPI_REQUEST_NULL && x.frees == 1);
    check_status(&st);
    /* Waitall on a send, the receive and a new generalized request completed by a thread
     * while this one waits. */
    start(&y);
    rq[1] = y.req;
    OK(MPI_Isend(&out, 1, MPI_INT, rank, 5, MPI_COMM_WORLD, &rq[2]));
    pthread_t t;
    CHECK(pthread_create(&t, NULL, complete_later, &y.req) == 0);
    MPI_Status sts[3];
    OK(MPI_Waitall(3, rq, sts));
    CHECK(pthread_join(t, NULL) == 0);
    CHECK(in == 41 + rank && y.frees == 1 && y.queries == 1);
    CHECK(sts[0].MPI_SOURCE == rank && sts[0].MPI_TAG == 5);
    check_status(&sts[1]);
  }

  /* MPI_Wait alone, woken by another thread. */
  start(&x);
  {
    pthread_t t;
    CHECK(pthread_create(&t, NULL, complete_later, &x.req) == 0);
    OK(MPI_Wait(&x.req, MPI_STATUS_IGNORE));
    CHECK(pthread_join(t, NULL) == 0);
    CHECK(x.frees == 1);
  }

  /* A callback's error code is the call's; free_fn still runs once. */
  start(&x);
  x.free_rc = MPI_ERR_OTHER;
  OK(MPI_Grequest_complete(x.req));
  CHECK(error_class(MPI_Wait(&x.req, MPI_STATUS_IGNORE)) == MPI_ERR_OTHER);
  CHECK(x.req == MPI_REQUEST_NULL && x.frees == 1);
  /* No callback may be NULL; an ordinary request is not a generalized one. */
  MPI_Request r = MPI_REQUEST_NULL;
  CHECK(error_class(MPI_Grequest_start(NULL, free_fn, cancel_fn, NULL, &r)) == MPI_ERR_ARG);
  CHECK(r == MPI_REQUEST_NULL);
  {
    int v = 0;
    OK(MPI_Isend(&v, 1, MPI_INT, rank, 6, MPI_COMM_WORLD, &r));
    CHECK(error_class(MPI_Grequest_complete(r)) == MPI_ERR_REQUEST);
    OK(MPI_Recv(&v, 1, MPI_INT, rank, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
  }

  OK(MPI_Finalize());
  return 0;
}
