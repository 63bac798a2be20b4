/* Helpers shared by the benchmarks of bench/c/: statistics, argument parsing, a node clock
 * (static inline: a program need not use them all). C with POSIX clock_gettime and standard
 * MPI only, so that every MPI library compiles the same code. */
#ifndef WEFT_BENCH_UTIL_H
#define WEFT_BENCH_UTIL_H

#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline int bench_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Median of v[0..n) (sorts v in place); for even n the lower middle, as weft bench reports. */
static inline double bench_median(double *v, int n) {
  qsort(v, (size_t)n, sizeof v[0], bench_cmp_double);
  return v[(n - 1) / 2];
}

/* Seconds on CLOCK_MONOTONIC, one clock for every process of a node (MPI_Wtime need not be:
 * weft's counts from each process's MPI_Init), so times taken on different ranks of one node
 * can be compared. */
static inline double bench_node_clock(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A byte count such as 8, 64K, 1M (powers of 1024); -1 when the text is not one. */
static inline long bench_parse_bytes(const char *s) {
  char *end;
  long v = strtol(s, &end, 10);
  if (end == s || v < 0) return -1;
  if (*end == 'K' || *end == 'k') v *= 1024, end++;
  else if (*end == 'M' || *end == 'm') v *= 1024 * 1024, end++;
  else if (*end == 'G' || *end == 'g') v *= 1024L * 1024 * 1024, end++;
  if (*end == 'i') end++; /* accept KiB/MiB spellings */
  if (*end == 'B') end++;
  return *end == '\0' ? v : -1;
}

/* Fails the whole job with a message naming the bad argument (every rank parses the same
 * arguments, so every rank reaches the same verdict; rank 0 prints). */
static inline void bench_usage_error(int rank, const char *prog, const char *what, const char *usage) {
  if (rank == 0) fprintf(stderr, "%s: %s\nusage: %s\n", prog, what, usage);
  MPI_Finalize();
  exit(2);
}

/* The byte pattern a sender writes for (source, destination, index): any library that
 * delivers the wrong bytes, or bytes from the wrong peer, fails the checks. */
static inline unsigned char bench_pattern(int src, int dst, long i) {
  return (unsigned char)(src * 37 + dst * 11 + i * 7 + 1);
}

#endif
