/* Ports, published names and joins (MPI-4.1 §11.4, §11.8.4) between the two halves of
 * MPI_COMM_WORLD: the first half opens a port and publishes it, the second looks it up,
 * first sends the port two connections that do not prove the job key (garbage, and a right
 * greeting with a wrong proof: the accept must drop them and go on waiting), then connects.
 * Over the intercommunicator: point-to-point both ways, Bcast and Allreduce, then a merged
 * intracommunicator's Bcast and Allreduce, at 0, 7 and 1 MiB + 3 bytes; disconnect.
 * Ranks 0 and size-1 join over a TCP socket they made. Errors: unknown names
 * (MPI_ERR_NAME), unpublished or twice-published services (MPI_ERR_SERVICE), bad, closed
 * and unknown ports (MPI_ERR_PORT), also at the root of a collective accept or connect,
 * whose other ranks then fail too instead of waiting; MPI_Comm_get_parent is
 * MPI_COMM_NULL. */
#include "check.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static const int sizes[] = {0, 7, (1 << 20) + 3};

static unsigned char pattern(int who, int size, int i) {
  return (unsigned char)(who * 31 + size + i * 7);
}

static int error_class(int rc) {
  int c = -1;
  MPI_Error_class(rc, &c);
  return c;
}

/* The first address of a weft port name ("weft-port:TOKEN@IP:PORT,..."). */
static struct sockaddr_in first_address(const char *port) {
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  const char *at = strchr(port, '@');
  CHECK(at != NULL);
  char ip[64] = "";
  int p = 0;
  CHECK(sscanf(at + 1, "%63[0-9.]:%d", ip, &p) == 2);
  a.sin_family = AF_INET;
  a.sin_port = htons((unsigned short)p);
  CHECK(inet_pton(AF_INET, ip, &a.sin_addr) == 1);
  return a;
}

static int dial(struct sockaddr_in a) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  CHECK(fd >= 0);
  CHECK(connect(fd, (struct sockaddr *)&a, sizeof a) == 0);
  return fd;
}

static void read_all(int fd, void *buf, size_t n) {
  size_t off = 0;
  while (off < n) {
    ssize_t got = read(fd, (char *)buf + off, n - off);
    CHECK(got > 0);
    off += (size_t)got;
  }
}

/* Two strangers on the port: garbage, then the greeting with a wrong proof. */
static void strangers(const char *port) {
  struct sockaddr_in a = first_address(port);
  int fd = dial(a);
  const char junk[] = "GET / HTTP/1.0\r\n\r\n";
  CHECK(write(fd, junk, sizeof junk) == (ssize_t)sizeof junk);
  close(fd);
  fd = dial(a);
  unsigned char hello[8 + 32], answer[8 + 32 + 32], proof[32];
  memcpy(hello, "weftprt1", 8);
  memset(hello + 8, 0x5a, 32);
  CHECK(write(fd, hello, sizeof hello) == (ssize_t)sizeof hello);
  read_all(fd, answer, sizeof answer); /* the accept answers: it is waiting */
  CHECK(memcmp(answer, "weftprt1", 8) == 0);
  memset(proof, 0, sizeof proof);
  CHECK(write(fd, proof, sizeof proof) == (ssize_t)sizeof proof);
  char c;
  CHECK(read(fd, &c, 1) <= 0); /* dropped */
  close(fd);
}

/* Traffic over an intercommunicator whose local group is `side` (0 accepted, 1 connected). */
static void traffic(MPI_Comm inter, int side) {
  int rank, size, rsize, flag = 0;
  MPI_Comm_rank(inter, &rank);
  MPI_Comm_size(inter, &size);
  MPI_Comm_remote_size(inter, &rsize);
  MPI_Comm_test_inter(inter, &flag);
  CHECK(flag);
  int wsize;
  MPI_Comm_size(MPI_COMM_WORLD, &wsize);
  CHECK(size + rsize == wsize);
  char *buf = malloc((size_t)sizes[2] + 1);
  CHECK(buf != NULL);
  for (int k = 0; k < 3; k++) {
    int n = sizes[k];
    /* Point to point, both ways: local rank i with remote rank i. */
    if (rank < rsize) {
      if (side == 0) {
        for (int i = 0; i < n; i++) buf[i] = (char)pattern(rank, n, i);
        CHECK_RC(MPI_Send(buf, n, MPI_CHAR, rank, 10 + k, inter), MPI_SUCCESS);
        MPI_Status st;
        CHECK_RC(MPI_Recv(buf, n, MPI_CHAR, rank, 20 + k, inter, &st), MPI_SUCCESS);
        CHECK(st.MPI_SOURCE == rank);
        for (int i = 0; i < n; i++) CHECK(buf[i] == (char)pattern(100 + rank, n, i));
      } else {
        MPI_Status st;
        int got = -1;
        CHECK_RC(MPI_Recv(buf, n, MPI_CHAR, rank, 10 + k, inter, &st), MPI_SUCCESS);
        MPI_Get_count(&st, MPI_CHAR, &got);
        CHECK(got == n);
        for (int i = 0; i < n; i++) CHECK(buf[i] == (char)pattern(rank, n, i));
        for (int i = 0; i < n; i++) buf[i] = (char)pattern(100 + rank, n, i);
        CHECK_RC(MPI_Send(buf, n, MPI_CHAR, rank, 20 + k, inter), MPI_SUCCESS);
      }
    }
    /* Bcast from the accepting group's rank 0 to the connecting group. */
    if (side == 0) {
      for (int i = 0; i < n; i++) buf[i] = (char)pattern(7, n, i);
      CHECK_RC(MPI_Bcast(buf, n, MPI_CHAR, rank == 0 ? MPI_ROOT : MPI_PROC_NULL, inter),
               MPI_SUCCESS);
    } else {
      memset(buf, 0, (size_t)n);
      CHECK_RC(MPI_Bcast(buf, n, MPI_CHAR, 0, inter), MPI_SUCCESS);
      for (int i = 0; i < n; i++) CHECK(buf[i] == (char)pattern(7, n, i));
    }
  }
  /* Allreduce: each group gets the sum of the other group's contributions. */
  int mine = (side + 1) * 1000 + rank, sum = -1;
  CHECK_RC(MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, inter), MPI_SUCCESS);
  int want = rsize * (2 - side) * 1000 + rsize * (rsize - 1) / 2;
  CHECK(sum == want);
  /* The merged intracommunicator: the accepting group first. */
  MPI_Comm merged;
  CHECK_RC(MPI_Intercomm_merge(inter, side, &merged), MPI_SUCCESS);
  int mrank, msize;
  MPI_Comm_rank(merged, &mrank);
  MPI_Comm_size(merged, &msize);
  CHECK(msize == wsize);
  CHECK(mrank == (side == 0 ? rank : rsize + rank));
  for (int k = 0; k < 3; k++) {
    int n = sizes[k];
    for (int i = 0; i < n; i++) buf[i] = (char)(mrank == msize - 1 ? pattern(9, n, i) : 0);
    CHECK_RC(MPI_Bcast(buf, n, MPI_CHAR, msize - 1, merged), MPI_SUCCESS);
    for (int i = 0; i < n; i++) CHECK(buf[i] == (char)pattern(9, n, i));
  }
  int one = mrank, total = -1;
  CHECK_RC(MPI_Allreduce(&one, &total, 1, MPI_INT, MPI_SUM, merged), MPI_SUCCESS);
  CHECK(total == msize * (msize - 1) / 2);
  CHECK_RC(MPI_Comm_disconnect(&merged), MPI_SUCCESS);
  CHECK(merged == MPI_COMM_NULL);
  free(buf);
}

static void errors_alone(void) {
  char port[MPI_MAX_PORT_NAME];
  int rc = MPI_Lookup_name("weft-no-such-service", MPI_INFO_NULL, port);
  CHECK(error_class(rc) == MPI_ERR_NAME);
  rc = MPI_Unpublish_name("weft-no-such-service", MPI_INFO_NULL, "weft-port:x");
  CHECK(error_class(rc) == MPI_ERR_SERVICE);
  rc = MPI_Close_port("weft-port:not-open");
  CHECK(error_class(rc) == MPI_ERR_PORT);
  MPI_Comm c = MPI_COMM_NULL;
  rc = MPI_Comm_connect("not a port", MPI_INFO_NULL, 0, MPI_COMM_SELF, &c);
  CHECK(error_class(rc) == MPI_ERR_PORT);
  rc = MPI_Comm_accept("weft-port:not-open", MPI_INFO_NULL, 0, MPI_COMM_SELF, &c);
  CHECK(error_class(rc) == MPI_ERR_PORT);
  /* A closed port: nothing listens any more. */
  CHECK_RC(MPI_Open_port(MPI_INFO_NULL, port), MPI_SUCCESS);
  CHECK(strncmp(port, "weft-port:", 10) == 0);
  CHECK_RC(MPI_Close_port(port), MPI_SUCCESS);
  rc = MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_SELF, &c);
  CHECK(error_class(rc) == MPI_ERR_PORT);
  rc = MPI_Comm_connect(port, MPI_INFO_NULL, 1, MPI_COMM_SELF, &c);
  CHECK(error_class(rc) == MPI_ERR_ROOT);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  MPI_Comm parent = MPI_COMM_WORLD;
  CHECK_RC(MPI_Comm_get_parent(&parent), MPI_SUCCESS);
  CHECK(parent == MPI_COMM_NULL);
  errors_alone();

  /* A bad argument at the root fails the call on every rank: none waits for the root. */
  {
    MPI_Comm c = MPI_COMM_NULL;
    int rc = MPI_Comm_accept(rank == 0 ? NULL : "x", MPI_INFO_NULL, 0, MPI_COMM_WORLD, &c);
    CHECK(rc != MPI_SUCCESS && (rank != 0 || error_class(rc) == MPI_ERR_ARG));
    rc = MPI_Comm_accept(rank == 0 ? "weft-port:not-open" : NULL, MPI_INFO_NULL, 0,
                         MPI_COMM_WORLD, &c);
    CHECK(rc != MPI_SUCCESS && (rank != 0 || error_class(rc) == MPI_ERR_PORT));
    rc = MPI_Comm_connect(rank == 0 ? NULL : "x", MPI_INFO_NULL, 0, MPI_COMM_WORLD, &c);
    CHECK(rc != MPI_SUCCESS && (rank != 0 || error_class(rc) == MPI_ERR_ARG));
    rc = MPI_Comm_connect(rank == 0 ? "garbage" : NULL, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &c);
    CHECK(rc != MPI_SUCCESS && (rank != 0 || error_class(rc) == MPI_ERR_PORT));
    CHECK(c == MPI_COMM_NULL);
  }

  const char *service = "weft-itest-ports";
  char port[MPI_MAX_PORT_NAME] = "";
  if (rank == 0) {
    /* Published names are the job's: a second publish fails, a lookup finds it. */
    CHECK_RC(MPI_Open_port(MPI_INFO_NULL, port), MPI_SUCCESS);
    CHECK_RC(MPI_Publish_name(service, MPI_INFO_NULL, port), MPI_SUCCESS);
    int rc = MPI_Publish_name(service, MPI_INFO_NULL, port);
    CHECK(error_class(rc) == MPI_ERR_SERVICE);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  char found[MPI_MAX_PORT_NAME] = "";
  CHECK_RC(MPI_Lookup_name(service, MPI_INFO_NULL, found), MPI_SUCCESS);
  CHECK(strncmp(found, "weft-port:", 10) == 0);
  if (rank == 0) CHECK(strcmp(found, port) == 0);

  if (size >= 2) {
    int side = rank < size / 2 ? 0 : 1;
    MPI_Comm half, inter;
    CHECK_RC(MPI_Comm_split(MPI_COMM_WORLD, side, rank, &half), MPI_SUCCESS);
    MPI_Comm_set_errhandler(half, MPI_ERRORS_RETURN);
    if (side == 0) {
      /* Only the root's port argument counts: the others pass garbage. */
      CHECK_RC(MPI_Comm_accept(rank == 0 ? port : "ignored", MPI_INFO_NULL, 0, half, &inter),
               MPI_SUCCESS);
    } else {
      int hrank;
      MPI_Comm_rank(half, &hrank);
      if (hrank == 0) strangers(found);
      CHECK_RC(MPI_Comm_connect(hrank == 0 ? found : NULL, MPI_INFO_NULL, 0, half, &inter),
               MPI_SUCCESS);
    }
    traffic(inter, side);
    CHECK_RC(MPI_Comm_disconnect(&inter), MPI_SUCCESS);
    CHECK(inter == MPI_COMM_NULL);
    MPI_Comm_free(&half);
  }

  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    int rc = MPI_Unpublish_name(service, MPI_INFO_NULL, "weft-port:another");
    CHECK(error_class(rc) == MPI_ERR_SERVICE);
    CHECK_RC(MPI_Unpublish_name(service, MPI_INFO_NULL, port), MPI_SUCCESS);
    CHECK_RC(MPI_Close_port(port), MPI_SUCCESS);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  int rc = MPI_Lookup_name(service, MPI_INFO_NULL, found);
  CHECK(error_class(rc) == MPI_ERR_NAME);

  /* MPI_Comm_join between ranks 0 and size-1 over a socket they made. */
  if (size >= 2 && (rank == 0 || rank == size - 1)) {
    int fd;
    if (rank == 0) {
      int l = socket(AF_INET, SOCK_STREAM, 0);
      struct sockaddr_in a;
      memset(&a, 0, sizeof a);
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      CHECK(bind(l, (struct sockaddr *)&a, sizeof a) == 0);
      CHECK(listen(l, 1) == 0);
      socklen_t len = sizeof a;
      CHECK(getsockname(l, (struct sockaddr *)&a, &len) == 0);
      int p = ntohs(a.sin_port);
      MPI_Send(&p, 1, MPI_INT, size - 1, 77, MPI_COMM_WORLD);
      fd = accept(l, NULL, NULL);
      CHECK(fd >= 0);
      close(l);
    } else {
      int p = 0;
      MPI_Recv(&p, 1, MPI_INT, 0, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      struct sockaddr_in a;
      memset(&a, 0, sizeof a);
      a.sin_family = AF_INET;
      a.sin_port = htons((unsigned short)p);
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      fd = dial(a);
    }
    MPI_Comm joined;
    CHECK_RC(MPI_Comm_join(fd, &joined), MPI_SUCCESS);
    int rsize = 0;
    MPI_Comm_remote_size(joined, &rsize);
    CHECK(rsize == 1);
    MPI_Group rg, wg;
    MPI_Comm_remote_group(joined, &rg);
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    int zero = 0, other = -1;
    MPI_Group_translate_ranks(rg, 1, &zero, wg, &other);
    CHECK(other == (rank == 0 ? size - 1 : 0));
    int mine = rank, theirs = -1;
    CHECK_RC(MPI_Sendrecv(&mine, 1, MPI_INT, 0, 5, &theirs, 1, MPI_INT, 0, 5, joined,
                          MPI_STATUS_IGNORE),
             MPI_SUCCESS);
    CHECK(theirs == other);
    MPI_Group_free(&rg);
    MPI_Group_free(&wg);
    CHECK_RC(MPI_Comm_disconnect(&joined), MPI_SUCCESS);
    /* The socket is still the program's. */
    CHECK(close(fd) == 0);
  }
  MPI_Finalize();
  return 0;
}
