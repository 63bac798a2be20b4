/* Dynamic windows (MPI_Win_create_dynamic, MPI_Win_attach) with many regions and accesses
 * that span regions attached back to back. Every rank attaches 300 regions of odd sizes
 * (MPI sets no limit), publishes their addresses, and puts into one of every peer's regions
 * in turn; after detaching every other region the rest stay reachable, and the detached ones
 * attach again. A buffer attached as two halves takes a put, an accumulate, a get-accumulate
 * and a get of 9216 ints across the seam; an access past its end, or over a gap between two
 * regions, is MPI_ERR_RMA_RANGE. Any rank count. */
#include "check.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;

#define NREG 300
#define HALF 4608 /* ints in each half of the seam buffer (9216 in all) */

static int reg_len(int i) { return 1 + (i * 5) % 13; }
static int reg_val(int writer, int target, int i, int k) {
  return writer * 1000000 + target * 10000 + i * 20 + k;
}

int main(int argc, char **argv) {
  OK(MPI_Init(&argc, &argv));
  OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  MPI_Win win;
  OK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
  OK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));

  /* Many regions, attached in an order unrelated to their addresses. */
  int *reg[NREG];
  MPI_Aint *addr = malloc(sizeof(MPI_Aint) * NREG * size);
  CHECK(addr != NULL);
  for (int i = 0; i < NREG; i++) {
    reg[i] = malloc(sizeof(int) * reg_len(i));
    CHECK(reg[i] != NULL);
    memset(reg[i], 0xff, sizeof(int) * reg_len(i));
  }
  for (int j = 0; j < NREG; j++) {
    int i = (j * 7) % NREG; /* 7 and 300 are coprime: every region once */
    OK(MPI_Win_attach(win, reg[i], sizeof(int) * reg_len(i)));
  }
  for (int i = 0; i < NREG; i++) OK(MPI_Get_address(reg[i], &addr[rank * NREG + i]));
  OK(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, addr, NREG, MPI_AINT, MPI_COMM_WORLD));

  /* Region i of every target is written by rank i % size. */
  int vals[16];
  OK(MPI_Win_lock_all(0, win));
  for (int t = 0; t < size; t++) {
    for (int i = rank; i < NREG; i += size) {
      for (int k = 0; k < reg_len(i); k++) vals[k] = reg_val(rank, t, i, k);
      OK(MPI_Put(vals, reg_len(i), MPI_INT, t, addr[t * NREG + i], reg_len(i), MPI_INT, win));
    }
  }
  OK(MPI_Win_unlock_all(win));
  OK(MPI_Barrier(MPI_COMM_WORLD));
  for (int i = 0; i < NREG; i++)
    for (int k = 0; k < reg_len(i); k++) CHECK(reg[i][k] == reg_val(i % size, rank, i, k));

  /* Detach every even region: the odd ones stay reachable; an even one is not attached. */
  for (int i = 0; i < NREG; i += 2) OK(MPI_Win_detach(win, reg[i]));
  OK(MPI_Barrier(MPI_COMM_WORLD));
  int peer = (rank + 1) % size, got[16];
  OK(MPI_Win_lock(MPI_LOCK_SHARED, peer, 0, win));
  for (int i = 1; i < NREG; i += 2) {
    OK(MPI_Get(got, reg_len(i), MPI_INT, peer, addr[peer * NREG + i], reg_len(i), MPI_INT,
               win));
    OK(MPI_Win_flush(peer, win));
    for (int k = 0; k < reg_len(i); k++) CHECK(got[k] == reg_val(i % size, peer, i, k));
  }
  OK(MPI_Win_unlock(peer, win));
  int cls = MPI_SUCCESS;
  OK(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win));
  MPI_Error_class(MPI_Get(got, 1, MPI_INT, rank, addr[rank * NREG + 2], 1, MPI_INT, win), &cls);
  CHECK(cls == MPI_ERR_RMA_RANGE);
  OK(MPI_Win_unlock(rank, win));
  OK(MPI_Barrier(MPI_COMM_WORLD));
  for (int i = 0; i < NREG; i += 2) OK(MPI_Win_attach(win, reg[i], sizeof(int) * reg_len(i)));
  OK(MPI_Barrier(MPI_COMM_WORLD));
  OK(MPI_Win_lock(MPI_LOCK_SHARED, peer, 0, win));
  for (int i = 0; i < NREG; i += 2) {
    OK(MPI_Get(got, reg_len(i), MPI_INT, peer, addr[peer * NREG + i], reg_len(i), MPI_INT,
               win));
    OK(MPI_Win_flush(peer, win));
    for (int k = 0; k < reg_len(i); k++) CHECK(got[k] == reg_val(i % size, peer, i, k));
  }
  OK(MPI_Win_unlock(peer, win));
  OK(MPI_Barrier(MPI_COMM_WORLD));

  /* One buffer attached as two halves (plus 2 ints never attached after them). */
  int *seam = malloc(sizeof(int) * (2 * HALF + 2));
  int *mine = malloc(sizeof(int) * 2 * HALF), *back = malloc(sizeof(int) * 2 * HALF);
  CHECK(seam && mine && back);
  for (int k = 0; k < 2 * HALF; k++) seam[k] = k;
  OK(MPI_Win_attach(win, seam + HALF, sizeof(int) * HALF));
  OK(MPI_Win_attach(win, seam, sizeof(int) * HALF));
  MPI_Aint *sa = malloc(sizeof(MPI_Aint) * size);
  CHECK(sa != NULL);
  OK(MPI_Get_address(seam, &sa[rank]));
  OK(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, sa, 1, MPI_AINT, MPI_COMM_WORLD));
  /* Each rank updates its successor's seam buffer (the only writer there). */
  for (int k = 0; k < 2 * HALF; k++) mine[k] = rank + 1;
  OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, peer, 0, win));
  /* Accumulate across the seam: k + rank + 1; then get-accumulate (sum) returns that and
   * adds rank + 1 again; a put replaces the middle ints; a get reads it all back. */
  OK(MPI_Accumulate(mine, 2 * HALF, MPI_INT, peer, sa[peer], 2 * HALF, MPI_INT, MPI_SUM, win));
  OK(MPI_Get_accumulate(mine, 2 * HALF, MPI_INT, back, 2 * HALF, MPI_INT, peer, sa[peer],
                        2 * HALF, MPI_INT, MPI_SUM, win));
  OK(MPI_Win_flush(peer, win));
  for (int k = 0; k < 2 * HALF; k++) CHECK(back[k] == k + rank + 1);
  int mid[10];
  for (int k = 0; k < 10; k++) mid[k] = -k;
  OK(MPI_Put(mid, 10, MPI_INT, peer, sa[peer] + sizeof(int) * (HALF - 5), 10, MPI_INT, win));
  OK(MPI_Win_flush(peer, win));
  OK(MPI_Get(back, 2 * HALF, MPI_INT, peer, sa[peer], 2 * HALF, MPI_INT, win));
  OK(MPI_Win_unlock(peer, win));
  for (int k = 0; k < 2 * HALF; k++) {
    int want = (k >= HALF - 5 && k < HALF + 5) ? -(k - (HALF - 5)) : k + 2 * (rank + 1);
    CHECK(back[k] == want);
  }
  /* Past the end of the seam buffer, and across a gap: MPI_ERR_RMA_RANGE (checked on this
   * rank, where the origin finds it at once). */
  OK(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win));
  MPI_Error_class(
      MPI_Put(mid, 2, MPI_INT, rank, sa[rank] + sizeof(int) * (2 * HALF - 1), 2, MPI_INT, win),
      &cls);
  CHECK(cls == MPI_ERR_RMA_RANGE);
  OK(MPI_Win_unlock(rank, win));
  OK(MPI_Barrier(MPI_COMM_WORLD));
  OK(MPI_Win_detach(win, seam + HALF));
  int *gap = malloc(sizeof(int) * 3);
  CHECK(gap != NULL);
  OK(MPI_Win_attach(win, gap, sizeof(int)));
  OK(MPI_Win_attach(win, gap + 2, sizeof(int)));
  MPI_Aint ga;
  OK(MPI_Get_address(gap, &ga));
  OK(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win));
  MPI_Error_class(MPI_Put(mid, 3, MPI_INT, rank, ga, 3, MPI_INT, win), &cls);
  CHECK(cls == MPI_ERR_RMA_RANGE);
  MPI_Error_class(
      MPI_Put(mid, 2, MPI_INT, rank, sa[rank] + sizeof(int) * (HALF - 1), 2, MPI_INT, win),
      &cls);
  CHECK(cls == MPI_ERR_RMA_RANGE);
  OK(MPI_Put(&mid[1], 1, MPI_INT, rank, ga + 2 * sizeof(int), 1, MPI_INT, win));
  OK(MPI_Win_unlock(rank, win));
  CHECK(gap[2] == -1);
  OK(MPI_Barrier(MPI_COMM_WORLD));

  OK(MPI_Win_detach(win, gap));
  OK(MPI_Win_detach(win, gap + 2));
  OK(MPI_Win_detach(win, seam));
  for (int i = 0; i < NREG; i++) OK(MPI_Win_detach(win, reg[i]));
  OK(MPI_Win_free(&win));
  for (int i = 0; i < NREG; i++) free(reg[i]);
  free(seam);
  free(mine);
  free(back);
  free(gap);
  free(sa);
  free(addr);
  if (rank == 0) printf("rma_attach ok\n");
  OK(MPI_Finalize());
  return 0;
}
