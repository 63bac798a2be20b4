/* MPI_CHAR as a signed 8-bit integer in reductions and one-sided accumulates (as MPICH and
 * Open MPI take it), and the padded pair MPI_SHORT_INT (size 6, extent 8) in fetches and
 * accumulates. Reductions: MPI_Allreduce, MPI_Reduce and MPI_Reduce_local with sum, max, min
 * and bitwise or on MPI_CHAR buffers of 0, 1, 13 and 1000 elements. One-sided: every rank
 * accumulates into every rank's MPI_CHAR window (sum, max, min; sum also through a derived
 * type built from MPI_CHAR), MPI_Get_accumulate,
 * MPI_Fetch_and_op and MPI_Compare_and_swap on MPI_CHAR, and MPI_Fetch_and_op (MPI_NO_OP,
 * MPI_REPLACE), MPI_Get_accumulate and MPI_Accumulate (MPI_MAXLOC) on MPI_SHORT_INT. Any
 * rank count. With WEFT_CHAR_REDUCTIONS=0 (MPI-4.1's strict table) the arithmetic on MPI_CHAR
 * is MPI_ERR_OP (MPI_ERR_TYPE for compare-and-swap), also on a derived type built from
 * MPI_CHAR, and MPI_REPLACE still works. */
#include "check.h"
#include <stdlib.h>
#include <string.h>

static int rank, size;

/* Rank r's i-th char: small signed values whose sum over 7 ranks stays in range. */
static signed char val(int r, int i) { return (signed char)((i * 7 + r * 3) % 9 - 4); }

static void reductions(void) {
  static const int counts[] = {0, 1, 13, 1000};
  static char in[1000], out[1000];
  for (unsigned c = 0; c < sizeof counts / sizeof counts[0]; c++) {
    int n = counts[c];
    for (int i = 0; i < n; i++) in[i] = (char)val(rank, i);
    /* Sum. */
    OK(MPI_Allreduce(in, out, n, MPI_CHAR, MPI_SUM, MPI_COMM_WORLD));
    for (int i = 0; i < n; i++) {
      int s = 0;
      for (int r = 0; r < size; r++) s += val(r, i);
      CHECK((signed char)out[i] == s);
    }
    /* Max and min see negative chars as negative (signed). */
    OK(MPI_Allreduce(in, out, n, MPI_CHAR, MPI_MAX, MPI_COMM_WORLD));
    for (int i = 0; i < n; i++) {
      int m = -128;
      for (int r = 0; r < size; r++) m = val(r, i) > m ? val(r, i) : m;
      CHECK((signed char)out[i] == m);
    }
    memset(out, 0x55, sizeof out);
    OK(MPI_Reduce(in, out, n, MPI_CHAR, MPI_MIN, size - 1, MPI_COMM_WORLD));
    if (rank == size - 1) {
      for (int i = 0; i < n; i++) {
        int m = 127;
        for (int r = 0; r < size; r++) m = val(r, i) < m ? val(r, i) : m;
        CHECK((signed char)out[i] == m);
      }
    }
    OK(MPI_Allreduce(in, out, n, MPI_CHAR, MPI_BOR, MPI_COMM_WORLD));
    for (int i = 0; i < n; i++) {
      int m = 0;
      for (int r = 0; r < size; r++) m |= (unsigned char)val(r, i);
      CHECK((unsigned char)out[i] == m);
    }
    for (int i = 0; i < n; i++) out[i] = (char)val(rank + 1, i);
    OK(MPI_Reduce_local(in, out, n, MPI_CHAR, MPI_PROD));
    for (int i = 0; i < n; i++) CHECK((signed char)out[i] == val(rank, i) * val(rank + 1, i));
  }
  /* The signed and unsigned forms keep their own signedness. */
  signed char s = (signed char)(rank == 0 ? -100 : 100), smax = 0;
  unsigned char u = (unsigned char)(rank == 0 ? 200 : 100), umax = 0;
  OK(MPI_Allreduce(&s, &smax, 1, MPI_SIGNED_CHAR, MPI_MAX, MPI_COMM_WORLD));
  OK(MPI_Allreduce(&u, &umax, 1, MPI_UNSIGNED_CHAR, MPI_MAX, MPI_COMM_WORLD));
  CHECK(smax == (size == 1 ? -100 : 100) && umax == 200);
  char c = (char)(rank == 0 ? -100 : 100), cmax = 0;
  OK(MPI_Allreduce(&c, &cmax, 1, MPI_CHAR, MPI_MAX, MPI_COMM_WORLD));
  CHECK((signed char)cmax == (size == 1 ? -100 : 100));
}

#define NCHAR 37

static void char_accumulates(void) {
  char *base;
  MPI_Win win;
  OK(MPI_Win_allocate(NCHAR + 3, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
  memset(base, 0, NCHAR + 3);
  char mine[NCHAR], got[NCHAR];
  for (int i = 0; i < NCHAR; i++) mine[i] = (char)val(rank, i);
  OK(MPI_Win_fence(0, win));
  for (int t = 0; t < size; t++)
    OK(MPI_Accumulate(mine, NCHAR, MPI_CHAR, t, 0, NCHAR, MPI_CHAR, MPI_SUM, win));
  OK(MPI_Win_fence(0, win));
  for (int i = 0; i < NCHAR; i++) {
    int s = 0;
    for (int r = 0; r < size; r++) s += val(r, i);
    CHECK((signed char)base[i] == s);
  }
  /* The same sums through a derived type built from MPI_CHAR (one item of NCHAR chars). */
  MPI_Datatype row;
  OK(MPI_Type_contiguous(NCHAR, MPI_CHAR, &row));
  OK(MPI_Type_commit(&row));
  memset(base, 0, NCHAR);
  OK(MPI_Win_fence(0, win));
  for (int t = 0; t < size; t++) OK(MPI_Accumulate(mine, 1, row, t, 0, 1, row, MPI_SUM, win));
  OK(MPI_Win_fence(0, win));
  for (int i = 0; i < NCHAR; i++) {
    int s = 0;
    for (int r = 0; r < size; r++) s += val(r, i);
    CHECK((signed char)base[i] == s);
  }
  OK(MPI_Type_free(&row));
  /* Max of (signed) -4..4 after resetting to -100: what the ranks gave. */
  memset(base, (unsigned char)(signed char)-100, NCHAR);
  OK(MPI_Win_fence(0, win));
  for (int t = 0; t < size; t++)
    OK(MPI_Accumulate(mine, NCHAR, MPI_CHAR, t, 0, NCHAR, MPI_CHAR, MPI_MAX, win));
  OK(MPI_Win_fence(0, win));
  for (int i = 0; i < NCHAR; i++) {
    int m = -100;
    for (int r = 0; r < size; r++) m = val(r, i) > m ? val(r, i) : m;
    CHECK((signed char)base[i] == m);
  }
  OK(MPI_Win_fence(0, win));
  /* Get_accumulate with min: the result is the window as it was (the maxima). */
  int peer = (rank + 1) % size;
  OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, peer, 0, win));
  OK(MPI_Get_accumulate(mine, NCHAR, MPI_CHAR, got, NCHAR, MPI_CHAR, peer, 0, NCHAR, MPI_CHAR,
                        MPI_MIN, win));
  OK(MPI_Win_unlock(peer, win));
  for (int i = 0; i < NCHAR; i++) {
    int m = -100;
    for (int r = 0; r < size; r++) m = val(r, i) > m ? val(r, i) : m;
    CHECK((signed char)got[i] == m);
  }
  OK(MPI_Win_fence(0, win));
  /* Counter at byte NCHAR of rank 0: every rank adds rank+1 with MPI_Fetch_and_op. */
  if (rank == 0) base[NCHAR] = base[NCHAR + 1] = 0;
  OK(MPI_Win_fence(0, win));
  char one = (char)(rank + 1), old = 0;
  OK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
  OK(MPI_Fetch_and_op(&one, &old, MPI_CHAR, 0, NCHAR, MPI_SUM, win));
  OK(MPI_Win_unlock(0, win));
  CHECK((signed char)old >= 0 && (signed char)old < size * (size + 1) / 2);
  /* Compare_and_swap on MPI_CHAR: exactly one rank swaps 0 for its -(rank+1). */
  char cmp = 0, swap = (char)-(rank + 1), prev = 99;
  OK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
  OK(MPI_Compare_and_swap(&swap, &cmp, &prev, MPI_CHAR, 0, NCHAR + 1, win));
  OK(MPI_Win_unlock(0, win));
  int won = prev == 0, winners = 0;
  OK(MPI_Allreduce(&won, &winners, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
  CHECK(winners == 1);
  OK(MPI_Win_fence(0, win));
  if (rank == 0) {
    CHECK((signed char)base[NCHAR] == size * (size + 1) / 2);
    CHECK((signed char)base[NCHAR + 1] < 0 && (signed char)base[NCHAR + 1] >= -size);
  }
  OK(MPI_Win_fence(0, win));
  OK(MPI_Win_free(&win));
}

static void strict_char(void) {
  char *base, v = 3, got = 0, cmp = 0;
  MPI_Win win;
  int cls = MPI_SUCCESS;
  OK(MPI_Win_allocate(4, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
  OK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
  memset(base, 0, 4);
  OK(MPI_Win_fence(0, win));
  MPI_Error_class(MPI_Accumulate(&v, 1, MPI_CHAR, 0, 0, 1, MPI_CHAR, MPI_SUM, win), &cls);
  CHECK(cls == MPI_ERR_OP);
  MPI_Error_class(MPI_Fetch_and_op(&v, &got, MPI_CHAR, 0, 1, MPI_MAX, win), &cls);
  CHECK(cls == MPI_ERR_OP);
  MPI_Error_class(MPI_Compare_and_swap(&v, &cmp, &got, MPI_CHAR, 0, 2, win), &cls);
  CHECK(cls == MPI_ERR_TYPE);
  /* A derived type built from MPI_CHAR is held to the same table. */
  MPI_Datatype two;
  char pair[2] = {5, 6};
  OK(MPI_Type_contiguous(2, MPI_CHAR, &two));
  OK(MPI_Type_commit(&two));
  MPI_Error_class(MPI_Accumulate(pair, 1, two, 0, 0, 1, two, MPI_SUM, win), &cls);
  CHECK(cls == MPI_ERR_OP);
  MPI_Error_class(MPI_Get_accumulate(pair, 1, two, pair, 1, two, 0, 0, 1, two, MPI_BXOR, win),
                  &cls);
  CHECK(cls == MPI_ERR_OP);
  OK(MPI_Win_fence(0, win));
  if (rank == 0) OK(MPI_Accumulate(&v, 1, MPI_CHAR, 0, 3, 1, MPI_CHAR, MPI_REPLACE, win));
  if (rank == size - 1) OK(MPI_Accumulate(pair, 1, two, 0, 1, 1, two, MPI_REPLACE, win));
  OK(MPI_Win_fence(0, win));
  if (rank == 0) CHECK(base[3] == 3 && base[0] == 0 && base[1] == 5 && base[2] == 6);
  OK(MPI_Type_free(&two));
  char in = 1, out = 1;
  MPI_Error_class(MPI_Reduce_local(&in, &out, 1, MPI_CHAR, MPI_SUM), &cls);
  CHECK(cls == MPI_ERR_OP);
  OK(MPI_Win_free(&win));
}

struct short_int {
  short s;
  int i;
};

static void short_int_pairs(void) {
  int ext_ok = 0, sz = 0;
  MPI_Aint lb, ext;
  OK(MPI_Type_size(MPI_SHORT_INT, &sz));
  OK(MPI_Type_get_extent(MPI_SHORT_INT, &lb, &ext));
  ext_ok = sz == 6 && ext == (MPI_Aint)sizeof(struct short_int);
  CHECK(ext_ok);
  enum { N = 5 };
  struct short_int *base, mine[N], got[N], one, res;
  MPI_Win win;
  OK(MPI_Win_allocate(N * sizeof *base, sizeof *base, MPI_INFO_NULL, MPI_COMM_WORLD, &base,
                      &win));
  for (int k = 0; k < N; k++) {
    base[k].s = (short)(rank * 10 + k);
    base[k].i = rank;
    mine[k].s = (short)(rank + k);
    mine[k].i = rank;
  }
  OK(MPI_Win_fence(0, win));
  int peer = (rank + 1) % size;
  /* A fetch (MPI_NO_OP) of the last element, then a replace of it. */
  OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, peer, 0, win));
  OK(MPI_Fetch_and_op(NULL, &res, MPI_SHORT_INT, peer, N - 1, MPI_NO_OP, win));
  OK(MPI_Win_flush(peer, win));
  CHECK(res.s == peer * 10 + N - 1 && res.i == peer);
  one.s = -7;
  one.i = 1000 + rank;
  OK(MPI_Fetch_and_op(&one, &res, MPI_SHORT_INT, peer, N - 1, MPI_REPLACE, win));
  OK(MPI_Win_flush(peer, win));
  CHECK(res.s == peer * 10 + N - 1 && res.i == peer);
  OK(MPI_Get_accumulate(NULL, 0, MPI_SHORT_INT, got, N, MPI_SHORT_INT, peer, 0, N,
                        MPI_SHORT_INT, MPI_NO_OP, win));
  OK(MPI_Win_unlock(peer, win));
  for (int k = 0; k < N - 1; k++) CHECK(got[k].s == peer * 10 + k && got[k].i == peer);
  CHECK(got[N - 1].s == -7 && got[N - 1].i == 1000 + rank);
  OK(MPI_Win_fence(0, win));
  /* Every rank MAXLOCs its pairs into rank 0's first N-1. */
  OK(MPI_Accumulate(mine, N - 1, MPI_SHORT_INT, 0, 0, N - 1, MPI_SHORT_INT, MPI_MAXLOC, win));
  OK(MPI_Win_fence(0, win));
  if (rank == 0) {
    for (int k = 0; k < N - 1; k++) {
      /* Rank 0's own element k is 0*10+k at index 0; rank r gave r+k at index r. */
      int best = k, at = 0;
      for (int r = 1; r < size; r++)
        if (r + k > best) best = r + k, at = r;
      CHECK(base[k].s == best && base[k].i == at);
    }
  }
  OK(MPI_Win_fence(0, win));
  OK(MPI_Win_free(&win));
}

int main(int argc, char **argv) {
  OK(MPI_Init(&argc, &argv));
  OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  const char *e = getenv("WEFT_CHAR_REDUCTIONS");
  if (e && strcmp(e, "0") == 0) {
    strict_char();
  } else {
    reductions();
    char_accumulates();
  }
  short_int_pairs();
  OK(MPI_Barrier(MPI_COMM_WORLD));
  if (rank == 0) printf("rma_types ok\n");
  OK(MPI_Finalize());
  return 0;
}
