/* One-sided communication (MPI-4.1 ch. 12) on every window flavor: attributes, put/get
 * with derived datatypes on both sides, accumulates from every rank at once (atomicity),
 * fetch-and-op and compare-and-swap counters, fence, post-start-complete-wait, lock/unlock
 * shared and exclusive, lock_all, flush, request-based calls, dynamic and shared windows,
 * and the error classes of wrong synchronisation and bad arguments. Any rank count. */
#include "check.h"
#include <stdint.h>
#include <string.h>

static int rank, size;

static void attributes(MPI_Win win, void *base, MPI_Aint bytes, int unit, int flavor) {
  void *b = NULL;
  MPI_Aint *sz = NULL;
  int *u = NULL, *fl = NULL, *model = NULL, flag = 0;
  OK(MPI_Win_get_attr(win, MPI_WIN_BASE, &b, &flag));
  CHECK(flag && b == base);
  OK(MPI_Win_get_attr(win, MPI_WIN_SIZE, &sz, &flag));
  CHECK(flag && *sz == bytes);
  OK(MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, &u, &flag));
  CHECK(flag && *u == unit);
  OK(MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &fl, &flag));
  CHECK(flag && *fl == flavor);
  OK(MPI_Win_get_attr(win, MPI_WIN_MODEL, &model, &flag));
  CHECK(flag && *model == MPI_WIN_UNIFIED);
  MPI_Group wg, cg;
  int cmp;
  OK(MPI_Win_get_group(win, &wg));
  OK(MPI_Comm_group(MPI_COMM_WORLD, &cg));
  OK(MPI_Group_compare(wg, cg, &cmp));
  CHECK(cmp == MPI_IDENT);
  MPI_Group_free(&wg);
  MPI_Group_free(&cg);
  char name[MPI_MAX_OBJECT_NAME];
  int len;
  OK(MPI_Win_set_name(win, "weft window"));
  OK(MPI_Win_get_name(win, name, &len));
  CHECK(len == 11 && strcmp(name, "weft window") == 0);
  MPI_Info info;
  OK(MPI_Win_get_info(win, &info));
  int nkeys;
  OK(MPI_Info_get_nkeys(info, &nkeys));
  CHECK(nkeys > 0);
  MPI_Info_free(&info);
}

/* Fence epochs: every rank puts its block into every rank's window (a vector datatype on
 * the target side), then gets it back with a vector on the origin side. */
static void fence_put_get(MPI_Win win, int *mem, int nints) {
  /* Window layout: rank r's block of 8 ints at r*16, stride 2 (every other int). */
  MPI_Datatype vec;
  OK(MPI_Type_vector(8, 1, 2, MPI_INT, &vec));
  OK(MPI_Type_commit(&vec));
  for (int i = 0; i < nints; i++) mem[i] = -1;
  OK(MPI_Win_fence(0, win));
  int src[8];
  for (int i = 0; i < 8; i++) src[i] = rank * 100 + i;
  for (int t = 0; t < size; t++) OK(MPI_Put(src, 8, MPI_INT, t, rank * 16, 1, vec, win));
  OK(MPI_Win_fence(0, win));
  for (int r = 0; r < size; r++)
    for (int i = 0; i < 8; i++) {
      CHECK(mem[r * 16 + 2 * i] == r * 100 + i);
      CHECK(mem[r * 16 + 2 * i + 1] == -1);
    }
  int back[16];
  for (int i = 0; i < 16; i++) back[i] = -7;
  int t = (rank + 1) % size;
  OK(MPI_Get(back, 1, vec, t, rank * 16, 1, vec, win));
  /* A get of zero items and one to MPI_PROC_NULL do nothing. */
  OK(MPI_Get(back, 0, MPI_INT, t, 0, 0, MPI_INT, win));
  OK(MPI_Put(src, 8, MPI_INT, MPI_PROC_NULL, 0, 8, MPI_INT, win));
  OK(MPI_Win_fence(0, win));
  for (int i = 0; i < 8; i++) {
    CHECK(back[2 * i] == rank * 100 + i);
    CHECK(back[2 * i + 1] == -7);
  }
  OK(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
  MPI_Type_free(&vec);
}

/* Every rank adds to every element of rank 0's window at once, many times, under a shared
 * lock: nothing is lost (element-wise atomicity), for an integer, a double and a type the
 * hardware cannot update in one atomic (long double, under the target's lock). */
static void accumulate_atomicity(MPI_Win win, char *mem) {
  const int reps = 200;
  int64_t *i64 = (int64_t *)mem;
  double *dbl = (double *)(mem + 64);
  long double *ld = (long double *)(mem + 128);
  if (rank == 0) {
    for (int i = 0; i < 4; i++) i64[i] = 0, dbl[i] = 0, ld[i] = 0;
  }
  OK(MPI_Win_fence(0, win));
  OK(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
  int64_t one[4] = {1, 2, 3, 4};
  double half[4] = {0.5, 0.5, 0.5, 0.5};
  long double lone[4] = {1, 1, 1, 1};
  OK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
  for (int k = 0; k < reps; k++) {
    OK(MPI_Accumulate(one, 4, MPI_INT64_T, 0, 0, 4, MPI_INT64_T, MPI_SUM, win));
    OK(MPI_Accumulate(half, 4, MPI_DOUBLE, 0, 64, 4, MPI_DOUBLE, MPI_SUM, win));
    OK(MPI_Accumulate(lone, 4, MPI_LONG_DOUBLE, 0, 128, 4, MPI_LONG_DOUBLE, MPI_SUM, win));
  }
  OK(MPI_Win_unlock(0, win));
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
    for (int i = 0; i < 4; i++) {
      CHECK(i64[i] == (int64_t)(i + 1) * reps * size);
      CHECK(dbl[i] == 0.5 * reps * size);
      CHECK(ld[i] == (long double)reps * size);
    }
    OK(MPI_Win_unlock(0, win));
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

/* A counter at rank 0 taken with fetch-and-op by every rank: every value is fetched once. */
static void fetch_and_op_counter(MPI_Win win, char *mem) {
  const int reps = 100;
  int64_t *ctr = (int64_t *)mem;
  if (rank == 0) *ctr = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  int64_t mine[100], one = 1;
  OK(MPI_Win_lock_all(0, win));
  for (int k = 0; k < reps; k++)
    OK(MPI_Fetch_and_op(&one, &mine[k], MPI_INT64_T, 0, 0, MPI_SUM, win));
  int64_t now;
  OK(MPI_Fetch_and_op(NULL, &now, MPI_INT64_T, 0, 0, MPI_NO_OP, win));
  CHECK(now >= reps);
  OK(MPI_Win_unlock_all(win));
  int64_t *all = malloc(sizeof(int64_t) * reps * size);
  OK(MPI_Allgather(mine, reps, MPI_INT64_T, all, reps, MPI_INT64_T, MPI_COMM_WORLD));
  char *seen = calloc(reps * size, 1);
  for (int i = 0; i < reps * size; i++) {
    CHECK(all[i] >= 0 && all[i] < reps * size);
    CHECK(!seen[all[i]]);
    seen[all[i]] = 1;
  }
  free(seen);
  free(all);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) CHECK(*ctr == (int64_t)reps * size);
  MPI_Barrier(MPI_COMM_WORLD);
}

/* Compare-and-swap: each rank claims slots of a table at rank size-1 by swapping -1 for
 * its rank; every slot ends up claimed by exactly one rank. Then a 1-byte and a 2-byte
 * CAS. */
static void compare_and_swap(MPI_Win win, char *mem) {
  const int slots = 16;
  int *table = (int *)mem;
  int t = size - 1;
  if (rank == t)
    for (int i = 0; i < slots; i++) table[i] = -1;
  MPI_Barrier(MPI_COMM_WORLD);
  int claimed = 0, none = -1;
  OK(MPI_Win_lock(MPI_LOCK_SHARED, t, 0, win));
  for (int i = 0; i < slots; i++) {
    int old;
    OK(MPI_Compare_and_swap(&rank, &none, &old, MPI_INT, t, i * sizeof(int), win));
    if (old == -1) claimed++;
  }
  OK(MPI_Win_unlock(t, win));
  int total;
  OK(MPI_Allreduce(&claimed, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
  CHECK(total == slots);
  if (rank == t)
    for (int i = 0; i < slots; i++) CHECK(table[i] >= 0 && table[i] < size);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    unsigned char c = 7, got;
    OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, win));
    unsigned char cur;
    OK(MPI_Get(&cur, 1, MPI_BYTE, t, 64 * 4, 1, MPI_BYTE, win));
    OK(MPI_Win_flush(t, win));
    OK(MPI_Compare_and_swap(&c, &cur, &got, MPI_BYTE, t, 64 * 4, win));
    CHECK(got == cur);
    OK(MPI_Get(&cur, 1, MPI_BYTE, t, 64 * 4, 1, MPI_BYTE, win));
    OK(MPI_Win_flush(t, win));
    CHECK(cur == 7);
    short s = 300, cmp = 1, sg;
    OK(MPI_Compare_and_swap(&s, &cmp, &sg, MPI_SHORT, t, 66 * 2, win)); /* no match */
    OK(MPI_Win_unlock(t, win));
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

/* Post-start-complete-wait in a ring: rank r exposes to r-1 and accesses r+1. */
static void pscw_ring(MPI_Win win, int *mem) {
  MPI_Group world, to, from;
  OK(MPI_Comm_group(MPI_COMM_WORLD, &world));
  int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  OK(MPI_Group_incl(world, 1, &next, &to));
  OK(MPI_Group_incl(world, 1, &prev, &from));
  for (int round = 0; round < 3; round++) {
    mem[0] = -1;
    OK(MPI_Win_post(from, 0, win));
    OK(MPI_Win_start(to, 0, win));
    int v = rank * 10 + round;
    OK(MPI_Put(&v, 1, MPI_INT, next, 0, 1, MPI_INT, win));
    OK(MPI_Win_complete(win));
    if (round == 1) {
      int flag = 0;
      while (!flag) OK(MPI_Win_test(win, &flag));
    } else {
      OK(MPI_Win_wait(win));
    }
    CHECK(mem[0] == prev * 10 + round);
  }
  MPI_Group_free(&world);
  MPI_Group_free(&to);
  MPI_Group_free(&from);
}

/* A read-modify-write that is not atomic by itself, made atomic by the exclusive lock. */
static void exclusive_increments(MPI_Win win, int *mem) {
  if (rank == 0) mem[0] = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  for (int k = 0; k < 20; k++) {
    int v;
    OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
    OK(MPI_Get(&v, 1, MPI_INT, 0, 0, 1, MPI_INT, win));
    OK(MPI_Win_flush(0, win));
    v++;
    OK(MPI_Put(&v, 1, MPI_INT, 0, 0, 1, MPI_INT, win));
    OK(MPI_Win_unlock(0, win));
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) CHECK(mem[0] == 20 * size);
  MPI_Barrier(MPI_COMM_WORLD);
}

/* Request-based calls, get_accumulate with a derived result type and MPI_REPLACE on bytes. */
static void requests_and_get_accumulate(MPI_Win win, int *mem) {
  int t = (rank + 1) % size;
  mem[32] = rank;
  MPI_Barrier(MPI_COMM_WORLD);
  OK(MPI_Win_lock(MPI_LOCK_SHARED, t, 0, win));
  int got = -1, v = 1000 + rank;
  MPI_Request rq[2];
  OK(MPI_Rget(&got, 1, MPI_INT, t, 32, 1, MPI_INT, win, &rq[0]));
  OK(MPI_Wait(&rq[0], MPI_STATUS_IGNORE));
  CHECK(got == t);
  OK(MPI_Rput(&v, 1, MPI_INT, t, 33, 1, MPI_INT, win, &rq[0]));
  int add[2] = {5, 6}, old[4] = {-1, -1, -1, -1};
  MPI_Datatype every_other;
  OK(MPI_Type_vector(2, 1, 2, MPI_INT, &every_other));
  OK(MPI_Type_commit(&every_other));
  OK(MPI_Win_flush(t, win));
  OK(MPI_Rget_accumulate(add, 2, MPI_INT, old, 1, every_other, t, 32, 2, MPI_INT, MPI_SUM, win,
                         &rq[1]));
  OK(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
  CHECK(old[0] == t && old[2] == 1000 + rank && old[1] == -1 && old[3] == -1);
  OK(MPI_Win_flush_local(t, win));
  OK(MPI_Get(&got, 1, MPI_INT, t, 32, 1, MPI_INT, win));
  OK(MPI_Win_flush(t, win));
  CHECK(got == t + 5);
  char bytes[3] = {'a', 'b', 'c'};
  OK(MPI_Accumulate(bytes, 3, MPI_BYTE, t, 34, 3, MPI_BYTE, MPI_REPLACE, win));
  char back[3];
  OK(MPI_Get_accumulate(NULL, 0, MPI_BYTE, back, 3, MPI_BYTE, t, 34, 3, MPI_BYTE, MPI_NO_OP,
                        win));
  OK(MPI_Win_flush_all(win));
  CHECK(memcmp(back, "abc", 3) == 0);
  OK(MPI_Win_unlock(t, win));
  MPI_Type_free(&every_other);
  MPI_Barrier(MPI_COMM_WORLD);
}

/* Synchronisation and argument errors come back through the window's handler. */
static int handler_calls;
static void count_errors(MPI_Win *w, int *code, ...) {
  (void)w;
  (void)code;
  handler_calls++;
}

static void errors(MPI_Win win) {
  OK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
  int v = 1, cls;
  /* No epoch open. */
  MPI_Error_class(MPI_Put(&v, 1, MPI_INT, 0, 0, 1, MPI_INT, win), &cls);
  CHECK(cls == MPI_ERR_RMA_SYNC);
  MPI_Error_class(MPI_Win_unlock(0, win), &cls);
  CHECK(cls == MPI_ERR_RMA_SYNC);
  MPI_Error_class(MPI_Win_complete(win), &cls);
  CHECK(cls == MPI_ERR_RMA_SYNC);
  MPI_Error_class(MPI_Win_lock(12345, 0, 0, win), &cls);
  CHECK(cls == MPI_ERR_LOCKTYPE);
  MPI_Error_class(MPI_Win_attach(win, &v, sizeof v), &cls);
  CHECK(cls == MPI_ERR_RMA_FLAVOR);
  OK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
  /* Past the end of rank 0's window, and a bad rank. */
  MPI_Error_class(MPI_Put(&v, 1, MPI_INT, 0, 1 << 20, 1, MPI_INT, win), &cls);
  CHECK(cls == MPI_ERR_RMA_RANGE);
  MPI_Error_class(MPI_Put(&v, 1, MPI_INT, size, 0, 1, MPI_INT, win), &cls);
  CHECK(cls == MPI_ERR_RANK);
  MPI_Error_class(MPI_Accumulate(&v, 1, MPI_INT, 0, 0, 1, MPI_INT, MPI_OP_NULL, win), &cls);
  CHECK(cls == MPI_ERR_OP);
  MPI_Error_class(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win), &cls);
  CHECK(cls == MPI_ERR_RMA_SYNC);
  MPI_Error_class(MPI_Win_fence(0, win), &cls);
  CHECK(cls == MPI_ERR_RMA_SYNC);
  OK(MPI_Win_unlock(0, win));
  MPI_Errhandler eh;
  OK(MPI_Win_create_errhandler(count_errors, &eh));
  OK(MPI_Win_set_errhandler(win, eh));
  MPI_Errhandler back;
  OK(MPI_Win_get_errhandler(win, &back));
  CHECK(back == eh);
  MPI_Errhandler_free(&back);
  int calls = handler_calls;
  MPI_Win_call_errhandler(win, MPI_ERR_OTHER);
  CHECK(handler_calls == calls + 1);
  MPI_Put(&v, 1, MPI_INT, 0, 0, 1, MPI_INT, win);
  CHECK(handler_calls == calls + 2);
  MPI_Errhandler_free(&eh);
  OK(MPI_Win_set_errhandler(win, MPI_ERRORS_ARE_FATAL));
}

/* Window attributes of user keyvals: the delete callback runs at free. */
static int deleted;
static int delete_fn(MPI_Win w, int k, void *v, void *extra) {
  (void)w;
  (void)k;
  (void)extra;
  CHECK(v == (void *)&deleted);
  deleted++;
  return MPI_SUCCESS;
}

/* Every way a call can take, with the same results: contiguous origins (moved straight
 * from and into the caller's buffer) and vector origins (staged), odd sizes and zero length,
 * accumulates on aligned elements (CPU atomics where the window has them) and on unaligned
 * ones (under the target's lock), fetch-and-op and get-accumulate into contiguous and vector
 * results, MPI_NO_OP reads. Each rank works on its right neighbour's window and its own,
 * in its own 512-byte slice of a 4096-byte window (at most 7 ranks use slices). */
static void paths_agree(MPI_Win win, char *mem) {
  if (size > 7) return;
  const int sizes[] = {1, 3, 7, 13, 255, 0};
  MPI_Datatype every_other;
  OK(MPI_Type_vector(8, 1, 2, MPI_INT64_T, &every_other));
  OK(MPI_Type_commit(&every_other));
  int right = (rank + 1) % size;
  for (int pass = 0; pass < 2; pass++) {
    int t = pass ? rank : right;
    int from = pass ? rank : (rank + size - 1) % size; /* who works on this rank's slice */
    MPI_Aint slice = 512 * (MPI_Aint)rank;  /* the slice this rank works on at t */
    char *mine = mem + 512 * (MPI_Aint)from; /* the slice worked on here */
    memset(mem + 512 * (MPI_Aint)rank, 0, 512);
    if (!pass) memset(mem + 512 * (MPI_Aint)from, 0, 512);
    OK(MPI_Win_fence(0, win));
    /* Odd-sized puts at odd offsets, read back contiguous and through a staged vector. */
    char src[256], back[256], vback[512];
    for (int k = 0; k < 6; k++) {
      int n = sizes[k];
      for (int i = 0; i < n; i++) src[i] = (char)(rank * 31 + n + i);
      OK(MPI_Put(src, n, MPI_BYTE, t, slice + 1 + (k & 1), n, MPI_BYTE, win));
      OK(MPI_Win_fence(0, win));
      memset(back, 0x55, sizeof back);
      memset(vback, 0x55, sizeof vback);
      OK(MPI_Get(back, n, MPI_BYTE, t, slice + 1 + (k & 1), n, MPI_BYTE, win));
      MPI_Datatype strided;
      OK(MPI_Type_vector(n ? n : 1, 1, 2, MPI_BYTE, &strided));
      OK(MPI_Type_commit(&strided));
      OK(MPI_Get(vback, n ? 1 : 0, strided, t, slice + 1 + (k & 1), n, MPI_BYTE, win));
      OK(MPI_Win_fence(0, win));
      for (int i = 0; i < n; i++) {
        CHECK(back[i] == src[i]);
        CHECK(vback[2 * i] == src[i] && vback[2 * i + 1] == 0x55);
      }
      CHECK(back[n] == 0x55);
      MPI_Type_free(&strided);
    }
    /* Accumulates: 8 aligned int64 (contiguous origin) and the same through a vector
     * origin (staged) must add up alike; 4 unaligned int32 at an odd offset. */
    int64_t lin[8], add[16], res[8], vres[16];
    for (int i = 0; i < 16; i++) add[i] = i % 2 ? 1000 : i / 2 + 1;
    for (int i = 0; i < 8; i++) lin[i] = i + 1;
    MPI_Aint at = slice + 256;
    OK(MPI_Accumulate(lin, 8, MPI_INT64_T, t, at, 8, MPI_INT64_T, MPI_SUM, win));
    OK(MPI_Win_fence(0, win));
    OK(MPI_Accumulate(add, 1, every_other, t, at, 8, MPI_INT64_T, MPI_SUM, win));
    OK(MPI_Win_fence(0, win));
    OK(MPI_Get_accumulate(lin, 8, MPI_INT64_T, res, 8, MPI_INT64_T, t, at, 8, MPI_INT64_T,
                          MPI_SUM, win));
    OK(MPI_Win_fence(0, win));
    for (int i = 0; i < 16; i++) vres[i] = -1;
    OK(MPI_Get_accumulate(NULL, 0, MPI_INT64_T, vres, 1, every_other, t, at, 8, MPI_INT64_T,
                          MPI_NO_OP, win));
    OK(MPI_Win_fence(0, win));
    for (int i = 0; i < 8; i++) {
      CHECK(res[i] == 2 * (i + 1));
      CHECK(vres[2 * i] == 3 * (i + 1) && vres[2 * i + 1] == -1);
    }
    int32_t odd[4] = {5, 6, 7, 8};
    OK(MPI_Accumulate(odd, 4, MPI_INT32_T, t, slice + 401, 4, MPI_INT32_T, MPI_SUM, win));
    OK(MPI_Accumulate(odd, 4, MPI_INT32_T, t, slice + 401, 4, MPI_INT32_T, MPI_SUM, win));
    OK(MPI_Win_fence(0, win));
    int64_t f, one = 7, r2 = 0;
    OK(MPI_Fetch_and_op(&one, &f, MPI_INT64_T, t, at, MPI_SUM, win));
    OK(MPI_Win_fence(0, win));
    OK(MPI_Fetch_and_op(NULL, &r2, MPI_INT64_T, t, at, MPI_NO_OP, win));
    /* A zero-count accumulate does nothing. */
    OK(MPI_Accumulate(lin, 0, MPI_INT64_T, t, at, 0, MPI_INT64_T, MPI_SUM, win));
    OK(MPI_Win_fence(0, win));
    CHECK(f == 3 && r2 == 10);
    /* This rank's slice, as the one working on it left it. */
    int32_t o4[4];
    memcpy(o4, mine + 401, sizeof o4);
    for (int i = 0; i < 4; i++) CHECK(o4[i] == 2 * (5 + i));
    int64_t m8[8];
    memcpy(m8, mine + 256, sizeof m8);
    for (int i = 0; i < 8; i++) CHECK(m8[i] == 3 * (i + 1) + (i == 0 ? 7 : 0));
    OK(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
  }
  MPI_Type_free(&every_other);
}

static void run_flavor(int flavor) {
  const int nints = 64 + 16 * size;
  const MPI_Aint bytes = nints * sizeof(int);
  MPI_Win win;
  int *mem = NULL;
  if (flavor == MPI_WIN_FLAVOR_CREATE) {
    OK(MPI_Alloc_mem(bytes, MPI_INFO_NULL, &mem));
    OK(MPI_Win_create(mem, bytes, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
  } else if (flavor == MPI_WIN_FLAVOR_ALLOCATE) {
    OK(MPI_Win_allocate(bytes, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
  } else {
    MPI_Comm node;
    OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
    int nsize;
    MPI_Comm_size(node, &nsize);
    MPI_Comm_free(&node);
    if (nsize != size) return; /* a shared window over the world needs one node */
    OK(MPI_Win_allocate_shared(bytes, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
  }
  attributes(win, mem, bytes, sizeof(int), flavor);
  int key;
  OK(MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, delete_fn, &key, NULL));
  OK(MPI_Win_set_attr(win, key, &deleted));
  void *got;
  int flag;
  OK(MPI_Win_get_attr(win, key, &got, &flag));
  CHECK(flag && got == &deleted);
  fence_put_get(win, mem, nints);
  /* The other tests address bytes: a byte-unit window over the same memory kind. */
  char *cmem = NULL;
  MPI_Win bwin;
  if (flavor == MPI_WIN_FLAVOR_CREATE) {
    OK(MPI_Alloc_mem(4096, MPI_INFO_NULL, &cmem));
    OK(MPI_Win_create(cmem, 4096, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &bwin));
  } else if (flavor == MPI_WIN_FLAVOR_ALLOCATE) {
    OK(MPI_Win_allocate(4096, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &cmem, &bwin));
  } else {
    OK(MPI_Win_allocate_shared(4096, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &cmem, &bwin));
  }
  accumulate_atomicity(bwin, cmem);
  paths_agree(bwin, cmem);
  fetch_and_op_counter(bwin, cmem);
  compare_and_swap(bwin, cmem);
  OK(MPI_Win_free(&bwin));
  if (flavor == MPI_WIN_FLAVOR_CREATE) MPI_Free_mem(cmem);
  pscw_ring(win, mem);
  exclusive_increments(win, mem);
  requests_and_get_accumulate(win, mem);
  errors(win);
  int before = deleted;
  OK(MPI_Win_free(&win));
  CHECK(win == MPI_WIN_NULL && deleted == before + 1);
  OK(MPI_Win_free_keyval(&key));
  if (flavor == MPI_WIN_FLAVOR_CREATE) MPI_Free_mem(mem);
}

/* A dynamic window: each rank attaches two buffers, publishes their addresses, and every
 * rank writes into its right neighbour's second buffer; detaching makes an access a range
 * error. */
static void dynamic(void) {
  MPI_Win win;
  OK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
  attributes(win, NULL, 0, 1, MPI_WIN_FLAVOR_DYNAMIC);
  /* b's last 2 ints are never attached: an access past the 8 attached ones ends in memory
   * that is not attached, wherever `a` lies (regions back to back form one range). */
  int a[4] = {0}, b[10] = {0};
  OK(MPI_Win_attach(win, a, sizeof a));
  OK(MPI_Win_attach(win, b, 8 * sizeof(int)));
  MPI_Aint mine, *addrs = malloc(sizeof(MPI_Aint) * size);
  OK(MPI_Get_address(b, &mine));
  OK(MPI_Allgather(&mine, 1, MPI_AINT, addrs, 1, MPI_AINT, MPI_COMM_WORLD));
  int t = (rank + 1) % size, v[2] = {rank, rank * 2};
  OK(MPI_Win_fence(0, win));
  OK(MPI_Put(v, 2, MPI_INT, t, addrs[t] + 8, 2, MPI_INT, win));
  OK(MPI_Win_fence(0, win));
  int prev = (rank + size - 1) % size;
  CHECK(b[2] == prev && b[3] == prev * 2 && b[0] == 0 && b[4] == 0);
  OK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
  int cls;
  /* Past the end of the attached buffer (on this rank, so the error is found at once). */
  MPI_Error_class(MPI_Put(v, 2, MPI_INT, rank, mine + 8 * sizeof(int) - 4, 2, MPI_INT, win),
                  &cls);
  CHECK(cls == MPI_ERR_RMA_RANGE);
  MPI_Error_class(MPI_Win_detach(win, a + 1), &cls);
  CHECK(cls == MPI_ERR_RMA_ATTACH);
  OK(MPI_Win_fence(0, win));
  OK(MPI_Win_detach(win, a));
  OK(MPI_Win_detach(win, b));
  OK(MPI_Win_free(&win));
  free(addrs);
}

/* A shared window of the node's ranks: direct loads and stores, the others' memory from
 * MPI_Win_shared_query, contiguous in rank order. */
static void shared(void) {
  MPI_Comm node;
  OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  int nr, ns;
  MPI_Comm_rank(node, &nr);
  MPI_Comm_size(node, &ns);
  MPI_Win win;
  int *mine;
  OK(MPI_Win_allocate_shared((nr + 1) * sizeof(int), sizeof(int), MPI_INFO_NULL, node, &mine,
                             &win));
  OK(MPI_Win_lock_all(0, win));
  for (int i = 0; i <= nr; i++) mine[i] = nr * 1000 + i;
  OK(MPI_Win_sync(win));
  MPI_Barrier(node);
  OK(MPI_Win_sync(win));
  int *first = NULL;
  for (int r = 0; r < ns; r++) {
    MPI_Aint sz;
    int unit, *p;
    OK(MPI_Win_shared_query(win, r, &sz, &unit, &p));
    CHECK(sz == (MPI_Aint)((r + 1) * sizeof(int)) && unit == sizeof(int));
    if (r == 0) first = p;
    for (int i = 0; i <= r; i++) CHECK(p[i] == r * 1000 + i);
    /* Contiguous: rank r starts after the r ranks before it. */
    CHECK(p == first + r * (r + 1) / 2);
  }
  MPI_Aint sz;
  int unit, *p;
  OK(MPI_Win_shared_query(win, MPI_PROC_NULL, &sz, &unit, &p));
  CHECK(p == first && sz == sizeof(int));
  OK(MPI_Win_unlock_all(win));
  OK(MPI_Win_free(&win));
  /* A shared window over ranks of several nodes is refused. */
  MPI_Comm_free(&node);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  run_flavor(MPI_WIN_FLAVOR_CREATE);
  run_flavor(MPI_WIN_FLAVOR_ALLOCATE);
  run_flavor(MPI_WIN_FLAVOR_SHARED);
  dynamic();
  shared();
  MPI_Win null = MPI_WIN_NULL;
  char name[MPI_MAX_OBJECT_NAME];
  int len;
  OK(MPI_Win_get_name(null, name, &len));
  CHECK(strcmp(name, "MPI_WIN_NULL") == 0);
  CHECK(MPI_Win_fromint(MPI_Win_toint(MPI_WIN_NULL)) == MPI_WIN_NULL);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) printf("win ok\n");
  MPI_Finalize();
  return 0;
}
