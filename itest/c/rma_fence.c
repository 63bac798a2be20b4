/* MPI_Win_fence epochs on every window flavor whose members are all on one node (the node
 * barrier of control-block words; fence.rs): in each epoch every rank puts a block of SIZE
 * bytes into its right neighbour's window and gets one from its left neighbour's, for sizes
 * 0, 1, 7, 4097 and 1 MiB + 3 (odd offsets too), and checks every byte after the closing
 * fence; then epochs where only rank 0 puts to every rank (so the others arrive first and
 * wait for it), and NOPRECEDE/NOSUCCEED assertions. Run also with WEFT_BLOCK=on and a long
 * WEFT_BLOCK_SLEEP_MS: waiting members then sleep, and only an arrival's wake-up ends their
 * sleep (a lost one hangs the job). Prints "rma_fence ok" on rank 0. */
#include <stdint.h>
#include <string.h>

#include "check.h"

static int rank, size;
enum { BIG = (1 << 20) + 3, ROUNDS = 3 };
static const MPI_Aint SIZES[] = {0, 1, 7, 4097, BIG};
enum { NSIZES = sizeof SIZES / sizeof SIZES[0] };
enum { ALLOCATE, CREATE, SHARED, NFLAVORS };
static const char *FLAVOR[] = {"allocate", "create", "shared"};

/* Byte `i` of the block rank `from` sends in round `round`. */
static unsigned char pat(int from, int round, MPI_Aint i) {
  return (unsigned char)(from * 31 + round * 7 + i * 13 + (i >> 8));
}

/* Window layout: the put block at offset 1 (odd), the get source at 1 + BIG. */
static void neighbour_epochs(MPI_Win win, unsigned char *mem, unsigned char *buf) {
  int right = (rank + 1) % size, left = (rank + size - 1) % size;
  for (int round = 0; round < ROUNDS; round++)
    for (int k = 0; k < NSIZES; k++) {
      MPI_Aint n = SIZES[k];
      /* The get source: this rank's own bytes, written in the previous epoch. */
      OK(MPI_Win_fence(0, win));
      for (MPI_Aint i = 0; i < n; i++) mem[1 + BIG + i] = pat(rank, round + 100, i);
      for (MPI_Aint i = 0; i < n; i++) buf[i] = pat(rank, round, i);
      unsigned char *got = buf + BIG;
      memset(got, 0xee, (size_t)n + 1);
      OK(MPI_Win_fence(0, win));
      OK(MPI_Put(buf, (int)n, MPI_BYTE, right, 1, (int)n, MPI_BYTE, win));
      OK(MPI_Get(got, (int)n, MPI_BYTE, left, 1 + BIG, (int)n, MPI_BYTE, win));
      OK(MPI_Win_fence(0, win));
      for (MPI_Aint i = 0; i < n; i++) CHECK(mem[1 + i] == pat(left, round, i));
      for (MPI_Aint i = 0; i < n; i++) CHECK(got[i] == pat(left, round + 100, i));
      CHECK(got[n] == 0xee);
    }
}

/* Rank 0 alone puts BIG bytes into every rank's window before each fence. */
static void root_epochs(MPI_Win win, unsigned char *mem, unsigned char *buf) {
  for (int round = 0; round < ROUNDS; round++) {
    OK(MPI_Win_fence(MPI_MODE_NOPRECEDE, win));
    if (rank == 0) {
      for (MPI_Aint i = 0; i < BIG; i++) buf[i] = pat(size + round, 0, i);
      for (int t = 0; t < size; t++) OK(MPI_Put(buf, BIG, MPI_BYTE, t, 1, BIG, MPI_BYTE, win));
    }
    OK(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    for (MPI_Aint i = 0; i < BIG; i++) CHECK(mem[1 + i] == pat(size + round, 0, i));
  }
}

static void run(int flavor) {
  MPI_Aint bytes = 1 + 2 * (MPI_Aint)BIG;
  unsigned char *mem = NULL, *own = NULL;
  MPI_Win win;
  switch (flavor) {
    case ALLOCATE:
      OK(MPI_Win_allocate(bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
      break;
    case CREATE:
      own = malloc((size_t)bytes);
      CHECK(own != NULL);
      mem = own;
      OK(MPI_Win_create(mem, bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
      break;
    default:
      OK(MPI_Win_allocate_shared(bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
      break;
  }
  unsigned char *buf = malloc(2 * (size_t)BIG + 1);
  CHECK(buf != NULL);
  neighbour_epochs(win, mem, buf);
  OK(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
  root_epochs(win, mem, buf);
  OK(MPI_Win_free(&win));
  free(buf);
  free(own);
  if (rank == 0) printf("rma_fence %s ok\n", FLAVOR[flavor]);
}

int main(int argc, char **argv) {
  OK(MPI_Init(&argc, &argv));
  OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  for (int f = 0; f < NFLAVORS; f++) run(f);
  if (rank == 0) printf("rma_fence ok\n");
  OK(MPI_Finalize());
  return 0;
}
