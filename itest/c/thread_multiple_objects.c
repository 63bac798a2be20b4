/* MPI_THREAD_MULTIPLE (MPI-4.1 §11.6): a thread blocked in a call that creates an object
 * or flushes a buffer lets the other threads of its process in.
 *
 * Each phase runs two threads per rank. Thread 0 makes one communicator (MPI_Comm_split,
 * MPI_Comm_split_type, MPI_Comm_create, MPI_Comm_create_group, MPI_Comm_create_from_group,
 * MPI_Cart_create, MPI_Cart_sub, MPI_Graph_create, MPI_Dist_graph_create_adjacent,
 * MPI_Dist_graph_create, MPI_Comm_dup; MPI_Intercomm_create between the even and odd ranks,
 * then MPI_Intercomm_merge and MPI_Comm_split on it; MPI_Intercomm_create_from_groups, then
 * MPI_Comm_create on it) from a duplicate of MPI_COMM_WORLD, checks its group and ranks and
 * runs a collective (or a message across) on it. Thread 1 relays a token along the ranks on another
 * duplicate with blocking MPI_Send/MPI_Recv, and rank r > 0's thread 0 starts its creation
 * only once rank r's thread 1 has the token. Rank 0's thread 1 sends the token after its
 * thread 0 said it is about to create (and a pause that lets it get there): rank 0's
 * creation cannot complete before every rank's thread 1 got its MPI_Send/MPI_Recv in, so a
 * library whose creation keeps the other threads out while it waits deadlocks here (the
 * test's bounded wait turns that into a failure); one that lets them in always passes,
 * whatever the scheduling.
 *
 * The window phases: thread 0 fences, puts to the next rank and fences again on a window
 * made beforehand, then (next phase) frees it, in the same order of threads and token.
 * Then it makes a window of each flavor (MPI_Win_create, _allocate, _allocate_shared,
 * _create_dynamic with memory attached), puts between fences and frees it. Then, on a
 * window made over the program's memory: post/start/put/complete/wait in a ring (rank 0's
 * MPI_Win_start waits for rank 1's post); and lock phases where every rank first holds the
 * exclusive lock on itself, and thread 0 gives it back and then locks the next rank
 * exclusively (put, every flush form, unlock), shared (get of the next rank's known bytes)
 * or all ranks (MPI_Win_lock_all, put, flush_all, unlock_all): rank 0's lock waits until the
 * next rank's thread 0, which starts after the token, gave its own back.
 *
 * The file phases: thread 0 opens a file (MPI_File_open), writes its block and reads the
 * next rank's with MPI_File_write_at_all/read_at_all, and closes it; writes and reads a file
 * the main thread opened with MPI_File_write_all/read_all at the individual pointer (a read
 * cut short by the end of the file moves the pointer by what it read), and on that file
 * MPI_File_set_view, _set_size, _preallocate, _sync, _set_atomicity, _seek_shared,
 * _write_ordered (each checked), then closes it.
 *
 * The buffer phase: thread 0 attaches a buffer, sends three buffered messages to the next
 * rank (zero bytes, 7 bytes and an odd size far past the eager limit) and detaches, which
 * waits until the large one has been received; the next rank's thread 1 receives them only
 * after its own thread 0 is waiting in MPI_Buffer_detach (and a pause). Data, sizes and the
 * detached buffer are checked. At one rank the messages go to the rank itself.
 *
 * The reduction phases: thread 0 runs MPI_Reduce_scatter_block and MPI_Reduce_scatter
 * and their nonblocking forms on an intercommunicator between the even and the odd ranks
 * (sums checked block by block, a zero count among them), and MPI_Allreduce, MPI_Reduce
 * and their nonblocking forms with a user operation (associative, not commutative) on a
 * derived datatype with gaps (rank order and untouched gaps checked), in the same order of
 * threads and token. */
#include "check.h"
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

static int rank, size;
static MPI_Comm make_on, relay_on;
/* MPI_UNWEIGHTED through a volatile pointer: GCC reads the constant as an empty array. */
static int *volatile unweighted;

/* Thread 0 of this rank announces it is about to block; thread 1 waits for it. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int announced;
static void announce(void) {
  pthread_mutex_lock(&mu);
  announced = 1;
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
}
static void await_announce(void) {
  pthread_mutex_lock(&mu);
  while (!announced) pthread_cond_wait(&cv, &mu);
  pthread_mutex_unlock(&mu);
}

enum {
  K_SPLIT,
  K_SPLIT_TYPE,
  K_CREATE,
  K_CREATE_GROUP,
  K_FROM_GROUP,
  K_CART,
  K_CART_SUB,
  K_GRAPH,
  K_DIST_ADJ,
  K_DIST,
  K_DUP,
  K_INTER,
  K_INTER_GROUPS,
  K_FENCE,
  K_WIN_FREE,
  K_WIN_CREATE,
  K_WIN_ALLOCATE,
  K_WIN_ALLOCATE_SHARED,
  K_WIN_CREATE_DYNAMIC,
  K_PSCW,
  K_LOCK_EXCLUSIVE,
  K_LOCK_SHARED,
  K_LOCK_ALL,
  K_FILE_OPEN,
  K_FILE_ALL,
  K_FILE_SET_VIEW,
  K_FILE_SET_SIZE,
  K_FILE_PREALLOCATE,
  K_FILE_SYNC,
  K_FILE_ATOMICITY,
  K_FILE_SEEK_SHARED,
  K_FILE_ORDERED,
  K_FILE_CLOSE,
  K_REDSCAT_INTER,
  K_USER_DERIVED,
  K_KINDS
};
static const char *kind_name[K_KINDS] = {
    "split", "split_type", "create", "create_group", "create_from_group", "cart_create",
    "cart_sub", "graph_create", "dist_graph_create_adjacent", "dist_graph_create", "dup",
    "intercomm_create", "intercomm_create_from_groups", "win_fence", "win_free",
    "win_create", "win_allocate", "win_allocate_shared", "win_create_dynamic", "win_pscw",
    "win_lock_exclusive", "win_lock_shared", "win_lock_all", "file_open", "file_all",
    "file_set_view", "file_set_size", "file_preallocate", "file_sync", "file_atomicity",
    "file_seek_shared", "file_ordered", "file_close", "reduce_scatter_inter",
    "user_op_derived"};

/* The phases whose window rank r locks exclusively on itself before the threads start
 * (thread 0 gives it back in the phase before it locks its neighbour). */
static int holds_own_lock(int kind) {
  return kind == K_LOCK_EXCLUSIVE || kind == K_LOCK_SHARED || kind == K_LOCK_ALL;
}

/* The window of the fence phase, made by the main thread before the threads start. */
#define WIN_BYTES 64
#define PUT_BYTES 13
static MPI_Win fence_win;
static unsigned char *fence_base;
/* The window of the synchronisation phases (MPI_Win_create over the program's memory). */
static MPI_Win sync_win;
static unsigned char sync_base[WIN_BYTES];

static unsigned char pattern(int origin, int kind, int i) {
  return (unsigned char)(origin * 31 + kind * 7 + i + 1);
}

/* Puts PUT_BYTES of this rank's pattern for `kind` to `target`'s window at displacement 5
 * (in an epoch the caller opened). */
static void put_pattern(MPI_Win w, int target, int kind) {
  static unsigned char out[PUT_BYTES];
  for (int i = 0; i < PUT_BYTES; i++) out[i] = pattern(rank, kind, i);
  OK(MPI_Put(out, PUT_BYTES, MPI_BYTE, target, 5, PUT_BYTES, MPI_BYTE, w));
}

/* Checks that `base` holds `origin`'s pattern for `kind` at 5, zeros elsewhere, and clears
 * it. */
static void check_pattern(unsigned char *base, int origin, int kind) {
  for (int i = 0; i < WIN_BYTES; i++) {
    unsigned char want = i >= 5 && i < 5 + PUT_BYTES ? pattern(origin, kind, i - 5) : 0;
    CHECK(base[i] == want);
  }
  memset(base, 0, WIN_BYTES);
}

/* Makes a window of `kind` on `make_on` (its creation waits for every rank), puts to the
 * next rank between fences, checks what the previous rank put, frees it. */
static void window_of(int kind) {
  int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  MPI_Win w;
  unsigned char *base = NULL;
  unsigned char *mine = NULL;
  switch (kind) {
    case K_WIN_CREATE:
      mine = calloc(WIN_BYTES, 1);
      CHECK(mine != NULL);
      OK(MPI_Win_create(mine, WIN_BYTES, 1, MPI_INFO_NULL, make_on, &w));
      base = mine;
      break;
    case K_WIN_ALLOCATE:
      OK(MPI_Win_allocate(WIN_BYTES, 1, MPI_INFO_NULL, make_on, &base, &w));
      memset(base, 0, WIN_BYTES);
      break;
    case K_WIN_ALLOCATE_SHARED: {
      /* The tests run on one node: every member's memory is reachable by load/store. */
      OK(MPI_Win_allocate_shared(WIN_BYTES, 1, MPI_INFO_NULL, make_on, &base, &w));
      memset(base, 0, WIN_BYTES);
      MPI_Aint bytes = -1;
      int unit = -1;
      unsigned char *theirs = NULL;
      OK(MPI_Win_shared_query(w, next, &bytes, &unit, &theirs));
      CHECK(bytes == WIN_BYTES && unit == 1 && theirs != NULL);
      break;
    }
    case K_WIN_CREATE_DYNAMIC: {
      mine = calloc(WIN_BYTES, 1);
      CHECK(mine != NULL);
      OK(MPI_Win_create_dynamic(MPI_INFO_NULL, make_on, &w));
      OK(MPI_Win_attach(w, mine, WIN_BYTES));
      base = mine;
      break;
    }
  }
  if (kind == K_WIN_CREATE_DYNAMIC) {
    /* Displacements are addresses: each rank learns its next rank's. */
    MPI_Aint at = 0, all[8];
    CHECK(size <= 8);
    OK(MPI_Get_address(mine, &at));
    OK(MPI_Allgather(&at, 1, MPI_AINT, all, 1, MPI_AINT, make_on));
    static unsigned char out[PUT_BYTES];
    for (int i = 0; i < PUT_BYTES; i++) out[i] = pattern(rank, kind, i);
    OK(MPI_Win_fence(0, w));
    OK(MPI_Put(out, PUT_BYTES, MPI_BYTE, next, all[next] + 5, PUT_BYTES, MPI_BYTE, w));
    OK(MPI_Win_fence(0, w));
  } else {
    OK(MPI_Win_fence(0, w));
    put_pattern(w, next, kind);
    OK(MPI_Win_fence(0, w));
  }
  check_pattern(base, prev, kind);
  if (kind == K_WIN_CREATE_DYNAMIC) OK(MPI_Win_detach(w, mine));
  OK(MPI_Win_free(&w));
  CHECK(w == MPI_WIN_NULL);
  free(mine);
}

/* The files of the file phases: $TMPDIR (else /tmp), named by rank 0's process id. One is
 * opened by the main thread before the threads start (file_all, file_close). */
static char file_name[600];
static MPI_File main_file = MPI_FILE_NULL;
#define FILE_BYTES 11 /* each rank's block: odd */

static unsigned char file_byte(int r, int kind, int i) {
  return (unsigned char)(r * 13 + kind * 5 + i + 2);
}

/* Writes this rank's block of `kind` collectively at its offset, reads the next rank's back
 * collectively (after a barrier) and checks it. */
static void write_read_all(MPI_File f, int kind, int at_pointer) {
  int next = (rank + 1) % size;
  unsigned char out[FILE_BYTES], in[FILE_BYTES + 1];
  MPI_Status st;
  int got = -1;
  for (int i = 0; i < FILE_BYTES; i++) out[i] = file_byte(rank, kind, i);
  if (at_pointer) {
    OK(MPI_File_seek(f, (MPI_Offset)rank * FILE_BYTES, MPI_SEEK_SET));
    OK(MPI_File_write_all(f, out, FILE_BYTES, MPI_BYTE, &st));
  } else {
    OK(MPI_File_write_at_all(f, (MPI_Offset)rank * FILE_BYTES, out, FILE_BYTES, MPI_BYTE, &st));
  }
  OK(MPI_Get_count(&st, MPI_BYTE, &got));
  CHECK(got == FILE_BYTES);
  OK(MPI_Barrier(make_on));
  memset(in, 0, sizeof in);
  if (at_pointer) {
    /* One byte past the next rank's block: the last rank's read is cut short by the end of
     * the file, and the pointer moves by what was read. */
    OK(MPI_File_seek(f, (MPI_Offset)next * FILE_BYTES, MPI_SEEK_SET));
    OK(MPI_File_read_all(f, in, FILE_BYTES + 1, MPI_BYTE, &st));
    OK(MPI_Get_count(&st, MPI_BYTE, &got));
    CHECK(got == (next == size - 1 ? FILE_BYTES : FILE_BYTES + 1));
    MPI_Offset pos = -1;
    OK(MPI_File_get_position(f, &pos));
    CHECK(pos == (MPI_Offset)next * FILE_BYTES + got);
  } else {
    OK(MPI_File_read_at_all(f, (MPI_Offset)next * FILE_BYTES, in, FILE_BYTES, MPI_BYTE, &st));
    OK(MPI_Get_count(&st, MPI_BYTE, &got));
    CHECK(got == FILE_BYTES);
  }
  for (int i = 0; i < FILE_BYTES; i++) CHECK(in[i] == file_byte(next, kind, i));
}

/* The file phases: thread 0 opens a file (rank 0's open waits for every rank), writes and
 * reads it collectively and closes it; or, on the main thread's file, writes and reads at
 * the individual pointer, sets the view, the size, preallocates, syncs, sets atomic mode,
 * moves the shared pointer, writes in rank order, or closes it: each a collective whose
 * rank 0 waits for every rank. */
static void file_phase(int kind) {
  switch (kind) {
    case K_FILE_OPEN: {
      char name[640];
      MPI_File f;
      snprintf(name, sizeof name, "%s-open", file_name);
      OK(MPI_File_open(make_on, name, MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_DELETE_ON_CLOSE,
                       MPI_INFO_NULL, &f));
      write_read_all(f, kind, 0);
      OK(MPI_File_close(&f));
      CHECK(f == MPI_FILE_NULL);
      break;
    }
    case K_FILE_ALL:
      write_read_all(main_file, kind, 1);
      break;
    case K_FILE_SET_VIEW: {
      /* The view again, which puts the pointers back at 0. */
      MPI_Offset pos = -1;
      OK(MPI_File_set_view(main_file, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
      OK(MPI_File_get_position(main_file, &pos));
      CHECK(pos == 0);
      break;
    }
    case K_FILE_SET_SIZE: {
      MPI_Offset bytes = -1;
      OK(MPI_File_set_size(main_file, (MPI_Offset)size * FILE_BYTES + 3));
      OK(MPI_File_get_size(main_file, &bytes));
      CHECK(bytes == (MPI_Offset)size * FILE_BYTES + 3);
      break;
    }
    case K_FILE_PREALLOCATE: {
      MPI_Offset bytes = -1;
      OK(MPI_File_preallocate(main_file, 1001));
      OK(MPI_File_get_size(main_file, &bytes));
      CHECK(bytes == 1001);
      break;
    }
    case K_FILE_SYNC:
      OK(MPI_File_sync(main_file));
      break;
    case K_FILE_ATOMICITY: {
      int flag = -1;
      OK(MPI_File_set_atomicity(main_file, 1));
      OK(MPI_File_get_atomicity(main_file, &flag));
      CHECK(flag == 1);
      break;
    }
    case K_FILE_SEEK_SHARED: {
      MPI_Offset pos = -1;
      OK(MPI_File_seek_shared(main_file, 5, MPI_SEEK_SET));
      OK(MPI_File_get_position_shared(main_file, &pos));
      CHECK(pos == 5);
      break;
    }
    case K_FILE_ORDERED: {
      /* Rank r writes r + 1 bytes in rank order from the shared pointer (5), then reads
       * its part back. */
      unsigned char out[16], in[16];
      MPI_Status st;
      int got = -1;
      CHECK(size < 16);
      for (int i = 0; i <= rank; i++) out[i] = file_byte(rank, kind, i);
      OK(MPI_File_write_ordered(main_file, out, rank + 1, MPI_BYTE, &st));
      OK(MPI_Get_count(&st, MPI_BYTE, &got));
      CHECK(got == rank + 1);
      MPI_Offset pos = -1;
      OK(MPI_File_get_position_shared(main_file, &pos));
      CHECK(pos == 5 + (MPI_Offset)size * (size + 1) / 2);
      memset(in, 0, sizeof in);
      OK(MPI_File_read_at(main_file, 5 + (MPI_Offset)rank * (rank + 1) / 2, in, rank + 1,
                          MPI_BYTE, &st));
      for (int i = 0; i <= rank; i++) CHECK(in[i] == out[i]);
      break;
    }
    case K_FILE_CLOSE:
      OK(MPI_File_close(&main_file));
      CHECK(main_file == MPI_FILE_NULL);
      break;
  }
}

/* The synchronisation phases on `sync_win`; each waits on a rank whose thread 0 starts
 * after the token reached it. */
static void synchronise(int kind) {
  int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  switch (kind) {
    case K_PSCW: {
      /* Post to the previous rank, start on the next (waits for its post), put to it,
       * complete; wait for the previous rank's completion. */
      MPI_Group world_group, gprev, gnext;
      OK(MPI_Comm_group(make_on, &world_group));
      OK(MPI_Group_incl(world_group, 1, &prev, &gprev));
      OK(MPI_Group_incl(world_group, 1, &next, &gnext));
      OK(MPI_Win_post(gprev, 0, sync_win));
      OK(MPI_Win_start(gnext, 0, sync_win));
      put_pattern(sync_win, next, kind);
      OK(MPI_Win_complete(sync_win));
      OK(MPI_Win_wait(sync_win));
      check_pattern(sync_base, prev, kind);
      OK(MPI_Group_free(&gprev));
      OK(MPI_Group_free(&gnext));
      OK(MPI_Group_free(&world_group));
      break;
    }
    case K_LOCK_EXCLUSIVE:
      /* Gives back the lock on itself, then locks the next rank (which waits until that
       * rank's thread 0 gave back its own), puts and flushes in every form, unlocks. */
      OK(MPI_Win_unlock(rank, sync_win));
      OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, next, 0, sync_win));
      put_pattern(sync_win, next, kind);
      OK(MPI_Win_flush(next, sync_win));
      OK(MPI_Win_flush_local(next, sync_win));
      OK(MPI_Win_flush_all(sync_win));
      OK(MPI_Win_flush_local_all(sync_win));
      OK(MPI_Win_unlock(next, sync_win));
      break;
    case K_LOCK_SHARED: {
      /* As above with a shared lock and a get of what the rank itself wrote there. */
      OK(MPI_Win_unlock(rank, sync_win));
      OK(MPI_Win_lock(MPI_LOCK_SHARED, next, 0, sync_win));
      unsigned char in[WIN_BYTES];
      OK(MPI_Get(in, WIN_BYTES, MPI_BYTE, next, 0, WIN_BYTES, MPI_BYTE, sync_win));
      OK(MPI_Win_unlock(next, sync_win));
      for (int i = 0; i < WIN_BYTES; i++) CHECK(in[i] == (unsigned char)(next * 3 + i));
      break;
    }
    case K_LOCK_ALL:
      /* Shared locks on every rank (each waits until that rank gave back its own). */
      OK(MPI_Win_unlock(rank, sync_win));
      OK(MPI_Win_lock_all(0, sync_win));
      put_pattern(sync_win, next, kind);
      OK(MPI_Win_flush_all(sync_win));
      OK(MPI_Win_unlock_all(sync_win));
      break;
  }
}

static void use(MPI_Comm c, int want_size, long want_sum);
static long sum_to(int n);
static void reduce_scatter_inter(void);
static void user_op_derived(void);

/* The even and the odd ranks (at one rank: nothing to join). */
static int n_even(void) { return (size + 1) / 2; }

/* Checks intercommunicator `ic` between the even and the odd ranks, merges it (the even
 * ranks first) and splits it (everyone one color, keys reversing the order), and frees all. */
static void use_inter(MPI_Comm ic) {
  int flag = 0, rsize = -1, lsize = -1;
  OK(MPI_Comm_test_inter(ic, &flag));
  CHECK(flag);
  OK(MPI_Comm_remote_size(ic, &rsize));
  OK(MPI_Comm_size(ic, &lsize));
  CHECK(lsize == (rank % 2 ? size - n_even() : n_even()));
  CHECK(rsize == size - lsize);
  MPI_Comm merged, sub;
  OK(MPI_Intercomm_merge(ic, rank % 2, &merged));
  int mr = -1;
  OK(MPI_Comm_rank(merged, &mr));
  CHECK(mr == (rank % 2 ? n_even() + rank / 2 : rank / 2));
  use(merged, size, sum_to(size));
  OK(MPI_Comm_free(&merged));
  OK(MPI_Comm_split(ic, 0, size - rank, &sub));
  int sr = -1, ssize = -1;
  OK(MPI_Comm_rank(sub, &sr));
  OK(MPI_Comm_remote_size(sub, &ssize));
  CHECK(sr == lsize - 1 - rank / 2 && ssize == rsize);
  /* A message across: each member of the even group to the odd member of its rank. */
  if (rank % 2 == 0 && rank / 2 < rsize) {
    int v = 500 + rank;
    OK(MPI_Send(&v, 1, MPI_INT, rsize - 1 - rank / 2, 3, sub));
  } else if (rank % 2 == 1) {
    int v = -1;
    OK(MPI_Recv(&v, 1, MPI_INT, rsize - 1 - rank / 2, 3, sub, MPI_STATUS_IGNORE));
    CHECK(v == 500 + 2 * (rank / 2));
  }
  OK(MPI_Comm_free(&sub));
}

/* The sum of the world ranks of `c`'s members, by a blocking collective on it, checked
 * against the expected sum; and its size. */
static void use(MPI_Comm c, int want_size, long want_sum) {
  int n = -1;
  OK(MPI_Comm_size(c, &n));
  CHECK(n == want_size);
  long mine = rank, sum = -1;
  OK(MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, c));
  CHECK(sum == want_sum);
  OK(MPI_Barrier(c));
}

static long sum_to(int n) { return (long)n * (n - 1) / 2; }

/* Thread 0's creation of `kind` on `make_on`; checks what it made, then frees it. */
static void create(int kind) {
  MPI_Comm c = MPI_COMM_NULL;
  MPI_Group world_group, g;
  OK(MPI_Comm_group(make_on, &world_group));
  switch (kind) {
    case K_SPLIT: {
      /* Two colors, keys reversing the order. */
      OK(MPI_Comm_split(make_on, rank % 2, size - rank, &c));
      int n = (size + 1 - rank % 2) / 2, r = -1;
      long want = 0;
      for (int i = rank % 2; i < size; i += 2) want += i;
      OK(MPI_Comm_rank(c, &r));
      CHECK(r == n - 1 - rank / 2);
      use(c, n, want);
      break;
    }
    case K_SPLIT_TYPE:
      /* The tests run on one node. */
      OK(MPI_Comm_split_type(make_on, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &c));
      use(c, size, sum_to(size));
      break;
    case K_CREATE: {
      /* Every rank but the last (all of them at one rank). */
      int excl[1] = {size - 1};
      OK(MPI_Group_excl(world_group, size > 1 ? 1 : 0, excl, &g));
      OK(MPI_Comm_create(make_on, g, &c));
      OK(MPI_Group_free(&g));
      if (size > 1 && rank == size - 1) {
        CHECK(c == MPI_COMM_NULL);
      } else {
        int n = size > 1 ? size - 1 : 1;
        use(c, n, sum_to(n));
      }
      break;
    }
    case K_CREATE_GROUP: {
      /* The odd ranks and rank 0, made by them only. */
      int in[8], k = 0;
      CHECK(size <= 8);
      for (int i = 0; i < size; i++)
        if (i == 0 || i % 2) in[k++] = i;
      OK(MPI_Group_incl(world_group, k, in, &g));
      if (rank == 0 || rank % 2) {
        OK(MPI_Comm_create_group(make_on, g, 77, &c));
        long want = 0;
        for (int i = 0; i < k; i++) want += in[i];
        use(c, k, want);
      }
      OK(MPI_Group_free(&g));
      break;
    }
    case K_FROM_GROUP:
      OK(MPI_Comm_create_from_group(world_group, "org.weft.thread_multiple_objects",
                                    MPI_INFO_NULL, MPI_ERRORS_ARE_FATAL, &c));
      use(c, size, sum_to(size));
      break;
    case K_CART: {
      int dims[1] = {size}, periods[1] = {1}, coords[1] = {-1};
      OK(MPI_Cart_create(make_on, 1, dims, periods, 0, &c));
      OK(MPI_Cart_coords(c, rank, 1, coords));
      CHECK(coords[0] == rank);
      use(c, size, sum_to(size));
      break;
    }
    case K_CART_SUB: {
      /* A size x 1 grid; keeping the first dimension keeps everyone. */
      MPI_Comm grid;
      int dims[2] = {size, 1}, periods[2] = {0, 0}, remain[2] = {1, 0};
      OK(MPI_Cart_create(make_on, 2, dims, periods, 0, &grid));
      OK(MPI_Cart_sub(grid, remain, &c));
      OK(MPI_Comm_free(&grid));
      use(c, size, sum_to(size));
      break;
    }
    case K_GRAPH: {
      /* A ring (a single node has no edge). */
      int index[8], edges[16], e = 0;
      CHECK(size <= 8);
      for (int i = 0; i < size; i++) {
        if (size > 1) {
          edges[e++] = (i + 1) % size;
          edges[e++] = (i + size - 1) % size;
        }
        index[i] = e;
      }
      OK(MPI_Graph_create(make_on, size, index, edges, 0, &c));
      int nn = -1;
      OK(MPI_Graph_neighbors_count(c, rank, &nn));
      CHECK(nn == (size > 1 ? 2 : 0));
      use(c, size, sum_to(size));
      break;
    }
    case K_DIST_ADJ: {
      int next = (rank + 1) % size, prev = (rank + size - 1) % size;
      OK(MPI_Dist_graph_create_adjacent(make_on, 1, &prev, (const int *)unweighted, 1, &next,
                                        (const int *)unweighted, MPI_INFO_NULL, 0, &c));
      int in = -1, out = -1, w = -1;
      OK(MPI_Dist_graph_neighbors_count(c, &in, &out, &w));
      CHECK(in == 1 && out == 1 && !w);
      use(c, size, sum_to(size));
      break;
    }
    case K_DIST: {
      int next = (rank + 1) % size, one = 1, src = rank;
      OK(MPI_Dist_graph_create(make_on, 1, &src, &one, &next, (const int *)unweighted, MPI_INFO_NULL,
                               0, &c));
      int in = -1, out = -1, w = -1;
      OK(MPI_Dist_graph_neighbors_count(c, &in, &out, &w));
      CHECK(in == 1 && out == 1 && !w);
      use(c, size, sum_to(size));
      break;
    }
    case K_DUP:
      OK(MPI_Comm_dup(make_on, &c));
      use(c, size, sum_to(size));
      break;
    case K_INTER: {
      if (size < 2) break;
      MPI_Comm half;
      OK(MPI_Comm_split(make_on, rank % 2, rank, &half));
      /* The other group's leader is its lowest world rank: 1 for the even, 0 for the odd. */
      OK(MPI_Intercomm_create(half, 0, make_on, rank % 2 ? 0 : 1, 5, &c));
      use_inter(c);
      OK(MPI_Comm_free(&half));
      break;
    }
    case K_FENCE: {
      /* Fence, put PUT_BYTES (odd) to the next rank and zero bytes to the previous one,
       * fence, check what the previous rank put here. */
      int next = (rank + 1) % size, prev = (rank + size - 1) % size;
      unsigned char out[PUT_BYTES];
      for (int i = 0; i < PUT_BYTES; i++) out[i] = (unsigned char)(rank * 17 + i + 1);
      OK(MPI_Win_fence(0, fence_win));
      OK(MPI_Put(out, PUT_BYTES, MPI_BYTE, next, 3, PUT_BYTES, MPI_BYTE, fence_win));
      OK(MPI_Put(out, 0, MPI_BYTE, prev, 0, 0, MPI_BYTE, fence_win));
      OK(MPI_Win_fence(0, fence_win));
      for (int i = 0; i < WIN_BYTES; i++) {
        unsigned char want = i >= 3 && i < 3 + PUT_BYTES ? (unsigned char)(prev * 17 + i - 3 + 1) : 0;
        CHECK(fence_base[i] == want);
      }
      break;
    }
    case K_WIN_FREE:
      OK(MPI_Win_free(&fence_win));
      CHECK(fence_win == MPI_WIN_NULL);
      break;
    case K_WIN_CREATE:
    case K_WIN_ALLOCATE:
    case K_WIN_ALLOCATE_SHARED:
    case K_WIN_CREATE_DYNAMIC:
      window_of(kind);
      break;
    case K_PSCW:
    case K_LOCK_EXCLUSIVE:
    case K_LOCK_SHARED:
    case K_LOCK_ALL:
      synchronise(kind);
      break;
    case K_FILE_OPEN:
    case K_FILE_ALL:
    case K_FILE_SET_VIEW:
    case K_FILE_SET_SIZE:
    case K_FILE_PREALLOCATE:
    case K_FILE_SYNC:
    case K_FILE_ATOMICITY:
    case K_FILE_SEEK_SHARED:
    case K_FILE_ORDERED:
    case K_FILE_CLOSE:
      file_phase(kind);
      break;
    case K_REDSCAT_INTER:
      reduce_scatter_inter();
      break;
    case K_USER_DERIVED:
      user_op_derived();
      break;
    case K_INTER_GROUPS: {
      if (size < 2) break;
      int ev[8], od[8], ne = 0, no = 0;
      CHECK(size <= 8);
      for (int i = 0; i < size; i++) {
        if (i % 2) od[no++] = i;
        else ev[ne++] = i;
      }
      MPI_Group ge, go;
      OK(MPI_Group_incl(world_group, ne, ev, &ge));
      OK(MPI_Group_incl(world_group, no, od, &go));
      OK(MPI_Intercomm_create_from_groups(rank % 2 ? go : ge, 0, rank % 2 ? ge : go, 0,
                                          "org.weft.thread_multiple_objects.inter",
                                          MPI_INFO_NULL, MPI_ERRORS_ARE_FATAL, &c));
      OK(MPI_Group_free(&ge));
      OK(MPI_Group_free(&go));
      use_inter(c);
      /* MPI_Comm_create on it: the even group keeps its first member only. */
      MPI_Group local, keep;
      OK(MPI_Comm_group(c, &local));
      int first = 0;
      OK(MPI_Group_incl(local, 1, &first, &keep));
      MPI_Comm small;
      OK(MPI_Comm_create(c, rank % 2 ? local : keep, &small));
      if (rank % 2 == 0 && rank != 0) {
        CHECK(small == MPI_COMM_NULL);
      } else {
        int rs = -1;
        OK(MPI_Comm_remote_size(small, &rs));
        CHECK(rs == (rank % 2 ? 1 : size - n_even()));
        OK(MPI_Comm_free(&small));
      }
      OK(MPI_Group_free(&local));
      OK(MPI_Group_free(&keep));
      break;
    }
  }
  OK(MPI_Group_free(&world_group));
  if (c != MPI_COMM_NULL) OK(MPI_Comm_free(&c));
}

/* ---- reductions that used to finish inside their start call. */
static MPI_Comm inter_ic = MPI_COMM_NULL; /* even ranks <-> odd ranks, made by main */

/* The block, reduce-scatter (v) forms on `inter_ic`, blocking and nonblocking: every
 * vector has T = 2 * |even| * |odd| ints (element j of world rank w's is w * 1000 + j), so
 * both groups split the same T; the reduction is the sum over the remote group. */
static void reduce_scatter_inter(void) {
  if (size < 2) return;
  int lsize = -1, rsize = -1, lrank = -1;
  OK(MPI_Comm_size(inter_ic, &lsize));
  OK(MPI_Comm_remote_size(inter_ic, &rsize));
  OK(MPI_Comm_rank(inter_ic, &lrank));
  int total = 2 * lsize * rsize;
  long remote_sum = 0; /* of the remote group's world ranks */
  for (int w = 1 - rank % 2; w < size; w += 2) remote_sum += w;
  int *send = malloc(sizeof(int) * (size_t)total), *recv = malloc(sizeof(int) * (size_t)total + 4);
  int *counts = malloc(sizeof(int) * (size_t)lsize);
  CHECK(send && recv && counts);
  for (int j = 0; j < total; j++) send[j] = rank * 1000 + j;
  /* v counts: local rank i gets i % 3 (rank 0 none), the last the rest. */
  int given = 0;
  for (int i = 0; i < lsize - 1; i++) given += counts[i] = i % 3;
  counts[lsize - 1] = total - given;
  int from = 0;
  for (int i = 0; i < lrank; i++) from += counts[i];
  for (int form = 0; form < 4; form++) {
    int block = form % 2 == 0, mine = block ? total / lsize : counts[lrank];
    int start = block ? lrank * mine : from;
    for (int j = 0; j <= mine; j++) recv[j] = -7;
    MPI_Request r = MPI_REQUEST_NULL;
    if (form == 0) OK(MPI_Reduce_scatter_block(send, recv, mine, MPI_INT, MPI_SUM, inter_ic));
    if (form == 1) OK(MPI_Reduce_scatter(send, recv, counts, MPI_INT, MPI_SUM, inter_ic));
    if (form == 2) OK(MPI_Ireduce_scatter_block(send, recv, mine, MPI_INT, MPI_SUM, inter_ic, &r));
    if (form == 3) OK(MPI_Ireduce_scatter(send, recv, counts, MPI_INT, MPI_SUM, inter_ic, &r));
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    for (int j = 0; j < mine; j++)
      CHECK(recv[j] == (int)(remote_sum * 1000 + (long)rsize * (start + j)));
    CHECK(recv[mine] == -7);
  }
  free(send);
  free(recv);
  free(counts);
}

/* A user operation on a derived datatype: items of MPI_Type_vector(2, 1, 2, MPI_INT) (two
 * ints with a gap, extent 3 ints) composing affine maps t -> a t + b, which is associative
 * and not commutative: (a, b) o (c, d) = (a c, a d + b). */
#define UITEMS 3
static void affine(void *in, void *inout, int *len, MPI_Datatype *dt) {
  (void)dt;
  int *x = in, *y = inout;
  for (int k = 0; k < *len; k++) {
    int a = x[3 * k], b = x[3 * k + 2], c = y[3 * k], d = y[3 * k + 2];
    y[3 * k] = a * c;
    y[3 * k + 2] = a * d + b;
  }
}
static int ua(int w, int k) { return 1 + (w + k) % 2; }
static int ub(int w, int k) { return w + k + 1; }

/* MPI_Allreduce, MPI_Reduce (root: the last rank), MPI_Iallreduce and MPI_Ireduce (root 0)
 * with it; the result is x0 o (x1 o (... o x(n-1))) and the gaps stay untouched. */
static void user_op_derived(void) {
  MPI_Datatype vt;
  MPI_Op op;
  OK(MPI_Type_vector(2, 1, 2, MPI_INT, &vt));
  OK(MPI_Type_commit(&vt));
  OK(MPI_Op_create(affine, 0, &op));
  int send[3 * UITEMS], recv[3 * UITEMS], want[3 * UITEMS];
  for (int k = 0; k < UITEMS; k++) {
    send[3 * k] = ua(rank, k);
    send[3 * k + 1] = -5;
    send[3 * k + 2] = ub(rank, k);
    int a = ua(size - 1, k), b = ub(size - 1, k);
    for (int w = size - 2; w >= 0; w--) {
      b = ua(w, k) * b + ub(w, k);
      a = ua(w, k) * a;
    }
    want[3 * k] = a;
    want[3 * k + 1] = -7;
    want[3 * k + 2] = b;
  }
  for (int form = 0; form < 4; form++) {
    int root = form == 1 ? size - 1 : form == 3 ? 0 : -1;
    for (int i = 0; i < 3 * UITEMS; i++) recv[i] = -7;
    MPI_Request r = MPI_REQUEST_NULL;
    if (form == 0) OK(MPI_Allreduce(send, recv, UITEMS, vt, op, make_on));
    if (form == 1) OK(MPI_Reduce(send, recv, UITEMS, vt, op, root, make_on));
    if (form == 2) OK(MPI_Iallreduce(send, recv, UITEMS, vt, op, make_on, &r));
    if (form == 3) OK(MPI_Ireduce(send, recv, UITEMS, vt, op, root, make_on, &r));
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    for (int i = 0; i < 3 * UITEMS; i++)
      CHECK(recv[i] == (root < 0 || root == rank ? want[i] : -7));
  }
  OK(MPI_Op_free(&op));
  OK(MPI_Type_free(&vt));
}

/* ---- creation phases. */
static int phase_kind;
#define TAG_TOKEN 31

static void *creator(void *arg) {
  (void)arg;
  if (rank == 0) {
    announce();
  } else {
    await_announce(); /* thread 1 got the token */
  }
  create(phase_kind);
  return NULL;
}

static void *relay(void *arg) {
  (void)arg;
  int token = -1;
  if (rank == 0) {
    await_announce();
    usleep(20000); /* lets thread 0 get into its call; the outcome never depends on it */
    token = 1000 * phase_kind;
  } else {
    OK(MPI_Recv(&token, 1, MPI_INT, rank - 1, TAG_TOKEN, relay_on, MPI_STATUS_IGNORE));
    CHECK(token == 1000 * phase_kind + rank - 1);
    announce();
    token++;
  }
  if (rank + 1 < size) OK(MPI_Send(&token, 1, MPI_INT, rank + 1, TAG_TOKEN, relay_on));
  return NULL;
}

/* ---- buffered sends and MPI_Buffer_detach. */
#define BIG ((1 << 20) + 3)
static const int bsizes[3] = {0, 7, BIG};
static unsigned char bpattern(int origin, int m, int i) {
  return (unsigned char)(origin * 29 + m * 11 + i * 5 + 3);
}
static unsigned char *bsend_out[3];
static void *bsender(void *arg) {
  (void)arg;
  int next = (rank + 1) % size;
  int bytes = 3 * MPI_BSEND_OVERHEAD + BIG + 64;
  char *buffer = malloc((size_t)bytes);
  CHECK(buffer != NULL);
  OK(MPI_Buffer_attach(buffer, bytes));
  for (int m = 0; m < 3; m++) {
    bsend_out[m] = malloc((size_t)bsizes[m] + 1);
    for (int i = 0; i < bsizes[m]; i++) bsend_out[m][i] = bpattern(rank, m, i);
    OK(MPI_Bsend(bsend_out[m], bsizes[m], MPI_BYTE, next, 40 + m, make_on));
    /* The copy is the library's: the program's buffer may change at once. */
    memset(bsend_out[m], 0xab, (size_t)bsizes[m] + 1);
  }
  announce();
  void *back = NULL;
  int back_bytes = -1;
  OK(MPI_Buffer_detach(&back, &back_bytes));
  CHECK(back == buffer && back_bytes == bytes);
  free(buffer);
  for (int m = 0; m < 3; m++) free(bsend_out[m]);
  return NULL;
}
static void *breceiver(void *arg) {
  (void)arg;
  int prev = (rank + size - 1) % size;
  await_announce();
  usleep(20000); /* lets thread 0 get into MPI_Buffer_detach */
  unsigned char *in = malloc(BIG + 16);
  CHECK(in != NULL);
  for (int m = 0; m < 3; m++) {
    MPI_Status st;
    int got = -1;
    memset(in, 0, BIG + 16);
    OK(MPI_Recv(in, BIG + 16, MPI_BYTE, prev, 40 + m, make_on, &st));
    OK(MPI_Get_count(&st, MPI_BYTE, &got));
    CHECK(got == bsizes[m]);
    for (int i = 0; i < got; i++) CHECK(in[i] == bpattern(prev, m, i));
    CHECK(in[got] == 0);
  }
  free(in);
  return NULL;
}

static void run_pair(void *(*t0)(void *), void *(*t1)(void *)) {
  announced = 0;
  pthread_t a, b;
  CHECK(pthread_create(&a, NULL, t0, NULL) == 0);
  CHECK(pthread_create(&b, NULL, t1, NULL) == 0);
  CHECK(pthread_join(a, NULL) == 0);
  CHECK(pthread_join(b, NULL) == 0);
  OK(MPI_Barrier(MPI_COMM_WORLD));
}

int main(int argc, char **argv) {
  int provided = -1;
  OK(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
  CHECK(provided == MPI_THREAD_MULTIPLE);
  OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  unweighted = MPI_UNWEIGHTED;
  OK(MPI_Comm_dup(MPI_COMM_WORLD, &make_on));
  OK(MPI_Comm_dup(MPI_COMM_WORLD, &relay_on));
  OK(MPI_Win_allocate(WIN_BYTES, 1, MPI_INFO_NULL, make_on, &fence_base, &fence_win));
  memset(fence_base, 0, WIN_BYTES);
  OK(MPI_Barrier(MPI_COMM_WORLD));
  /* "only=NAME" runs one phase (NAME from kind_name, or "buffer_detach"), with the window
   * phases' window still made first; "verbose" names each phase as it passes. */
  const char *only = argc > 1 && strncmp(argv[1], "only=", 5) == 0 ? argv[1] + 5 : NULL;
  int verbose = argc > 1 && strcmp(argv[1], "verbose") == 0;
  OK(MPI_Win_create(sync_base, WIN_BYTES, 1, MPI_INFO_NULL, make_on, &sync_win));
  if (size > 1) {
    MPI_Comm half;
    OK(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half));
    OK(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, rank % 2 ? 0 : 1, 9, &inter_ic));
    OK(MPI_Comm_free(&half));
  }
  {
    const char *t = getenv("TMPDIR");
    long jobid = rank == 0 ? (long)getpid() : 0;
    OK(MPI_Bcast(&jobid, 1, MPI_LONG, 0, MPI_COMM_WORLD));
    snprintf(file_name, sizeof file_name, "%s/weft-thread-multiple-%ld", t && *t ? t : "/tmp",
             jobid);
    OK(MPI_File_open(make_on, file_name, MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_DELETE_ON_CLOSE,
                     MPI_INFO_NULL, &main_file));
  }
  OK(MPI_Barrier(MPI_COMM_WORLD));
  for (phase_kind = 0; phase_kind < K_KINDS; phase_kind++) {
    if (only && strcmp(only, kind_name[phase_kind]) != 0) continue;
    if (holds_own_lock(phase_kind)) {
      /* Each rank holds its own lock, and its memory is a known pattern, before the
       * threads start: the next rank's thread 0 locks it only after this rank's gives it
       * back. */
      OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, sync_win));
      for (int i = 0; i < WIN_BYTES; i++)
        sync_base[i] = phase_kind == K_LOCK_SHARED ? (unsigned char)(rank * 3 + i) : 0;
      OK(MPI_Win_sync(sync_win));
      OK(MPI_Barrier(MPI_COMM_WORLD));
    }
    run_pair(creator, relay);
    if (holds_own_lock(phase_kind) && phase_kind != K_LOCK_SHARED) {
      /* What the previous rank put here, after everyone unlocked (run_pair's barrier). */
      OK(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, sync_win));
      check_pattern(sync_base, (rank + size - 1) % size, phase_kind);
      OK(MPI_Win_unlock(rank, sync_win));
      OK(MPI_Barrier(MPI_COMM_WORLD));
    } else if (phase_kind == K_LOCK_SHARED) {
      memset(sync_base, 0, WIN_BYTES);
      OK(MPI_Barrier(MPI_COMM_WORLD));
    }
    if (rank == 0 && verbose) printf("%s: ok\n", kind_name[phase_kind]);
  }
  if (!only || strcmp(only, "buffer_detach") == 0) run_pair(bsender, breceiver);
  if (only && strcmp(only, kind_name[K_WIN_FREE]) != 0) OK(MPI_Win_free(&fence_win));
  OK(MPI_Win_free(&sync_win));
  if (inter_ic != MPI_COMM_NULL) OK(MPI_Comm_free(&inter_ic));
  if (main_file != MPI_FILE_NULL) OK(MPI_File_close(&main_file));
  OK(MPI_Comm_free(&make_on));
  OK(MPI_Comm_free(&relay_on));
  OK(MPI_Finalize());
  return 0;
}
