/* hostprobe: the round trip of one cache line between two cores, in nanoseconds (the median
 * of 25 batches of 20000 round trips), for bench/compare.sh to tell which speed the host
 * runs at before and after each measured run. The development VM has a mode in which every
 * transfer between its two cores takes about four times as long (ping-pong 8 B 0.09 ->
 * 0.30 us for every MPI library), for seconds to minutes at a time: a library measured in
 * it is not comparable with one measured outside it.
 *
 * Two threads, pinned to the first two CPUs this process may use, pass a counter back and
 * forth through one cache line. No MPI: the same probe serves every library. Exits 2 with
 * a message when fewer than two CPUs are available. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define BATCHES 25
#define ROUNDS 20000L

static _Alignas(64) _Atomic long ball;
static int cpus[2];

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int pin(int cpu) {
  cpu_set_t s;
  CPU_ZERO(&s);
  CPU_SET(cpu, &s);
  return sched_setaffinity(0, sizeof s, &s);
}

/* The answering side: waits for each odd value and answers with the next even one. */
static void *answer(void *arg) {
  (void)arg;
  pin(cpus[1]);
  for (long i = 1; i <= BATCHES * ROUNDS; i++) {
    while (atomic_load_explicit(&ball, memory_order_acquire) != 2 * i - 1) {
    }
    atomic_store_explicit(&ball, 2 * i, memory_order_release);
  }
  return NULL;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(void) {
  cpu_set_t s;
  if (sched_getaffinity(0, sizeof s, &s) != 0) {
    perror("hostprobe: sched_getaffinity");
    return 2;
  }
  int n = 0;
  for (int c = 0; c < CPU_SETSIZE && n < 2; c++)
    if (CPU_ISSET(c, &s)) cpus[n++] = c;
  if (n < 2) {
    fprintf(stderr, "hostprobe: needs two CPUs, this process may use %d\n", n);
    return 2;
  }
  pthread_t t;
  if (pthread_create(&t, NULL, answer, NULL) != 0) {
    fprintf(stderr, "hostprobe: cannot start a thread\n");
    return 2;
  }
  pin(cpus[0]);
  double per_batch[BATCHES];
  long k = 1;
  for (int b = 0; b < BATCHES; b++) {
    double t0 = now_ns();
    for (long i = 0; i < ROUNDS; i++, k++) {
      atomic_store_explicit(&ball, 2 * k - 1, memory_order_release);
      while (atomic_load_explicit(&ball, memory_order_acquire) != 2 * k) {
      }
    }
    per_batch[b] = (now_ns() - t0) / (double)ROUNDS;
  }
  pthread_join(t, NULL);
  qsort(per_batch, BATCHES, sizeof per_batch[0], cmp_double);
  printf("%.0f\n", per_batch[BATCHES / 2]);
  return 0;
}
