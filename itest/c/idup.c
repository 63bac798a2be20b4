/* MPI_Comm_idup / MPI_Comm_idup_with_info as nonblocking operations (MPI-4.1 §7.4.2):
 * the call returns before the other ranks have made it (rank 0 receives from every other
 * rank, which send synchronously after starting their idup); several run at once on one
 * communicator, on overlapping ones and around blocking creations; the new handle is written
 * at completion and inherits attributes and the error handler; errors: MPI_COMM_NULL, a NULL
 * request pointer, freeing or cancelling the request before it completes. Under
 * MPI_THREAD_SERIALIZED another thread may complete the request. */
#include "check.h"
#include <pthread.h>
#include <string.h>

/* Waits for a duplication started on the main thread (MPI_THREAD_SERIALIZED: the main
 * thread makes no MPI call meanwhile, it joins). */
struct waiter {
  MPI_Request req;
  MPI_Comm *out;
  int rc;
};
static void *wait_elsewhere(void *arg) {
  struct waiter *w = arg;
  w->rc = MPI_Wait(&w->req, MPI_STATUS_IGNORE);
  return NULL;
}

static int copies = 0;
static int copy_fn(MPI_Comm c, int k, void *extra, void *in, void *out, int *flag) {
  (void)c;
  (void)k;
  (void)extra;
  copies++;
  *(void **)out = in;
  *flag = 1;
  return MPI_SUCCESS;
}

/* Every rank's sum of ranks over `c` equals the expected one. */
static void works(MPI_Comm c) {
  int rank, size, sum = -1;
  OK(MPI_Comm_rank(c, &rank));
  OK(MPI_Comm_size(c, &size));
  OK(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, c));
  CHECK(sum == size * (size - 1) / 2);
}

int main(int argc, char **argv) {
  int provided = 0;
  OK(MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided));
  CHECK(provided >= MPI_THREAD_SERIALIZED);
  int rank, size;
  OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));

  /* An attribute with a copy callback and the error handler travel to the duplicate. */
  int key;
  static int value = 42;
  OK(MPI_Comm_create_keyval(copy_fn, MPI_COMM_NULL_DELETE_FN, &key, NULL));
  OK(MPI_Comm_set_attr(MPI_COMM_WORLD, key, &value));

  /* 1. Returns before the peers call it. */
  MPI_Comm d = MPI_COMM_NULL;
  MPI_Request req = MPI_REQUEST_NULL;
  if (rank == 0) {
    for (int i = 1; i < size; i++) {
      int b = -1;
      OK(MPI_Recv(&b, 1, MPI_INT, i, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
      CHECK(b == i);
    }
    OK(MPI_Comm_idup(MPI_COMM_WORLD, &d, &req));
  } else {
    OK(MPI_Comm_idup(MPI_COMM_WORLD, &d, &req));
    CHECK(req != MPI_REQUEST_NULL);
    /* Not valid before completion: the handle is written by the wait. */
    CHECK(d == MPI_COMM_NULL);
    /* The request can be neither freed nor cancelled before it completes. */
    CHECK(MPI_Request_free(&req) == MPI_ERR_REQUEST);
    CHECK(MPI_Cancel(&req) == MPI_ERR_REQUEST);
    OK(MPI_Ssend(&rank, 1, MPI_INT, 0, 0, MPI_COMM_WORLD));
  }
  /* The duplicate takes the attributes of the idup call (MPI-4.1 §7.4.2: as if MPI_Comm_dup
   * ran there): the copy callback has run, and a later change does not travel. */
  CHECK(copies == 1);
  static int later = 7;
  OK(MPI_Comm_set_attr(MPI_COMM_WORLD, key, &later));
  MPI_Status st;
  OK(MPI_Wait(&req, &st));
  CHECK(req == MPI_REQUEST_NULL);
  CHECK(d != MPI_COMM_NULL);
  int cmp;
  OK(MPI_Comm_compare(MPI_COMM_WORLD, d, &cmp));
  CHECK(cmp == MPI_CONGRUENT);
  works(d);
  int *got = NULL, flag = 0;
  OK(MPI_Comm_get_attr(d, key, &got, &flag));
  CHECK(flag && got == &value && copies == 1);
  OK(MPI_Comm_get_attr(MPI_COMM_WORLD, key, &got, &flag));
  CHECK(flag && got == &later);
  MPI_Errhandler eh;
  OK(MPI_Comm_get_errhandler(d, &eh));
  CHECK(eh == MPI_ERRORS_RETURN);
  OK(MPI_Errhandler_free(&eh));

  /* 2. Several in flight on one communicator and its duplicate, completed by Waitall and
   * by a Test loop, in different orders on even and odd ranks. */
  MPI_Comm e[4];
  MPI_Request r[4];
  MPI_Info info;
  OK(MPI_Info_create(&info));
  OK(MPI_Info_set(info, "host", "nowhere"));
  if (rank % 2 == 0) {
    OK(MPI_Comm_idup(MPI_COMM_WORLD, &e[0], &r[0]));
    OK(MPI_Comm_idup_with_info(d, info, &e[1], &r[1]));
  } else {
    OK(MPI_Comm_idup_with_info(d, info, &e[1], &r[1]));
    OK(MPI_Comm_idup(MPI_COMM_WORLD, &e[0], &r[0]));
  }
  OK(MPI_Info_free(&info));
  OK(MPI_Comm_idup(d, &e[2], &r[2]));
  OK(MPI_Comm_idup(MPI_COMM_WORLD, &e[3], &r[3]));
  int done = 0;
  while (!done) OK(MPI_Test(&r[3], &done, MPI_STATUS_IGNORE));
  OK(MPI_Waitall(3, r, MPI_STATUSES_IGNORE));
  for (int i = 0; i < 4; i++) works(e[i]);
  /* Distinct communicators: a message on one is not received on another. */
  if (size > 1) {
    int v = 7, w = 0, f = 1;
    if (rank == 0) OK(MPI_Send(&v, 1, MPI_INT, 1, 5, e[0]));
    if (rank == 1) {
      OK(MPI_Iprobe(0, 5, e[1], &f, MPI_STATUS_IGNORE));
      CHECK(!f);
      OK(MPI_Recv(&w, 1, MPI_INT, 0, 5, e[0], MPI_STATUS_IGNORE));
      CHECK(w == 7);
    }
  }
  for (int i = 0; i < 4; i++) OK(MPI_Comm_free(&e[i]));

  /* 3. Around a blocking creation, in opposite orders on even and odd ranks. */
  MPI_Group wg;
  MPI_Comm g, i3;
  OK(MPI_Comm_group(MPI_COMM_WORLD, &wg));
  if (rank % 2 == 0) {
    OK(MPI_Comm_create_group(MPI_COMM_WORLD, wg, 0, &g));
    OK(MPI_Comm_idup(MPI_COMM_WORLD, &i3, &req));
  } else {
    OK(MPI_Comm_idup(MPI_COMM_WORLD, &i3, &req));
    OK(MPI_Comm_create_group(MPI_COMM_WORLD, wg, 0, &g));
  }
  OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
  works(i3);
  works(g);
  OK(MPI_Group_free(&wg));
  OK(MPI_Comm_free(&g));
  OK(MPI_Comm_free(&i3));

  /* 4. Another thread completes the request (the new handle appears for it too). */
  {
    MPI_Comm t = MPI_COMM_NULL;
    struct waiter w = {MPI_REQUEST_NULL, &t, -1};
    OK(MPI_Comm_idup(MPI_COMM_WORLD, &t, &w.req));
    pthread_t th;
    CHECK(pthread_create(&th, NULL, wait_elsewhere, &w) == 0);
    CHECK(pthread_join(th, NULL) == 0);
    CHECK(w.rc == MPI_SUCCESS && w.req == MPI_REQUEST_NULL && t != MPI_COMM_NULL);
    works(t);
    OK(MPI_Comm_free(&t));
  }

  /* 5. Bad input: clear error classes, no request made. */
  MPI_Comm x = MPI_COMM_NULL;
  req = MPI_REQUEST_NULL;
  CHECK(MPI_Comm_idup(MPI_COMM_NULL, &x, &req) == MPI_ERR_COMM);
  CHECK(req == MPI_REQUEST_NULL);
  CHECK(MPI_Comm_idup(MPI_COMM_WORLD, &x, NULL) == MPI_ERR_ARG);
  CHECK(MPI_Comm_idup(MPI_COMM_WORLD, NULL, &req) == MPI_ERR_ARG);

  OK(MPI_Comm_free(&d));
  OK(MPI_Comm_free_keyval(&key));
  OK(MPI_Finalize());
  return 0;
}
