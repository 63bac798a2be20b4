/* Nonblocking collectives on an intercommunicator (MPI-4.1 §6.12, §6.2.2) progress as real
 * nonblocking operations: a start call returns before the other group has entered, so a
 * program may start one, then exchange point-to-point messages the other group waits for
 * before it starts its part (these orders hang if a start runs the collective through).
 * Also: results of every form, a non-commutative user operation reduced in rank order, a
 * derived type whose holes stay untouched, and bad arguments. Halves of world: g = 0 low,
 * g = 1 high; needs 2 ranks (1 rank only checks nothing hangs). */
#include "check.h"
#include <string.h>

static int g, lrank, lsize, rsize;

/* Concatenation of decimal digit strings: (v, p) stands for the digits of v padded to the
 * power p = 10^len; associative, not commutative. */
static void concat(void *in, void *inout, int *len, MPI_Datatype *dt) {
  (void)dt;
  int *a = in, *b = inout;
  for (int i = 0; i < *len; i++) {
    b[2 * i] = a[2 * i] * b[2 * i + 1] + b[2 * i];
    b[2 * i + 1] = a[2 * i + 1] * b[2 * i + 1];
  }
}

/* The digits 1..n concatenated: 1, 12, 123, ... */
static int digits(int n) {
  int v = 0;
  for (int i = 1; i <= n; i++) v = 10 * v + i;
  return v;
}

/* The low group's leader starts its part only after a message that the high group sends
 * after starting its own: a start that waits for the other group hangs here. */
static void starts_do_not_wait(MPI_Comm ic) {
  int token = 5, x = 100 * g + lrank, sum = -1, b = -1, red[2] = {-1, -1};
  MPI_Request rq[4];
  MPI_Op op;
  OK(MPI_Op_create(concat, 0, &op));
  int mine[2] = {lrank + 1, 10};
  int root_low = lrank == 0 ? MPI_ROOT : MPI_PROC_NULL;
  if (g == 1) {
    OK(MPI_Ibarrier(ic, &rq[0]));
    OK(MPI_Iallreduce(&x, &sum, 1, MPI_INT, MPI_SUM, ic, &rq[1]));
    OK(MPI_Ibcast(&b, 1, MPI_INT, 0, ic, &rq[2]));
    OK(MPI_Ireduce(mine, red, 1, MPI_2INT, op, 0, ic, &rq[3]));
    if (lrank == 0) OK(MPI_Send(&token, 1, MPI_INT, 0, 7, ic));
    OK(MPI_Waitall(4, rq, MPI_STATUSES_IGNORE));
    CHECK(b == 42);
    int want = 0;
    for (int i = 0; i < rsize; i++) want += i;
    CHECK(sum == want);
  } else {
    if (lrank == 0) {
      int got = -1;
      OK(MPI_Recv(&got, 1, MPI_INT, 0, 7, ic, MPI_STATUS_IGNORE));
      CHECK(got == 5);
      b = 42;
    }
    /* The other low ranks must not finish the barrier before the high group entered;
     * the leader's Recv above proves it has. */
    OK(MPI_Ibarrier(ic, &rq[0]));
    OK(MPI_Iallreduce(&x, &sum, 1, MPI_INT, MPI_SUM, ic, &rq[1]));
    OK(MPI_Ibcast(&b, 1, MPI_INT, root_low, ic, &rq[2]));
    OK(MPI_Ireduce(mine, red, 1, MPI_2INT, op, root_low, ic, &rq[3]));
    int flag = 0;
    while (!flag) OK(MPI_Testall(4, rq, &flag, MPI_STATUSES_IGNORE));
    for (int i = 0; i < 4; i++) CHECK(rq[i] == MPI_REQUEST_NULL);
    CHECK(sum == 100 * rsize + rsize * (rsize - 1) / 2);
    if (lrank == 0) {
      CHECK(red[0] == digits(rsize));
    } else {
      CHECK(red[0] == -1 && red[1] == -1); /* MPI_PROC_NULL ranks receive nothing */
    }
  }
  OK(MPI_Op_free(&op));
}

/* A barrier started by the low group cannot complete before the high group has entered:
 * the high group enters only after the low leader tested it incomplete and said so. */
static void barrier_waits_for_the_other_group(MPI_Comm ic) {
  MPI_Request rq;
  int go = 1, flag = -1;
  if (g == 0) {
    OK(MPI_Ibarrier(ic, &rq));
    if (lrank == 0) {
      OK(MPI_Test(&rq, &flag, MPI_STATUS_IGNORE));
      CHECK(flag == 0);
      /* An active nonblocking collective cannot be freed. */
      CHECK_RC(MPI_Request_free(&rq), MPI_ERR_REQUEST);
      for (int i = 0; i < rsize; i++) OK(MPI_Send(&go, 1, MPI_INT, i, 8, ic));
    }
    OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    CHECK(rq == MPI_REQUEST_NULL);
  } else {
    OK(MPI_Recv(&go, 1, MPI_INT, 0, 8, ic, MPI_STATUS_IGNORE));
    OK(MPI_Ibarrier(ic, &rq));
    OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
  }
}

/* Every data-moving form: gather(v), scatter(v), allgather(v), alltoall(v/w), and an
 * allreduce of a derived type with a hole, outstanding together. */
static void results(MPI_Comm ic) {
  int n = rsize, i;
  int *ga = malloc(sizeof(int) * n), *gv = malloc(sizeof(int) * 2 * n);
  int *sc = malloc(sizeof(int) * n), *ag = malloc(sizeof(int) * n);
  int *a2s = malloc(sizeof(int) * n), *a2r = malloc(sizeof(int) * n);
  int *aws = malloc(sizeof(int) * n), *awr = malloc(sizeof(int) * n);
  int *cnt = malloc(sizeof(int) * n), *dsp = malloc(sizeof(int) * n), *bd = malloc(sizeof(int) * n);
  int *rev = malloc(sizeof(int) * n), *agv = malloc(sizeof(int) * 2 * n);
  MPI_Datatype *ty = malloc(sizeof(MPI_Datatype) * n);
  for (i = 0; i < n; i++) {
    ga[i] = gv[2 * i] = gv[2 * i + 1] = agv[2 * i] = agv[2 * i + 1] = ag[i] = a2r[i] = awr[i] = -1;
    rev[i] = n - 1 - i;
    sc[i] = 1000 + i;
    a2s[i] = 100 * g + 10 * lrank + i;
    aws[i] = 7 * a2s[i];
    cnt[i] = 1;
    dsp[i] = 2 * i;
    bd[i] = (int)(i * sizeof(int));
    ty[i] = MPI_INT;
  }
  int me = 10 * g + lrank, sv = -1, svv = -1;
  /* Low group's leader is the root of the rooted ones. */
  int root = g == 0 ? (lrank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
  MPI_Datatype hole;
  OK(MPI_Type_vector(2, 1, 2, MPI_INT, &hole));
  OK(MPI_Type_commit(&hole));
  int hin[3] = {me, -7, 2 * me}, hout[3] = {-1, -99, -1};
  MPI_Request rq[9];
  OK(MPI_Igather(&me, 1, MPI_INT, ga, 1, MPI_INT, root, ic, &rq[0]));
  OK(MPI_Igatherv(&me, 1, MPI_INT, gv, cnt, dsp, MPI_INT, root, ic, &rq[1]));
  OK(MPI_Iscatter(sc, 1, MPI_INT, &sv, 1, MPI_INT, root, ic, &rq[2]));
  OK(MPI_Iscatterv(sc, cnt, rev, MPI_INT, &svv, 1, MPI_INT, root, ic, &rq[3]));
  OK(MPI_Iallgather(&me, 1, MPI_INT, ag, 1, MPI_INT, ic, &rq[4]));
  OK(MPI_Ialltoall(a2s, 1, MPI_INT, a2r, 1, MPI_INT, ic, &rq[5]));
  OK(MPI_Ialltoallw(aws, cnt, bd, ty, awr, cnt, bd, ty, ic, &rq[6]));
  OK(MPI_Iallreduce(hin, hout, 1, hole, MPI_SUM, ic, &rq[7]));
  OK(MPI_Iallgatherv(&me, 1, MPI_INT, agv, cnt, dsp, MPI_INT, ic, &rq[8]));
  /* Complete them in reverse order, some by Waitany. */
  int idx;
  OK(MPI_Waitany(9, rq, &idx, MPI_STATUS_IGNORE));
  CHECK(idx >= 0 && idx < 9);
  for (i = 8; i >= 0; i--) OK(MPI_Wait(&rq[i], MPI_STATUS_IGNORE));
  int rsum = 0;
  for (i = 0; i < n; i++) rsum += 10 * (1 - g) + i;
  CHECK(hout[0] == rsum && hout[2] == 2 * rsum && hout[1] == -99);
  for (i = 0; i < n; i++) {
    int them = 10 * (1 - g) + i;
    CHECK(ag[i] == them);
    CHECK(agv[2 * i] == them && agv[2 * i + 1] == -1); /* gaps between blocks untouched */
    CHECK(a2r[i] == 100 * (1 - g) + 10 * i + lrank);
    CHECK(awr[i] == 7 * (100 * (1 - g) + 10 * i + lrank));
    if (g == 0 && lrank == 0) CHECK(ga[i] == them && gv[2 * i] == them && gv[2 * i + 1] == -1);
  }
  if (g == 1) {
    CHECK(sv == 1000 + lrank);
    CHECK(svv == 1000 + lsize - 1 - lrank); /* displs reversed (the root scatters to us) */
  } else {
    CHECK(sv == -1 && svv == -1);
    if (lrank != 0) CHECK(ga[0] == -1);
  }
  OK(MPI_Type_free(&hole));
  free(ga), free(gv), free(sc), free(ag), free(a2s), free(a2r), free(aws), free(awr);
  free(cnt), free(dsp), free(bd), free(ty), free(rev), free(agv);
}

static void bad_arguments(MPI_Comm ic) {
  MPI_Request rq = MPI_REQUEST_NULL;
  int x = 1, y = 0;
  CHECK_RC(MPI_Ibcast(&x, 1, MPI_INT, rsize, ic, &rq), MPI_ERR_ROOT);
  CHECK_RC(MPI_Ibcast(&x, 1, MPI_INT, -5, ic, &rq), MPI_ERR_ROOT);
  CHECK_RC(MPI_Iallreduce(&x, &y, 1, MPI_INT, MPI_OP_NULL, ic, &rq), MPI_ERR_OP);
  CHECK_RC(MPI_Iallreduce(MPI_IN_PLACE, &y, 1, MPI_INT, MPI_SUM, ic, &rq), MPI_ERR_BUFFER);
  CHECK_RC(MPI_Ibarrier(ic, NULL), MPI_ERR_ARG);
  CHECK_RC(MPI_Iallgather(&x, -1, MPI_INT, &y, 1, MPI_INT, ic, &rq), MPI_ERR_COUNT);
  /* Persistent forms on an intercommunicator are refused at init, naming the limitation. */
  CHECK_RC(MPI_Barrier_init(ic, MPI_INFO_NULL, &rq), MPI_ERR_UNSUPPORTED_OPERATION);
  CHECK_RC(MPI_Allreduce_init(&x, &y, 1, MPI_INT, MPI_SUM, ic, MPI_INFO_NULL, &rq),
           MPI_ERR_UNSUPPORTED_OPERATION);
  CHECK(rq == MPI_REQUEST_NULL);
  /* Nothing was left in flight by the refusals: a barrier still pairs up. */
  OK(MPI_Ibarrier(ic, &rq));
  OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
}

int main(int argc, char **argv) {
  int wrank, wsize;
  OK(MPI_Init(&argc, &argv));
  OK(MPI_Comm_rank(MPI_COMM_WORLD, &wrank));
  OK(MPI_Comm_size(MPI_COMM_WORLD, &wsize));
  if (wsize < 2) {
    OK(MPI_Finalize());
    return 0;
  }
  int half = wsize / 2;
  g = wrank >= half;
  MPI_Comm local, ic;
  OK(MPI_Comm_split(MPI_COMM_WORLD, g, wrank, &local));
  OK(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, g ? 0 : half, 99, &ic));
  OK(MPI_Comm_set_errhandler(ic, MPI_ERRORS_RETURN));
  OK(MPI_Comm_rank(ic, &lrank));
  OK(MPI_Comm_size(ic, &lsize));
  OK(MPI_Comm_remote_size(ic, &rsize));
  starts_do_not_wait(ic);
  barrier_waits_for_the_other_group(ic);
  results(ic);
  bad_arguments(ic);
  OK(MPI_Comm_free(&ic));
  OK(MPI_Comm_free(&local));
  OK(MPI_Finalize());
  return 0;
}
