/* The MPI-4 large-count (`_c`) forms whose counts weft takes as `int` inside (large.rs):
 * - with MPI_ERRORS_RETURN on every communicator, a few run for real with counts that fit
 *   (an odd count and a zero count each) and every byte they deliver is checked:
 *   MPI_Bcast_init_c and MPI_Allreduce_init_c (started twice, the buffers changed between
 *   the starts), MPI_Isendrecv_c, MPI_Reduce_local_c, MPI_Alltoallw_c,
 *   MPI_Reduce_scatter_c, MPI_Neighbor_alltoall_c on a ring of MPI_Dist_graph_create_adjacent
 *   and (3 ranks or more) on a periodic 1-D Cartesian ring;
 * - a count of 2^31 + 5 is MPI_ERR_COUNT (never truncated, no request made, no buffer
 *   touched) for several of them, and bad arguments that the `int` form's work refuses give
 *   that form's class (MPI_ERR_ROOT, MPI_ERR_TYPE, MPI_ERR_RANK, MPI_ERR_TOPOLOGY);
 * - with an argument (argv[1], see `fatal_case`) the program makes one bad `_c` call under
 *   MPI_ERRORS_ARE_FATAL on every rank: the test checks that the fatal message names the
 *   `_c` function, not its `int` form (MPI_ERRORS_RETURN returns the class only, whose
 *   MPI_Error_string names no function);
 * - LARGE_C_FORMS_INIT=multiple runs either under MPI_THREAD_MULTIPLE.
 * Prints one line from rank 0 on success; any mismatch aborts with exit code 3. */
#include "check.h"
#include <limits.h>
#include <stdint.h>
#include <string.h>

static int rank, size;

#define BIG (((MPI_Count)1 << 31) + 5)

/* A byte of the pattern rank `r` sends in round `k` at offset `i`. */
static unsigned char pat(int r, int k, long i) { return (unsigned char)(r * 31 + k * 7 + i * 13 + 1); }

/* Checks that `rc` is an error of class `want`. */
static void want_class(int rc, int want, const char *what) {
  int class = -1;
  if (rc == MPI_SUCCESS) {
    fprintf(stderr, "rank %d: %s succeeded, want class %d\n", rank, what, want);
  } else {
    OK(MPI_Error_class(rc, &class));
    if (class != want) fprintf(stderr, "rank %d: %s: class %d, want %d\n", rank, what, class, want);
  }
  CHECK(rc != MPI_SUCCESS && class == want);
}

static void bcast_init(void) {
  enum { N = 1001 };
  static unsigned char buf[N], zero[4];
  int root = size - 1;
  MPI_Request req = MPI_REQUEST_NULL, req0 = MPI_REQUEST_NULL;
  OK(MPI_Bcast_init_c(buf, N, MPI_BYTE, root, MPI_COMM_WORLD, MPI_INFO_NULL, &req));
  OK(MPI_Bcast_init_c(zero, 0, MPI_BYTE, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &req0));
  CHECK(req != MPI_REQUEST_NULL && req0 != MPI_REQUEST_NULL);
  for (int k = 0; k < 2; k++) {
    for (long i = 0; i < N; i++) buf[i] = rank == root ? pat(root, k, i) : 0xee;
    memset(zero, 0x5a, sizeof zero);
    OK(MPI_Start(&req));
    OK(MPI_Start(&req0));
    OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    OK(MPI_Wait(&req0, MPI_STATUS_IGNORE));
    for (long i = 0; i < N; i++) CHECK(buf[i] == pat(root, k, i));
    for (int i = 0; i < 4; i++) CHECK(zero[i] == 0x5a);
  }
  OK(MPI_Request_free(&req));
  OK(MPI_Request_free(&req0));
}

static void allreduce_init(void) {
  enum { N = 333 };
  static int send[N], recv[N];
  MPI_Request req;
  OK(MPI_Allreduce_init_c(send, recv, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &req));
  for (int k = 0; k < 2; k++) {
    for (int i = 0; i < N; i++) {
      send[i] = rank * 1000 + i * (k + 1);
      recv[i] = -7;
    }
    OK(MPI_Start(&req));
    OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    for (int i = 0; i < N; i++) CHECK(recv[i] == 1000 * (size * (size - 1) / 2) + size * i * (k + 1));
  }
  OK(MPI_Request_free(&req));
}

static void isendrecv(void) {
  enum { N = 777 };
  static unsigned char s[N], r[N + 8];
  int to = (rank + 1) % size, from = (rank + size - 1) % size;
  for (long i = 0; i < N; i++) s[i] = pat(rank, 3, i);
  memset(r, 0xee, sizeof r);
  MPI_Request req;
  MPI_Status st;
  MPI_Count got = -1;
  OK(MPI_Isendrecv_c(s, N, MPI_BYTE, to, 11, r, N + 8, MPI_BYTE, from, 11, MPI_COMM_WORLD, &req));
  OK(MPI_Wait(&req, &st));
  OK(MPI_Get_count_c(&st, MPI_BYTE, &got));
  CHECK(got == N && st.MPI_SOURCE == from);
  for (long i = 0; i < N; i++) CHECK(r[i] == pat(from, 3, i));
  for (long i = N; i < N + 8; i++) CHECK(r[i] == 0xee);
  /* A zero count: the message is empty and the buffer untouched. */
  OK(MPI_Isendrecv_c(s, 0, MPI_BYTE, to, 12, r, 0, MPI_BYTE, from, 12, MPI_COMM_WORLD, &req));
  OK(MPI_Wait(&req, &st));
  OK(MPI_Get_count_c(&st, MPI_BYTE, &got));
  CHECK(got == 0);
  for (long i = 0; i < N; i++) CHECK(r[i] == pat(from, 3, i));
}

static void reduce_local(void) {
  int in[5] = {1, -2, 3, 40, 500}, io[6] = {10, 20, 30, 40, 50, 77};
  OK(MPI_Reduce_local_c(in, io, 5, MPI_INT, MPI_SUM));
  int want[6] = {11, 18, 33, 80, 550, 77};
  for (int i = 0; i < 6; i++) CHECK(io[i] == want[i]);
  OK(MPI_Reduce_local_c(in, io, 0, MPI_INT, MPI_PROD));
  for (int i = 0; i < 6; i++) CHECK(io[i] == want[i]);
}

/* Ints rank `i` sends rank `j` in the alltoallw: 0 to 3, some zero. */
static int w_count(int i, int j) { return (i + 2 * j) % 4; }

static void alltoallw(void) {
  MPI_Count sc[64], rc[64];
  MPI_Aint sd[64], rd[64];
  MPI_Datatype st[64], rt[64];
  static int sbuf[64 * 4], rbuf[64 * 4 + 4];
  CHECK(size <= 64);
  MPI_Aint so = 0, ro = 0;
  for (int j = 0; j < size; j++) {
    sc[j] = w_count(rank, j);
    rc[j] = w_count(j, rank);
    /* Byte displacements, the receive side laid out from the top down. */
    sd[j] = so;
    so += sc[j] * (MPI_Aint)sizeof(int);
    st[j] = rt[j] = MPI_INT;
    for (int k = 0; k < sc[j]; k++) sbuf[sd[j] / sizeof(int) + k] = rank * 10000 + j * 100 + k;
  }
  for (int j = size - 1; j >= 0; j--) {
    rd[j] = ro;
    ro += rc[j] * (MPI_Aint)sizeof(int);
  }
  for (int i = 0; i < 64 * 4 + 4; i++) rbuf[i] = -1;
  OK(MPI_Alltoallw_c(sbuf, sc, sd, st, rbuf, rc, rd, rt, MPI_COMM_WORLD));
  for (int j = 0; j < size; j++)
    for (int k = 0; k < rc[j]; k++) CHECK(rbuf[rd[j] / sizeof(int) + k] == j * 10000 + rank * 100 + k);
  for (long i = ro / (long)sizeof(int); i < 64 * 4 + 4; i++) CHECK(rbuf[i] == -1);
}

static void reduce_scatter(void) {
  MPI_Count counts[64];
  static int send[64 * 3], recv[8];
  long total = 0, mine = 0;
  for (int j = 0; j < size; j++) {
    counts[j] = j % 3 == 1 ? 3 : j % 3; /* 0, 3, 2, 0, 3, 2, ...: odd, even and zero */
    if (j < rank) mine += counts[j];
    total += counts[j];
  }
  for (long i = 0; i < total; i++) send[i] = (int)(rank + 1) * (int)(i + 1);
  for (int i = 0; i < 8; i++) recv[i] = -1;
  OK(MPI_Reduce_scatter_c(send, recv, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
  int ranks_sum = size * (size + 1) / 2;
  for (int k = 0; k < counts[rank]; k++) CHECK(recv[k] == ranks_sum * (int)(mine + k + 1));
  for (int k = (int)counts[rank]; k < 8; k++) CHECK(recv[k] == -1);
}

/* MPI_Neighbor_alltoall_c on `ring`, whose neighbor k (in both directions) is `nb[k]` and
 * who sends its block k to nb[k]'s block `back[k]`. */
static void neighbor_alltoall_on(MPI_Comm ring, int deg, const int *nb, const int *back, int tag) {
  enum { N = 3 };
  int s[2 * N], r[2 * N + 2];
  for (int k = 0; k < deg; k++)
    for (int i = 0; i < N; i++) s[k * N + i] = tag * 1000000 + rank * 1000 + k * 100 + i;
  for (int i = 0; i < 2 * N + 2; i++) r[i] = -1;
  OK(MPI_Neighbor_alltoall_c(s, N, MPI_INT, r, N, MPI_INT, ring));
  for (int k = 0; k < deg; k++)
    for (int i = 0; i < N; i++) CHECK(r[k * N + i] == tag * 1000000 + nb[k] * 1000 + back[k] * 100 + i);
  for (int i = deg * N; i < 2 * N + 2; i++) CHECK(r[i] == -1);
  /* A zero count moves nothing. */
  OK(MPI_Neighbor_alltoall_c(s, 0, MPI_INT, r, 0, MPI_INT, ring));
  for (int k = 0; k < deg; k++)
    for (int i = 0; i < N; i++) CHECK(r[k * N + i] == tag * 1000000 + nb[k] * 1000 + back[k] * 100 + i);
}

static MPI_Comm graph_ring(void) {
  int src = (rank + size - 1) % size, dst = (rank + 1) % size, w = 1;
  MPI_Comm g;
  OK(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &src, &w, 1, &dst, &w, MPI_INFO_NULL, 0,
                                    &g));
  OK(MPI_Comm_set_errhandler(g, MPI_ERRORS_RETURN));
  return g;
}

static void neighbor_alltoall(MPI_Comm g) {
  int nb[1] = {(rank + size - 1) % size}, back[1] = {0};
  neighbor_alltoall_on(g, 1, nb, back, 1);
  if (size >= 3) {
    /* A periodic ring: neighbor 0 is rank - 1 (it sends us its block 1), neighbor 1 is
     * rank + 1 (its block 0). */
    int dims[1] = {size}, periods[1] = {1};
    MPI_Comm cart;
    OK(MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &cart));
    OK(MPI_Comm_set_errhandler(cart, MPI_ERRORS_RETURN));
    int cnb[2] = {(rank + size - 1) % size, (rank + 1) % size}, cback[2] = {1, 0};
    neighbor_alltoall_on(cart, 2, cnb, cback, 2);
    OK(MPI_Comm_free(&cart));
  }
}

/* Counts above INT_MAX: MPI_ERR_COUNT, no request, the buffers untouched. */
static void too_big(MPI_Comm g) {
  static int x[8], y[8];
  MPI_Count counts[64];
  MPI_Aint displs[64];
  MPI_Datatype types[64];
  MPI_Request req = MPI_REQUEST_NULL;
  for (int i = 0; i < 8; i++) x[i] = y[i] = 100 + i;
  for (int j = 0; j < size; j++) {
    counts[j] = j == size - 1 ? BIG : 0;
    displs[j] = 0;
    types[j] = MPI_INT;
  }
  want_class(MPI_Bcast_init_c(x, BIG, MPI_INT, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &req),
             MPI_ERR_COUNT, "MPI_Bcast_init_c(2^31 + 5)");
  CHECK(req == MPI_REQUEST_NULL);
  want_class(MPI_Allreduce_init_c(x, y, BIG, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &req),
             MPI_ERR_COUNT, "MPI_Allreduce_init_c(2^31 + 5)");
  CHECK(req == MPI_REQUEST_NULL);
  want_class(MPI_Isendrecv_c(x, 1, MPI_INT, rank, 5, y, BIG, MPI_INT, rank, 5, MPI_COMM_WORLD, &req),
             MPI_ERR_COUNT, "MPI_Isendrecv_c(2^31 + 5)");
  CHECK(req == MPI_REQUEST_NULL);
  want_class(MPI_Reduce_local_c(x, y, BIG, MPI_INT, MPI_SUM), MPI_ERR_COUNT,
             "MPI_Reduce_local_c(2^31 + 5)");
  want_class(MPI_Alltoallw_c(x, counts, displs, types, y, counts, displs, types, MPI_COMM_WORLD),
             MPI_ERR_COUNT, "MPI_Alltoallw_c(2^31 + 5)");
  want_class(MPI_Reduce_scatter_c(x, y, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_COUNT,
             "MPI_Reduce_scatter_c(2^31 + 5)");
  want_class(MPI_Neighbor_alltoall_c(x, BIG, MPI_INT, y, 1, MPI_INT, g), MPI_ERR_COUNT,
             "MPI_Neighbor_alltoall_c(2^31 + 5)");
  want_class(MPI_Ssend_init_c(x, BIG, MPI_INT, rank, 1, MPI_COMM_WORLD, &req), MPI_ERR_COUNT,
             "MPI_Ssend_init_c(2^31 + 5)");
  CHECK(req == MPI_REQUEST_NULL);
  for (int i = 0; i < 8; i++) CHECK(x[i] == 100 + i && y[i] == 100 + i);
}

/* Arguments the `int` form's work refuses, with that form's class. */
static void bad_args(void) {
  int x[4] = {1, 2, 3, 4}, y[4] = {0};
  MPI_Request req = MPI_REQUEST_NULL;
  want_class(MPI_Bcast_init_c(x, 4, MPI_INT, size, MPI_COMM_WORLD, MPI_INFO_NULL, &req),
             MPI_ERR_ROOT, "MPI_Bcast_init_c(root = size)");
  CHECK(req == MPI_REQUEST_NULL);
  want_class(MPI_Reduce_local_c(x, y, 4, MPI_DATATYPE_NULL, MPI_SUM), MPI_ERR_TYPE,
             "MPI_Reduce_local_c(MPI_DATATYPE_NULL)");
  want_class(MPI_Isendrecv_c(x, 1, MPI_INT, size + 3, 0, y, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, &req),
             MPI_ERR_RANK, "MPI_Isendrecv_c(dest = size + 3)");
  CHECK(req == MPI_REQUEST_NULL);
  want_class(MPI_Neighbor_alltoall_c(x, 1, MPI_INT, y, 1, MPI_INT, MPI_COMM_WORLD),
             MPI_ERR_TOPOLOGY, "MPI_Neighbor_alltoall_c(no topology)");
  for (int i = 0; i < 4; i++) CHECK(y[i] == 0);
}

/* One bad `_c` call under MPI_ERRORS_ARE_FATAL; returns only if the call did. */
static int fatal_case(const char *which) {
  int x[4] = {0}, y[4] = {0};
  MPI_Request req;
  if (strcmp(which, "bcast_init_root") == 0)
    return MPI_Bcast_init_c(x, 4, MPI_INT, size, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
  if (strcmp(which, "reduce_local_type") == 0)
    return MPI_Reduce_local_c(x, y, 4, MPI_DATATYPE_NULL, MPI_SUM);
  if (strcmp(which, "neighbor_alltoall_topo") == 0)
    return MPI_Neighbor_alltoall_c(x, 1, MPI_INT, y, 1, MPI_INT, MPI_COMM_WORLD);
  if (strcmp(which, "alltoallw_type") == 0) {
    MPI_Count c[64];
    MPI_Aint d[64];
    MPI_Datatype t[64];
    for (int j = 0; j < size && j < 64; j++) {
      c[j] = 1;
      d[j] = 0;
      t[j] = MPI_DATATYPE_NULL;
    }
    return MPI_Alltoallw_c(x, c, d, t, y, c, d, t, MPI_COMM_WORLD);
  }
  if (strcmp(which, "ssend_init_rank") == 0)
    return MPI_Ssend_init_c(x, 1, MPI_INT, size + 3, 0, MPI_COMM_WORLD, &req);
  CHECK(0 && "usage: large_c_forms [bcast_init_root|reduce_local_type|neighbor_alltoall_topo|"
             "alltoallw_type|ssend_init_rank]");
  return 0;
}

int main(int argc, char **argv) {
  /* LARGE_C_FORMS_INIT=multiple: everything under MPI_THREAD_MULTIPLE, where the blocking
   * calls (MPI_Alltoallw_c, MPI_Reduce_scatter_c, MPI_Neighbor_alltoall_c) run as their
   * nonblocking twins and a wait, and every call takes the library's lock. */
  const char *init = getenv("LARGE_C_FORMS_INIT");
  if (init && strcmp(init, "multiple") == 0) {
    int provided;
    OK(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
    CHECK(provided == MPI_THREAD_MULTIPLE);
  } else {
    OK(MPI_Init(&argc, &argv));
  }
  OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  if (argc > 1) {
    fatal_case(argv[1]);
    printf("UNREACHABLE: the bad call returned\n");
    MPI_Finalize();
    return 0;
  }
  OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  MPI_Comm g = graph_ring();
  bcast_init();
  allreduce_init();
  isendrecv();
  reduce_local();
  alltoallw();
  reduce_scatter();
  neighbor_alltoall(g);
  too_big(g);
  bad_args();
  OK(MPI_Comm_free(&g));
  OK(MPI_Barrier(MPI_COMM_WORLD));
  if (rank == 0) printf("large_c_forms: %d ranks ok\n", size);
  OK(MPI_Finalize());
  return 0;
}
