/* Assertions for the C conformance programs: a failed check prints the rank, file, line and
 * expression, then aborts the whole job with exit code 3. */
#ifndef WEFT_ITEST_CHECK_H
#define WEFT_ITEST_CHECK_H
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int check_rank(void) {
  int init = 0, fin = 0, r = -1;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (init && !fin) MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

#define CHECK(cond)                                                                     \
  do {                                                                                  \
    if (!(cond)) {                                                                      \
      fprintf(stderr, "CHECK FAILED rank %d %s:%d: %s\n", check_rank(), __FILE__,       \
              __LINE__, #cond);                                                         \
      fflush(stderr);                                                                   \
      MPI_Abort(MPI_COMM_WORLD, 3);                                                     \
      exit(3);                                                                          \
    }                                                                                   \
  } while (0)

#define CHECK_RC(expr, want)                                                            \
  do {                                                                                  \
    int rc_ = (expr);                                                                   \
    if (rc_ != (want)) {                                                                \
      char msg_[MPI_MAX_ERROR_STRING] = "";                                             \
      int len_ = 0;                                                                     \
      if (check_rank() >= 0) MPI_Error_string(rc_, msg_, &len_);                        \
      fprintf(stderr, "CHECK FAILED rank %d %s:%d: %s returned %d, want %d (%s): %s\n", \
              check_rank(), __FILE__, __LINE__, #expr, rc_, (int)(want), #want, msg_);  \
      fflush(stderr);                                                                   \
      MPI_Abort(MPI_COMM_WORLD, 3);                                                     \
      exit(3);                                                                          \
    }                                                                                   \
  } while (0)

#define OK(expr) CHECK_RC(expr, MPI_SUCCESS)
#endif
