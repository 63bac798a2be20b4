/* Nonblocking collectives: several outstanding at once on one communicator, completed by
 * Wait, Waitall, Testall polling and Waitany mixed with point-to-point requests; in-place
 * forms and a datatype with holes. Runs at any size >= 1. */
#include "check.h"
#include <string.h>

int main(int argc, char **argv) {
  OK(MPI_Init(&argc, &argv));
  int rank, size;
  OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  MPI_Comm w = MPI_COMM_WORLD;

  MPI_Request b;
  OK(MPI_Ibarrier(w, &b));
  OK(MPI_Wait(&b, MPI_STATUS_IGNORE));
  CHECK(b == MPI_REQUEST_NULL);

  /* Five collectives outstanding at once, completed together. */
  enum { N = 4096 };
  double *big = malloc(N * sizeof(double)), *bigsum = malloc(N * sizeof(double));
  for (int i = 0; i < N; i++) big[i] = rank + i;
  int root_val = rank == 0 ? 4242 : -1, scan_in = rank + 1, scan_out = -1, ex_out = -1;
  long *ag = malloc(size * sizeof(long));
  long mine = 10L * rank;
  MPI_Request rq[5];
  OK(MPI_Iallreduce(big, bigsum, N, MPI_DOUBLE, MPI_SUM, w, &rq[0]));
  OK(MPI_Ibcast(&root_val, 1, MPI_INT, 0, w, &rq[1]));
  OK(MPI_Iscan(&scan_in, &scan_out, 1, MPI_INT, MPI_SUM, w, &rq[2]));
  OK(MPI_Iexscan(&scan_in, &ex_out, 1, MPI_INT, MPI_SUM, w, &rq[3]));
  OK(MPI_Iallgather(&mine, 1, MPI_LONG, ag, 1, MPI_LONG, w, &rq[4]));
  int flag = 0;
  while (!flag) OK(MPI_Testall(5, rq, &flag, MPI_STATUSES_IGNORE));
  for (int i = 0; i < 5; i++) CHECK(rq[i] == MPI_REQUEST_NULL);
  for (int i = 0; i < N; i += 511) CHECK(bigsum[i] == (double)size * i + size * (size - 1) / 2.0);
  CHECK(root_val == 4242);
  CHECK(scan_out == (rank + 1) * (rank + 2) / 2);
  if (rank > 0) CHECK(ex_out == rank * (rank + 1) / 2);
  for (int r = 0; r < size; r++) CHECK(ag[r] == 10L * r);

  /* Reduce, gather, scatter, alltoall, reduce_scatter_block with Waitall; in-place allreduce. */
  int *g = malloc(size * sizeof(int)), *a2a = malloc(size * sizeof(int)), *a2b = malloc(size * sizeof(int));
  int red = -1, sc = -1, me = rank * 3;
  for (int i = 0; i < size; i++) g[i] = 100 + i, a2a[i] = rank * size + i;
  int rsb_in[64], rsb_out = -1;
  for (int i = 0; i < size; i++) rsb_in[i] = i;
  int ip[3] = {rank, 1, 2};
  MPI_Request r2[6];
  int root = size - 1;
  OK(MPI_Ireduce(&me, &red, 1, MPI_INT, MPI_MAX, root, w, &r2[0]));
  OK(MPI_Iscatter(g, 1, MPI_INT, &sc, 1, MPI_INT, 0, w, &r2[1]));
  OK(MPI_Ialltoall(a2a, 1, MPI_INT, a2b, 1, MPI_INT, w, &r2[2]));
  OK(MPI_Ireduce_scatter_block(rsb_in, &rsb_out, 1, MPI_INT, MPI_SUM, w, &r2[3]));
  OK(MPI_Iallreduce(MPI_IN_PLACE, ip, 3, MPI_INT, MPI_SUM, w, &r2[4]));
  int *gg = malloc(size * sizeof(int));
  OK(MPI_Igather(&me, 1, MPI_INT, gg, 1, MPI_INT, 0, w, &r2[5]));
  OK(MPI_Waitall(6, r2, MPI_STATUSES_IGNORE));
  if (rank == root) CHECK(red == (size - 1) * 3);
  CHECK(sc == 100 + rank);
  for (int i = 0; i < size; i++) CHECK(a2b[i] == i * size + rank);
  CHECK(rsb_out == rank * size);
  CHECK(ip[0] == size * (size - 1) / 2 && ip[1] == size && ip[2] == 2 * size);
  if (rank == 0)
    for (int i = 0; i < size; i++) CHECK(gg[i] == 3 * i);

  /* Waitany over a collective and a point-to-point receive. */
  int token = -1, outv = rank, bc = rank == 0 ? 9 : 0;
  MPI_Request mix[2];
  OK(MPI_Irecv(&token, 1, MPI_INT, (rank + size - 1) % size, 77, w, &mix[0]));
  OK(MPI_Ibcast(&bc, 1, MPI_INT, 0, w, &mix[1]));
  OK(MPI_Send(&outv, 1, MPI_INT, (rank + 1) % size, 77, w));
  for (int k = 0; k < 2; k++) {
    int idx = -1;
    OK(MPI_Waitany(2, mix, &idx, MPI_STATUS_IGNORE));
    CHECK(idx == 0 || idx == 1);
  }
  CHECK(token == (rank + size - 1) % size && bc == 9);

  /* A column datatype broadcast without blocking. */
  MPI_Datatype col;
  OK(MPI_Type_vector(3, 1, 4, MPI_INT, &col));
  OK(MPI_Type_commit(&col));
  int mat[3][4];
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 4; j++) mat[i][j] = rank == 0 ? i * 4 + j : -1;
  OK(MPI_Ibcast(&mat[0][2], 1, col, 0, w, &b));
  OK(MPI_Wait(&b, MPI_STATUS_IGNORE));
  for (int i = 0; i < 3; i++) {
    CHECK(mat[i][2] == i * 4 + 2);
    if (rank != 0) CHECK(mat[i][1] == -1 && mat[i][3] == -1);
  }
  OK(MPI_Type_free(&col));

  /* v-variants and reduce_scatter without blocking: rank i gets i + 1 elements. */
  {
    int *cnt = malloc(size * sizeof(int)), *dsp = malloc(size * sizeof(int)), tot = 0;
    for (int i = 0; i < size; i++) cnt[i] = i + 1, dsp[i] = tot, tot += i + 1;
    int *all = malloc(tot * sizeof(int)), *vals = malloc(tot * sizeof(int)), part[64], got[64];
    for (int i = 0; i < tot; i++) vals[i] = i;
    for (int j = 0; j <= rank; j++) part[j] = rank * 10 + j;
    MPI_Request v[5];
    OK(MPI_Iallgatherv(part, rank + 1, MPI_INT, all, cnt, dsp, MPI_INT, w, &v[0]));
    OK(MPI_Iscatterv(vals, cnt, dsp, MPI_INT, got, rank + 1, MPI_INT, 0, w, &v[1]));
    int rs[64];
    OK(MPI_Ireduce_scatter(vals, rs, cnt, MPI_INT, MPI_SUM, w, &v[2]));
    int *gv = malloc(tot * sizeof(int));
    OK(MPI_Igatherv(part, rank + 1, MPI_INT, gv, cnt, dsp, MPI_INT, size - 1, w, &v[3]));
    int *ones = malloc(size * sizeof(int)), *idx = malloc(size * sizeof(int));
    int *a2 = malloc(size * sizeof(int)), *b2 = malloc(size * sizeof(int));
    for (int i = 0; i < size; i++) ones[i] = 1, idx[i] = i, a2[i] = rank * 100 + i;
    OK(MPI_Ialltoallv(a2, ones, idx, MPI_INT, b2, ones, idx, MPI_INT, w, &v[4]));
    OK(MPI_Waitall(5, v, MPI_STATUSES_IGNORE));
    for (int i = 0; i < size; i++)
      for (int j = 0; j <= i; j++) CHECK(all[dsp[i] + j] == i * 10 + j);
    for (int j = 0; j <= rank; j++) CHECK(got[j] == dsp[rank] + j);
    for (int j = 0; j <= rank; j++) CHECK(rs[j] == size * (dsp[rank] + j));
    if (rank == size - 1)
      for (int i = 0; i < size; i++) CHECK(gv[dsp[i] + i] == i * 10 + i);
    for (int i = 0; i < size; i++) CHECK(b2[i] == i * 100 + rank);
    free(cnt), free(dsp), free(all), free(vals), free(gv), free(ones), free(idx), free(a2), free(b2);
  }

  /* Persistent collectives (MPI-4): initialised once, started three times. */
  MPI_Request pers[4];
  int pin = 0, psum = -1, pb = 0, pag[64];
  OK(MPI_Allreduce_init(&pin, &psum, 1, MPI_INT, MPI_SUM, w, MPI_INFO_NULL, &pers[0]));
  OK(MPI_Bcast_init(&pb, 1, MPI_INT, size - 1, w, MPI_INFO_NULL, &pers[1]));
  OK(MPI_Allgather_init(&pin, 1, MPI_INT, pag, 1, MPI_INT, w, MPI_INFO_NULL, &pers[2]));
  OK(MPI_Barrier_init(w, MPI_INFO_NULL, &pers[3]));
  for (int it = 0; it < 3; it++) {
    pin = rank + it;
    pb = rank == size - 1 ? 50 + it : -1;
    OK(MPI_Startall(4, pers));
    OK(MPI_Waitall(4, pers, MPI_STATUSES_IGNORE));
    CHECK(pers[0] != MPI_REQUEST_NULL);
    CHECK(psum == size * (size - 1) / 2 + size * it);
    CHECK(pb == 50 + it);
    for (int r = 0; r < size; r++) CHECK(pag[r] == r + it);
  }
  for (int k = 0; k < 4; k++) OK(MPI_Request_free(&pers[k]));
  CHECK(pers[0] == MPI_REQUEST_NULL);

  free(big), free(bigsum), free(ag), free(g), free(a2a), free(a2b), free(gg);
  OK(MPI_Finalize());
  return 0;
}
