/* Intercommunicators (MPI-4.1 §7.6 and §6.2.2): Intercomm_create from a split of world,
 * Comm_test_inter, Comm_remote_size/group, point-to-point across the groups (ranks name
 * the remote group, statuses report remote ranks), Comm_dup/split/create/free of
 * intercommunicators, Intercomm_merge ordering, every blocking collective and the
 * nonblocking ones with MPI_ROOT / MPI_PROC_NULL roots, and the error classes of bad input
 * (MPI_ERR_COMM for an intracommunicator where an intercommunicator is required and the
 * reverse, MPI_ERR_ROOT, MPI_ERR_RANK). Runs at any size; with one rank only the error
 * cases apply. */
#include "check.h"
#include <string.h>

static int wrank, wsize;

/* Value contributed by local rank r of group g (0 = low half, 1 = high half). */
static int val(int g, int r) { return 1000 * (g + 1) + r; }

static void collectives(MPI_Comm ic, int g, int lrank, int lsize, int rsize) {
  int i;
  /* Barrier. */
  OK(MPI_Barrier(ic));

  /* Bcast from root 0 of group 0 to group 1, then from the last rank of group 1 to group 0. */
  for (int rg = 0; rg < 2; rg++) {
    int rootrank = rg == 0 ? 0 : (g == 1 ? lsize - 1 : rsize - 1);
    int x = -1, root;
    if (g == rg) {
      root = lrank == rootrank ? MPI_ROOT : MPI_PROC_NULL;
      if (lrank == rootrank) x = 4242 + rg;
    } else {
      root = rootrank;
    }
    OK(MPI_Bcast(&x, 1, MPI_INT, root, ic));
    if (g != rg) CHECK(x == 4242 + rg);
    else if (lrank != rootrank) CHECK(x == -1);
  }

  /* Reduce to root 0 of group 0: the sum of group 1's values. */
  {
    int x = val(g, lrank), y = -1, root;
    if (g == 0) root = lrank == 0 ? MPI_ROOT : MPI_PROC_NULL;
    else root = 0;
    OK(MPI_Reduce(&x, &y, 1, MPI_INT, MPI_SUM, root, ic));
    if (g == 0 && lrank == 0) {
      int want = 0;
      for (i = 0; i < rsize; i++) want += val(1, i);
      CHECK(y == want);
    }
  }

  /* Allreduce: each group gets the max of the other group's values. */
  {
    int x = val(g, lrank), y = -1;
    OK(MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_MAX, ic));
    CHECK(y == val(1 - g, rsize - 1));
  }

  /* Gather to root 0 of group 1 / Scatter from it. */
  {
    int x = val(g, lrank), root;
    int *buf = malloc(sizeof(int) * (rsize > lsize ? rsize : lsize) + sizeof(int));
    if (g == 1) root = lrank == 0 ? MPI_ROOT : MPI_PROC_NULL;
    else root = 0;
    OK(MPI_Gather(&x, 1, MPI_INT, buf, 1, MPI_INT, root, ic));
    if (g == 1 && lrank == 0)
      for (i = 0; i < rsize; i++) CHECK(buf[i] == val(0, i));
    if (g == 1 && lrank == 0)
      for (i = 0; i < rsize; i++) buf[i] = 7 * i + 1;
    int y = -1;
    OK(MPI_Scatter(buf, 1, MPI_INT, &y, 1, MPI_INT, root, ic));
    if (g == 0) CHECK(y == 7 * lrank + 1);
    /* Gatherv with gaps (displacement 2 * i). */
    int counts[64], displs[64];
    int *vb = malloc(sizeof(int) * 2 * (rsize + 1));
    for (i = 0; i < 2 * rsize; i++) vb[i] = -5;
    for (i = 0; i < rsize && i < 64; i++) {
      counts[i] = 1;
      displs[i] = 2 * i;
    }
    OK(MPI_Gatherv(&x, 1, MPI_INT, vb, counts, displs, MPI_INT, root, ic));
    if (g == 1 && lrank == 0)
      for (i = 0; i < rsize; i++) CHECK(vb[2 * i] == val(0, i) && vb[2 * i + 1] == -5);
    free(vb);
    free(buf);
  }

  /* Allgather: every rank gets the other group's values in remote rank order. */
  {
    int x = val(g, lrank);
    int *buf = malloc(sizeof(int) * rsize);
    OK(MPI_Allgather(&x, 1, MPI_INT, buf, 1, MPI_INT, ic));
    for (i = 0; i < rsize; i++) CHECK(buf[i] == val(1 - g, i));
    free(buf);
  }

  /* Alltoall: block j goes to remote rank j. */
  {
    int *s = malloc(sizeof(int) * rsize), *r = malloc(sizeof(int) * rsize);
    for (i = 0; i < rsize; i++) s[i] = 100 * val(g, lrank) + i;
    OK(MPI_Alltoall(s, 1, MPI_INT, r, 1, MPI_INT, ic));
    for (i = 0; i < rsize; i++) CHECK(r[i] == 100 * val(1 - g, i) + lrank);
    free(s);
    free(r);
  }

  /* Reduce_scatter_block: group sizes differ, so each group's vector has the same total
   * only when rcount * lsize matches; use rcount = rsize so the totals are lsize*rsize. */
  {
    int n = lsize * rsize;
    int *s = malloc(sizeof(int) * n), *r = malloc(sizeof(int) * rsize);
    for (i = 0; i < n; i++) s[i] = i + g;
    OK(MPI_Reduce_scatter_block(s, r, rsize, MPI_INT, MPI_SUM, ic));
    /* The remote group (size rsize) summed s[k] = k + (1 - g). */
    for (i = 0; i < rsize; i++) CHECK(r[i] == rsize * (lrank * rsize + i + (1 - g)));
    free(s);
    free(r);
  }

  /* v-forms: Scatterv from root 0 of group 0 with one int per remote rank at stride 2,
   * Alltoallv with one int per remote rank, Reduce_scatter by the local group's counts. */
  {
    int root = g == 0 ? (lrank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
    int *src = malloc(sizeof(int) * 2 * (rsize + 1)), cnt[64], dsp[64], y = -1;
    for (i = 0; i < rsize && i < 64; i++) {
      src[2 * i] = 3 * i + 1;
      cnt[i] = 1;
      dsp[i] = 2 * i;
    }
    OK(MPI_Scatterv(src, cnt, dsp, MPI_INT, &y, 1, MPI_INT, root, ic));
    if (g == 1) CHECK(y == 3 * lrank + 1);
    int *s = malloc(sizeof(int) * rsize), *r = malloc(sizeof(int) * rsize);
    int *c1 = malloc(sizeof(int) * rsize), *d1 = malloc(sizeof(int) * rsize);
    for (i = 0; i < rsize; i++) {
      s[i] = 1000 * g + 10 * lrank + i;
      r[i] = -1;
      c1[i] = 1;
      d1[i] = i;
    }
    OK(MPI_Alltoallv(s, c1, d1, MPI_INT, r, c1, d1, MPI_INT, ic));
    for (i = 0; i < rsize; i++) CHECK(r[i] == 1000 * (1 - g) + 10 * i + lrank);
    /* Reduce_scatter: every rank sends lsize*rsize ints (the same total in both groups),
     * local rank k receives rsize of the remote group's sums. */
    int total = lsize * rsize, *v = malloc(sizeof(int) * total), *counts = malloc(sizeof(int) * lsize);
    for (i = 0; i < total; i++) v[i] = i;
    for (i = 0; i < lsize; i++) counts[i] = rsize;
    int *out = malloc(sizeof(int) * rsize);
    OK(MPI_Reduce_scatter(v, out, counts, MPI_INT, MPI_SUM, ic));
    for (i = 0; i < rsize; i++) CHECK(out[i] == rsize * (lrank * rsize + i));
    free(src), free(s), free(r), free(c1), free(d1), free(v), free(counts), free(out);
  }

  /* Nonblocking forms. */
  {
    MPI_Request rq[3];
    int x = val(g, lrank), y = -1, z = -1;
    OK(MPI_Ibarrier(ic, &rq[0]));
    OK(MPI_Iallreduce(&x, &y, 1, MPI_INT, MPI_MIN, ic, &rq[1]));
    int root = g == 0 ? (lrank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
    if (g == 0 && lrank == 0) z = 77;
    OK(MPI_Ibcast(&z, 1, MPI_INT, root, ic, &rq[2]));
    OK(MPI_Waitall(3, rq, MPI_STATUSES_IGNORE));
    CHECK(y == val(1 - g, 0));
    if (g == 1) CHECK(z == 77);
  }

  /* Zero counts, blocking then nonblocking, rooted at the last rank of group 0 (MPI_ROOT
   * there, MPI_PROC_NULL beside it): every call succeeds and writes nothing, and the
   * one-element broadcast after them still gets its own value (no call's empty messages
   * are taken by a later call). */
  for (int nb = 0; nb < 2; nb++) {
    int root = g == 0 ? (lrank == lsize - 1 ? MPI_ROOT : MPI_PROC_NULL) : rsize - 1;
    int s[8], r[8], zeros[64];
    MPI_Request rq[8];
    for (i = 0; i < 8; i++) s[i] = 10 + i, r[i] = -7;
    for (i = 0; i < 64; i++) zeros[i] = 0;
    if (!nb) {
      OK(MPI_Bcast(r, 0, MPI_INT, root, ic));
      OK(MPI_Reduce(s, r, 0, MPI_INT, MPI_SUM, root, ic));
      OK(MPI_Allreduce(s, r, 0, MPI_INT, MPI_SUM, ic));
      OK(MPI_Gather(s, 0, MPI_INT, r, 0, MPI_INT, root, ic));
      OK(MPI_Scatter(s, 0, MPI_INT, r, 0, MPI_INT, root, ic));
      OK(MPI_Allgather(s, 0, MPI_INT, r, 0, MPI_INT, ic));
      OK(MPI_Alltoall(s, 0, MPI_INT, r, 0, MPI_INT, ic));
      OK(MPI_Reduce_scatter_block(s, r, 0, MPI_INT, MPI_SUM, ic));
    } else {
      OK(MPI_Ibcast(r, 0, MPI_INT, root, ic, &rq[0]));
      OK(MPI_Ireduce(s, r, 0, MPI_INT, MPI_SUM, root, ic, &rq[1]));
      OK(MPI_Iallreduce(s, r, 0, MPI_INT, MPI_SUM, ic, &rq[2]));
      OK(MPI_Igather(s, 0, MPI_INT, r, 0, MPI_INT, root, ic, &rq[3]));
      OK(MPI_Iscatter(s, 0, MPI_INT, r, 0, MPI_INT, root, ic, &rq[4]));
      OK(MPI_Iallgather(s, 0, MPI_INT, r, 0, MPI_INT, ic, &rq[5]));
      OK(MPI_Ialltoall(s, 0, MPI_INT, r, 0, MPI_INT, ic, &rq[6]));
      OK(MPI_Ireduce_scatter(s, r, zeros, MPI_INT, MPI_SUM, ic, &rq[7]));
      OK(MPI_Waitall(8, rq, MPI_STATUSES_IGNORE));
    }
    for (i = 0; i < 8; i++) CHECK(r[i] == -7);
    int x = g == 0 && lrank == lsize - 1 ? 900 + nb : -1;
    OK(MPI_Bcast(&x, 1, MPI_INT, root, ic));
    if (g == 1) CHECK(x == 900 + nb);
    else if (lrank != lsize - 1) CHECK(x == -1);
  }
}

int main(int argc, char **argv) {
  OK(MPI_Init(&argc, &argv));
  OK(MPI_Comm_rank(MPI_COMM_WORLD, &wrank));
  OK(MPI_Comm_size(MPI_COMM_WORLD, &wsize));
  OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  int flag = -1, n = -1;
  OK(MPI_Comm_test_inter(MPI_COMM_WORLD, &flag));
  CHECK(flag == 0);
  /* Intercommunicator-only calls on an intracommunicator. */
  CHECK_RC(MPI_Comm_remote_size(MPI_COMM_WORLD, &n), MPI_ERR_COMM);
  MPI_Group grp;
  CHECK_RC(MPI_Comm_remote_group(MPI_COMM_WORLD, &grp), MPI_ERR_COMM);
  CHECK_RC(MPI_Intercomm_merge(MPI_COMM_WORLD, 0, &(MPI_Comm){MPI_COMM_NULL}), MPI_ERR_COMM);
  CHECK_RC(MPI_Intercomm_create(MPI_COMM_WORLD, wsize, MPI_COMM_WORLD, 0, 1,
                                &(MPI_Comm){MPI_COMM_NULL}),
           MPI_ERR_RANK);
  if (wsize < 2) {
    OK(MPI_Finalize());
    return 0;
  }

  /* Low half (g = 0) and high half (g = 1); the leaders are world ranks 0 and half. */
  int half = wsize / 2, g = wrank >= half;
  MPI_Comm local, ic;
  OK(MPI_Comm_split(MPI_COMM_WORLD, g, wrank, &local));
  OK(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, g ? 0 : half, 99, &ic));
  OK(MPI_Comm_set_errhandler(ic, MPI_ERRORS_RETURN));
  int lrank, lsize, rsize;
  OK(MPI_Comm_test_inter(ic, &flag));
  CHECK(flag == 1);
  OK(MPI_Comm_rank(ic, &lrank));
  OK(MPI_Comm_size(ic, &lsize));
  OK(MPI_Comm_remote_size(ic, &rsize));
  CHECK(lsize == (g ? wsize - half : half));
  CHECK(rsize == (g ? half : wsize - half));
  CHECK(lrank == (g ? wrank - half : wrank));
  /* The remote group holds the other half's world ranks in order. */
  {
    MPI_Group rg, wg;
    OK(MPI_Comm_remote_group(ic, &rg));
    OK(MPI_Comm_group(MPI_COMM_WORLD, &wg));
    int gs, rr[64], wr[64];
    OK(MPI_Group_size(rg, &gs));
    CHECK(gs == rsize);
    for (int i = 0; i < rsize; i++) rr[i] = i;
    OK(MPI_Group_translate_ranks(rg, rsize, rr, wg, wr));
    for (int i = 0; i < rsize; i++) CHECK(wr[i] == (g ? i : half + i));
    OK(MPI_Group_free(&rg));
    OK(MPI_Group_free(&wg));
  }

  /* Point-to-point: local rank r of each group exchanges with remote rank r % rsize; ranks
   * name the remote group and statuses report remote ranks. */
  {
    int peer = lrank % rsize, out = val(g, lrank), in = -1;
    MPI_Status st;
    /* Every remote rank q with q % lsize == lrank sends to me. */
    int expect = 0;
    for (int q = 0; q < rsize; q++)
      if (q % lsize == lrank) expect++;
    MPI_Request sr;
    OK(MPI_Isend(&out, 1, MPI_INT, peer, 5, ic, &sr));
    for (int k = 0; k < expect; k++) {
      OK(MPI_Recv(&in, 1, MPI_INT, MPI_ANY_SOURCE, 5, ic, &st));
      CHECK(st.MPI_SOURCE >= 0 && st.MPI_SOURCE < rsize && st.MPI_SOURCE % lsize == lrank);
      CHECK(in == val(1 - g, st.MPI_SOURCE));
    }
    OK(MPI_Wait(&sr, MPI_STATUS_IGNORE));
    /* A rank beyond the remote group is MPI_ERR_RANK even when the local group is larger. */
    CHECK_RC(MPI_Send(&out, 1, MPI_INT, rsize, 5, ic), MPI_ERR_RANK);
  }

  /* Intracommunicator-only calls on an intercommunicator. */
  {
    int x = 1, y;
    CHECK_RC(MPI_Scan(&x, &y, 1, MPI_INT, MPI_SUM, ic), MPI_ERR_COMM);
    CHECK_RC(MPI_Exscan(&x, &y, 1, MPI_INT, MPI_SUM, ic), MPI_ERR_COMM);
    MPI_Comm c2;
    int dims[1] = {lsize}, periods[1] = {0};
    CHECK_RC(MPI_Cart_create(ic, 1, dims, periods, 0, &c2), MPI_ERR_COMM);
    /* A root that is neither MPI_ROOT, MPI_PROC_NULL nor a remote rank. */
    CHECK_RC(MPI_Bcast(&x, 1, MPI_INT, rsize, ic), MPI_ERR_ROOT);
  }

  collectives(ic, g, lrank, lsize, rsize);

  /* Dup keeps the groups; traffic on the dup does not meet traffic on the original. */
  {
    MPI_Comm d;
    OK(MPI_Comm_dup(ic, &d));
    OK(MPI_Comm_test_inter(d, &flag));
    CHECK(flag == 1);
    int cmp;
    OK(MPI_Comm_compare(ic, d, &cmp));
    CHECK(cmp == MPI_CONGRUENT);
    OK(MPI_Comm_compare(ic, ic, &cmp));
    CHECK(cmp == MPI_IDENT);
    OK(MPI_Comm_compare(ic, local, &cmp));
    CHECK(cmp == MPI_UNEQUAL);
    int a = val(g, lrank), b = -1, c = -1;
    if (lrank == 0) {
      OK(MPI_Sendrecv(&a, 1, MPI_INT, 0, 1, &b, 1, MPI_INT, 0, 1, d, MPI_STATUS_IGNORE));
      OK(MPI_Sendrecv(&a, 1, MPI_INT, 0, 1, &c, 1, MPI_INT, 0, 1, ic, MPI_STATUS_IGNORE));
      CHECK(b == val(1 - g, 0) && c == val(1 - g, 0));
    }
    collectives(d, g, lrank, lsize, rsize);
    OK(MPI_Comm_free(&d));
    CHECK(d == MPI_COMM_NULL);
  }

  /* Merge: the group passing high = 0 comes first. Low half passes high = 1 here, so the
   * high half's ranks come first. */
  {
    MPI_Comm m;
    int mr, ms;
    OK(MPI_Intercomm_merge(ic, g == 0, &m));
    OK(MPI_Comm_rank(m, &mr));
    OK(MPI_Comm_size(m, &ms));
    CHECK(ms == wsize);
    CHECK(mr == (g ? lrank : (wsize - half) + lrank));
    int s = wrank, t = -1;
    OK(MPI_Allreduce(&s, &t, 1, MPI_INT, MPI_SUM, m));
    CHECK(t == wsize * (wsize - 1) / 2);
    OK(MPI_Comm_free(&m));
  }

  /* Split of an intercommunicator: even local ranks with even remote ranks; a color that
   * has no remote members gives MPI_COMM_NULL. */
  {
    MPI_Comm s;
    OK(MPI_Comm_split(ic, lrank % 2, lrank, &s));
    int remote_same = (rsize + 1 - lrank % 2) / 2; /* remote ranks with my parity */
    if (remote_same == 0) {
      CHECK(s == MPI_COMM_NULL);
    } else {
      int sl, sr;
      OK(MPI_Comm_size(s, &sl));
      OK(MPI_Comm_remote_size(s, &sr));
      CHECK(sl == (lsize + 1 - lrank % 2) / 2);
      CHECK(sr == remote_same);
      int x = val(g, lrank), y = -1;
      OK(MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_MAX, s));
      /* The largest remote rank with my parity. */
      int q = rsize - 1;
      if (q % 2 != lrank % 2) q--;
      CHECK(y == val(1 - g, q));
      OK(MPI_Comm_free(&s));
    }
  }

  /* Comm_create of an intercommunicator: each group keeps its rank 0 only. */
  {
    MPI_Group lg, one;
    int zero = 0;
    MPI_Comm c;
    OK(MPI_Comm_group(ic, &lg));
    OK(MPI_Group_incl(lg, 1, &zero, &one));
    OK(MPI_Comm_create(ic, one, &c));
    if (lrank == 0) {
      int sz;
      OK(MPI_Comm_remote_size(c, &sz));
      CHECK(sz == 1);
      OK(MPI_Barrier(c));
      OK(MPI_Comm_free(&c));
    } else {
      CHECK(c == MPI_COMM_NULL);
    }
    OK(MPI_Group_free(&one));
    OK(MPI_Group_free(&lg));
  }

  OK(MPI_Comm_free(&ic));
  OK(MPI_Comm_free(&local));
  /* A freed intercommunicator is MPI_ERR_COMM. */
  CHECK_RC(MPI_Comm_remote_size(ic, &n), MPI_ERR_COMM);
  OK(MPI_Finalize());
  return 0;
}
