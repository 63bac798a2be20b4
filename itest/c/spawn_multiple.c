/* MPI_Comm_spawn_multiple (MPI-4.1 §11.8.3), run by crates/weft-mpi/tests/dynamic.rs.
 *
 * The parents spawn two commands as one job: this program with arguments "child" "first"
 * (argv[1] n=A processes) and with "child" "second" (n=B... given as argv[2] m=B), the
 * second with info "wdir" = "/" (a folder other than the parents'). Checked:
 * - the children's MPI_COMM_WORLD has A + B ranks, the first A run the first command
 *   (their argv says "first", MPI_APPNUM 0, the parents' working directory), the others the
 *   second ("second", MPI_APPNUM 1, working directory "/");
 * - every errcode is MPI_SUCCESS; the intercommunicator's remote size is A + B (parents)
 *   and the parents' count (children);
 * - an allreduce across the intercommunicator and a merge (parents first);
 * - disconnect on both sides.
 */
#include "check.h"
#include <string.h>
#include <unistd.h>

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

static int num_arg(int argc, char **argv, const char *prefix, int dflt) {
  size_t n = strlen(prefix);
  for (int i = 1; i < argc; i++)
    if (strncmp(argv[i], prefix, n) == 0)
      return atoi(argv[i] + n);
  return dflt;
}

static int has_arg(int argc, char **argv, const char *what) {
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], what) == 0)
      return 1;
  return 0;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size, flag, *appnum;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int a = num_arg(argc, argv, "n=", 1), b = num_arg(argc, argv, "m=", 2);
  int parents = num_arg(argc, argv, "p=", -1);
  MPI_Comm parent;
  OK(MPI_Comm_get_parent(&parent));
  OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &appnum, &flag));
  char cwd[4096];
  CHECKF(getcwd(cwd, sizeof cwd) != NULL, "getcwd");

  if (has_arg(argc, argv, "child")) {
    CHECKF(parent != MPI_COMM_NULL, "child %d: no parent", rank);
    CHECKF(size == a + b, "child world of %d, want %d", size, a + b);
    int first = rank < a;
    CHECKF(has_arg(argc, argv, first ? "first" : "second"), "child %d runs the wrong command",
           rank);
    CHECKF(flag && *appnum == (first ? 0 : 1), "child %d: MPI_APPNUM flag %d value %d", rank,
           flag, flag ? *appnum : -1);
    if (!first)
      CHECKF(strcmp(cwd, "/") == 0, "child %d of the second command in %s", rank, cwd);
    int rsize;
    MPI_Comm_remote_size(parent, &rsize);
    CHECKF(rsize == parents, "child: %d parents, want %d", rsize, parents);
    int mine = 100, sum = -1;
    OK(MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, parent));
    CHECKF(sum == parents, "child allreduce %d", sum);
    MPI_Comm merged;
    OK(MPI_Intercomm_merge(parent, 1, &merged));
    int mrank;
    MPI_Comm_rank(merged, &mrank);
    CHECKF(mrank == parents + rank, "child merged rank %d", mrank);
    OK(MPI_Barrier(merged));
    OK(MPI_Comm_free(&merged));
    OK(MPI_Comm_disconnect(&parent));
    MPI_Finalize();
    return 0;
  }

  CHECKF(parent == MPI_COMM_NULL, "parent %d has a parent", rank);
  char na[32], nb[32], np[32];
  snprintf(na, sizeof na, "n=%d", a);
  snprintf(nb, sizeof nb, "m=%d", b);
  snprintf(np, sizeof np, "p=%d", size);
  char *argv0[] = {"child", "first", na, nb, np, NULL};
  char *argv1[] = {"child", "second", na, nb, np, NULL};
  char **argvs[] = {argv0, argv1};
  char *cmds[] = {argv[0], argv[0]};
  int maxprocs[] = {a, b};
  MPI_Info infos[2];
  MPI_Info_create(&infos[0]);
  MPI_Info_create(&infos[1]);
  MPI_Info_set(infos[0], "wdir", cwd);
  MPI_Info_set(infos[1], "wdir", "/");
  int codes[64];
  for (int i = 0; i < 64; i++)
    codes[i] = -1;
  MPI_Comm inter;
  int root = 0;
  if (rank == root)
    OK(MPI_Comm_spawn_multiple(2, cmds, argvs, maxprocs, infos, root, MPI_COMM_WORLD, &inter,
                               codes));
  else
    OK(MPI_Comm_spawn_multiple(0, NULL, NULL, NULL, NULL, root, MPI_COMM_WORLD, &inter, codes));
  for (int i = 0; i < a + b; i++)
    CHECKF(codes[i] == MPI_SUCCESS, "errcode %d is %d", i, codes[i]);
  int rsize;
  MPI_Comm_remote_size(inter, &rsize);
  CHECKF(rsize == a + b, "remote size %d", rsize);
  int mine = 1, sum = -1;
  OK(MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, inter));
  CHECKF(sum == 100 * (a + b), "parent allreduce %d", sum);
  MPI_Comm merged;
  OK(MPI_Intercomm_merge(inter, 0, &merged));
  int mrank;
  MPI_Comm_rank(merged, &mrank);
  CHECKF(mrank == rank, "parent merged rank %d", mrank);
  OK(MPI_Barrier(merged));
  OK(MPI_Comm_free(&merged));
  OK(MPI_Comm_disconnect(&inter));
  MPI_Info_free(&infos[0]);
  MPI_Info_free(&infos[1]);
  MPI_Finalize();
  if (rank == 0)
    printf("spawn_multiple: %d parents, %d + %d children ok\n", size, a, b);
  return 0;
}
