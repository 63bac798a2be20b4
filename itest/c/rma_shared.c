/* A shared window (MPI_Win_allocate_shared, alloc_shared_noncontig) where only the even
 * ranks of the node have memory: MPI_Win_shared_query answers size 0 and a NULL base for the
 * others (as MPICH does) and the even ranks' memory for them; the even ranks put into each
 * other's memory through MPI_Put between fences, one element per epoch, and every rank then
 * reads it all with loads. Any rank count. */
#include "check.h"
#include <stdlib.h>

#define ELEMS 500

int main(int argc, char **argv) {
  OK(MPI_Init(&argc, &argv));
  MPI_Comm node;
  OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  int rank, size;
  OK(MPI_Comm_rank(node, &rank));
  OK(MPI_Comm_size(node, &size));
  MPI_Info info;
  OK(MPI_Info_create(&info));
  OK(MPI_Info_set(info, "alloc_shared_noncontig", "true"));
  int *mine = NULL;
  MPI_Win win;
  MPI_Aint bytes = rank % 2 == 0 ? (MPI_Aint)(sizeof(int) * ELEMS) : 0;
  OK(MPI_Win_allocate_shared(bytes, sizeof(int), info, node, &mine, &win));
  OK(MPI_Info_free(&info));
  /* The even rank after this one (wrapping to 0). */
  int target = rank + 2 > size ? 0 : (rank + 2) % size;
  for (int i = 0; i < ELEMS; i++) {
    OK(MPI_Win_fence(MPI_MODE_NOPRECEDE, win));
    if (rank % 2 == 0) {
      int v = i * 10 + rank;
      OK(MPI_Put(&v, 1, MPI_INT, target, i, 1, MPI_INT, win));
    }
    OK(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
  }
  OK(MPI_Barrier(node));
  for (int r = 0; r < size; r++) {
    MPI_Aint sz = -1;
    int unit = 0, *p = (int *)&sz;
    OK(MPI_Win_shared_query(win, r, &sz, &unit, &p));
    CHECK(unit == sizeof(int));
    if (r % 2 == 1) {
      CHECK(sz == 0 && p == NULL);
      continue;
    }
    CHECK(sz == (MPI_Aint)(sizeof(int) * ELEMS) && p != NULL);
    if (r == rank) CHECK(p == mine);
    /* The even rank writing to r: the one two before it, or the last even rank for 0. */
    int writer = r >= 2 ? r - 2 : (size - 1) - (size - 1) % 2;
    for (int i = 0; i < ELEMS; i++) CHECK(p[i] == i * 10 + writer);
  }
  MPI_Aint sz = -1;
  int unit = 0, *p = NULL;
  OK(MPI_Win_shared_query(win, MPI_PROC_NULL, &sz, &unit, &p));
  int *r0 = NULL;
  MPI_Aint sz0;
  OK(MPI_Win_shared_query(win, 0, &sz0, &unit, &r0));
  CHECK(p == r0 && sz == sz0);
  OK(MPI_Win_free(&win));
  OK(MPI_Comm_free(&node));
  if (rank == 0) printf("rma_shared ok\n");
  OK(MPI_Finalize());
  return 0;
}
