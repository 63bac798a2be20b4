/* The blocking collectives' fast path (predefined contiguous datatype, one datatype and count
 * on both sides) and the checked path it hands the rest to: results are right on both
 * (in place, two datatypes of one signature, non-roots passing garbage receive arguments,
 * MPI_MINLOC pairs), and every argument error still gets its class through the
 * communicator's error handler (bad root, negative count, NULL buffer, operation not defined
 * on the type, MPI_DATATYPE_NULL, a freed communicator). Runs at any size >= 1. */
#include "check.h"
#include <stdint.h>
#include <string.h>

static int calls = 0, last_code = 0;
static void on_error(MPI_Comm *comm, int *code, ...) {
  (void)comm;
  calls++;
  last_code = *code;
}

/* The error class of the last handled error; expects exactly one call since `before`. */
static int handled(int before) {
  int cls = -1;
  CHECK(calls == before + 1);
  OK(MPI_Error_class(last_code, &cls));
  return cls;
}

int main(int argc, char **argv) {
  OK(MPI_Init(&argc, &argv));
  int me, np;
  OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
  OK(MPI_Comm_size(MPI_COMM_WORLD, &np));
  MPI_Comm w;
  OK(MPI_Comm_dup(MPI_COMM_WORLD, &w));
  MPI_Errhandler eh;
  OK(MPI_Comm_create_errhandler(on_error, &eh));
  OK(MPI_Comm_set_errhandler(w, eh));
  int root = np - 1;

  /* Good calls of every fast collective, odd counts and a zero count. */
  for (int count = 0; count <= 7; count += 7) {
    int v[7], out[7 * 8], all[7 * 8];
    for (int i = 0; i < count; i++) v[i] = me == root ? 1000 + i : -1;
    OK(MPI_Bcast(v, count, MPI_INT, root, w));
    for (int i = 0; i < count; i++) CHECK(v[i] == 1000 + i);
    for (int i = 0; i < count; i++) v[i] = me + i;
    OK(MPI_Allreduce(v, out, count, MPI_INT, MPI_SUM, w));
    for (int i = 0; i < count; i++) CHECK(out[i] == np * (np - 1) / 2 + np * i);
    memset(out, 0, sizeof out);
    /* Non-roots pass a NULL receive buffer: it is ignored there. */
    OK(MPI_Reduce(v, me == root ? out : NULL, count, MPI_INT, MPI_MAX, root, w));
    if (me == root)
      for (int i = 0; i < count; i++) CHECK(out[i] == np - 1 + i);
    /* Non-roots pass garbage receive arguments to gather, send ones to scatter. */
    OK(MPI_Gather(v, count, MPI_INT, me == root ? all : NULL, me == root ? count : -5,
                  me == root ? MPI_INT : MPI_DATATYPE_NULL, root, w));
    if (me == root)
      for (int r = 0; r < np; r++)
        for (int i = 0; i < count; i++) CHECK(all[r * count + i] == r + i);
    OK(MPI_Scatter(me == root ? all : NULL, me == root ? count : -5,
                   me == root ? MPI_INT : MPI_DATATYPE_NULL, out, count, MPI_INT, root, w));
    for (int i = 0; i < count; i++) CHECK(out[i] == me + i);
    OK(MPI_Allgather(v, count, MPI_INT, all, count, MPI_INT, w));
    for (int r = 0; r < np; r++)
      for (int i = 0; i < count; i++) CHECK(all[r * count + i] == r + i);
    int send[8], recv[8];
    for (int d = 0; d < np; d++) send[d] = me * 10 + d;
    OK(MPI_Alltoall(send, 1, MPI_INT, recv, 1, MPI_INT, w));
    for (int s = 0; s < np; s++) CHECK(recv[s] == s * 10 + me);
    OK(MPI_Barrier(w));
  }

  /* The checked path: in place, two datatypes of one signature, pairs. */
  {
    double d[3] = {me, 2.0 * me, 0.5};
    OK(MPI_Allreduce(MPI_IN_PLACE, d, 3, MPI_DOUBLE, MPI_SUM, w));
    CHECK(d[0] == np * (np - 1) / 2.0 && d[2] == 0.5 * np);
    int v = me + 1, all[8];
    MPI_Datatype two;
    OK(MPI_Type_contiguous(4, MPI_BYTE, &two));
    OK(MPI_Type_commit(&two));
    OK(MPI_Allgather(&v, 1, MPI_INT, all, 1, two, w));
    for (int r = 0; r < np; r++) CHECK(all[r] == r + 1);
    OK(MPI_Type_free(&two));
    struct { float v; int i; } p = {(float)(me % 2), me}, q;
    OK(MPI_Allreduce(&p, &q, 1, MPI_FLOAT_INT, MPI_MINLOC, w));
    CHECK(q.v == 0.0f && q.i == 0);
  }

  /* The v-collectives, reductions to blocks and scans, on the fast path (MPI_INT) and the
   * checked path (a derived contiguous type of one int): uneven counts (rank r has r % 3
   * items, so rank 0 has none), blocks in reverse rank order with gaps. */
  {
    MPI_Datatype one;
    OK(MPI_Type_contiguous(1, MPI_INT, &one));
    OK(MPI_Type_commit(&one));
    MPI_Datatype types[2] = {MPI_INT, one};
    int cnt[8], dsp[8], total = 0, maxc = 2;
    for (int r = np - 1; r >= 0; r--) {
      cnt[r] = r % 3;
      dsp[r] = total;
      total += cnt[r] + 1;
    }
    for (int k = 0; k < 2; k++) {
      MPI_Datatype t = types[k];
      int mine[2], buf[8 * 3], out[8 * 3];
      for (int i = 0; i < cnt[me]; i++) mine[i] = 100 * me + i;
      /* Gatherv; non-roots pass garbage receive arguments. */
      for (int i = 0; i < total; i++) buf[i] = -1;
      OK(MPI_Gatherv(mine, cnt[me], t, me == root ? buf : NULL, me == root ? cnt : NULL,
                     me == root ? dsp : NULL, me == root ? t : MPI_DATATYPE_NULL, root, w));
      if (me == root)
        for (int r = 0; r < np; r++) {
          for (int i = 0; i < cnt[r]; i++) CHECK(buf[dsp[r] + i] == 100 * r + i);
          CHECK(buf[dsp[r] + cnt[r]] == -1); /* the gap is left alone */
        }
      /* Scatterv back from what the root gathered; non-roots pass garbage send ones. */
      int got[2] = {-1, -1};
      OK(MPI_Scatterv(me == root ? buf : NULL, me == root ? cnt : NULL, me == root ? dsp : NULL,
                      me == root ? t : MPI_DATATYPE_NULL, got, cnt[me], t, root, w));
      for (int i = 0; i < cnt[me]; i++) CHECK(got[i] == 100 * me + i);
      CHECK(cnt[me] == 2 || got[cnt[me]] == -1);
      /* Allgatherv. */
      for (int i = 0; i < total; i++) buf[i] = -1;
      OK(MPI_Allgatherv(mine, cnt[me], t, buf, cnt, dsp, t, w));
      for (int r = 0; r < np; r++) {
        for (int i = 0; i < cnt[r]; i++) CHECK(buf[dsp[r] + i] == 100 * r + i);
        CHECK(buf[dsp[r] + cnt[r]] == -1);
      }
      /* An empty block's displacement means nothing: far past the buffer is valid. */
      {
        int far[8];
        for (int r = 0; r < np; r++) far[r] = cnt[r] ? dsp[r] : 1 << 24;
        for (int i = 0; i < total; i++) buf[i] = -1;
        OK(MPI_Allgatherv(mine, cnt[me], t, buf, cnt, far, t, w));
        for (int r = 0; r < np; r++)
          for (int i = 0; i < cnt[r]; i++) CHECK(buf[dsp[r] + i] == 100 * r + i);
      }
      /* Alltoallv and Alltoallw: every rank sends cnt[d] items to rank d, so rank d
       * receives cnt[d] items from each rank, placed in reverse rank order with gaps. */
      int sc[8], sd[8], rc[8], rd[8], rbd[8], sbd[8], sendv[8 * 3];
      for (int d = 0, o = 0; d < np; d++) {
        sc[d] = cnt[d];
        sd[d] = o;
        sbd[d] = o * (int)sizeof(int);
        for (int i = 0; i < cnt[d]; i++) sendv[o + i] = 1000 * me + 10 * d + i;
        o += cnt[d];
      }
      for (int s = np - 1, o = 0; s >= 0; s--) {
        rc[s] = cnt[me];
        rd[s] = o;
        rbd[s] = o * (int)sizeof(int);
        o += cnt[me] + 1;
      }
      for (int a = 0; a < 2; a++) {
        for (int i = 0; i < 8 * 3; i++) out[i] = -1;
        if (a == 0) {
          OK(MPI_Alltoallv(sendv, sc, sd, t, out, rc, rd, t, w));
        } else {
          MPI_Datatype st[8], rt[8];
          for (int r = 0; r < np; r++) st[r] = rt[r] = t;
          OK(MPI_Alltoallw(sendv, sc, sbd, st, out, rc, rbd, rt, w));
        }
        for (int s = 0; s < np; s++) {
          for (int i = 0; i < cnt[me]; i++) CHECK(out[rd[s] + i] == 1000 * s + 10 * me + i);
          CHECK(out[rd[s] + cnt[me]] == -1);
        }
      }
      /* Reduce_scatter: rank d gets cnt[d] sums of sendv-like vectors. */
      int rsin[8 * 3], rsout[2] = {-1, -1};
      for (int i = 0, o = 0; i < np; o += cnt[i], i++)
        for (int j = 0; j < cnt[i]; j++) rsin[o + j] = me + 10 * i + j;
      OK(MPI_Reduce_scatter(rsin, rsout, cnt, t, MPI_SUM, w));
      for (int j = 0; j < cnt[me]; j++)
        CHECK(rsout[j] == np * (np - 1) / 2 + np * (10 * me + j));
      CHECK(cnt[me] == 2 || rsout[cnt[me]] == -1);
      /* Reduce_scatter_block, zero and two items per rank. */
      for (int per = 0; per <= maxc; per += maxc) {
        int bin[8 * 2], bout[2] = {-1, -1};
        for (int i = 0; i < np * per; i++) bin[i] = me * i;
        OK(MPI_Reduce_scatter_block(bin, bout, per, t, MPI_MAX, w));
        for (int j = 0; j < per; j++) CHECK(bout[j] == (np - 1) * (me * per + j));
        if (per == 0) CHECK(bout[0] == -1);
      }
      /* Scan and exscan (rank 0's exscan result is undefined), zero and two items. */
      for (int n = 0; n <= 2; n += 2) {
        int v[2] = {me + 1, 2 * me}, sres[2] = {-1, -1}, eres[2] = {-1, -1};
        OK(MPI_Scan(v, sres, n, t, MPI_SUM, w));
        OK(MPI_Exscan(v, eres, n, t, MPI_SUM, w));
        for (int j = 0; j < n; j++) {
          CHECK(sres[j] == (j == 0 ? (me + 1) * (me + 2) / 2 : me * (me + 1)));
          if (me > 0) CHECK(eres[j] == (j == 0 ? me * (me + 1) / 2 : me * (me - 1)));
        }
        if (n == 0) CHECK(sres[0] == -1 && eres[0] == -1);
      }
    }
    /* Alltoallw with two different types (MPI_INT and the derived one) takes the checked
     * path too. */
    {
      int sv[8], rv[8], c1[8], d1[8];
      MPI_Datatype st[8], rt[8];
      for (int r = 0; r < np; r++) {
        sv[r] = me * 10 + r;
        c1[r] = 1;
        d1[r] = r * (int)sizeof(int);
        st[r] = r % 2 ? one : MPI_INT;
        rt[r] = r % 2 ? MPI_INT : one;
      }
      OK(MPI_Alltoallw(sv, c1, d1, st, rv, c1, d1, rt, w));
      for (int s = 0; s < np; s++) CHECK(rv[s] == s * 10 + me);
    }
    /* In place takes the checked path. */
    {
      int v[1] = {me + 1};
      OK(MPI_Scan(MPI_IN_PLACE, v, 1, MPI_INT, MPI_SUM, w));
      CHECK(v[0] == (me + 1) * (me + 2) / 2);
    }
    OK(MPI_Type_free(&one));
  }

  /* Argument errors keep their classes. */
  int c = calls, x[4] = {0};
  CHECK(MPI_Bcast(x, 1, MPI_INT, np, w) != MPI_SUCCESS);
  CHECK(handled(c) == MPI_ERR_ROOT);
  c = calls;
  CHECK(MPI_Bcast(x, -1, MPI_INT, 0, w) != MPI_SUCCESS);
  CHECK(handled(c) == MPI_ERR_COUNT);
  c = calls;
  CHECK(MPI_Allreduce(NULL, x, 2, MPI_INT, MPI_SUM, w) != MPI_SUCCESS);
  CHECK(handled(c) == MPI_ERR_BUFFER);
  float f[2] = {1, 2}, g[2];
  c = calls;
  CHECK(MPI_Allreduce(f, g, 2, MPI_FLOAT, MPI_BAND, w) != MPI_SUCCESS);
  CHECK(handled(c) == MPI_ERR_OP);
  c = calls;
  CHECK(MPI_Reduce(f, g, 2, MPI_DATATYPE_NULL, MPI_SUM, 0, w) != MPI_SUCCESS);
  CHECK(handled(c) == MPI_ERR_TYPE);
  c = calls;
  CHECK(MPI_Gather(x, 1, MPI_INT, x, 1, MPI_INT, -1, w) != MPI_SUCCESS);
  CHECK(handled(c) == MPI_ERR_ROOT);
  /* ...on the v-collectives and scans. Arguments only the root reads are tested on a
   * duplicate of MPI_COMM_SELF, so no rank waits for a root that failed. */
  MPI_Comm me1;
  OK(MPI_Comm_dup(MPI_COMM_SELF, &me1));
  OK(MPI_Comm_set_errhandler(me1, eh));
  int one_c[1] = {1}, zero_d[1] = {0}, neg_c[1] = {-1};
  c = calls;
  CHECK(MPI_Gatherv(x, 1, MPI_INT, x + 1, one_c, zero_d, MPI_INT, 1, me1) != MPI_SUCCESS);
  CHECK(handled(c) == MPI_ERR_ROOT);
  c = calls;
  CHECK(MPI_Gatherv(x, 1, MPI_INT, x + 1, neg_c, zero_d, MPI_INT, 0, me1) != MPI_SUCCESS);
  CHECK(handled(c) == MPI_ERR_COUNT);
  c = calls;
  CHECK(MPI_Gatherv(x, 2, MPI_INT, x + 1, one_c, zero_d, MPI_INT, 0, me1) != MPI_SUCCESS);
  CHECK(handled(c) == MPI_ERR_COUNT); /* the root's block is not its send count */
  c = calls;
  CHECK(MPI_Scatterv(NULL, one_c, zero_d, MPI_INT, x, 1, MPI_INT, 0, me1) != MPI_SUCCESS);
  CHECK(handled(c) == MPI_ERR_BUFFER);
  c = calls;
  CHECK(MPI_Scatterv(x, one_c, zero_d, MPI_DATATYPE_NULL, x + 1, 1, MPI_INT, 0, me1) !=
        MPI_SUCCESS);
  CHECK(handled(c) == MPI_ERR_TYPE);
  c = calls;
  CHECK(MPI_Alltoallv(x, one_c, zero_d, MPI_INT, x + 1, neg_c, zero_d, MPI_INT, me1) !=
        MPI_SUCCESS);
  CHECK(handled(c) == MPI_ERR_COUNT);
  {
    MPI_Datatype nt[1] = {MPI_DATATYPE_NULL}, it[1] = {MPI_INT};
    c = calls;
    CHECK(MPI_Alltoallw(x, one_c, zero_d, it, x + 1, one_c, zero_d, nt, me1) != MPI_SUCCESS);
    CHECK(handled(c) == MPI_ERR_TYPE);
    c = calls;
    CHECK(MPI_Alltoallw(x, one_c, zero_d, NULL, x + 1, one_c, zero_d, it, me1) != MPI_SUCCESS);
    CHECK(handled(c) == MPI_ERR_ARG);
  }
  c = calls;
  CHECK(MPI_Reduce_scatter(f, g, neg_c, MPI_FLOAT, MPI_SUM, me1) != MPI_SUCCESS);
  CHECK(handled(c) == MPI_ERR_COUNT);
  c = calls;
  CHECK(MPI_Reduce_scatter(f, NULL, one_c, MPI_FLOAT, MPI_SUM, me1) != MPI_SUCCESS);
  CHECK(handled(c) == MPI_ERR_BUFFER);
  OK(MPI_Comm_free(&me1));
  /* Errors every rank sees alike, on w. */
  {
    int cs[8], ds[8], all[8];
    for (int r = 0; r < np; r++) cs[r] = 1, ds[r] = 0;
    if (np > 1) { /* every block at 0: they overlap */
      c = calls;
      CHECK(MPI_Allgatherv(x, 1, MPI_INT, all, cs, ds, MPI_INT, w) != MPI_SUCCESS);
      CHECK(handled(c) == MPI_ERR_ARG);
    }
    for (int r = 0; r < np; r++) ds[r] = r;
    c = calls;
    CHECK(MPI_Allgatherv(x, 2, MPI_INT, all, cs, ds, MPI_INT, w) != MPI_SUCCESS);
    CHECK(handled(c) == MPI_ERR_COUNT);
    c = calls;
    CHECK(MPI_Alltoallv(x, cs, ds, MPI_INT, NULL, cs, ds, MPI_INT, w) != MPI_SUCCESS);
    CHECK(handled(c) == MPI_ERR_BUFFER);
  }
  c = calls;
  CHECK(MPI_Reduce_scatter_block(f, g, 1, MPI_FLOAT, MPI_BAND, w) != MPI_SUCCESS);
  CHECK(handled(c) == MPI_ERR_OP);
  c = calls;
  CHECK(MPI_Reduce_scatter_block(f, NULL, 1, MPI_FLOAT, MPI_SUM, w) != MPI_SUCCESS);
  CHECK(handled(c) == MPI_ERR_BUFFER);
  c = calls;
  CHECK(MPI_Scan(f, g, -1, MPI_FLOAT, MPI_SUM, w) != MPI_SUCCESS);
  CHECK(handled(c) == MPI_ERR_COUNT);
  c = calls;
  CHECK(MPI_Scan(f, g, 2, MPI_FLOAT, MPI_OP_NULL, w) != MPI_SUCCESS);
  CHECK(handled(c) == MPI_ERR_OP);
  c = calls;
  CHECK(MPI_Exscan(f, g, 1, MPI_DATATYPE_NULL, MPI_SUM, w) != MPI_SUCCESS);
  CHECK(handled(c) == MPI_ERR_TYPE);
  c = calls;
  CHECK(MPI_Exscan(NULL, g, 1, MPI_FLOAT, MPI_MAX, w) != MPI_SUCCESS);
  CHECK(handled(c) == MPI_ERR_BUFFER);
  /* A freed communicator goes to MPI_COMM_WORLD's handler, here errors-return. */
  OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  MPI_Comm gone;
  OK(MPI_Comm_dup(MPI_COMM_WORLD, &gone));
  MPI_Comm stale = gone;
  OK(MPI_Comm_free(&gone));
  int rc = MPI_Barrier(stale), cls = -1;
  OK(MPI_Error_class(rc, &cls));
  CHECK(cls == MPI_ERR_COMM);
  /* Everyone is still in step after the errors. */
  int one = 1, sum = 0;
  OK(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, w));
  CHECK(sum == np);
  OK(MPI_Errhandler_free(&eh));
  OK(MPI_Comm_free(&w));
  OK(MPI_Finalize());
  if (me == 0) printf("collfast ok at %d ranks\n", np);
  return 0;
}
