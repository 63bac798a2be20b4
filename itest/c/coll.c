/* Blocking collectives with results checked against closed forms, MPI_IN_PLACE, MINLOC,
 * a non-commutative user operation, and the large-count forms. Runs at any size >= 1. */
#include "check.h"
#include <string.h>

/* Non-commutative and associative, element by element: the first non-zero operand.
 * inout = in o inout, where `in` holds the lower ranks' contribution. */
static void first_nonzero(void *in, void *inout, int *len, MPI_Datatype *dt) {
  CHECK(*dt == MPI_INT);
  int *a = in, *b = inout;
  for (int k = 0; k < *len; k++)
    if (a[k] != 0) b[k] = a[k];
}

int main(int argc, char **argv) {
  OK(MPI_Init(&argc, &argv));
  int rank, size;
  OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  OK(MPI_Barrier(MPI_COMM_WORLD));

  for (int root = 0; root < size; root++) {
    double v[3] = {0};
    if (rank == root) v[0] = 1.5, v[1] = root, v[2] = -2;
    OK(MPI_Bcast(v, 3, MPI_DOUBLE, root, MPI_COMM_WORLD));
    CHECK(v[0] == 1.5 && v[1] == root && v[2] == -2);

    long s = rank + 1, r = -1;
    OK(MPI_Reduce(&s, &r, 1, MPI_LONG, MPI_SUM, root, MPI_COMM_WORLD));
    if (rank == root) CHECK(r == (long)size * (size + 1) / 2);
    long inplace = rank + 1;
    if (rank == root)
      OK(MPI_Reduce(MPI_IN_PLACE, &inplace, 1, MPI_LONG, MPI_MAX, root, MPI_COMM_WORLD));
    else
      OK(MPI_Reduce(&inplace, NULL, 1, MPI_LONG, MPI_MAX, root, MPI_COMM_WORLD));
    if (rank == root) CHECK(inplace == size);

    int g[2] = {rank, rank * rank};
    int *all = malloc(2 * size * sizeof(int));
    OK(MPI_Gather(g, 2, MPI_INT, all, 2, MPI_INT, root, MPI_COMM_WORLD));
    if (rank == root)
      for (int i = 0; i < size; i++) CHECK(all[2 * i] == i && all[2 * i + 1] == i * i);
    int sc[2] = {-1, -1};
    OK(MPI_Scatter(all, 2, MPI_INT, sc, 2, MPI_INT, root, MPI_COMM_WORLD));
    CHECK(sc[0] == rank && sc[1] == rank * rank);
    /* Gatherv/Scatterv: rank i contributes i+1 elements, reversed displacements. */
    int *counts = malloc(size * sizeof(int)), *displs = malloc(size * sizeof(int));
    int total = 0;
    for (int i = size - 1; i >= 0; i--) counts[i] = i + 1, displs[i] = total, total += i + 1;
    int *vbuf = malloc(total * sizeof(int)), mine[64];
    for (int i = 0; i <= rank; i++) mine[i] = rank * 1000 + i;
    OK(MPI_Gatherv(mine, rank + 1, MPI_INT, vbuf, counts, displs, MPI_INT, root, MPI_COMM_WORLD));
    if (rank == root)
      for (int i = 0; i < size; i++)
        for (int j = 0; j <= i; j++) CHECK(vbuf[displs[i] + j] == i * 1000 + j);
    int back[64] = {0};
    OK(MPI_Scatterv(vbuf, counts, displs, MPI_INT, back, rank + 1, MPI_INT, root, MPI_COMM_WORLD));
    for (int j = 0; j <= rank; j++) CHECK(back[j] == rank * 1000 + j);
    free(all), free(counts), free(displs), free(vbuf);
  }

  /* Allreduce: every predefined arithmetic op, and in place. */
  int iv = rank + 1, io = 0;
  OK(MPI_Allreduce(&iv, &io, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
  CHECK(io == size * (size + 1) / 2);
  OK(MPI_Allreduce(&iv, &io, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
  CHECK(io == 1);
  OK(MPI_Allreduce(&iv, &io, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
  CHECK(io == size);
  double dv = 2.0, dp = 0;
  OK(MPI_Allreduce(&dv, &dp, 1, MPI_DOUBLE, MPI_PROD, MPI_COMM_WORLD));
  CHECK(dp == (double)(1 << size));
  unsigned bits = 1u << rank, bor = 0;
  OK(MPI_Allreduce(&bits, &bor, 1, MPI_UNSIGNED, MPI_BOR, MPI_COMM_WORLD));
  CHECK(bor == (1u << size) - 1);
  int flag = rank == 0, lor = -1;
  OK(MPI_Allreduce(&flag, &lor, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD));
  CHECK(lor == 1);
  float fv[1000];
  for (int i = 0; i < 1000; i++) fv[i] = (float)(rank + i);
  OK(MPI_Allreduce(MPI_IN_PLACE, fv, 1000, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
  for (int i = 0; i < 1000; i += 99) CHECK(fv[i] == (float)(size * i + size * (size - 1) / 2));
  MPI_Count big = 3;
  int cv[3] = {rank, rank, rank}, co[3];
  OK(MPI_Allreduce_c(cv, co, big, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
  CHECK(co[2] == size * (size - 1) / 2);
  OK(MPI_Bcast_c(co, big, MPI_INT, 0, MPI_COMM_WORLD));
  long *agc = malloc(size * sizeof(long)), mel = 5L * rank;
  OK(MPI_Allgather_c(&mel, (MPI_Count)1, MPI_LONG, agc, (MPI_Count)1, MPI_LONG, MPI_COMM_WORLD));
  for (int i = 0; i < size; i++) CHECK(agc[i] == 5L * i);
  free(agc);

  /* MINLOC / MAXLOC on value-index pairs. */
  struct { double v; int i; } pin = {(double)((rank * 7) % size), rank}, pout;
  OK(MPI_Allreduce(&pin, &pout, 1, MPI_DOUBLE_INT, MPI_MINLOC, MPI_COMM_WORLD));
  CHECK(pout.v == 0 && pout.i == 0);
  struct { int v; int i; } qin = {rank % 2, rank}, qout;
  OK(MPI_Allreduce(&qin, &qout, 1, MPI_2INT, MPI_MAXLOC, MPI_COMM_WORLD));
  CHECK(qout.v == (size > 1) && qout.i == (size > 1 ? 1 : 0));

  /* A non-commutative user operation: element k takes the value of the lowest rank whose
   * contribution is non-zero; rank r contributes r + 1 where r >= k, else 0. */
  MPI_Op fnz;
  OK(MPI_Op_create(first_nonzero, 0, &fnz));
  int commute = 1;
  OK(MPI_Op_commutative(fnz, &commute));
  CHECK(commute == 0);
  OK(MPI_Op_commutative(MPI_SUM, &commute));
  CHECK(commute == 1);
  enum { NK = 300 };
  int fin[NK], fout[NK];
  for (int k = 0; k < NK; k++) fin[k] = rank >= k % (size + 1) ? rank + 1 : 0;
  OK(MPI_Allreduce(fin, fout, NK, MPI_INT, fnz, MPI_COMM_WORLD));
  for (int k = 0; k < NK; k++) CHECK(fout[k] == (k % (size + 1) < size ? k % (size + 1) + 1 : 0));
  OK(MPI_Scan(fin, fout, NK, MPI_INT, fnz, MPI_COMM_WORLD));
  for (int k = 0; k < NK; k++) CHECK(fout[k] == (k % (size + 1) <= rank ? k % (size + 1) + 1 : 0));
  OK(MPI_Reduce(fin, fout, NK, MPI_INT, fnz, size - 1, MPI_COMM_WORLD));
  if (rank == size - 1)
    for (int k = 0; k < NK; k++) CHECK(fout[k] == (k % (size + 1) < size ? k % (size + 1) + 1 : 0));
  OK(MPI_Op_free(&fnz));
  CHECK(fnz == MPI_OP_NULL);

  /* Scan / Exscan. */
  int sv = rank + 1, so = -1;
  OK(MPI_Scan(&sv, &so, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
  CHECK(so == (rank + 1) * (rank + 2) / 2);
  OK(MPI_Exscan(&sv, &so, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
  if (rank > 0) CHECK(so == rank * (rank + 1) / 2);

  /* Allgather(v), Alltoall(v), Reduce_scatter_block. */
  int *ag = malloc(size * 2 * sizeof(int));
  int two[2] = {rank, -rank};
  OK(MPI_Allgather(two, 2, MPI_INT, ag, 2, MPI_INT, MPI_COMM_WORLD));
  for (int i = 0; i < size; i++) CHECK(ag[2 * i] == i && ag[2 * i + 1] == -i);
  for (int i = 0; i < 2 * size; i++) ag[i] = i == 2 * rank ? 77 : i == 2 * rank + 1 ? 78 : 0;
  OK(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, ag, 2, MPI_INT, MPI_COMM_WORLD));
  for (int i = 0; i < size; i++) CHECK(ag[2 * i] == 77 && ag[2 * i + 1] == 78);
  int *rc = malloc(size * sizeof(int)), *rd = malloc(size * sizeof(int)), tot = 0;
  for (int i = 0; i < size; i++) rc[i] = i + 1, rd[i] = tot, tot += i + 1;
  int *agv = malloc(tot * sizeof(int)), contrib[64];
  for (int i = 0; i <= rank; i++) contrib[i] = rank;
  OK(MPI_Allgatherv(contrib, rank + 1, MPI_INT, agv, rc, rd, MPI_INT, MPI_COMM_WORLD));
  for (int i = 0; i < size; i++) CHECK(agv[rd[i]] == i && agv[rd[i] + i] == i);
  int *a2a = malloc(size * sizeof(int)), *a2b = malloc(size * sizeof(int));
  for (int i = 0; i < size; i++) a2a[i] = rank * 100 + i;
  OK(MPI_Alltoall(a2a, 1, MPI_INT, a2b, 1, MPI_INT, MPI_COMM_WORLD));
  for (int i = 0; i < size; i++) CHECK(a2b[i] == i * 100 + rank);
  int *ones = malloc(size * sizeof(int)), *dsp = malloc(size * sizeof(int));
  for (int i = 0; i < size; i++) ones[i] = 1, dsp[i] = size - 1 - i;
  OK(MPI_Alltoallv(a2a, ones, dsp, MPI_INT, a2b, ones, dsp, MPI_INT, MPI_COMM_WORLD));
  for (int i = 0; i < size; i++) CHECK(a2b[size - 1 - i] == i * 100 + (size - 1 - rank));
  int *rsb = malloc(size * 2 * sizeof(int)), rso[2];
  for (int i = 0; i < 2 * size; i++) rsb[i] = i;
  OK(MPI_Reduce_scatter_block(rsb, rso, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
  CHECK(rso[0] == 2 * rank * size && rso[1] == (2 * rank + 1) * size);

  /* Reduce_scatter with unequal counts; Alltoallw with byte displacements. */
  int *rsin = malloc(tot * sizeof(int)), rsout[64];
  for (int i = 0; i < tot; i++) rsin[i] = i + rank;
  OK(MPI_Reduce_scatter(rsin, rsout, rc, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
  for (int j = 0; j <= rank; j++) CHECK(rsout[j] == size * (rd[rank] + j) + size * (size - 1) / 2);
  free(rsin);
  MPI_Datatype *tys = malloc(size * sizeof(MPI_Datatype));
  int *wc = malloc(size * sizeof(int)), *wd = malloc(size * sizeof(int));
  for (int i = 0; i < size; i++) tys[i] = MPI_INT, wc[i] = 1, wd[i] = i * (int)sizeof(int);
  for (int i = 0; i < size; i++) a2a[i] = rank * 1000 + i;
  OK(MPI_Alltoallw(a2a, wc, wd, tys, a2b, wc, wd, tys, MPI_COMM_WORLD));
  for (int i = 0; i < size; i++) CHECK(a2b[i] == i * 1000 + rank);
  free(tys), free(wc), free(wd);

  free(ag), free(rc), free(rd), free(agv), free(a2a), free(a2b), free(ones), free(dsp), free(rsb);
  OK(MPI_Finalize());
  return 0;
}
