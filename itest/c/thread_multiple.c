/* MPI_THREAD_MULTIPLE (MPI-4.1 §11.6): several threads of every rank call MPI at once.
 *   - blocking ping-pong on distinct tags of MPI_COMM_WORLD and on per-thread duplicates
 *     (made by the threads at once, each from its own communicator), zero-length and odd
 *     sizes up to past the eager limit, data checked;
 *   - a chain that completes only if a blocked call lets other threads in: thread A's
 *     MPI_Sendrecv sends to the next rank and receives from MPI_ANY_SOURCE what thread B
 *     of its own rank sends once B's blocking MPI_Recv got A's message from the previous
 *     rank (at one rank, all on itself). Any implementation whose waiting call keeps the
 *     others out deadlocks here whatever the scheduling;
 *   - MPI_Mprobe/MPI_Mrecv by several threads draining one source: every message received
 *     once, none lost, sizes from MPI_Get_count; MPI_Probe + MPI_Recv on per-thread tags;
 *   - requests started in one thread and completed in another (MPI_Wait, MPI_Waitall);
 *   - blocking collectives on per-thread communicators at once, data checked;
 *   - Isend/Irecv storms completed by MPI_Waitall, MPI_Waitany and MPI_Waitsome.
 * MPI_Query_thread says MULTIPLE; MPI_Is_thread_main is true only on the main thread.
 * With the argument "serialized" the program expects MPI_THREAD_SERIALIZED instead (the
 * library may provide less than asked) and only checks the level queries. */
#include "check.h"
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#define THREADS 4
#define ROUNDS 3

static int rank, size, next_rank, prev_rank;
static MPI_Comm own[THREADS];
static pthread_barrier_t all_threads;

static const int sizes[] = {0, 1, 7, 1000, 4099, 70001};
#define NSIZES ((int)(sizeof sizes / sizeof sizes[0]))
#define MAXBYTES 70001

static unsigned char pattern(int origin, int thread, int round, int i) {
  return (unsigned char)(origin * 31 + thread * 7 + round * 13 + i * 3 + 1);
}
static void fill(unsigned char *b, int n, int origin, int thread, int round) {
  for (int i = 0; i < n; i++) b[i] = pattern(origin, thread, round, i);
}
static void verify(const unsigned char *b, int n, int origin, int thread, int round) {
  for (int i = 0; i < n; i++) CHECK(b[i] == pattern(origin, thread, round, i));
}

/* Token passing around the ring of `c` on `tag`: rank 0 sends first, the others receive
 * first; at one rank the message goes to itself (nonblocking send, then the receive). */
static void ring(MPI_Comm c, int tag, int thread, unsigned char *sbuf, unsigned char *rbuf) {
  int r, n;
  OK(MPI_Comm_rank(c, &r));
  OK(MPI_Comm_size(c, &n));
  int to = (r + 1) % n, from = (r + n - 1) % n;
  for (int round = 0; round < ROUNDS; round++) {
    for (int s = 0; s < NSIZES; s++) {
      int bytes = sizes[s];
      MPI_Status st;
      int got = -1;
      fill(sbuf, bytes, r, thread, round);
      memset(rbuf, 0, MAXBYTES);
      if (n == 1) {
        MPI_Request q;
        OK(MPI_Isend(sbuf, bytes, MPI_BYTE, to, tag, c, &q));
        OK(MPI_Recv(rbuf, MAXBYTES, MPI_BYTE, from, tag, c, &st));
        OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
      } else if (r == 0) {
        OK(MPI_Send(sbuf, bytes, MPI_BYTE, to, tag, c));
        OK(MPI_Recv(rbuf, MAXBYTES, MPI_BYTE, from, tag, c, &st));
      } else {
        OK(MPI_Recv(rbuf, MAXBYTES, MPI_BYTE, from, tag, c, &st));
        /* Check what came (from the previous rank) before passing on this rank's own. */
        verify(rbuf, bytes, from, thread, round);
        OK(MPI_Send(sbuf, bytes, MPI_BYTE, to, tag, c));
      }
      OK(MPI_Get_count(&st, MPI_BYTE, &got));
      CHECK(got == bytes);
      CHECK(st.MPI_SOURCE == from && st.MPI_TAG == tag);
      verify(rbuf, bytes, from, thread, round);
    }
  }
}

/* ---- the chain: A's Sendrecv completes only through B's blocking Recv then Send. */
#define TAG_U 900
#define TAG_T 901
static MPI_Comm chain_comm;
static void *chain_b(void *arg) {
  (void)arg;
  int token = -1;
  OK(MPI_Recv(&token, 1, MPI_INT, prev_rank, TAG_U, chain_comm, MPI_STATUS_IGNORE));
  CHECK(token == prev_rank);
  int reply = token * 1000 + rank;
  OK(MPI_Send(&reply, 1, MPI_INT, rank, TAG_T, chain_comm));
  return NULL;
}
static void chain(void) {
  pthread_t b;
  CHECK(pthread_create(&b, NULL, chain_b, NULL) == 0);
  int mine = rank, reply = -1;
  MPI_Status st;
  OK(MPI_Sendrecv(&mine, 1, MPI_INT, next_rank, TAG_U, &reply, 1, MPI_INT, MPI_ANY_SOURCE,
                  TAG_T, chain_comm, &st));
  CHECK(reply == prev_rank * 1000 + rank);
  CHECK(st.MPI_SOURCE == rank);
  CHECK(pthread_join(b, NULL) == 0);
}

/* ---- Mprobe drain: every rank's threads send MSGS messages each to the next rank; the next
 * rank's threads Mprobe/Mrecv them from that one source, each thread as many as one sender
 * thread sent. */
#define MSGS 24
#define TAG_M 700
static MPI_Comm mprobe_comm;
static int seen[THREADS * MSGS];
static pthread_mutex_t seen_lock = PTHREAD_MUTEX_INITIALIZER;
static int msg_bytes(int id) { return (id * 37) % 301; } /* 0 included, odd sizes */

static void mprobe_phase(int t) {
  unsigned char buf[512];
  MPI_Request sends[MSGS];
  static unsigned char out[THREADS][MSGS][512];
  for (int k = 0; k < MSGS; k++) {
    int id = t * MSGS + k;
    int n = msg_bytes(id);
    for (int i = 0; i < n; i++) out[t][k][i] = (unsigned char)(id + i);
    /* The id travels in the tag, the bytes follow from it. */
    OK(MPI_Isend(out[t][k], n, MPI_BYTE, next_rank, TAG_M + id, mprobe_comm, &sends[k]));
  }
  for (int k = 0; k < MSGS; k++) {
    MPI_Message m;
    MPI_Status st;
    int count = -1;
    OK(MPI_Mprobe(prev_rank, MPI_ANY_TAG, mprobe_comm, &m, &st));
    CHECK(st.MPI_SOURCE == prev_rank);
    int id = st.MPI_TAG - TAG_M;
    CHECK(id >= 0 && id < THREADS * MSGS);
    OK(MPI_Get_count(&st, MPI_BYTE, &count));
    CHECK(count == msg_bytes(id));
    memset(buf, 0xee, sizeof buf);
    OK(MPI_Mrecv(buf, (int)sizeof buf, MPI_BYTE, &m, &st));
    CHECK(m == MPI_MESSAGE_NULL);
    for (int i = 0; i < count; i++) CHECK(buf[i] == (unsigned char)(id + i));
    pthread_mutex_lock(&seen_lock);
    seen[id]++;
    pthread_mutex_unlock(&seen_lock);
  }
  OK(MPI_Waitall(MSGS, sends, MPI_STATUSES_IGNORE));
}

/* MPI_Probe then MPI_Recv on a tag of this thread's own: safe with several threads. */
static void probe_phase(int t, unsigned char *sbuf, unsigned char *rbuf) {
  int tag = 600 + t;
  for (int s = 0; s < NSIZES; s++) {
    int bytes = sizes[s], count = -1;
    MPI_Request q;
    MPI_Status st;
    fill(sbuf, bytes, rank, t, s);
    OK(MPI_Isend(sbuf, bytes, MPI_BYTE, next_rank, tag, MPI_COMM_WORLD, &q));
    OK(MPI_Probe(prev_rank, tag, MPI_COMM_WORLD, &st));
    OK(MPI_Get_count(&st, MPI_BYTE, &count));
    CHECK(count == bytes);
    OK(MPI_Recv(rbuf, count, MPI_BYTE, prev_rank, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    verify(rbuf, bytes, prev_rank, t, s);
    OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
  }
}

/* ---- requests handed between threads: thread t starts, thread (t+1)%THREADS completes. */
#define HANDED 8
static MPI_Request handed[THREADS][2 * HANDED];
static int handed_in[THREADS][HANDED], handed_out[THREADS][HANDED];
static void hand_start(int t) {
  for (int k = 0; k < HANDED; k++) {
    handed_out[t][k] = rank * 10000 + t * 100 + k;
    handed_in[t][k] = -1;
    OK(MPI_Irecv(&handed_in[t][k], 1, MPI_INT, prev_rank, 500 + t, MPI_COMM_WORLD,
                 &handed[t][k]));
    OK(MPI_Isend(&handed_out[t][k], 1, MPI_INT, next_rank, 500 + t, MPI_COMM_WORLD,
                 &handed[t][HANDED + k]));
  }
}
static void hand_finish(int t) {
  int o = (t + 1) % THREADS;
  OK(MPI_Wait(&handed[o][0], MPI_STATUS_IGNORE));
  CHECK(handed[o][0] == MPI_REQUEST_NULL);
  OK(MPI_Waitall(2 * HANDED - 1, &handed[o][1], MPI_STATUSES_IGNORE));
  for (int k = 0; k < HANDED; k++) CHECK(handed_in[o][k] == prev_rank * 10000 + o * 100 + k);
}

/* ---- collectives on this thread's own communicator. */
static void collectives(MPI_Comm c, int t) {
  int r, n;
  OK(MPI_Comm_rank(c, &r));
  OK(MPI_Comm_size(c, &n));
  OK(MPI_Barrier(c));
  int v = (r == n - 1) ? 4242 + t : -1;
  OK(MPI_Bcast(&v, 1, MPI_INT, n - 1, c));
  CHECK(v == 4242 + t);
  long mine = r + 1 + t, sum = -1;
  OK(MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, c));
  CHECK(sum == (long)n * (n + 1) / 2 + (long)n * t);
  int all[8], each[8], back[8];
  CHECK(n <= 8);
  OK(MPI_Allgather(&r, 1, MPI_INT, all, 1, MPI_INT, c));
  for (int i = 0; i < n; i++) CHECK(all[i] == i);
  for (int i = 0; i < n; i++) each[i] = r * 100 + i + t;
  OK(MPI_Alltoall(each, 1, MPI_INT, back, 1, MPI_INT, c));
  for (int i = 0; i < n; i++) CHECK(back[i] == i * 100 + r + t);
  int red = -1;
  OK(MPI_Reduce(&r, &red, 1, MPI_INT, MPI_MAX, 0, c));
  if (r == 0) CHECK(red == n - 1);
}

/* ---- storm: nonblocking sends and receives on this thread's communicator. */
#define STORM 16
static void storm(MPI_Comm c, int t) {
  int r, n;
  OK(MPI_Comm_rank(c, &r));
  OK(MPI_Comm_size(c, &n));
  int to = (r + 1) % n, from = (r + n - 1) % n;
  int in[STORM], out[STORM];
  MPI_Request rq[STORM], sq[STORM];
  for (int round = 0; round < ROUNDS; round++) {
    for (int k = 0; k < STORM; k++) {
      in[k] = -1;
      out[k] = r * 1000000 + t * 10000 + round * 100 + k;
      OK(MPI_Irecv(&in[k], 1, MPI_INT, from, k, c, &rq[k]));
    }
    for (int k = 0; k < STORM; k++) OK(MPI_Isend(&out[k], 1, MPI_INT, to, k, c, &sq[k]));
    if (round == 0) {
      OK(MPI_Waitall(STORM, rq, MPI_STATUSES_IGNORE));
      OK(MPI_Waitall(STORM, sq, MPI_STATUSES_IGNORE));
    } else if (round == 1) {
      for (int done = 0; done < STORM; done++) {
        int idx = -1;
        MPI_Status st;
        OK(MPI_Waitany(STORM, rq, &idx, &st));
        CHECK(idx >= 0 && idx < STORM && st.MPI_TAG == idx);
      }
      OK(MPI_Waitall(STORM, sq, MPI_STATUSES_IGNORE));
    } else {
      int done = 0, outcount = 0, idx[STORM];
      while (done < STORM) {
        OK(MPI_Waitsome(STORM, rq, &outcount, idx, MPI_STATUSES_IGNORE));
        CHECK(outcount > 0);
        done += outcount;
      }
      CHECK(done == STORM);
      OK(MPI_Waitsome(STORM, rq, &outcount, idx, MPI_STATUSES_IGNORE));
      CHECK(outcount == MPI_UNDEFINED);
      OK(MPI_Waitall(STORM, sq, MPI_STATUSES_IGNORE));
    }
    for (int k = 0; k < STORM; k++)
      CHECK(in[k] == from * 1000000 + t * 10000 + round * 100 + k);
  }
}

static void *worker(void *arg) {
  int t = (int)(intptr_t)arg;
  static unsigned char sbufs[THREADS][MAXBYTES], rbufs[THREADS][MAXBYTES];
  unsigned char *sbuf = sbufs[t], *rbuf = rbufs[t];
  int main_flag = -1, level = -1;
  OK(MPI_Is_thread_main(&main_flag));
  CHECK(main_flag == 0);
  OK(MPI_Query_thread(&level));
  CHECK(level == MPI_THREAD_MULTIPLE);

  /* Distinct tags on one communicator. */
  ring(MPI_COMM_WORLD, 100 + t, t, sbuf, rbuf);

  /* A duplicate of this thread's own communicator, made while the other threads make
   * theirs; then the same ring on it with one tag for every thread. */
  MPI_Comm mine;
  OK(MPI_Comm_dup(own[t], &mine));
  ring(mine, 0, t, sbuf, rbuf);
  collectives(mine, t);
  storm(mine, t);

  pthread_barrier_wait(&all_threads);
  mprobe_phase(t);
  probe_phase(t, sbuf, rbuf);

  hand_start(t);
  pthread_barrier_wait(&all_threads);
  hand_finish(t);

  OK(MPI_Comm_free(&mine));
  return NULL;
}

int main(int argc, char **argv) {
  int provided = -1, level = -1, flag = -1;
  int expect_serialized = argc > 1 && strcmp(argv[1], "serialized") == 0;
  OK(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
  OK(MPI_Query_thread(&level));
  CHECK(level == provided);
  OK(MPI_Is_thread_main(&flag));
  CHECK(flag == 1);
  if (expect_serialized) {
    CHECK(provided == MPI_THREAD_SERIALIZED);
    OK(MPI_Finalize());
    return 0;
  }
  CHECK(provided == MPI_THREAD_MULTIPLE);
  OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  next_rank = (rank + 1) % size;
  prev_rank = (rank + size - 1) % size;
  for (int t = 0; t < THREADS; t++) OK(MPI_Comm_dup(MPI_COMM_WORLD, &own[t]));
  OK(MPI_Comm_dup(MPI_COMM_WORLD, &chain_comm));
  OK(MPI_Comm_dup(MPI_COMM_WORLD, &mprobe_comm));

  chain();

  CHECK(pthread_barrier_init(&all_threads, NULL, THREADS) == 0);
  pthread_t th[THREADS];
  for (int t = 0; t < THREADS; t++)
    CHECK(pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t) == 0);
  for (int t = 0; t < THREADS; t++) CHECK(pthread_join(th[t], NULL) == 0);
  pthread_barrier_destroy(&all_threads);
  for (int id = 0; id < THREADS * MSGS; id++) CHECK(seen[id] == 1);

  for (int t = 0; t < THREADS; t++) OK(MPI_Comm_free(&own[t]));
  OK(MPI_Comm_free(&chain_comm));
  OK(MPI_Comm_free(&mprobe_comm));
  OK(MPI_Barrier(MPI_COMM_WORLD));
  OK(MPI_Finalize());
  return 0;
}
