/* What the generated Fortran procedures (mpifort.c) share with the ones written by hand
 * (special.c): the special addresses of Fortran, string and LOGICAL conversions. */
#ifndef WEFT_MPIFORT_SPECIAL_H
#define WEFT_MPIFORT_SPECIAL_H
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>

/* Handle arrays up to this long are converted on the stack, longer ones on the heap. */
#define WEFT_F_STACK_HANDLES 32
/* The longest string an MPI procedure writes (MPI_MAX_LIBRARY_VERSION_STRING). */
#define WEFT_F_MAX_STRING 8192
/* gfortran's LOGICAL values. */
#define WEFT_F_TRUE 1
#define WEFT_F_FALSE 0

/* The COMMON blocks of mpif.h and the modules: their addresses stand for the C constants. */
extern MPI_Fint weft_f_bottom_, weft_f_in_place_, weft_f_buffer_automatic_;
extern MPI_Fint weft_f_status_ignore_[MPI_F_STATUS_SIZE];
extern MPI_Fint weft_f_statuses_ignore_[MPI_F_STATUS_SIZE];
extern MPI_Fint weft_f_errcodes_ignore_[1], weft_f_unweighted_[1], weft_f_weights_empty_[1];

static inline void *weft_f_buf(void *p) {
  if (p == (void *)&weft_f_bottom_) return MPI_BOTTOM;
  if (p == (void *)&weft_f_in_place_) return MPI_IN_PLACE;
  if (p == (void *)&weft_f_buffer_automatic_) return MPI_BUFFER_AUTOMATIC;
  return p;
}
static inline MPI_Status *weft_f_status(MPI_Status *s) {
  return (void *)s == (void *)weft_f_status_ignore_ ? MPI_STATUS_IGNORE : s;
}
static inline MPI_Status *weft_f_statuses(MPI_Status *s) {
  return (void *)s == (void *)weft_f_statuses_ignore_ ? MPI_STATUSES_IGNORE : s;
}
static inline MPI_Fint *weft_f_weights(MPI_Fint *w) {
  if (w == weft_f_unweighted_) return MPI_UNWEIGHTED;
  if (w == weft_f_weights_empty_) return MPI_WEIGHTS_EMPTY;
  return w;
}
static inline int weft_f_logical_in(MPI_Fint v) { return v != WEFT_F_FALSE; }
static inline MPI_Fint weft_f_logical_out(int v) { return v ? WEFT_F_TRUE : WEFT_F_FALSE; }

/* A CHARACTER argument as a new C string without its trailing blanks, and without its
 * leading ones too when `strip_leading` (NULL: no memory). */
char *weft_f_str_in(const char *s, size_t len, int strip_leading);
/* A C string into a CHARACTER argument, blank-padded (cut to its length). */
void weft_f_str_out(const char *c, char *s, size_t len);
/* How many datatypes an alltoallw-like call of `comm` takes: 2 = its size (remote size of
 * an intercommunicator), 1 = out-degree, 0 = in-degree of its topology. */
int weft_f_degree(MPI_Comm comm, int which);
#endif
