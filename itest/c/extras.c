/* Functions added for MPICH's suite: MPI_Isendrecv(_replace), MPI_Bsend_init,
 * MPI_Reduce_local, MPI_Comm_idup, MPI_Ialltoallw, MPI_Message_c2f/f2c, the persistent
 * v-collectives, user operations on derived datatypes in (all)reduce, MPI_Alltoallw and
 * MPI_Scatterv with datatypes that have holes, ignored arguments of gather/scatter, the
 * status error field left alone by single completions, and their bad-input error classes.
 * Runs at any size. */
#include "check.h"
#include <string.h>

static int rank, size;

/* A user operation on pairs of ints (a derived type of 2 ints): elementwise
 * inout = in * 10 + inout, which is not commutative, so the order is visible. */
static void pairop(void *in, void *inout, int *len, MPI_Datatype *dt) {
  (void)dt;
  int *a = in, *b = inout;
  for (int i = 0; i < 2 * *len; i++) b[i] = a[i] * 10 + b[i];
}

int main(int argc, char **argv) {
  OK(MPI_Init(&argc, &argv));
  OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  int right = (rank + 1) % size, left = (rank + size - 1) % size;

  /* Isendrecv around the ring; the status names the receive. */
  {
    int out = 100 + rank, in = -1;
    MPI_Request r;
    MPI_Status st;
    OK(MPI_Isendrecv(&out, 1, MPI_INT, right, 7, &in, 1, MPI_INT, left, 7, MPI_COMM_WORLD, &r));
    out = -99; /* the send buffer is free once the call returned a request */
    OK(MPI_Wait(&r, &st));
    CHECK(in == 100 + left);
    CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 7);
    /* Replace: the buffer is sent and then overwritten. */
    int buf[2] = {rank, -rank};
    OK(MPI_Isendrecv_replace(buf, 2, MPI_INT, right, 8, left, 8, MPI_COMM_WORLD, &r));
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    CHECK(buf[0] == left && buf[1] == -left);
    /* MPI_PROC_NULL on both sides completes with the PROC_NULL status. */
    OK(MPI_Isendrecv(&out, 1, MPI_INT, MPI_PROC_NULL, 0, &in, 1, MPI_INT, MPI_PROC_NULL, 0,
                     MPI_COMM_WORLD, &r));
    OK(MPI_Wait(&r, &st));
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL);
    CHECK_RC(MPI_Isendrecv(&out, 1, MPI_INT, size, 0, &in, 1, MPI_INT, left, 0, MPI_COMM_WORLD,
                           &r),
             MPI_ERR_RANK);
    CHECK_RC(MPI_Isendrecv(&out, 1, MPI_INT, right, -5, &in, 1, MPI_INT, left, 0,
                           MPI_COMM_WORLD, &r),
             MPI_ERR_TAG);
  }

  /* Bsend_init: each start copies into the attached buffer and completes at once. */
  {
    int bsize = 4 * (MPI_BSEND_OVERHEAD + 64);
    char *bbuf = malloc(bsize);
    OK(MPI_Buffer_attach(bbuf, bsize));
    int v = 0, got = -1;
    MPI_Request pr;
    OK(MPI_Bsend_init(&v, 1, MPI_INT, right, 9, MPI_COMM_WORLD, &pr));
    for (int k = 0; k < 3; k++) {
      v = 1000 * k + rank;
      OK(MPI_Start(&pr));
      OK(MPI_Wait(&pr, MPI_STATUS_IGNORE));
      CHECK(pr != MPI_REQUEST_NULL); /* persistent: stays allocated */
      OK(MPI_Recv(&got, 1, MPI_INT, left, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
      CHECK(got == 1000 * k + left);
    }
    OK(MPI_Request_free(&pr));
    /* The large-count forms: the same buffered send; a count beyond an int is refused. */
    v = 77 + rank;
    OK(MPI_Bsend_c(&v, 1, MPI_INT, right, 10, MPI_COMM_WORLD));
    OK(MPI_Recv(&got, 1, MPI_INT, left, 10, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK(got == 77 + left);
    OK(MPI_Ibsend_c(&v, 1, MPI_INT, right, 11, MPI_COMM_WORLD, &pr));
    OK(MPI_Wait(&pr, MPI_STATUS_IGNORE));
    OK(MPI_Recv(&got, 1, MPI_INT, left, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK(got == 77 + left);
    CHECK_RC(MPI_Bsend_c(&v, (MPI_Count)1 << 31, MPI_INT, right, 10, MPI_COMM_WORLD),
             MPI_ERR_COUNT);
    pr = MPI_REQUEST_NULL;
    CHECK_RC(MPI_Ibsend_c(&v, (MPI_Count)1 << 31, MPI_INT, right, 11, MPI_COMM_WORLD, &pr),
             MPI_ERR_COUNT);
    CHECK(pr == MPI_REQUEST_NULL);
    void *p;
    int ps;
    OK(MPI_Buffer_detach(&p, &ps));
    free(bbuf);
    /* Without an attached buffer the start fails with MPI_ERR_BUFFER. */
    OK(MPI_Bsend_init(&v, 1, MPI_INT, right, 9, MPI_COMM_WORLD, &pr));
    CHECK_RC(MPI_Start(&pr), MPI_ERR_BUFFER);
    OK(MPI_Request_free(&pr));
  }

  /* Reduce_local with a predefined op, a user op, and bad input. */
  MPI_Op op;
  MPI_Datatype pair;
  OK(MPI_Op_create(pairop, 0, &op));
  OK(MPI_Type_contiguous(2, MPI_INT, &pair));
  OK(MPI_Type_commit(&pair));
  {
    int a[3] = {1, 2, 3}, b[3] = {10, 20, 30};
    OK(MPI_Reduce_local(a, b, 3, MPI_INT, MPI_SUM));
    CHECK(b[0] == 11 && b[1] == 22 && b[2] == 33);
    OK(MPI_Reduce_local(a, b, 3, MPI_INT, MPI_MAX));
    CHECK(b[2] == 33);
    int x[2] = {1, 2}, y[2] = {3, 4};
    OK(MPI_Reduce_local(x, y, 1, pair, op));
    CHECK(y[0] == 13 && y[1] == 24);
    CHECK_RC(MPI_Reduce_local(a, b, -1, MPI_INT, MPI_SUM), MPI_ERR_COUNT);
    CHECK_RC(MPI_Reduce_local(a, b, 1, MPI_INT, MPI_OP_NULL), MPI_ERR_OP);
  }

  /* A non-commutative user op on a derived type: x0 op (x1 op (... op x(n-1))). */
  {
    int mine[2] = {rank + 1, 2 * (rank + 1)}, res[2] = {-1, -1};
    OK(MPI_Allreduce(mine, res, 1, pair, op, MPI_COMM_WORLD));
    long want0 = 0, want1 = 0;
    for (int r = size - 1; r >= 0; r--) {
      if (r == size - 1) {
        want0 = r + 1;
        want1 = 2 * (r + 1);
      } else {
        want0 = (r + 1) * 10 + want0;
        want1 = 2 * (r + 1) * 10 + want1;
      }
    }
    CHECK(res[0] == (int)want0 && res[1] == (int)want1);
    int root = size - 1, rr[2] = {-1, -1};
    OK(MPI_Reduce(mine, rr, 1, pair, op, root, MPI_COMM_WORLD));
    if (rank == root) CHECK(rr[0] == (int)want0 && rr[1] == (int)want1);
    MPI_Request q;
    OK(MPI_Iallreduce(mine, res, 1, pair, op, MPI_COMM_WORLD, &q));
    OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
    CHECK(res[0] == (int)want0);
  }

  /* Comm_idup. */
  {
    MPI_Comm d;
    MPI_Request q;
    OK(MPI_Comm_idup(MPI_COMM_WORLD, &d, &q));
    OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
    int ds, res;
    OK(MPI_Comm_size(d, &ds));
    CHECK(ds == size);
    OK(MPI_Comm_compare(d, MPI_COMM_WORLD, &res));
    CHECK(res == MPI_CONGRUENT);
    OK(MPI_Comm_free(&d));
    CHECK_RC(MPI_Comm_idup(MPI_COMM_NULL, &d, &q), MPI_ERR_COMM);
  }

  /* Alltoallw with a strided type (holes) and Ialltoallw. */
  {
    MPI_Datatype every2;
    OK(MPI_Type_vector(2, 1, 2, MPI_INT, &every2)); /* ints 0 and 2 of 3 */
    OK(MPI_Type_commit(&every2));
    int n = size;
    int *s = malloc(sizeof(int) * 4 * n), *r = malloc(sizeof(int) * 4 * n);
    int *sc = malloc(sizeof(int) * n), *sd = malloc(sizeof(int) * n);
    int *rc = malloc(sizeof(int) * n), *rd = malloc(sizeof(int) * n);
    MPI_Datatype *st = malloc(sizeof(MPI_Datatype) * n), *rt = malloc(sizeof(MPI_Datatype) * n);
    for (int i = 0; i < 4 * n; i++) {
      s[i] = 1000 * rank + i;
      r[i] = -1;
    }
    for (int i = 0; i < n; i++) {
      sc[i] = 1;
      sd[i] = (int)(4 * i * sizeof(int)); /* bytes */
      st[i] = every2;
      rc[i] = 2;
      rd[i] = (int)(4 * i * sizeof(int));
      rt[i] = MPI_INT;
    }
    OK(MPI_Alltoallw(s, sc, sd, st, r, rc, rd, rt, MPI_COMM_WORLD));
    for (int i = 0; i < n; i++) {
      CHECK(r[4 * i] == 1000 * i + 4 * rank && r[4 * i + 1] == 1000 * i + 4 * rank + 2);
      CHECK(r[4 * i + 2] == -1);
    }
    for (int i = 0; i < 4 * n; i++) r[i] = -1;
    MPI_Request q;
    OK(MPI_Ialltoallw(s, sc, sd, st, r, rc, rd, rt, MPI_COMM_WORLD, &q));
    OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
    CHECK(r[0] == 4 * rank);
    /* Contiguous types: a nonblocking schedule. */
    for (int i = 0; i < 4 * n; i++) r[i] = -1;
    OK(MPI_Ialltoallw(s, rc, rd, rt, r, rc, rd, rt, MPI_COMM_WORLD, &q));
    OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
    for (int i = 0; i < n; i++)
      CHECK(r[4 * i] == 1000 * i + 4 * rank && r[4 * i + 1] == 1000 * i + 4 * rank + 1);
    MPI_Request pq;
    OK(MPI_Alltoallw_init(s, rc, rd, rt, r, rc, rd, rt, MPI_COMM_WORLD, MPI_INFO_NULL, &pq));
    for (int i = 0; i < 4 * n; i++) r[i] = -1;
    OK(MPI_Start(&pq));
    OK(MPI_Wait(&pq, MPI_STATUS_IGNORE));
    CHECK(r[1] == 4 * rank + 1);
    OK(MPI_Request_free(&pq));
    CHECK_RC(MPI_Ialltoallw(s, sc, sd, st, r, rc, rd, rt, MPI_COMM_WORLD, NULL), MPI_ERR_ARG);
    /* Holes on the receive side: staged, unpacked at completion, gaps untouched. */
    for (int i = 0; i < 4 * n; i++) r[i] = -1;
    OK(MPI_Ialltoallw(s, rc, rd, rt, r, sc, sd, st, MPI_COMM_WORLD, &q));
    OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
    for (int i = 0; i < n; i++) {
      CHECK(r[4 * i] == 1000 * i + 4 * rank && r[4 * i + 2] == 1000 * i + 4 * rank + 1);
      CHECK(r[4 * i + 1] == -1 && r[4 * i + 3] == -1);
    }
    /* The same as a persistent request, started twice. */
    MPI_Request wq;
    OK(MPI_Alltoallw_init(s, rc, rd, rt, r, sc, sd, st, MPI_COMM_WORLD, MPI_INFO_NULL, &wq));
    for (int k = 0; k < 2; k++) {
      for (int i = 0; i < 4 * n; i++) r[i] = -1;
      OK(MPI_Start(&wq));
      OK(MPI_Wait(&wq, MPI_STATUS_IGNORE));
      CHECK(r[2] == 4 * rank + 1 && r[1] == -1);
    }
    OK(MPI_Request_free(&wq));

    /* Scatterv of the strided type from the last rank. */
    int root = size - 1, got[2] = {-1, -1};
    int *cnt = malloc(sizeof(int) * n), *dsp = malloc(sizeof(int) * n);
    for (int i = 0; i < n; i++) {
      cnt[i] = 1;
      dsp[i] = i; /* in extents of every2 (3 ints) */
    }
    OK(MPI_Scatterv(s, cnt, dsp, every2, got, 2, MPI_INT, root, MPI_COMM_WORLD));
    CHECK(got[0] == 1000 * root + 3 * rank && got[1] == 1000 * root + 3 * rank + 2);
    free(cnt);
    free(dsp);
    OK(MPI_Type_free(&every2));
    free(s), free(r), free(sc), free(sd), free(rc), free(rd), free(st), free(rt);
  }

  /* Ignored arguments: the send type at a scatter's non-root and the receive type at a
   * gather's non-root may be MPI_DATATYPE_NULL. */
  {
    int *all = malloc(sizeof(int) * size), x = -1;
    for (int i = 0; i < size; i++) all[i] = 5 * i;
    if (rank == 0)
      OK(MPI_Scatter(all, 1, MPI_INT, &x, 1, MPI_INT, 0, MPI_COMM_WORLD));
    else
      OK(MPI_Scatter(NULL, -1, MPI_DATATYPE_NULL, &x, 1, MPI_INT, 0, MPI_COMM_WORLD));
    CHECK(x == 5 * rank);
    if (rank == 0)
      OK(MPI_Gather(MPI_IN_PLACE, -1, MPI_DATATYPE_NULL, all, 1, MPI_INT, 0, MPI_COMM_WORLD));
    else
      OK(MPI_Gather(&x, 1, MPI_INT, NULL, -1, MPI_DATATYPE_NULL, 0, MPI_COMM_WORLD));
    if (rank == 0)
      for (int i = 0; i < size; i++) CHECK(all[i] == 5 * i);
    free(all);
  }

  /* Persistent v-collectives, started twice. */
  {
    int n = size, *cnt = malloc(sizeof(int) * n), *dsp = malloc(sizeof(int) * n);
    int *all = malloc(sizeof(int) * 2 * n), mine = 0;
    for (int i = 0; i < n; i++) {
      cnt[i] = 1;
      dsp[i] = 2 * i;
    }
    MPI_Request q;
    OK(MPI_Allgatherv_init(&mine, 1, MPI_INT, all, cnt, dsp, MPI_INT, MPI_COMM_WORLD,
                           MPI_INFO_NULL, &q));
    for (int k = 0; k < 2; k++) {
      mine = 10 * k + rank;
      for (int i = 0; i < 2 * n; i++) all[i] = -1;
      OK(MPI_Start(&q));
      OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
      for (int i = 0; i < n; i++) CHECK(all[2 * i] == 10 * k + i && all[2 * i + 1] == -1);
    }
    OK(MPI_Request_free(&q));
    int got = -1;
    OK(MPI_Gatherv_init(&mine, 1, MPI_INT, all, cnt, dsp, MPI_INT, 0, MPI_COMM_WORLD,
                        MPI_INFO_NULL, &q));
    OK(MPI_Start(&q));
    OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
    if (rank == 0)
      for (int i = 0; i < n; i++) CHECK(all[2 * i] == 10 + i);
    OK(MPI_Request_free(&q));
    OK(MPI_Scatterv_init(all, cnt, dsp, MPI_INT, &got, 1, MPI_INT, 0, MPI_COMM_WORLD,
                         MPI_INFO_NULL, &q));
    OK(MPI_Start(&q));
    OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
    CHECK(got == 10 + rank);
    OK(MPI_Request_free(&q));
    int *sc = malloc(sizeof(int) * n), *rc = malloc(sizeof(int) * n);
    for (int i = 0; i < n; i++) sc[i] = 1;
    int *vals = malloc(sizeof(int) * n);
    for (int i = 0; i < n; i++) vals[i] = rank + i;
    OK(MPI_Reduce_scatter_init(vals, &got, sc, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL,
                               &q));
    OK(MPI_Start(&q));
    OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
    CHECK(got == n * (n - 1) / 2 + n * rank);
    OK(MPI_Request_free(&q));
    /* Alltoallv_init: one int to and from every rank. */
    int *one = malloc(sizeof(int) * n);
    for (int i = 0; i < n; i++) one[i] = i;
    OK(MPI_Alltoallv_init(vals, sc, one, MPI_INT, rc, sc, one, MPI_INT, MPI_COMM_WORLD,
                          MPI_INFO_NULL, &q));
    for (int k = 0; k < 2; k++) {
      for (int i = 0; i < n; i++) rc[i] = -1;
      OK(MPI_Start(&q));
      OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
      for (int i = 0; i < n; i++) CHECK(rc[i] == i + rank); /* vals[rank] of rank i */
    }
    OK(MPI_Request_free(&q));
    free(one);
    free(rc), free(vals), free(sc);
    free(cnt), free(dsp), free(all);
  }

  /* Single completions leave the status error field alone; Message_c2f/f2c round-trip. */
  {
    int v = rank, w = -1;
    MPI_Status st;
    st.MPI_ERROR = MPI_ERR_DIMS;
    OK(MPI_Sendrecv(&v, 1, MPI_INT, right, 3, &w, 1, MPI_INT, left, 3, MPI_COMM_WORLD, &st));
    CHECK(st.MPI_ERROR == MPI_ERR_DIMS && st.MPI_SOURCE == left);
    CHECK(MPI_Message_f2c(MPI_Message_c2f(MPI_MESSAGE_NULL)) == MPI_MESSAGE_NULL);
    CHECK(MPI_Message_f2c(MPI_Message_c2f(MPI_MESSAGE_NO_PROC)) == MPI_MESSAGE_NO_PROC);
    MPI_Message m;
    MPI_Request sq;
    OK(MPI_Isend(&v, 1, MPI_INT, rank, 4, MPI_COMM_WORLD, &sq));
    OK(MPI_Mprobe(rank, 4, MPI_COMM_WORLD, &m, &st));
    MPI_Message m2 = MPI_Message_f2c(MPI_Message_c2f(m));
    CHECK(m2 == m);
    MPI_Request q;
    st.MPI_ERROR = MPI_ERR_TOPOLOGY;
    OK(MPI_Imrecv(&w, 1, MPI_INT, &m2, &q));
    OK(MPI_Wait(&q, &st));
    CHECK(w == rank && st.MPI_SOURCE == rank && st.MPI_TAG == 4);
    CHECK(st.MPI_ERROR == MPI_ERR_TOPOLOGY);
    OK(MPI_Wait(&sq, MPI_STATUS_IGNORE));
  }

  /* Neighborhood collectives on a periodic ring and on a 2-D non-periodic grid. */
  {
    MPI_Comm ring;
    int dims[1] = {size}, periods[1] = {1};
    OK(MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring));
    int rr, sb[2], rb[2] = {-1, -1};
    OK(MPI_Comm_rank(ring, &rr));
    int lft = (rr + size - 1) % size, rgt = (rr + 1) % size;
    sb[0] = 10 * rr;     /* to the left neighbor */
    sb[1] = 10 * rr + 1; /* to the right neighbor */
    OK(MPI_Neighbor_alltoall(sb, 1, MPI_INT, rb, 1, MPI_INT, ring));
    CHECK(rb[0] == 10 * lft + 1 && rb[1] == 10 * rgt);
    int one = 7 * rr;
    OK(MPI_Neighbor_allgather(&one, 1, MPI_INT, rb, 1, MPI_INT, ring));
    CHECK(rb[0] == 7 * lft && rb[1] == 7 * rgt);
    OK(MPI_Comm_free(&ring));
    /* Without a topology: MPI_ERR_TOPOLOGY. */
    CHECK_RC(MPI_Neighbor_alltoall(sb, 1, MPI_INT, rb, 1, MPI_INT, MPI_COMM_WORLD),
             MPI_ERR_TOPOLOGY);
    MPI_Comm grid;
    int gd[2] = {0, 0}, gp[2] = {0, 0};
    OK(MPI_Dims_create(size, 2, gd));
    OK(MPI_Cart_create(MPI_COMM_WORLD, 2, gd, gp, 0, &grid));
    int gr, c[2], s4[4], r4[4] = {-5, -5, -5, -5};
    OK(MPI_Comm_rank(grid, &gr));
    OK(MPI_Cart_coords(grid, gr, 2, c));
    for (int k = 0; k < 4; k++) s4[k] = 100 * gr + k;
    OK(MPI_Neighbor_alltoall(s4, 1, MPI_INT, r4, 1, MPI_INT, grid));
    for (int d = 0; d < 2; d++) {
      int src, dst;
      OK(MPI_Cart_shift(grid, d, 1, &src, &dst));
      /* From the -1 neighbor: its block to its +1 neighbor; past an edge: untouched. */
      CHECK(r4[2 * d] == (src == MPI_PROC_NULL ? -5 : 100 * src + 2 * d + 1));
      CHECK(r4[2 * d + 1] == (dst == MPI_PROC_NULL ? -5 : 100 * dst + 2 * d));
    }
    OK(MPI_Comm_free(&grid));
  }

  /* The _x calls, Request_get_status with a status, Comm_idup_with_info. */
  {
    MPI_Count sz, lb, ext, elems;
    OK(MPI_Type_size_x(pair, &sz));
    CHECK(sz == 2 * (MPI_Count)sizeof(int));
    OK(MPI_Type_get_extent_x(pair, &lb, &ext));
    CHECK(lb == 0 && ext == 2 * (MPI_Count)sizeof(int));
    OK(MPI_Type_get_true_extent_x(pair, &lb, &ext));
    CHECK(lb == 0 && ext == 2 * (MPI_Count)sizeof(int));
    MPI_Status st;
    OK(MPI_Status_set_elements_x(&st, MPI_INT, 6));
    OK(MPI_Get_elements_x(&st, MPI_INT, &elems));
    CHECK(elems == 6);
    int cnt = -1;
    OK(MPI_Get_count(&st, pair, &cnt));
    CHECK(cnt == 3);
    CHECK_RC(MPI_Status_set_elements_x(&st, MPI_DATATYPE_NULL, 1), MPI_ERR_TYPE);

    int v = 40 + rank, w = -1, flag = 0;
    MPI_Request rq, sq;
    OK(MPI_Irecv(&w, 1, MPI_INT, left, 11, MPI_COMM_WORLD, &rq));
    OK(MPI_Isend(&v, 1, MPI_INT, right, 11, MPI_COMM_WORLD, &sq));
    while (!flag) OK(MPI_Request_get_status(rq, &flag, &st));
    CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 11);
    OK(MPI_Get_count(&st, MPI_INT, &cnt));
    CHECK(cnt == 1);
    CHECK(rq != MPI_REQUEST_NULL); /* get_status does not free it */
    OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    OK(MPI_Wait(&sq, MPI_STATUS_IGNORE));
    CHECK(w == 40 + left);

    MPI_Comm d;
    MPI_Request q;
    OK(MPI_Comm_idup_with_info(MPI_COMM_WORLD, MPI_INFO_NULL, &d, &q));
    OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
    OK(MPI_Barrier(d));
    OK(MPI_Comm_free(&d));
  }

  OK(MPI_Op_free(&op));
  OK(MPI_Type_free(&pair));
  OK(MPI_Finalize());
  return 0;
}
