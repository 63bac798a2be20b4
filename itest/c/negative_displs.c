/* Negative displacements in the v/w collectives. MPI-4.1 §6.5 measures a displacement from
 * the buffer pointer and lets it be negative: only the bytes the blocks address must be
 * valid, and receive blocks must not overlap. Buffers here point into the middle of an
 * allocation; blocks lie below the pointer, around it or above it, in reverse rank order,
 * and empty blocks carry wild displacements. After each call every element of every
 * allocation is checked: blocks hold what was sent, everything else is untouched.
 * Gatherv, Scatterv, Allgatherv, Alltoallv and Alltoallw run blocking, nonblocking and
 * persistent, with MPI_INT (the fast path), a contiguous derived type (the checked path)
 * and, where weft stages them, a type with holes; then bytes at odd displacements, and the
 * errors that stay errors (a negative count, overlapping receive blocks). */
#include <limits.h>
#include <string.h>

#include "check.h"

#define POOL 2048
#define MID 1024
#define SENT (-1)
#define MAXN 64
/* An empty block's displacement means nothing; these point far outside any buffer. */
#define WILD(r) ((r) % 2 ? INT_MIN / 16 + (r) : INT_MAX / 16 - (r))

static int me, np;

/* A receive or send datatype: `ext` ints per item, of which `ndata` at `data` are data. */
typedef struct {
  MPI_Datatype dt;
  int ext, ndata, data[2];
} Ty;
static Ty T_INT, T_PAIR, T_HOLES;

/* The k-th int rank s sends rank t. */
static int val(int s, int t, int k) { return 1 + s * 100000 + t * 100 + k; }

/* Writes the c items of t at int offset o of base with the values s sends t_rank. */
static void put_block(int *base, long o, const Ty *t, int c, int s, int t_rank) {
  int k = 0;
  for (int j = 0; j < c; j++)
    for (int q = 0; q < t->ndata; q++) base[o + (long)j * t->ext + t->data[q]] = val(s, t_rank, k++);
}

static void fill(int *p, int n, int v) {
  for (int i = 0; i < n; i++) p[i] = v;
}

static void same(const int *got, const int *want, int n, const char *what) {
  for (int i = 0; i < n; i++) {
    if (got[i] != want[i]) {
      fprintf(stderr, "rank %d of %d: %s: element %d (offset %d from the pointer) is %d, want %d\n",
              me, np, what, i, i - MID, got[i], want[i]);
      CHECK(0);
    }
  }
}

/* Displacements (in units) for blocks of len[r] units: reverse rank order with one unit
 * between blocks; mode 0 puts them all below the buffer pointer, 1 around it, 2 above it.
 * An empty block gets a wild displacement. */
static void layout(const int *len, int mode, int *d) {
  int pos[MAXN] = {0}, p = 0;
  for (int r = np - 1; r >= 0; r--) {
    pos[r] = p;
    p += len[r] + 1;
  }
  int shift = mode == 0 ? p + 2 : mode == 1 ? p / 2 : -3;
  for (int r = 0; r < np; r++) d[r] = len[r] ? pos[r] - shift : WILD(r);
}

/* Items rank r gives (v-collectives): some ranks give none. */
static int cnt_of(int r) { return r % 3 == 2 ? 0 : r % 4 + 1; }
/* Items rank a sends rank b in the all-to-alls (symmetric, some zero). */
static int pair_cnt(int a, int b) { return (a + b) % 3 == 0 ? 0 : 1 + (a * b) % 3; }

/* Completes a call made blocking (how 0), nonblocking (1) or persistent (2). */
static void complete(int how, MPI_Request *req) {
  if (how == 0) return;
  if (how == 2) OK(MPI_Start(req));
  OK(MPI_Wait(req, MPI_STATUS_IGNORE));
  if (how == 2) OK(MPI_Request_free(req));
}

static int pool[POOL], want[POOL], spool[POOL];

static void gatherv(const Ty *t, int mode, int how, int in_place) {
  int cnt[MAXN] = {0}, d[MAXN] = {0}, sbuf[64];
  for (int r = 0; r < np; r++) cnt[r] = cnt_of(r);
  layout(cnt, mode, d);
  int root = (mode + how) % np, *rp = pool + MID;
  int sn = cnt[me] * t->ndata;
  fill(pool, POOL, SENT);
  fill(want, POOL, SENT);
  for (int k = 0; k < sn; k++) sbuf[k] = val(me, root, k);
  for (int r = 0; r < np; r++) put_block(want, MID + (long)d[r] * t->ext, t, cnt[r], r, root);
  const void *s = sbuf;
  if (in_place && me == root) {
    put_block(pool, MID + (long)d[me] * t->ext, t, cnt[me], me, root);
    s = MPI_IN_PLACE;
  }
  MPI_Request req;
  if (how == 0) OK(MPI_Gatherv(s, sn, MPI_INT, rp, cnt, d, t->dt, root, MPI_COMM_WORLD));
  if (how == 1) OK(MPI_Igatherv(s, sn, MPI_INT, rp, cnt, d, t->dt, root, MPI_COMM_WORLD, &req));
  if (how == 2)
    OK(MPI_Gatherv_init(s, sn, MPI_INT, rp, cnt, d, t->dt, root, MPI_COMM_WORLD, MPI_INFO_NULL,
                        &req));
  complete(how, &req);
  if (me == root) same(pool, want, POOL, "MPI_Gatherv receive buffer");
}

static void scatterv(const Ty *t, int mode, int how) {
  int cnt[MAXN] = {0}, d[MAXN] = {0}, rbuf[64], rwant[64];
  for (int r = 0; r < np; r++) cnt[r] = cnt_of(r);
  layout(cnt, mode, d);
  int root = (mode + how + 1) % np, rn = cnt[me] * t->ndata;
  fill(spool, POOL, -7);
  for (int r = 0; r < np; r++) put_block(spool, MID + (long)d[r] * t->ext, t, cnt[r], root, r);
  memcpy(want, spool, sizeof spool);
  fill(rbuf, 64, SENT);
  fill(rwant, 64, SENT);
  for (int k = 0; k < rn; k++) rwant[k] = val(root, me, k);
  const int *sp = spool + MID;
  MPI_Request req;
  if (how == 0) OK(MPI_Scatterv(sp, cnt, d, t->dt, rbuf, rn, MPI_INT, root, MPI_COMM_WORLD));
  if (how == 1)
    OK(MPI_Iscatterv(sp, cnt, d, t->dt, rbuf, rn, MPI_INT, root, MPI_COMM_WORLD, &req));
  if (how == 2)
    OK(MPI_Scatterv_init(sp, cnt, d, t->dt, rbuf, rn, MPI_INT, root, MPI_COMM_WORLD,
                         MPI_INFO_NULL, &req));
  complete(how, &req);
  same(rbuf, rwant, 64, "MPI_Scatterv receive buffer");
  same(spool, want, POOL, "MPI_Scatterv send buffer");
}

static void allgatherv(const Ty *t, int mode, int how, int in_place) {
  int cnt[MAXN] = {0}, d[MAXN] = {0}, sbuf[64];
  for (int r = 0; r < np; r++) cnt[r] = cnt_of(r);
  layout(cnt, mode, d);
  int sn = cnt[me] * t->ndata, *rp = pool + MID;
  fill(pool, POOL, SENT);
  fill(want, POOL, SENT);
  for (int k = 0; k < sn; k++) sbuf[k] = val(me, 0, k);
  for (int r = 0; r < np; r++) put_block(want, MID + (long)d[r] * t->ext, t, cnt[r], r, 0);
  const void *s = sbuf;
  if (in_place) {
    put_block(pool, MID + (long)d[me] * t->ext, t, cnt[me], me, 0);
    s = MPI_IN_PLACE;
  }
  MPI_Request req;
  if (how == 0) OK(MPI_Allgatherv(s, sn, MPI_INT, rp, cnt, d, t->dt, MPI_COMM_WORLD));
  if (how == 1) OK(MPI_Iallgatherv(s, sn, MPI_INT, rp, cnt, d, t->dt, MPI_COMM_WORLD, &req));
  if (how == 2)
    OK(MPI_Allgatherv_init(s, sn, MPI_INT, rp, cnt, d, t->dt, MPI_COMM_WORLD, MPI_INFO_NULL,
                           &req));
  complete(how, &req);
  same(pool, want, POOL, "MPI_Allgatherv receive buffer");
}

static void alltoallv(const Ty *t, int mode, int how, int in_place) {
  int sc[MAXN] = {0}, rc[MAXN] = {0}, sd[MAXN] = {0}, rd[MAXN] = {0};
  for (int r = 0; r < np; r++) sc[r] = pair_cnt(me, r), rc[r] = pair_cnt(r, me);
  layout(sc, mode, sd);
  layout(rc, (mode + 1) % 3, rd);
  fill(spool, POOL, -7);
  fill(pool, POOL, SENT);
  fill(want, POOL, SENT);
  for (int r = 0; r < np; r++) {
    put_block(spool, MID + (long)sd[r] * t->ext, t, sc[r], me, r);
    put_block(want, MID + (long)rd[r] * t->ext, t, rc[r], r, me);
  }
  const void *s = spool + MID;
  if (in_place) { /* the receive layout sends too: pair_cnt is symmetric */
    for (int r = 0; r < np; r++) put_block(pool, MID + (long)rd[r] * t->ext, t, rc[r], me, r);
    s = MPI_IN_PLACE;
  }
  int *rp = pool + MID;
  MPI_Request req;
  if (how == 0) OK(MPI_Alltoallv(s, sc, sd, t->dt, rp, rc, rd, t->dt, MPI_COMM_WORLD));
  if (how == 1) OK(MPI_Ialltoallv(s, sc, sd, t->dt, rp, rc, rd, t->dt, MPI_COMM_WORLD, &req));
  if (how == 2)
    OK(MPI_Alltoallv_init(s, sc, sd, t->dt, rp, rc, rd, t->dt, MPI_COMM_WORLD, MPI_INFO_NULL,
                          &req));
  complete(how, &req);
  same(pool, want, POOL, "MPI_Alltoallv receive buffer");
}

/* Alltoallw: the block between ranks a and b has type ty[(a + b) % 2]; displacements in
 * bytes. */
static void alltoallw(const Ty *ty0, const Ty *ty1, int mode, int how) {
  const Ty *ty[2] = {ty0, ty1};
  int sc[MAXN] = {0}, rc[MAXN] = {0}, sl[MAXN] = {0}, rl[MAXN] = {0}, sd[MAXN] = {0}, rd[MAXN] = {0};
  MPI_Datatype st[MAXN] = {0}, rt[MAXN] = {0};
  for (int r = 0; r < np; r++) {
    const Ty *t = ty[(me + r) % 2];
    sc[r] = pair_cnt(me, r), rc[r] = pair_cnt(r, me);
    sl[r] = sc[r] * t->ext, rl[r] = rc[r] * t->ext;
    st[r] = rt[r] = t->dt;
  }
  layout(sl, mode, sd);
  layout(rl, (mode + 2) % 3, rd);
  fill(spool, POOL, -7);
  fill(pool, POOL, SENT);
  fill(want, POOL, SENT);
  for (int r = 0; r < np; r++) {
    const Ty *t = ty[(me + r) % 2];
    put_block(spool, MID + sd[r], t, sc[r], me, r);
    put_block(want, MID + rd[r], t, rc[r], r, me);
    if (sc[r]) sd[r] *= (int)sizeof(int);
    if (rc[r]) rd[r] *= (int)sizeof(int);
  }
  const int *sp = spool + MID;
  int *rp = pool + MID;
  MPI_Request req;
  if (how == 0) OK(MPI_Alltoallw(sp, sc, sd, st, rp, rc, rd, rt, MPI_COMM_WORLD));
  if (how == 1) OK(MPI_Ialltoallw(sp, sc, sd, st, rp, rc, rd, rt, MPI_COMM_WORLD, &req));
  if (how == 2)
    OK(MPI_Alltoallw_init(sp, sc, sd, st, rp, rc, rd, rt, MPI_COMM_WORLD, MPI_INFO_NULL, &req));
  complete(how, &req);
  same(pool, want, POOL, "MPI_Alltoallw receive buffer");
}

/* Bytes: odd counts at odd (negative and mixed) displacements, unaligned. */
static void odd_bytes(int mode, int how) {
  static unsigned char rb[POOL], wb[POOL], sb[POOL];
  int cnt[MAXN] = {0}, d[MAXN] = {0}, sc[MAXN] = {0}, rc[MAXN] = {0}, sd[MAXN] = {0}, rd[MAXN] = {0};
  for (int r = 0; r < np; r++) cnt[r] = r % 3 == 2 ? 0 : 2 * r + 1;
  layout(cnt, mode, d);
  memset(rb, 0xEE, POOL);
  memset(wb, 0xEE, POOL);
  unsigned char mine[64];
  for (int k = 0; k < cnt[me]; k++) mine[k] = (unsigned char)(me * 31 + k + 1);
  for (int r = 0; r < np; r++)
    for (int k = 0; k < cnt[r]; k++) wb[MID + d[r] + k] = (unsigned char)(r * 31 + k + 1);
  MPI_Request req;
  if (how == 0) OK(MPI_Allgatherv(mine, cnt[me], MPI_CHAR, rb + MID, cnt, d, MPI_CHAR, MPI_COMM_WORLD));
  else OK(MPI_Iallgatherv(mine, cnt[me], MPI_CHAR, rb + MID, cnt, d, MPI_CHAR, MPI_COMM_WORLD, &req));
  complete(how == 0 ? 0 : 1, &req);
  CHECK(memcmp(rb, wb, POOL) == 0);
  /* Alltoallw on MPI_BYTE, byte displacements, odd lengths. */
  MPI_Datatype bt[MAXN] = {0};
  for (int r = 0; r < np; r++) {
    sc[r] = pair_cnt(me, r) * 3, rc[r] = pair_cnt(r, me) * 3, bt[r] = MPI_BYTE;
  }
  layout(sc, mode, sd);
  layout(rc, (mode + 1) % 3, rd);
  memset(sb, 0x77, POOL);
  memset(rb, 0xEE, POOL);
  memset(wb, 0xEE, POOL);
  for (int r = 0; r < np; r++) {
    for (int k = 0; k < sc[r]; k++) sb[MID + sd[r] + k] = (unsigned char)(me * 17 + r * 5 + k);
    for (int k = 0; k < rc[r]; k++) wb[MID + rd[r] + k] = (unsigned char)(r * 17 + me * 5 + k);
  }
  if (how == 0) OK(MPI_Alltoallw(sb + MID, sc, sd, bt, rb + MID, rc, rd, bt, MPI_COMM_WORLD));
  else OK(MPI_Ialltoallw(sb + MID, sc, sd, bt, rb + MID, rc, rd, bt, MPI_COMM_WORLD, &req));
  complete(how == 0 ? 0 : 1, &req);
  CHECK(memcmp(rb, wb, POOL) == 0);
}

/* A negative count is still MPI_ERR_COUNT; overlapping receive blocks are still refused.
 * Every rank passes the same arguments, so every rank fails alike. */
static void errors(void) {
  MPI_Comm c;
  OK(MPI_Comm_dup(MPI_COMM_WORLD, &c));
  OK(MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN));
  int cnt[MAXN] = {0}, d[MAXN] = {0}, x[8] = {0}, cls;
  for (int r = 0; r < np; r++) cnt[r] = 2, d[r] = -2 * (r + 1);
  cnt[0] = -1;
  for (int i = 0; i < 2; i++) {
    MPI_Datatype t = i ? T_PAIR.dt : MPI_INT;
    int rc = MPI_Allgatherv(x, 2, t, pool + MID, cnt, d, t, c);
    CHECK(rc != MPI_SUCCESS);
    OK(MPI_Error_class(rc, &cls));
    CHECK(cls == MPI_ERR_COUNT);
  }
  if (np > 1) { /* block 1 at -3..-1 overlaps block 0 at -2..0 */
    cnt[0] = 2;
    d[1] = -3;
    int rc = MPI_Allgatherv(x, 2, MPI_INT, pool + MID, cnt, d, MPI_INT, c);
    CHECK(rc != MPI_SUCCESS);
    OK(MPI_Error_class(rc, &cls));
    CHECK(cls == MPI_ERR_ARG);
  }
  OK(MPI_Comm_free(&c));
}

int main(int argc, char **argv) {
  OK(MPI_Init(&argc, &argv));
  OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
  OK(MPI_Comm_size(MPI_COMM_WORLD, &np));
  CHECK(np <= MAXN);
  T_INT = (Ty){MPI_INT, 1, 1, {0, 0}};
  T_PAIR = (Ty){MPI_DATATYPE_NULL, 2, 2, {0, 1}};
  OK(MPI_Type_contiguous(2, MPI_INT, &T_PAIR.dt));
  OK(MPI_Type_commit(&T_PAIR.dt));
  T_HOLES = (Ty){MPI_DATATYPE_NULL, 3, 2, {0, 2}};
  OK(MPI_Type_vector(2, 1, 2, MPI_INT, &T_HOLES.dt));
  OK(MPI_Type_commit(&T_HOLES.dt));
  for (int mode = 0; mode < 3; mode++) {
    for (int how = 0; how < 3; how++) {
      for (int ip = 0; ip < 2; ip++) {
        gatherv(&T_INT, mode, how, ip);
        gatherv(&T_PAIR, mode, how, ip);
        allgatherv(&T_INT, mode, how, ip);
        allgatherv(&T_PAIR, mode, how, ip);
        alltoallv(&T_INT, mode, how, ip);
        alltoallv(&T_PAIR, mode, how, ip);
      }
      scatterv(&T_INT, mode, how);
      scatterv(&T_PAIR, mode, how);
      scatterv(&T_HOLES, mode, how);
      alltoallw(&T_INT, &T_INT, mode, how);
      alltoallw(&T_INT, &T_PAIR, mode, how);
      alltoallw(&T_HOLES, &T_INT, mode, how);
    }
    odd_bytes(mode, 0);
    odd_bytes(mode, 1);
  }
  errors();
  OK(MPI_Type_free(&T_PAIR.dt));
  OK(MPI_Type_free(&T_HOLES.dt));
  OK(MPI_Finalize());
  return 0;
}
