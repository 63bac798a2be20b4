/* MPI_Comm_spawn (MPI-4.1 §11.8.2), run by crates/weft-mpi/tests/dynamic.rs.
 *
 * Parents (any number of ranks, started by weft run) spawn CHILDREN copies of this program
 * (argv[1], default 2) with the argument "child" and an info object whose "wdir" is the
 * parents' working directory. Checked on both sides:
 * - MPI_Comm_get_parent is MPI_COMM_NULL in the parents, an intercommunicator named
 *   MPI_COMM_PARENT in the children whose remote group is the parents; the children's own
 *   MPI_COMM_WORLD has CHILDREN ranks; MPI_APPNUM is 0 in the children and unset in the parents;
 * - every errcode is MPI_SUCCESS;
 * - point-to-point both ways over the intercommunicator (parent rank p sends to child
 *   p % CHILDREN and each child answers every parent), a broadcast from parent 0 to the
 *   children, an allreduce across the intercommunicator, an Intercomm_merge whose ranks put
 *   the parents first, a barrier on the merge;
 * - MPI_Comm_disconnect on both sides; then MPI_Comm_get_parent is MPI_COMM_NULL;
 * - in the parents, a second spawn of a command that does not exist fails with
 *   MPI_ERR_SPAWN on every rank with each errcode MPI_ERR_SPAWN, and the parents go on.
 * Child rank 0 sends its job's id to parent 0, which prints it ("child job ID") for the
 * caller's check of /dev/shm.
 * With the argument "orphan" the parents abort (exit code 5) once the children are up,
 * while the children wait for a message from them: the child job must end with them.
 */
#include "check.h"
/* CHECK with the values that explain a failure. */
#define CHECKF(cond, ...)                                                              \
  do {                                                                                 \
    if (!(cond)) {                                                                     \
      fprintf(stderr, "CHECK FAILED %s:%d: %s: ", __FILE__, __LINE__, #cond);          \
      fprintf(stderr, __VA_ARGS__);                                                    \
      fprintf(stderr, "\n");                                                           \
      fflush(stderr);                                                                  \
      MPI_Abort(MPI_COMM_WORLD, 3);                                                    \
      exit(3);                                                                         \
    }                                                                                  \
  } while (0)
#include <string.h>
#include <unistd.h>

static int children_of(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (strncmp(argv[i], "n=", 2) == 0)
      return atoi(argv[i] + 2);
  return 2;
}

static int has_arg(int argc, char **argv, const char *what) {
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], what) == 0)
      return 1;
  return 0;
}

/* The traffic both sides run: `inter` with `nlocal` local and `nremote` remote ranks. */
static void exchange(MPI_Comm inter, int parent_side) {
  int rank, nlocal, nremote;
  MPI_Comm_rank(inter, &rank);
  MPI_Comm_size(inter, &nlocal);
  MPI_Comm_remote_size(inter, &nremote);
  if (parent_side) {
    /* parent p -> child p % nremote, then every child answers every parent */
    int v = 1000 + rank;
    OK(MPI_Send(&v, 1, MPI_INT, rank % nremote, 7, inter));
    for (int c = 0; c < nremote; c++) {
      int got = -1;
      OK(MPI_Recv(&got, 1, MPI_INT, c, 8, inter, MPI_STATUS_IGNORE));
      CHECKF(got == 2000 + 10 * c + rank, "parent %d: child %d answered %d", rank, c, got);
    }
  } else {
    for (int p = rank; p < nremote; p += nlocal) {
      int got = -1;
      MPI_Status st;
      OK(MPI_Recv(&got, 1, MPI_INT, p, 7, inter, &st));
      CHECKF(got == 1000 + p && st.MPI_SOURCE == p, "child %d: got %d from %d", rank, got,
            st.MPI_SOURCE);
    }
    for (int p = 0; p < nremote; p++) {
      int v = 2000 + 10 * rank + p;
      OK(MPI_Send(&v, 1, MPI_INT, p, 8, inter));
    }
  }
  /* Broadcast from parent 0 to the children. */
  int b = parent_side ? (rank == 0 ? 424242 : -1) : -1;
  if (parent_side)
    OK(MPI_Bcast(&b, 1, MPI_INT, rank == 0 ? MPI_ROOT : MPI_PROC_NULL, inter));
  else {
    OK(MPI_Bcast(&b, 1, MPI_INT, 0, inter));
    CHECKF(b == 424242, "child %d: bcast gave %d", rank, b);
  }
  /* Allreduce: each side gets the sum of the other side's values. */
  int mine = parent_side ? rank + 1 : 100 * (rank + 1), sum = -1;
  OK(MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, inter));
  int want = parent_side ? 100 * nremote * (nremote + 1) / 2 : nremote * (nremote + 1) / 2;
  CHECKF(sum == want, "allreduce over the intercomm: %d, want %d", sum, want);
  /* Merge: parents low. */
  MPI_Comm merged;
  OK(MPI_Intercomm_merge(inter, parent_side ? 0 : 1, &merged));
  int mrank, msize;
  MPI_Comm_rank(merged, &mrank);
  MPI_Comm_size(merged, &msize);
  CHECKF(msize == nlocal + nremote, "merge size %d", msize);
  CHECKF(mrank == (parent_side ? rank : nremote + rank), "merge rank %d (side %d rank %d)", mrank,
        parent_side, rank);
  int all = mrank, total = -1;
  OK(MPI_Allreduce(&all, &total, 1, MPI_INT, MPI_SUM, merged));
  CHECKF(total == msize * (msize - 1) / 2, "merged allreduce %d", total);
  OK(MPI_Barrier(merged));
  OK(MPI_Comm_free(&merged));
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size, flag, *appnum;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm parent;
  OK(MPI_Comm_get_parent(&parent));
  int children = children_of(argc, argv);
  OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &appnum, &flag));

  if (has_arg(argc, argv, "child")) {
    char job[64] = "?";
    if (getenv("WEFT_JOB_ID"))
      snprintf(job, sizeof job, "%s", getenv("WEFT_JOB_ID"));
    if (rank == 0)
      OK(MPI_Send(job, sizeof job, MPI_CHAR, 0, 98, parent));
    if (has_arg(argc, argv, "orphan")) {
      /* Waits for a message the parents never send: their end must end this job. */
      int never;
      MPI_Recv(&never, 1, MPI_INT, 0, 99, parent, MPI_STATUS_IGNORE);
      return 4;
    }
    CHECKF(parent != MPI_COMM_NULL, "child %d: no parent", rank);
    CHECKF(size == children, "child %d: world of %d, want %d", rank, size, children);
    CHECKF(flag && *appnum == 0, "child %d: MPI_APPNUM flag %d", rank, flag);
    char name[MPI_MAX_OBJECT_NAME];
    int len;
    OK(MPI_Comm_get_name(parent, name, &len));
    CHECKF(strcmp(name, "MPI_COMM_PARENT") == 0, "the parent communicator is named %s", name);
    int inter;
    OK(MPI_Comm_test_inter(parent, &inter));
    CHECKF(inter, "the parent communicator is not an intercommunicator");
    exchange(parent, 0);
    OK(MPI_Comm_disconnect(&parent));
    CHECKF(parent == MPI_COMM_NULL, "disconnect left the handle");
    OK(MPI_Comm_get_parent(&parent));
    CHECKF(parent == MPI_COMM_NULL, "get_parent after disconnect");
    MPI_Finalize();
    return 0;
  }

  CHECKF(parent == MPI_COMM_NULL, "parent %d: has a parent", rank);
  CHECKF(!flag, "parent %d: MPI_APPNUM is set", rank);
  char cwd[4096];
  CHECKF(getcwd(cwd, sizeof cwd) != NULL, "getcwd");
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "wdir", cwd);
  MPI_Info_set(info, "weft_unknown_key", "ignored");
  char narg[32];
  snprintf(narg, sizeof narg, "n=%d", children);
  char *args[] = {"child", narg, has_arg(argc, argv, "orphan") ? "orphan" : NULL, NULL};
  int codes[64];
  for (int i = 0; i < 64; i++)
    codes[i] = -1;
  MPI_Comm inter;
  /* Root size-1: the arguments are significant there only. */
  int root = size - 1;
  OK(MPI_Comm_spawn(rank == root ? argv[0] : "not-significant", rank == root ? args : NULL,
                          rank == root ? children : -5, rank == root ? info : MPI_INFO_NULL, root,
                          MPI_COMM_WORLD, &inter, codes));
  for (int i = 0; i < children; i++)
    CHECKF(codes[i] == MPI_SUCCESS, "errcode %d is %d", i, codes[i]);
  if (rank == 0) {
    char job[64];
    OK(MPI_Recv(job, sizeof job, MPI_CHAR, 0, 98, inter, MPI_STATUS_IGNORE));
    job[sizeof job - 1] = 0;
    printf("child job %s\n", job);
    fflush(stdout);
  }
  if (has_arg(argc, argv, "orphan")) {
    /* The parents end while the children wait for them. */
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Abort(MPI_COMM_WORLD, 5);
  }
  int rsize;
  MPI_Comm_remote_size(inter, &rsize);
  CHECKF(rsize == children, "remote size %d", rsize);
  exchange(inter, 1);
  OK(MPI_Comm_disconnect(&inter));
  CHECKF(inter == MPI_COMM_NULL, "disconnect left the handle");
  MPI_Info_free(&info);

  /* A command that does not exist. */
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  for (int i = 0; i < 64; i++)
    codes[i] = -1;
  int rc = MPI_Comm_spawn("weft-no-such-program", MPI_ARGV_NULL, 3, MPI_INFO_NULL, 0,
                          MPI_COMM_WORLD, &inter, codes);
  int cls = -1;
  MPI_Error_class(rc, &cls);
  CHECKF(cls == MPI_ERR_SPAWN, "bad command: class %d", cls);
  for (int i = 0; i < 3; i++)
    CHECKF(codes[i] == MPI_ERR_SPAWN, "bad command: errcode %d is %d", i, codes[i]);
  OK(MPI_Barrier(MPI_COMM_WORLD));
  MPI_Finalize();
  if (rank == 0)
    printf("spawn: %d parents, %d children ok\n", size, children);
  return 0;
}
