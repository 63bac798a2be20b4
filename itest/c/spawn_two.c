/* Two MPI_Comm_spawn from one parent job (MPI-4.1 §11.8.2): the parents are then in three
 * weft instances (their world and one universe per spawn), and a wait in any of them must
 * progress the others (MPI's progress rule, §2.9). Run by crates/weft-mpi/tests/dynamic.rs.
 *
 * The parents (1 or 2 ranks) spawn job A (2 copies of this program, "child=A") and job B
 * (1 copy, "child=B"). Each case below makes parent 0 wait in one instance for a message
 * that can only be sent after a synchronous send of 1 MiB + 3 bytes in another instance
 * has completed; that send completes only when parent 0's engine of that instance matches
 * it, so parent 0 must progress it from inside the wait. Steps are ordered by files in a
 * directory parent 0 made: parent 0 creates STEP0 once it has posted the receive of the
 * big message (and calls nothing but the blocking receive after it), the big sender starts
 * only then and creates STEP once its send has completed, and the process that sends the
 * awaited message waits for STEP first: the order is forced by the program, whatever the
 * scheduling. Without
 * progress across instances every case hangs (the caller's time bound catches it).
 *   X: parent 0 waits on B (universe B) while A's child 0 sends to it (universe A);
 *   Y: parent 0 waits on A while B's child sends to it;
 *   W (2 parents): parent 0 waits on parent 1 (world) while A's child 0 sends to it;
 *   V (2 parents): parent 0 waits on A's child 0 while parent 1 sends to it (world).
 * Every payload is checked. Then the parents disconnect one job ("drop=A" or "drop=B"),
 * whose children end, and go on with the other: 1 MiB + 3 bytes both ways, an allreduce
 * over the intercommunicator, then its disconnect. Child rank 0 of each job sends its job's
 * id to parent 0, which prints it ("child job ID") for the caller's check of /dev/shm.
 * With the argument "multiple" every process asks for MPI_THREAD_MULTIPLE (blocking calls
 * then poll their nonblocking twins).
 */
#include "check.h"
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BIG (1048576 + 3)

static const char *arg_value(int argc, char **argv, const char *key) {
  size_t k = strlen(key);
  for (int i = 1; i < argc; i++)
    if (strncmp(argv[i], key, k) == 0 && argv[i][k] == '=')
      return argv[i] + k + 1;
  return NULL;
}

static int has_arg(int argc, char **argv, const char *what) {
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], what) == 0)
      return 1;
  return 0;
}

static unsigned char pattern(int seed, size_t i) { return (unsigned char)(seed * 31 + i * 7 + (i >> 11)); }

static void fill(unsigned char *b, int seed) {
  for (size_t i = 0; i < BIG; i++)
    b[i] = pattern(seed, i);
}

static void check_fill(const unsigned char *b, int seed, const char *what) {
  for (size_t i = 0; i < BIG; i++)
    if (b[i] != pattern(seed, i)) {
      fprintf(stderr, "CHECK FAILED %s: byte %zu is %d, want %d\n", what, i, b[i], pattern(seed, i));
      fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
}

/* Says that step `name` is done: creates DIR/name. */
static void mark(const char *dir, const char *name) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  int fd = open(path, O_CREAT | O_WRONLY, 0600);
  CHECK(fd >= 0);
  close(fd);
}

/* Waits (outside MPI) until step `name` is done. */
static void await_mark(const char *dir, const char *name) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  while (access(path, F_OK) != 0)
    usleep(1000);
}

/* Sends BIG bytes of `seed` synchronously once parent 0 has posted their receive (step
 * `step`0), then says step `step` is done. */
static void ssend_big(const char *dir, const char *step, int seed, int to, int tag,
                      MPI_Comm comm) {
  char posted[16];
  snprintf(posted, sizeof posted, "%s0", step);
  await_mark(dir, posted);
  unsigned char *b = malloc(BIG);
  CHECK(b != NULL);
  fill(b, seed);
  OK(MPI_Ssend(b, BIG, MPI_BYTE, to, tag, comm));
  free(b);
  mark(dir, step);
}

/* Parent 0's side of a case: receives BIG bytes of `seed` from `from` on `big_comm`
 * (posted first, not waited for), then waits in a blocking receive of the token `tag + 1`
 * from `tok_from` on `tok_comm`, then completes the big receive. */
static void wait_across(const char *dir, MPI_Comm big_comm, int from, MPI_Comm tok_comm,
                        int tok_from, int tag, int seed, const char *what) {
  unsigned char *b = malloc(BIG);
  CHECK(b != NULL);
  memset(b, 0, BIG);
  MPI_Request r;
  OK(MPI_Irecv(b, BIG, MPI_BYTE, from, tag, big_comm, &r));
  char posted[16];
  snprintf(posted, sizeof posted, "%s0", what);
  mark(dir, posted);
  int tok = -1;
  OK(MPI_Recv(&tok, 1, MPI_INT, tok_from, tag + 1, tok_comm, MPI_STATUS_IGNORE));
  if (tok != tag + 1) {
    fprintf(stderr, "CHECK FAILED case %s: token %d, want %d\n", what, tok, tag + 1);
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  MPI_Status st;
  OK(MPI_Wait(&r, &st));
  int n = -1;
  OK(MPI_Get_count(&st, MPI_BYTE, &n));
  CHECK(n == BIG && st.MPI_SOURCE == from);
  check_fill(b, seed, what);
  free(b);
}

/* The send of a token that may only go once step `after` is done. */
static void send_token_after(const char *dir, const char *after, int tag, int to, MPI_Comm comm) {
  await_mark(dir, after);
  int tok = tag + 1;
  OK(MPI_Send(&tok, 1, MPI_INT, to, tag + 1, comm));
}

/* Traffic on the job kept after the other was dropped: every parent sends BIG bytes to one
 * child, which sends them back to that parent with another seed; an allreduce. */
static void keep_working(MPI_Comm inter, int parent_side) {
  int rank, nremote;
  MPI_Comm_rank(inter, &rank);
  MPI_Comm_remote_size(inter, &nremote);
  unsigned char *b = malloc(BIG);
  CHECK(b != NULL);
  int nlocal;
  MPI_Comm_size(inter, &nlocal);
  if (parent_side) {
    fill(b, 50 + rank);
    OK(MPI_Send(b, BIG, MPI_BYTE, rank % nremote, 51, inter));
    memset(b, 0, BIG);
    OK(MPI_Recv(b, BIG, MPI_BYTE, rank % nremote, 52, inter, MPI_STATUS_IGNORE));
    check_fill(b, 60 + rank, "kept job: answer");
  } else {
    for (int p = rank; p < nremote; p += nlocal) {
      OK(MPI_Recv(b, BIG, MPI_BYTE, p, 51, inter, MPI_STATUS_IGNORE));
      check_fill(b, 50 + p, "kept job: request");
      fill(b, 60 + p);
      OK(MPI_Send(b, BIG, MPI_BYTE, p, 52, inter));
    }
  }
  free(b);
  int mine = parent_side ? rank + 1 : 100, sum = -1;
  OK(MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, inter));
  int want = parent_side ? 100 * nremote : nremote * (nremote + 1) / 2;
  CHECK(sum == want);
}

static void send_job_id(MPI_Comm parent, int rank) {
  char job[64] = "?";
  if (getenv("WEFT_JOB_ID"))
    snprintf(job, sizeof job, "%s", getenv("WEFT_JOB_ID"));
  if (rank == 0)
    OK(MPI_Send(job, sizeof job, MPI_CHAR, 0, 98, parent));
}

static void child(const char *which, const char *dir, const char *drop, int rank) {
  MPI_Comm parent;
  OK(MPI_Comm_get_parent(&parent));
  CHECK(parent != MPI_COMM_NULL);
  int parents;
  MPI_Comm_remote_size(parent, &parents);
  send_job_id(parent, rank);
  int a = strcmp(which, "A") == 0;
  if (rank == 0) {
    /* X: A sends big, B sends the token once A's send is done. */
    if (a) {
      ssend_big(dir, "X", 1, 0, 10, parent);
    } else {
      send_token_after(dir, "X", 10, 0, parent);
    }
    /* Y: the reverse. */
    if (a) {
      send_token_after(dir, "Y", 20, 0, parent);
    } else {
      ssend_big(dir, "Y", 2, 0, 20, parent);
    }
    if (a && parents > 1) {
      /* W: A sends big while parent 0 waits on parent 1. */
      ssend_big(dir, "W", 3, 0, 30, parent);
      /* V: parent 1 sends big in the parents' world while parent 0 waits on A. */
      send_token_after(dir, "V", 40, 0, parent);
    }
  }
  if (strcmp(which, drop) == 0) {
    OK(MPI_Comm_disconnect(&parent));
  } else {
    keep_working(parent, 0);
    OK(MPI_Comm_disconnect(&parent));
  }
  CHECK(parent == MPI_COMM_NULL);
}

static MPI_Comm spawn(char *prog, const char *which, const char *dir, const char *drop, int multiple,
                      int n, int rank) {
  char w[16], d[4200], dr[16];
  snprintf(w, sizeof w, "child=%s", which);
  snprintf(d, sizeof d, "dir=%s", dir);
  snprintf(dr, sizeof dr, "drop=%s", drop);
  char *args[] = {w, d, dr, multiple ? "multiple" : NULL, NULL};
  int codes[4] = {-1, -1, -1, -1};
  MPI_Comm inter;
  OK(MPI_Comm_spawn(prog, args, n, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter, codes));
  for (int i = 0; i < n; i++)
    CHECK(codes[i] == MPI_SUCCESS);
  if (rank == 0) {
    char job[64];
    OK(MPI_Recv(job, sizeof job, MPI_CHAR, 0, 98, inter, MPI_STATUS_IGNORE));
    job[sizeof job - 1] = 0;
    printf("child job %s\n", job);
    fflush(stdout);
  }
  return inter;
}

int main(int argc, char **argv) {
  int multiple = has_arg(argc, argv, "multiple");
  if (multiple) {
    int provided = -1;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    CHECK(provided == MPI_THREAD_MULTIPLE);
  } else {
    MPI_Init(&argc, &argv);
  }
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char *drop = arg_value(argc, argv, "drop");
  CHECK(drop != NULL && (strcmp(drop, "A") == 0 || strcmp(drop, "B") == 0));
  const char *which = arg_value(argc, argv, "child");
  if (which) {
    const char *dir = arg_value(argc, argv, "dir");
    CHECK(dir != NULL);
    child(which, dir, drop, rank);
    MPI_Finalize();
    return 0;
  }

  /* The steps' directory, made by parent 0 and shared with parent 1 and the children. */
  char dir[4096] = "";
  if (rank == 0) {
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/weft-spawn-two-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    CHECK(mkdtemp(dir) != NULL);
  }
  OK(MPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, MPI_COMM_WORLD));
  MPI_Comm ia = spawn(argv[0], "A", dir, drop, multiple, 2, rank);
  MPI_Comm ib = spawn(argv[0], "B", dir, drop, multiple, 1, rank);

  if (rank == 0) {
    wait_across(dir, ia, 0, ib, 0, 10, 1, "X");
    wait_across(dir, ib, 0, ia, 0, 20, 2, "Y");
    if (size > 1) {
      wait_across(dir, ia, 0, MPI_COMM_WORLD, 1, 30, 3, "W");
      wait_across(dir, MPI_COMM_WORLD, 1, ia, 0, 40, 4, "V");
    }
  } else if (rank == 1) {
    /* W: the token to parent 0 once A's big send is done. */
    send_token_after(dir, "W", 30, 0, MPI_COMM_WORLD);
    /* V: big to parent 0 while it waits on A, which sends its token after this. */
    ssend_big(dir, "V", 4, 0, 40, MPI_COMM_WORLD);
  }

  /* One job is dropped, the other keeps working. */
  MPI_Comm *dropped = strcmp(drop, "A") == 0 ? &ia : &ib;
  MPI_Comm *kept = strcmp(drop, "A") == 0 ? &ib : &ia;
  OK(MPI_Comm_disconnect(dropped));
  CHECK(*dropped == MPI_COMM_NULL);
  keep_working(*kept, 1);
  OK(MPI_Comm_disconnect(kept));
  CHECK(*kept == MPI_COMM_NULL);

  OK(MPI_Barrier(MPI_COMM_WORLD));
  if (rank == 0) {
    const char *steps[] = {"X0", "X", "Y0", "Y", "W0", "W", "V0", "V"};
    for (int i = 0; i < 8; i++) {
      char path[4200];
      snprintf(path, sizeof path, "%s/%s", dir, steps[i]);
      unlink(path);
    }
    CHECK(rmdir(dir) == 0);
  }
  MPI_Finalize();
  if (rank == 0)
    printf("spawn_two: %d parents, drop %s%s ok\n", size, drop, multiple ? ", multiple" : "");
  return 0;
}
