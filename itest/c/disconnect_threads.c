/* MPI_Comm_disconnect under MPI_THREAD_MULTIPLE (MPI-4.1 §11.6, §11.10.4): a thread waiting
 * in MPI_Comm_disconnect for the other ranks must let the other threads of its process into
 * MPI. Run by crates/weft-mpi/tests/disconnect_threads.rs.
 *
 * Every rank holds `d`: a duplicate of MPI_COMM_WORLD, then an intercommunicator between
 * the two halves of the world (MPI_Intercomm_create from a split; at 2 or more ranks). On
 * rank 0 thread A sets a flag and calls MPI_Comm_disconnect(&d); the main thread waits for
 * the flag, sends a token on MPI_COMM_WORLD to every other rank and receives a reply from
 * each. The other ranks (one thread) receive the token, reply, and only then disconnect
 * `d`. Rank 0's disconnect can therefore only complete once its other thread has sent the
 * tokens: a disconnect that keeps the process's MPI lock while it waits for the other ranks
 * deadlocks whenever thread A enters first (the caller's time bound catches it). Tokens
 * and replies are checked, and `d` is MPI_COMM_NULL after every disconnect. Each case runs
 * ROUNDS times.
 *
 * Also: disconnecting MPI_COMM_WORLD, MPI_COMM_SELF or MPI_COMM_NULL fails with
 * MPI_ERR_COMM and leaves the handle as it was.
 *
 * With the argument "mixed" only rank 0 asks for MPI_THREAD_MULTIPLE, the others for
 * MPI_THREAD_SINGLE: their disconnects must still meet rank 0's. */
#include "check.h"
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>

#define ROUNDS 3

static int rank, size;
static atomic_int entering;

/* Thread A of rank 0: says it is about to disconnect, then disconnects. */
static void *disconnect_a(void *arg) {
  MPI_Comm *d = arg;
  atomic_store(&entering, 1);
  OK(MPI_Comm_disconnect(d));
  CHECK(*d == MPI_COMM_NULL);
  return NULL;
}

static int token(int tag, int to) { return tag * 1000 + to; }
static int reply(int tag, int from) { return -(tag * 1000 + from); }

/* One round on `d` (MPI_COMM_WORLD carries the tokens and replies, tag `tag`). */
static void round_on(MPI_Comm *d, int tag) {
  if (rank == 0) {
    pthread_t a;
    atomic_store(&entering, 0);
    CHECK(pthread_create(&a, NULL, disconnect_a, d) == 0);
    while (!atomic_load(&entering)) sched_yield();
    for (int r = 1; r < size; r++) {
      int t = token(tag, r);
      OK(MPI_Send(&t, 1, MPI_INT, r, tag, MPI_COMM_WORLD));
    }
    for (int r = 1; r < size; r++) {
      int got = 0;
      OK(MPI_Recv(&got, 1, MPI_INT, r, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
      CHECK(got == reply(tag, r));
    }
    CHECK(pthread_join(a, NULL) == 0);
  } else {
    int got = 0;
    OK(MPI_Recv(&got, 1, MPI_INT, 0, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK(got == token(tag, rank));
    int back = reply(tag, rank);
    OK(MPI_Send(&back, 1, MPI_INT, 0, tag, MPI_COMM_WORLD));
    OK(MPI_Comm_disconnect(d));
    CHECK(*d == MPI_COMM_NULL);
  }
}

/* An intercommunicator between the halves of the world: ranks below size / 2, the rest. */
static MPI_Comm halves(int tag) {
  int low = rank < size / 2;
  MPI_Comm half, inter;
  OK(MPI_Comm_split(MPI_COMM_WORLD, low, rank, &half));
  OK(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, low ? size / 2 : 0, tag, &inter));
  OK(MPI_Comm_free(&half));
  int flag = 0, remote = 0;
  OK(MPI_Comm_test_inter(inter, &flag));
  CHECK(flag);
  OK(MPI_Comm_remote_size(inter, &remote));
  CHECK(remote == (low ? size - size / 2 : size / 2));
  return inter;
}

static void expect_comm_error(MPI_Comm *c, MPI_Comm was) {
  int rc = MPI_Comm_disconnect(c);
  int cls = -1;
  CHECK(rc != MPI_SUCCESS);
  OK(MPI_Error_class(rc, &cls));
  CHECK(cls == MPI_ERR_COMM);
  CHECK(*c == was);
}

int main(int argc, char **argv) {
  int mixed = argc > 1 && strcmp(argv[1], "mixed") == 0;
  int want = MPI_THREAD_MULTIPLE;
  if (mixed) {
    /* The rank is not known before init: the launcher's environment says it. */
    const char *r = getenv("WEFT_RANK");
    CHECK(r != NULL);
    if (atoi(r) != 0) want = MPI_THREAD_SINGLE;
  }
  int provided = -1;
  OK(MPI_Init_thread(&argc, &argv, want, &provided));
  CHECK(provided == want);
  OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  OK(MPI_Comm_size(MPI_COMM_WORLD, &size));

  OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
  MPI_Comm c = MPI_COMM_WORLD;
  expect_comm_error(&c, MPI_COMM_WORLD);
  c = MPI_COMM_SELF;
  expect_comm_error(&c, MPI_COMM_SELF);
  c = MPI_COMM_NULL;
  expect_comm_error(&c, MPI_COMM_NULL);

  for (int i = 0; i < ROUNDS; i++) {
    MPI_Comm d;
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &d));
    round_on(&d, 10 + i);
  }
  if (size >= 2) {
    for (int i = 0; i < ROUNDS; i++) {
      MPI_Comm d = halves(40 + i);
      round_on(&d, 20 + i);
    }
  }

  OK(MPI_Barrier(MPI_COMM_WORLD));
  OK(MPI_Finalize());
  return 0;
}
