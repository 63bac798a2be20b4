/* MPI_Comm_accept, MPI_Comm_connect and MPI_Comm_join under MPI_THREAD_MULTIPLE (MPI-4.1
 * §11.4.3, §11.8.4, §11.6): while one thread of a process waits in them, another thread of the same process
 * makes MPI calls (point-to-point around a ring and Allreduce, Bcast and Barrier on a
 * duplicate of MPI_COMM_WORLD, with every rank's helper thread).
 *
 * The order is forced, not hoped for:
 * - accept: the lower half of the world accepts on a port; the helper thread of its root
 *   first greets that port as a stranger and reads the accept's answer (the accept only
 *   answers while it waits), is dropped for a wrong proof, and only then works; the upper
 *   half connects once its own helpers have finished the work, so the accept cannot have
 *   returned before it.
 * - connect: the upper half connects to a port name whose address is a plain socket the
 *   root's helper listens on; the helper reads the connect's greeting (the connect then
 *   waits for the answer), works, and closes the socket: the connect fails with
 *   MPI_ERR_PORT at the root and fails on the other ranks of the half too.
 * The intercommunicators of phase one and of a last accept and connect on the same port are
 * checked with point-to-point both ways, Allreduce and Barrier, and disconnected.
 * - join: rank 1 sees rank 0's greeting on their socket (rank 0 waits in MPI_Comm_join),
 *   trades a message with rank 0's helper thread, and only then joins.
 * - a process that accepts on one thread and connects to its own port on another: both
 *   calls return an error (weft refuses an intercommunicator whose groups overlap), neither
 *   hangs.
 * Jobs of 1 rank (the last part only) and more. */
#include "check.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int rank, size, lo_size;
static MPI_Comm work;
static char port[MPI_MAX_PORT_NAME];

static int error_class(int rc) {
  int c = -1;
  MPI_Error_class(rc, &c);
  return c;
}

/* The first address of a weft port name ("weft-port:TOKEN@IP:PORT,..."). */
static struct sockaddr_in first_address(const char *name) {
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  const char *at = strchr(name, '@');
  CHECK(at != NULL);
  char ip[64] = "";
  int p = 0;
  CHECK(sscanf(at + 1, "%63[0-9.]:%d", ip, &p) == 2);
  a.sin_family = AF_INET;
  a.sin_port = htons((unsigned short)p);
  CHECK(inet_pton(AF_INET, ip, &a.sin_addr) == 1);
  return a;
}

static void read_all(int fd, void *buf, size_t n) {
  size_t off = 0;
  while (off < n) {
    ssize_t got = read(fd, (char *)buf + off, n - off);
    CHECK(got > 0);
    off += (size_t)got;
  }
}

/* MPI calls of a helper thread, with every other rank's helper: a ring exchange, then
 * Allreduce, Bcast and Barrier on `work`. `round` makes each call's values its own. */
static void helper_work(int round) {
  int right = (rank + 1) % size, left = (rank + size - 1) % size;
  int out = 1000 * round + rank, in = -1;
  CHECK_RC(MPI_Sendrecv(&out, 1, MPI_INT, right, round, &in, 1, MPI_INT, left, round, work,
                        MPI_STATUS_IGNORE),
           MPI_SUCCESS);
  CHECK(in == 1000 * round + left);
  int sum = -1;
  CHECK_RC(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, work), MPI_SUCCESS);
  CHECK(sum == size * (size - 1) / 2);
  int v = rank == size - 1 ? 77 + round : -1;
  CHECK_RC(MPI_Bcast(&v, 1, MPI_INT, size - 1, work), MPI_SUCCESS);
  CHECK(v == 77 + round);
  CHECK_RC(MPI_Barrier(work), MPI_SUCCESS);
}

/* Phase one's helper at the accepting root: greets its own port as a stranger, which the
 * accept answers (so it waits now), sends a wrong proof (dropped), then works. */
static void *accept_helper(void *arg) {
  (void)arg;
  if (rank == 0) {
    struct sockaddr_in a = first_address(port);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(fd >= 0);
    CHECK(connect(fd, (struct sockaddr *)&a, sizeof a) == 0);
    unsigned char hello[8 + 32], answer[8 + 32 + 32], proof[32];
    memcpy(hello, "weftprt1", 8);
    memset(hello + 8, 0x33, 32);
    CHECK(write(fd, hello, sizeof hello) == (ssize_t)sizeof hello);
    read_all(fd, answer, sizeof answer);
    CHECK(memcmp(answer, "weftprt1", 8) == 0);
    memset(proof, 0, sizeof proof);
    CHECK(write(fd, proof, sizeof proof) == (ssize_t)sizeof proof);
    char c;
    CHECK(read(fd, &c, 1) <= 0);
    close(fd);
  }
  helper_work(1);
  return NULL;
}

static void *work_helper(void *arg) {
  helper_work(*(int *)arg);
  return NULL;
}

/* Phase two's helper at the connecting root: takes the connect's connection on a plain
 * socket, reads its greeting (the connect now waits for an answer), works, then closes. */
static int fake_listener;
static void *connect_helper(void *arg) {
  (void)arg;
  int fd = accept(fake_listener, NULL, NULL);
  CHECK(fd >= 0);
  unsigned char hello[8 + 32];
  read_all(fd, hello, sizeof hello);
  CHECK(memcmp(hello, "weftprt1", 8) == 0);
  helper_work(2);
  close(fd);
  return NULL;
}

/* Point-to-point both ways, Allreduce and Barrier over the intercommunicator. */
static void check_inter(MPI_Comm *interp, int lo) {
  MPI_Comm inter = *interp;
  int rsize = -1;
  CHECK_RC(MPI_Comm_remote_size(inter, &rsize), MPI_SUCCESS);
  CHECK(rsize == (lo ? size - lo_size : lo_size));
  int hrank = -1;
  MPI_Comm_rank(inter, &hrank);
  if (hrank == 0) {
    int out = lo ? 123 : 456, in = -1;
    if (lo) {
      CHECK_RC(MPI_Send(&out, 1, MPI_INT, 0, 5, inter), MPI_SUCCESS);
      CHECK_RC(MPI_Recv(&in, 1, MPI_INT, 0, 6, inter, MPI_STATUS_IGNORE), MPI_SUCCESS);
      CHECK(in == 456);
    } else {
      CHECK_RC(MPI_Recv(&in, 1, MPI_INT, 0, 5, inter, MPI_STATUS_IGNORE), MPI_SUCCESS);
      CHECK(in == 123);
      CHECK_RC(MPI_Send(&out, 1, MPI_INT, 0, 6, inter), MPI_SUCCESS);
    }
  }
  int sum = -1;
  CHECK_RC(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, inter), MPI_SUCCESS);
  /* The remote group's world ranks: the upper half's are lo_size..size-1. */
  int lo_sum = lo_size * (lo_size - 1) / 2, all = size * (size - 1) / 2;
  CHECK(sum == (lo ? all - lo_sum : lo_sum));
  CHECK_RC(MPI_Barrier(inter), MPI_SUCCESS);
  CHECK_RC(MPI_Comm_disconnect(interp), MPI_SUCCESS);
  CHECK(*interp == MPI_COMM_NULL);
}

/* Rank 0's helper during phase three: a round trip with rank 1 on `work`. */
static void *join_helper(void *arg) {
  (void)arg;
  int v = -1;
  CHECK_RC(MPI_Recv(&v, 1, MPI_INT, 1, 30, work, MPI_STATUS_IGNORE), MPI_SUCCESS);
  CHECK(v == 31);
  v = 32;
  CHECK_RC(MPI_Send(&v, 1, MPI_INT, 1, 30, work), MPI_SUCCESS);
  return NULL;
}

/* MPI_Comm_join of ranks 0 and 1 while rank 0's helper thread makes MPI calls. */
static void join_pair(void) {
  int fd = -1;
  if (rank == 0) {
    int l = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(l >= 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(bind(l, (struct sockaddr *)&a, sizeof a) == 0);
    CHECK(listen(l, 1) == 0);
    socklen_t len = sizeof a;
    CHECK(getsockname(l, (struct sockaddr *)&a, &len) == 0);
    int p = ntohs(a.sin_port);
    CHECK_RC(MPI_Send(&p, 1, MPI_INT, 1, 29, work), MPI_SUCCESS);
    fd = accept(l, NULL, NULL);
    CHECK(fd >= 0);
    close(l);
  } else {
    int p = -1;
    CHECK_RC(MPI_Recv(&p, 1, MPI_INT, 0, 29, work, MPI_STATUS_IGNORE), MPI_SUCCESS);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((unsigned short)p);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    fd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(fd >= 0);
    CHECK(connect(fd, (struct sockaddr *)&a, sizeof a) == 0);
  }
  MPI_Comm joined = MPI_COMM_NULL;
  pthread_t h;
  if (rank == 0) {
    CHECK(pthread_create(&h, NULL, join_helper, NULL) == 0);
    CHECK_RC(MPI_Comm_join(fd, &joined), MPI_SUCCESS);
    CHECK(pthread_join(h, NULL) == 0);
  } else {
    unsigned char peek[8];
    size_t got = 0;
    while (got < sizeof peek) { /* rank 0's greeting, left on the socket for the join */
      ssize_t n = recv(fd, peek, sizeof peek, MSG_PEEK);
      CHECK(n > 0);
      got = (size_t)n;
    }
    CHECK(memcmp(peek, "weftprt1", 8) == 0);
    int v = 31;
    CHECK_RC(MPI_Send(&v, 1, MPI_INT, 0, 30, work), MPI_SUCCESS);
    CHECK_RC(MPI_Recv(&v, 1, MPI_INT, 0, 30, work, MPI_STATUS_IGNORE), MPI_SUCCESS);
    CHECK(v == 32);
    CHECK_RC(MPI_Comm_join(fd, &joined), MPI_SUCCESS);
  }
  int rsize = -1, out = 40 + rank, in = -1;
  CHECK_RC(MPI_Comm_remote_size(joined, &rsize), MPI_SUCCESS);
  CHECK(rsize == 1);
  CHECK_RC(MPI_Sendrecv(&out, 1, MPI_INT, 0, 33, &in, 1, MPI_INT, 0, 33, joined,
                        MPI_STATUS_IGNORE),
           MPI_SUCCESS);
  CHECK(in == 41 - rank);
  CHECK_RC(MPI_Comm_disconnect(&joined), MPI_SUCCESS);
  close(fd);
}

/* A process accepts on one thread and connects to its own port on another: both fail. */
static int self_rc;
static void *self_connect(void *arg) {
  (void)arg;
  MPI_Comm c = MPI_COMM_NULL;
  self_rc = MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_SELF, &c);
  return NULL;
}

int main(int argc, char **argv) {
  int provided = -1;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  CHECK(provided == MPI_THREAD_MULTIPLE);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);

  if (size > 1) {
    lo_size = size / 2;
    int lo = rank < lo_size;
    MPI_Comm half;
    CHECK_RC(MPI_Comm_split(MPI_COMM_WORLD, lo ? 0 : 1, rank, &half), MPI_SUCCESS);
    MPI_Comm_set_errhandler(half, MPI_ERRORS_RETURN);
    CHECK_RC(MPI_Comm_dup(MPI_COMM_WORLD, &work), MPI_SUCCESS);
    if (rank == 0) {
      CHECK_RC(MPI_Open_port(MPI_INFO_NULL, port), MPI_SUCCESS);
      CHECK_RC(MPI_Send(port, MPI_MAX_PORT_NAME, MPI_CHAR, lo_size, 1, MPI_COMM_WORLD),
               MPI_SUCCESS);
    } else if (rank == lo_size) {
      CHECK_RC(MPI_Recv(port, MPI_MAX_PORT_NAME, MPI_CHAR, 0, 1, MPI_COMM_WORLD,
                        MPI_STATUS_IGNORE),
               MPI_SUCCESS);
    }

    /* Phase one: the accept waits while its process's helper works. */
    pthread_t h;
    MPI_Comm inter = MPI_COMM_NULL;
    if (lo) {
      CHECK(pthread_create(&h, NULL, accept_helper, NULL) == 0);
      CHECK_RC(MPI_Comm_accept(rank == 0 ? port : NULL, MPI_INFO_NULL, 0, half, &inter),
               MPI_SUCCESS);
      CHECK(pthread_join(h, NULL) == 0);
    } else {
      CHECK(pthread_create(&h, NULL, accept_helper, NULL) == 0);
      CHECK(pthread_join(h, NULL) == 0);
      CHECK_RC(MPI_Comm_connect(rank == lo_size ? port : NULL, MPI_INFO_NULL, 0, half, &inter),
               MPI_SUCCESS);
    }
    check_inter(&inter, lo);

    /* Phase two: the connect waits (for an answer that never comes) while its process's
     * helper works. */
    int round = 2;
    if (rank == lo_size) {
      fake_listener = socket(AF_INET, SOCK_STREAM, 0);
      CHECK(fake_listener >= 0);
      struct sockaddr_in a;
      memset(&a, 0, sizeof a);
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      CHECK(bind(fake_listener, (struct sockaddr *)&a, sizeof a) == 0);
      CHECK(listen(fake_listener, 4) == 0);
      socklen_t len = sizeof a;
      CHECK(getsockname(fake_listener, (struct sockaddr *)&a, &len) == 0);
      /* The real port's token, the plain socket's address. */
      char fake[MPI_MAX_PORT_NAME];
      const char *at = strchr(port, '@');
      CHECK(at != NULL);
      snprintf(fake, sizeof fake, "%.*s@127.0.0.1:%d", (int)(at - port), port,
               (int)ntohs(a.sin_port));
      CHECK(pthread_create(&h, NULL, connect_helper, NULL) == 0);
      int rc = MPI_Comm_connect(fake, MPI_INFO_NULL, 0, half, &inter);
      CHECK(error_class(rc) == MPI_ERR_PORT);
      CHECK(pthread_join(h, NULL) == 0);
      close(fake_listener);
    } else if (!lo) {
      CHECK(pthread_create(&h, NULL, work_helper, &round) == 0);
      int rc = MPI_Comm_connect(NULL, MPI_INFO_NULL, 0, half, &inter);
      CHECK(rc != MPI_SUCCESS);
      CHECK(pthread_join(h, NULL) == 0);
    } else {
      helper_work(round);
    }
    CHECK(inter == MPI_COMM_NULL);

    /* The port still works after all that. */
    if (lo)
      CHECK_RC(MPI_Comm_accept(rank == 0 ? port : NULL, MPI_INFO_NULL, 0, half, &inter),
               MPI_SUCCESS);
    else
      CHECK_RC(MPI_Comm_connect(rank == lo_size ? port : NULL, MPI_INFO_NULL, 0, half, &inter),
               MPI_SUCCESS);
    check_inter(&inter, lo);
    if (rank == 0) CHECK_RC(MPI_Close_port(port), MPI_SUCCESS);

    /* Phase three: ranks 0 and 1 join over a socket; rank 1 sees rank 0's greeting on it
     * (rank 0 waits in MPI_Comm_join now), then trades a message with rank 0's helper
     * thread, and only then joins. */
    if (rank < 2) join_pair();
    MPI_Comm_free(&work);
    MPI_Comm_free(&half);
  }

  /* Every process: accept on this thread, connect to the same port on another. */
  CHECK_RC(MPI_Open_port(MPI_INFO_NULL, port), MPI_SUCCESS);
  pthread_t c;
  CHECK(pthread_create(&c, NULL, self_connect, NULL) == 0);
  MPI_Comm mine = MPI_COMM_NULL;
  int rc = MPI_Comm_accept(port, MPI_INFO_NULL, 0, MPI_COMM_SELF, &mine);
  CHECK(pthread_join(c, NULL) == 0);
  CHECK(error_class(rc) == MPI_ERR_OTHER);
  CHECK(error_class(self_rc) == MPI_ERR_OTHER);
  CHECK(mine == MPI_COMM_NULL);
  CHECK_RC(MPI_Close_port(port), MPI_SUCCESS);

  CHECK_RC(MPI_Barrier(MPI_COMM_WORLD), MPI_SUCCESS);
  MPI_Finalize();
  return 0;
}
