/* Graph and distributed graph topologies and the neighborhood collectives on Cartesian,
 * graph and distributed graph communicators (MPI-4.1 §8.5-8.7). Runs at any size >= 1;
 * at 1 and 2 ranks the rings have self-edges and multi-edges, which exercise MPI's pairing
 * of several edges between the same two ranks. */
#include <string.h>
#include "check.h"

static int n, me;

/* The ABI's weight sentinels are small pointer constants; gcc's access analysis flags them
 * as zero-size arrays under -Werror, so the tests pass them through volatile pointers. */
static int *volatile unweighted, *volatile weights_empty;

/* The k-th slot of `list` naming `who`, counting occurrences from 0; -1 if none. */
static int nth_slot(const int *list, int len, int who, int occurrence) {
  for (int k = 0; k < len; k++)
    if (list[k] == who && occurrence-- == 0) return k;
  return -1;
}

static void ring_graph(int *index, int *edges) {
  for (int i = 0; i < n; i++) {
    index[i] = 2 * (i + 1);
    edges[2 * i] = (i + 1) % n;
    edges[2 * i + 1] = (i - 1 + n) % n;
  }
}

static void test_graph(void) {
  int index[64], edges[128];
  ring_graph(index, edges);
  MPI_Comm g;
  OK(MPI_Graph_create(MPI_COMM_WORLD, n, index, edges, 0, &g));
  CHECK(g != MPI_COMM_NULL);
  int t, nn, ne;
  OK(MPI_Topo_test(g, &t));
  CHECK(t == MPI_GRAPH);
  OK(MPI_Graphdims_get(g, &nn, &ne));
  CHECK(nn == n && ne == 2 * n);
  int gi[64], ge[128];
  OK(MPI_Graph_get(g, n, 2 * n, gi, ge));
  CHECK(memcmp(gi, index, n * sizeof(int)) == 0 && memcmp(ge, edges, 2 * n * sizeof(int)) == 0);
  int cnt, nb[2];
  OK(MPI_Graph_neighbors_count(g, me, &cnt));
  CHECK(cnt == 2);
  OK(MPI_Graph_neighbors(g, me, 2, nb));
  CHECK(nb[0] == (me + 1) % n && nb[1] == (me - 1 + n) % n);

  /* allgather: slot k holds what neighbor k contributed. */
  int mine = me * 7 + 1, got[2] = {-1, -1};
  OK(MPI_Neighbor_allgather(&mine, 1, MPI_INT, got, 1, MPI_INT, g));
  for (int k = 0; k < 2; k++) CHECK(got[k] == nb[k] * 7 + 1);

  /* alltoall: block k goes to neighbor k; my slot m naming p receives the block p sent on
   * its edge to me with the same occurrence number. */
  int send[2] = {me * 100 + 0, me * 100 + 1}, recv[2] = {-1, -1};
  OK(MPI_Neighbor_alltoall(send, 1, MPI_INT, recv, 1, MPI_INT, g));
  for (int m = 0; m < 2; m++) {
    int p = nb[m], occ = 0;
    for (int j = 0; j < m; j++) occ += nb[j] == p;
    int theirs[2] = {(p + 1) % n, (p - 1 + n) % n};
    int k = nth_slot(theirs, 2, me, occ);
    CHECK(k >= 0 && recv[m] == p * 100 + k);
  }

  /* The topology survives MPI_Comm_dup; neighbor queries on a bad rank are errors. */
  MPI_Comm d;
  OK(MPI_Comm_dup(g, &d));
  OK(MPI_Topo_test(d, &t));
  CHECK(t == MPI_GRAPH);
  MPI_Comm_set_errhandler(d, MPI_ERRORS_RETURN);
  int cls, rc = MPI_Graph_neighbors_count(d, n, &cnt);
  MPI_Error_class(rc, &cls);
  CHECK(cls == MPI_ERR_RANK);
  rc = MPI_Dist_graph_neighbors_count(d, &cnt, &cnt, &cnt);
  MPI_Error_class(rc, &cls);
  CHECK(cls == MPI_ERR_TOPOLOGY);
  OK(MPI_Comm_free(&d));
  OK(MPI_Comm_free(&g));

  /* A graph smaller than the communicator: the others get MPI_COMM_NULL. */
  int small = n > 1 ? n - 1 : 1, si[1] = {0};
  OK(MPI_Graph_create(MPI_COMM_WORLD, small, (int[]){0, 0, 0, 0, 0, 0, 0, 0}, si, 0, &g));
  CHECK((me < small) == (g != MPI_COMM_NULL));
  if (g != MPI_COMM_NULL) OK(MPI_Comm_free(&g));
}

static void test_dist_adjacent(void) {
  int left = (me - 1 + n) % n, right = (me + 1) % n;
  int srcw = 10 + left, dstw = 20 + right;
  MPI_Comm g;
  OK(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &left, &srcw, 1, &right, &dstw,
                                    MPI_INFO_NULL, 0, &g));
  int t, in, out, w;
  OK(MPI_Topo_test(g, &t));
  CHECK(t == MPI_DIST_GRAPH);
  OK(MPI_Dist_graph_neighbors_count(g, &in, &out, &w));
  CHECK(in == 1 && out == 1 && w == 1);
  int s, sw, d, dw;
  OK(MPI_Dist_graph_neighbors(g, 1, &s, &sw, 1, &d, &dw));
  CHECK(s == left && sw == 10 + left && d == right && dw == 20 + right);

  /* alltoallv: me sends me+1 ints to the right; they land after a one-int hole. */
  int sbuf[8], rbuf[9];
  for (int i = 0; i < 8; i++) sbuf[i] = me * 1000 + i;
  for (int i = 0; i < 9; i++) rbuf[i] = -1;
  int sc = me + 1, sd = 0, rc = left + 1, rd = 1;
  OK(MPI_Neighbor_alltoallv(sbuf, &sc, &sd, MPI_INT, rbuf, &rc, &rd, MPI_INT, g));
  CHECK(rbuf[0] == -1);
  for (int i = 0; i < left + 1; i++) CHECK(rbuf[1 + i] == left * 1000 + i);
  CHECK(rbuf[1 + left + 1] == -1);

  /* allgatherv, nonblocking. */
  MPI_Request req;
  int mine = me, got[2] = {-1, -1}, one = 1, at = 1;
  OK(MPI_Ineighbor_allgatherv(&mine, 1, MPI_INT, got, &one, &at, MPI_INT, g, &req));
  OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
  CHECK(got[0] == -1 && got[1] == left);
  OK(MPI_Comm_free(&g));

  /* Unweighted, and with no neighbors at all (MPI_WEIGHTS_EMPTY). */
  OK(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 0, NULL, weights_empty, 0, NULL,
                                    weights_empty, MPI_INFO_NULL, 0, &g));
  OK(MPI_Dist_graph_neighbors_count(g, &in, &out, &w));
  CHECK(in == 0 && out == 0 && w == 1);
  OK(MPI_Neighbor_allgather(&mine, 1, MPI_INT, got, 1, MPI_INT, g));
  OK(MPI_Comm_free(&g));
}

static void test_dist_general(void) {
  /* Rank 0 names every edge i -> i+1 and i -> i+2 (weight 3i); the others name none. */
  int srcs[64], degs[64], dsts[128], wts[128], cnt = 0;
  if (me == 0)
    for (int i = 0; i < n; i++) {
      srcs[i] = i;
      degs[i] = 2;
      dsts[2 * i] = (i + 1) % n;
      dsts[2 * i + 1] = (i + 2) % n;
      wts[2 * i] = wts[2 * i + 1] = 3 * i;
      cnt++;
    }
  MPI_Comm g;
  OK(MPI_Dist_graph_create(MPI_COMM_WORLD, cnt, srcs, degs, dsts, wts, MPI_INFO_NULL, 0, &g));
  int in, out, w;
  OK(MPI_Dist_graph_neighbors_count(g, &in, &out, &w));
  CHECK(in == 2 && out == 2 && w == 1);
  int s[2], sw[2], d[2], dw[2];
  OK(MPI_Dist_graph_neighbors(g, 2, s, sw, 2, d, dw));
  /* Out-edges: (me+1, me+2) in some order, weight 3*me; in-edges from me-1 and me-2. */
  int a = (me + 1) % n, b = (me + 2) % n;
  CHECK((d[0] == a && d[1] == b) || (d[0] == b && d[1] == a));
  CHECK(dw[0] == 3 * me && dw[1] == 3 * me);
  for (int k = 0; k < 2; k++) {
    int from = s[k];
    CHECK((from + 1) % n == me || (from + 2) % n == me);
    CHECK(sw[k] == 3 * from);
  }
  /* allgather and alltoallw (the value depends on the pair only, so multi-edges cannot
   * hide a mix-up of counts or types). */
  int mine = me * 7 + 1, got[2] = {-1, -1};
  OK(MPI_Neighbor_allgather(&mine, 1, MPI_INT, got, 1, MPI_INT, g));
  for (int k = 0; k < 2; k++) CHECK(got[k] == s[k] * 7 + 1);
  double sv[2] = {me * 100.0 + d[0], me * 100.0 + d[1]}, rv[2] = {-1, -1};
  int ones[2] = {1, 1};
  MPI_Aint sdis[2] = {0, sizeof(double)}, rdis[2] = {sizeof(double), 0};
  MPI_Datatype ty[2] = {MPI_DOUBLE, MPI_DOUBLE};
  OK(MPI_Neighbor_alltoallw(sv, ones, sdis, ty, rv, ones, rdis, ty, g));
  CHECK(rv[1] == s[0] * 100.0 + me && rv[0] == s[1] * 100.0 + me);
  OK(MPI_Comm_free(&g));
}

static void test_cart(void) {
  /* A periodic 1-D ring: slot 0 is the -1 neighbor, slot 1 the +1 neighbor. The block from
   * the left is what the left rank sent to its right (also when left == right). */
  int dims[1] = {n}, periods[1] = {1};
  MPI_Comm c;
  OK(MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &c));
  int left = (me - 1 + n) % n, right = (me + 1) % n;
  int send[2] = {me * 10 + 0, me * 10 + 1}, recv[2] = {-1, -1};
  OK(MPI_Neighbor_alltoall(send, 1, MPI_INT, recv, 1, MPI_INT, c));
  CHECK(recv[0] == left * 10 + 1 && recv[1] == right * 10 + 0);
  MPI_Request req;
  recv[0] = recv[1] = -1;
  OK(MPI_Ineighbor_alltoall(send, 1, MPI_INT, recv, 1, MPI_INT, c, &req));
  OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
  CHECK(recv[0] == left * 10 + 1 && recv[1] == right * 10 + 0);

  /* The same from MPI_BOTTOM: slot k's block is k extents past the type's absolute
   * address, the element send[k]. */
  MPI_Aint sa;
  OK(MPI_Get_address(send, &sa));
  int one_int = 1;
  MPI_Datatype at_send;
  OK(MPI_Type_create_hindexed(1, &one_int, &sa, MPI_INT, &at_send));
  OK(MPI_Type_commit(&at_send));
  recv[0] = recv[1] = -1;
  OK(MPI_Neighbor_alltoall(MPI_BOTTOM, 1, at_send, recv, 1, MPI_INT, c));
  CHECK(recv[0] == left * 10 + 1 && recv[1] == right * 10 + 0);
  OK(MPI_Type_free(&at_send));

  /* A nonblocking neighborhood collective does not wait for its peers inside the start:
   * rank 0 starts it, then sends rank 1 the message rank 1 waits for before starting. */
  if (n >= 2 && me <= 1) {
    int token = 7;
    recv[0] = recv[1] = -1;
    if (me == 0) {
      OK(MPI_Ineighbor_alltoall(send, 1, MPI_INT, recv, 1, MPI_INT, c, &req));
      OK(MPI_Send(&token, 1, MPI_INT, 1, 99, c));
      OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    } else {
      OK(MPI_Recv(&token, 1, MPI_INT, 0, 99, c, MPI_STATUS_IGNORE));
      CHECK(token == 7);
      OK(MPI_Ineighbor_alltoall(send, 1, MPI_INT, recv, 1, MPI_INT, c, &req));
      OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    }
  } else {
    OK(MPI_Ineighbor_alltoall(send, 1, MPI_INT, recv, 1, MPI_INT, c, &req));
    OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
  }
  CHECK(recv[0] == left * 10 + 1 && recv[1] == right * 10 + 0);

  /* Persistent: every start sends the send buffer's current data. */
  MPI_Request p;
  OK(MPI_Neighbor_alltoall_init(send, 1, MPI_INT, recv, 1, MPI_INT, c, MPI_INFO_NULL, &p));
  for (int round = 0; round < 3; round++) {
    send[0] = me * 10 + 100 * round;
    send[1] = me * 10 + 1 + 100 * round;
    recv[0] = recv[1] = -1;
    OK(MPI_Start(&p));
    OK(MPI_Wait(&p, MPI_STATUS_IGNORE));
    CHECK(recv[0] == left * 10 + 1 + 100 * round && recv[1] == right * 10 + 100 * round);
  }
  OK(MPI_Request_free(&p));
  send[0] = me * 10 + 0;
  send[1] = me * 10 + 1;

  /* A strided send type: every other int of a 4-int buffer per neighbor. */
  MPI_Datatype every_other;
  OK(MPI_Type_vector(2, 1, 2, MPI_INT, &every_other));
  OK(MPI_Type_commit(&every_other));
  MPI_Datatype spaced;
  OK(MPI_Type_create_resized(every_other, 0, 4 * sizeof(int), &spaced));
  OK(MPI_Type_commit(&spaced));
  int sbuf[8], rbuf[4];
  for (int i = 0; i < 8; i++) sbuf[i] = me * 100 + i;
  OK(MPI_Neighbor_alltoall(sbuf, 1, spaced, rbuf, 2, MPI_INT, c));
  /* From the left: its block for slot 1 (ints 4 and 6); from the right: slot 0 (0 and 2). */
  CHECK(rbuf[0] == left * 100 + 4 && rbuf[1] == left * 100 + 6);
  CHECK(rbuf[2] == right * 100 + 0 && rbuf[3] == right * 100 + 2);
  OK(MPI_Type_free(&spaced));
  OK(MPI_Type_free(&every_other));

  /* A non-periodic line: the ends have MPI_PROC_NULL neighbors, whose blocks stay. */
  periods[0] = 0;
  MPI_Comm line;
  OK(MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &line));
  recv[0] = recv[1] = -1;
  int mine = me + 1;
  OK(MPI_Neighbor_allgather(&mine, 1, MPI_INT, recv, 1, MPI_INT, line));
  CHECK(recv[0] == (me > 0 ? me : -1));
  CHECK(recv[1] == (me < n - 1 ? me + 2 : -1));

  /* The same from MPI_BOTTOM with a type of absolute addresses. */
  MPI_Aint addr;
  OK(MPI_Get_address(&mine, &addr));
  int one = 1;
  MPI_Datatype absolute;
  OK(MPI_Type_create_hindexed(1, &one, &addr, MPI_INT, &absolute));
  OK(MPI_Type_commit(&absolute));
  recv[0] = recv[1] = -1;
  OK(MPI_Neighbor_allgather(MPI_BOTTOM, 1, absolute, recv, 1, MPI_INT, line));
  CHECK(recv[0] == (me > 0 ? me : -1));
  CHECK(recv[1] == (me < n - 1 ? me + 2 : -1));
  OK(MPI_Type_free(&absolute));
  OK(MPI_Comm_free(&line));
  OK(MPI_Comm_free(&c));
}

static void test_errors(void) {
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int x = 0, y[2], cls, rc;
  rc = MPI_Neighbor_allgather(&x, 1, MPI_INT, y, 1, MPI_INT, MPI_COMM_WORLD);
  MPI_Error_class(rc, &cls);
  CHECK(cls == MPI_ERR_TOPOLOGY);
  MPI_Comm g;
  int index[1] = {1}, edges[1] = {n}; /* an edge to a node that does not exist */
  rc = MPI_Graph_create(MPI_COMM_WORLD, 1, index, edges, 0, &g);
  MPI_Error_class(rc, &cls);
  CHECK(rc != MPI_SUCCESS && cls == MPI_ERR_RANK);
  int bad = n;
  rc = MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &bad, unweighted, 0, NULL, unweighted,
                                      MPI_INFO_NULL, 0, &g);
  MPI_Error_class(rc, &cls);
  CHECK(cls == MPI_ERR_RANK);
  /* One rank's bad argument fails the creation on every rank (no rank is left waiting):
   * the last rank names a destination that does not exist. */
  int dst = me == n - 1 ? n : (me + 1) % n, src = (me - 1 + n) % n;
  rc = MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &src, unweighted, 1, &dst, unweighted,
                                      MPI_INFO_NULL, 0, &g);
  MPI_Error_class(rc, &cls);
  CHECK(cls == (me == n - 1 ? MPI_ERR_RANK : MPI_ERR_ARG));
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  unweighted = MPI_UNWEIGHTED;
  weights_empty = MPI_WEIGHTS_EMPTY;
  CHECK(n <= 64);
  test_graph();
  test_dist_adjacent();
  test_dist_general();
  test_cart();
  test_errors();
  MPI_Finalize();
  return 0;
}
