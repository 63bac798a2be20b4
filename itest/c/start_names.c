/* Errors raised by the work that starts a nonblocking or persistent collective belong to the
 * call the program made, never to the nonblocking call whose work weft shares with it.
 * Every case makes one bad call on every rank (a root that is not a rank, a negative count,
 * MPI_DATATYPE_NULL); a persistent init that accepts its arguments is started (MPI_Start, or
 * MPI_Startall for MPI_Reduce_scatter_init), which reports the error (MPI-4.1 §3.9).
 * - Without arguments: MPI_ERRORS_RETURN on MPI_COMM_WORLD; every case must return its class
 *   (MPI_Error_class) from the call itself, or for a persistent init from the init or its
 *   start, and MPI_Error_string must give a text for it. weft's error codes are the classes,
 *   so that text names no function: the names are checked by the next two modes. Failures
 *   are printed; the job exits 1 on any, else rank 0 prints "start_names: <n> ranks ok".
 * - "fatal <case>": the case under MPI_ERRORS_ARE_FATAL; the test reads the fatal line, which
 *   must name the init, its start, or the nonblocking call made.
 * - "finalized <case>": the case's call after MPI_Finalize, where the message says which call
 *   came after MPI_Finalize: it must be the call made (MPI_Ibcast_c, not MPI_Ibcast). */
#include "check.h"
#include <string.h>

static int rank, size;
static int x[64], y[64], counts[64], displs[64];
static MPI_Datatype types[64];

/* One case's bad call; `*reporter` is set to the name of the call that returned `rc`. */
static int bad_call(const char *which, const char **reporter) {
  MPI_Request req = MPI_REQUEST_NULL;
  int persistent = 0, by_startall = 0, rc;
  for (int i = 0; i < 64; i++) {
    counts[i] = 1;
    displs[i] = i;
    types[i] = MPI_INT;
  }
  *reporter = which;
  if (strcmp(which, "MPI_Bcast_init") == 0) {
    rc = MPI_Bcast_init(x, 1, MPI_INT, size + 5, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
    persistent = 1;
  } else if (strcmp(which, "MPI_Gatherv_init") == 0) {
    rc = MPI_Gatherv_init(x, 1, MPI_INT, y, counts, displs, MPI_INT, size + 5, MPI_COMM_WORLD,
                          MPI_INFO_NULL, &req);
    persistent = 1;
  } else if (strcmp(which, "MPI_Reduce_scatter_init") == 0) {
    counts[0] = -1;
    rc = MPI_Reduce_scatter_init(x, y, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL,
                                 &req);
    persistent = 1;
    by_startall = 1;
  } else if (strcmp(which, "MPI_Alltoallw_init") == 0) {
    counts[0] = -1;
    rc = MPI_Alltoallw_init(x, counts, displs, types, y, counts, displs, types, MPI_COMM_WORLD,
                            MPI_INFO_NULL, &req);
    persistent = 1;
  } else if (strcmp(which, "MPI_Ibcast_c") == 0) {
    rc = MPI_Ibcast_c(x, 1, MPI_INT, size + 5, MPI_COMM_WORLD, &req);
  } else if (strcmp(which, "MPI_Igather_c") == 0) {
    rc = MPI_Igather_c(x, 1, MPI_INT, y, 1, MPI_INT, size + 5, MPI_COMM_WORLD, &req);
  } else if (strcmp(which, "MPI_Iallgather_c") == 0) {
    rc = MPI_Iallgather_c(x, 1, MPI_DATATYPE_NULL, y, 1, MPI_DATATYPE_NULL, MPI_COMM_WORLD, &req);
  } else if (strcmp(which, "MPI_Igatherv") == 0) {
    rc = MPI_Igatherv(x, 1, MPI_INT, y, counts, displs, MPI_INT, size + 5, MPI_COMM_WORLD, &req);
  } else {
    fprintf(stderr, "start_names: no case %s\n", which);
    exit(2);
  }
  if (persistent && rc == MPI_SUCCESS) {
    *reporter = by_startall ? "MPI_Startall" : "MPI_Start";
    rc = by_startall ? MPI_Startall(1, &req) : MPI_Start(&req);
    OK(MPI_Request_free(&req));
  }
  return rc;
}

static const struct {
  const char *call;
  int class;
} cases[] = {
    {"MPI_Bcast_init", MPI_ERR_ROOT},      {"MPI_Gatherv_init", MPI_ERR_ROOT},
    {"MPI_Reduce_scatter_init", MPI_ERR_COUNT}, {"MPI_Alltoallw_init", MPI_ERR_COUNT},
    {"MPI_Ibcast_c", MPI_ERR_ROOT},        {"MPI_Igather_c", MPI_ERR_ROOT},
    {"MPI_Iallgather_c", MPI_ERR_TYPE},    {"MPI_Igatherv", MPI_ERR_ROOT},
};

int main(int argc, char **argv) {
  OK(MPI_Init(&argc, &argv));
  OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  CHECK(size <= 64);
  const char *reporter;
  if (argc == 3 && strcmp(argv[1], "fatal") == 0) {
    bad_call(argv[2], &reporter);
    printf("UNREACHABLE: %s returned\n", reporter);
    MPI_Finalize();
    return 0;
  }
  if (argc == 3 && strcmp(argv[1], "finalized") == 0) {
    OK(MPI_Finalize());
    bad_call(argv[2], &reporter);
    printf("UNREACHABLE: %s returned after MPI_Finalize\n", reporter);
    return 0;
  }
  CHECK(argc == 1 && "usage: start_names [fatal|finalized <call>]");
  OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  int failures = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int rc = bad_call(cases[i].call, &reporter), class = -1, len = 0;
    char text[MPI_MAX_ERROR_STRING] = "";
    int is_start = strcmp(reporter, "MPI_Start") == 0 || strcmp(reporter, "MPI_Startall") == 0;
    int persistent = strstr(cases[i].call, "_init") != NULL;
    if (rc == MPI_SUCCESS) {
      printf("FAIL rank %d: %s succeeded, want class %d\n", rank, cases[i].call, cases[i].class);
      failures++;
      continue;
    }
    if (is_start && !persistent) {
      printf("FAIL rank %d: %s reported by %s\n", rank, cases[i].call, reporter);
      failures++;
    }
    if (MPI_Error_class(rc, &class) != MPI_SUCCESS || class != cases[i].class) {
      printf("FAIL rank %d: %s (reported by %s): class %d, want %d\n", rank, cases[i].call,
             reporter, class, cases[i].class);
      failures++;
    }
    if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS || len == 0 || len != (int)strlen(text)) {
      printf("FAIL rank %d: %s: MPI_Error_string of %d gave \"%s\" (length %d)\n", rank,
             cases[i].call, rc, text, len);
      failures++;
    }
  }
  int total = 0;
  OK(MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
  if (rank == 0 && total == 0) printf("start_names: %d ranks ok\n", size);
  fflush(stdout);
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
