/* MPI_Graph_create with reorder: graph neighbours on one node where the members' nodes
 * allow; MPI_Dist_graph_create_adjacent and MPI_Dist_graph_create with reorder: right
 * neighbours and no more traffic between nodes.
 *
 * Every graph is a ring over the world ranks (rank i joined to i-1 and i+1; with argv[1]
 * "weighted", the edge i..i+1 of a distributed graph weighs 10 when i is even and 1
 * otherwise). For reorder 0 and 1 the program checks that the new communicator reports the
 * neighbours the program named (MPI_Graph_neighbors by graph node; MPI_Dist_graph_neighbors
 * translated back to world ranks, weights too), that a neighbourhood exchange delivers from
 * those neighbours, that MPI_Graph_map agrees with the reordered rank, and counts the edge
 * weight between nodes (what a neighbour exchange moves across nodes). A reorder never cuts
 * more; with argv[2] "fewer" it cuts less. Also: an empty graph (no edges), a graph of
 * fewer nodes than ranks. Rank 0 prints "graph cut A -> B, dist cut C -> D". */
#include "check.h"
#include <string.h>

static int node_id; /* the lowest world rank on this process's node */
/* MPI_UNWEIGHTED through a volatile pointer: GCC reads the constant as an empty array. */
static int *volatile unweighted;
static int rank, size;

static int left(int r) { return (r + size - 1) % size; }
static int right(int r) { return (r + 1) % size; }
static int weight(int i, int weighted) { return weighted && i % 2 == 0 ? 10 : 1; }

/* The ring's neighbours of graph node v (distinct, none for a 1-node ring). */
static int ring_neighbours(int v, int n, int *out) {
  if (n == 1) return 0;
  out[0] = (v + n - 1) % n;
  if (n == 2) return 1;
  out[1] = (v + 1) % n;
  return 2;
}

/* Edge weight between nodes over the in-edges of every rank of `comm` (weights `w`, or 1
 * each): each rank sends its node id to its neighbours. */
static int cut_of(MPI_Comm comm, int indeg, const int *w) {
  int got[2] = {-1, -1};
  OK(MPI_Neighbor_allgather(&node_id, 1, MPI_INT, got, 1, MPI_INT, comm));
  int me, cut = 0, all = 0;
  OK(MPI_Comm_rank(comm, &me));
  for (int k = 0; k < indeg; k++) {
    /* The block from source k came from the rank the topology names. */
    int from = got[k];
    CHECK(from >= 0);
    if (from != node_id) cut += w ? w[k] : 1;
  }
  OK(MPI_Allreduce(&cut, &all, 1, MPI_INT, MPI_SUM, comm));
  return all;
}

/* World rank of rank `r` of `comm`. */
static int world_of(MPI_Comm comm, int r) {
  MPI_Group g, w;
  int out;
  OK(MPI_Comm_group(comm, &g));
  OK(MPI_Comm_group(MPI_COMM_WORLD, &w));
  OK(MPI_Group_translate_ranks(g, 1, &r, w, &out));
  OK(MPI_Group_free(&g));
  OK(MPI_Group_free(&w));
  return out;
}

/* MPI_Graph_create of a ring of `n` nodes; returns the cut (or -1 off the graph). */
static int graph_ring(int n, int reorder) {
  int index[64], edges[128], e = 0;
  for (int v = 0; v < n; v++) {
    e += ring_neighbours(v, n, edges + e);
    index[v] = e;
  }
  MPI_Comm g;
  OK(MPI_Graph_create(MPI_COMM_WORLD, n, index, edges, reorder, &g));
  int mapped;
  OK(MPI_Graph_map(MPI_COMM_WORLD, n, index, edges, &mapped));
  if (g == MPI_COMM_NULL) {
    CHECK(mapped == MPI_UNDEFINED || !reorder);
    CHECK(reorder || rank >= n);
    return -1;
  }
  int me, gsize, status;
  OK(MPI_Comm_rank(g, &me));
  OK(MPI_Comm_size(g, &gsize));
  OK(MPI_Topo_test(g, &status));
  CHECK(status == MPI_GRAPH && gsize == n);
  if (reorder) CHECK(mapped == me);
  else CHECK(me == rank);
  int want[2], got[2] = {-1, -1}, cnt;
  int nw = ring_neighbours(me, n, want);
  OK(MPI_Graph_neighbors_count(g, me, &cnt));
  CHECK(cnt == nw);
  OK(MPI_Graph_neighbors(g, me, 2, got));
  CHECK(memcmp(got, want, nw * sizeof(int)) == 0);
  /* The blocks come from the graph neighbours: each sends its rank in g. */
  int from[2] = {-1, -1};
  OK(MPI_Neighbor_allgather(&me, 1, MPI_INT, from, 1, MPI_INT, g));
  CHECK(memcmp(from, want, nw * sizeof(int)) == 0);
  int cut = cut_of(g, nw, NULL);
  OK(MPI_Comm_free(&g));
  return cut;
}

/* A distributed ring (adjacent or, with `general`, named entirely by rank 0 through
 * MPI_Dist_graph_create); returns the edge weight between nodes. */
static int dist_ring(int reorder, int weighted, int general) {
  int src[2] = {left(rank), right(rank)}, dst[2] = {right(rank), left(rank)};
  int sw[2] = {weight(left(rank), weighted), weight(rank, weighted)};
  int dw[2] = {weight(rank, weighted), weight(left(rank), weighted)};
  int deg = size == 1 ? 0 : 2;
  MPI_Comm d;
  if (general) {
    /* Rank 0 names every edge i -> i+1 and i -> i-1, in that order per source. */
    int n = rank == 0 ? size : 0;
    int *srcs = malloc(sizeof(int) * (size + 1)), *degs = malloc(sizeof(int) * (size + 1));
    int *dsts = malloc(sizeof(int) * (2 * size + 1)), *wts = malloc(sizeof(int) * (2 * size + 1));
    for (int i = 0; i < n; i++) {
      srcs[i] = i;
      degs[i] = deg;
      dsts[2 * i] = right(i);
      dsts[2 * i + 1] = left(i);
      wts[2 * i] = weight(i, weighted);
      wts[2 * i + 1] = weight(left(i), weighted);
    }
    OK(MPI_Dist_graph_create(MPI_COMM_WORLD, n, srcs, degs, dsts, weighted ? wts : unweighted,
                             MPI_INFO_NULL, reorder, &d));
    free(srcs);
    free(degs);
    free(dsts);
    free(wts);
  } else {
    OK(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, deg, src, weighted ? sw : unweighted,
                                      deg, dst, weighted ? dw : unweighted, MPI_INFO_NULL,
                                      reorder, &d));
  }
  int me, dsize, indeg, outdeg, isw, status;
  OK(MPI_Comm_rank(d, &me));
  OK(MPI_Comm_size(d, &dsize));
  OK(MPI_Topo_test(d, &status));
  CHECK(status == MPI_DIST_GRAPH && dsize == size);
  CHECK(world_of(d, me) == rank);
  if (!reorder) CHECK(me == rank);
  OK(MPI_Dist_graph_neighbors_count(d, &indeg, &outdeg, &isw));
  CHECK(indeg == deg && outdeg == deg && isw == weighted);
  int gs[2] = {-1, -1}, gd[2] = {-1, -1}, gsw[2] = {-1, -1}, gdw[2] = {-1, -1};
  OK(MPI_Dist_graph_neighbors(d, 2, gs, weighted ? gsw : unweighted, 2, gd,
                              weighted ? gdw : unweighted));
  /* The neighbours are ranks of d: back in world ranks they are the ones named, in order
   * (the general form lists a rank's in-edges by naming rank, then position). */
  int want_src[2] = {src[0], src[1]}, want_sw[2] = {sw[0], sw[1]};
  if (general) {
    /* Rank 0 named the edge left(rank) -> rank at position 2*left(rank) of its list and
     * right(rank) -> rank at 2*right(rank)+1; in-edges come in that order. */
    int a = left(rank), b = right(rank), a_first = 2 * a < 2 * b + 1;
    want_src[0] = a_first ? a : b;
    want_src[1] = a_first ? b : a;
    want_sw[0] = a_first ? weight(a, weighted) : weight(rank, weighted);
    want_sw[1] = a_first ? weight(rank, weighted) : weight(a, weighted);
  }
  for (int k = 0; k < deg; k++) {
    CHECK(world_of(d, gs[k]) == want_src[k]);
    if (!general) CHECK(world_of(d, gd[k]) == dst[k]);
    if (weighted) CHECK(gsw[k] == want_sw[k]);
    if (weighted && !general) CHECK(gdw[k] == dw[k]);
  }
  /* A neighbourhood exchange of world ranks delivers from the named sources. */
  int from[2] = {-1, -1};
  OK(MPI_Neighbor_allgather(&rank, 1, MPI_INT, from, 1, MPI_INT, d));
  for (int k = 0; k < deg; k++) CHECK(from[k] == want_src[k]);
  int cut = cut_of(d, deg, weighted ? want_sw : NULL);
  OK(MPI_Comm_free(&d));
  return cut;
}

/* Graphs without edges keep every rank where it was (nothing to gain). */
static void empty_graphs(void) {
  MPI_Comm d, g;
  int none[1] = {0};
  OK(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 0, none, unweighted, 0, none,
                                    unweighted, MPI_INFO_NULL, 1, &d));
  int me, indeg, outdeg, w;
  OK(MPI_Comm_rank(d, &me));
  CHECK(me == rank);
  OK(MPI_Dist_graph_neighbors_count(d, &indeg, &outdeg, &w));
  CHECK(indeg == 0 && outdeg == 0 && !w);
  OK(MPI_Comm_free(&d));
  int index[64] = {0};
  OK(MPI_Graph_create(MPI_COMM_WORLD, size, index, none, 1, &g));
  OK(MPI_Comm_rank(g, &me));
  CHECK(me == rank);
  OK(MPI_Comm_free(&g));
  /* Nothing named by anyone in the general form. */
  OK(MPI_Dist_graph_create(MPI_COMM_WORLD, 0, none, none, none, unweighted, MPI_INFO_NULL,
                           1, &d));
  OK(MPI_Comm_rank(d, &me));
  CHECK(me == rank);
  OK(MPI_Comm_free(&d));
}

int main(int argc, char **argv) {
  OK(MPI_Init(&argc, &argv));
  unweighted = MPI_UNWEIGHTED;
  OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  CHECK(size <= 64);
  MPI_Comm node;
  OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  OK(MPI_Allreduce(&rank, &node_id, 1, MPI_INT, MPI_MIN, node));
  int weighted = argc > 1 && strcmp(argv[1], "weighted") == 0;
  int want_fewer = argc > 2 && strcmp(argv[2], "fewer") == 0;

  int gcut[2], dcut[2], ecut[2];
  for (int reorder = 0; reorder < 2; reorder++) {
    gcut[reorder] = graph_ring(size, reorder);
    dcut[reorder] = dist_ring(reorder, weighted, 0);
    ecut[reorder] = dist_ring(reorder, weighted, 1);
    /* A graph of one node fewer than the job: the last rank (by placement) is left out. */
    if (size > 1) {
      int c = graph_ring(size - 1, reorder), in = c >= 0, all = 0;
      OK(MPI_Allreduce(&in, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
      CHECK(all == size - 1);
    }
  }
  empty_graphs();
  if (rank == 0) {
    printf("graph cut %d -> %d, dist cut %d -> %d, general cut %d -> %d\n", gcut[0], gcut[1],
           dcut[0], dcut[1], ecut[0], ecut[1]);
    CHECK(gcut[1] <= gcut[0] && dcut[1] <= dcut[0] && ecut[1] <= ecut[0]);
    CHECK(dcut[1] == ecut[1]);
    /* A distributed graph's edges belong to the processes that named them: renumbering
     * moves no process, so its cut stays. */
    CHECK(dcut[1] == dcut[0] && ecut[1] == ecut[0]);
    if (want_fewer) CHECK(gcut[1] < gcut[0]);
  }
  OK(MPI_Comm_free(&node));
  OK(MPI_Finalize());
  return 0;
}
