/* Ranks of one job that ask MPI_Init_thread for different thread levels (MPI-4.1 §11.2.1
 * lets each process ask for its own): rank 0 asks for MPI_THREAD_MULTIPLE, odd ranks for
 * MPI_THREAD_SERIALIZED, the other even ranks for MPI_THREAD_FUNNELED. Each checks what it
 * was given, then the ranks run blocking and nonblocking collectives, MPI_Comm_dup and
 * MPI_Comm_split, intercommunicator creation and merging, and a window fence, each checked:
 * a library whose ranks take different collective sequences by thread level mismatches
 * them (wrong results or a hang, which the test's bounded wait turns into a failure). */
#include "check.h"
#include <string.h>

static int rank, size;

/* The sum of the world ranks of `c`'s members (blocking and nonblocking allreduce, a
 * bcast from its last rank, a barrier, a reduce_scatter_block), checked. */
static void use(MPI_Comm c, long want_sum) {
  int n = -1, me = -1;
  OK(MPI_Comm_size(c, &n));
  OK(MPI_Comm_rank(c, &me));
  long mine = rank, sum = -1, isum = -1;
  OK(MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, c));
  CHECK(sum == want_sum);
  MPI_Request r;
  OK(MPI_Iallreduce(&mine, &isum, 1, MPI_LONG, MPI_SUM, c, &r));
  OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
  CHECK(isum == want_sum);
  int root_rank = me == n - 1 ? rank : -1;
  OK(MPI_Bcast(&root_rank, 1, MPI_INT, n - 1, c));
  CHECK(root_rank >= 0);
  OK(MPI_Barrier(c));
  int *in = malloc(sizeof(int) * (size_t)n), out = -1;
  CHECK(in != NULL);
  for (int i = 0; i < n; i++) in[i] = rank + i;
  OK(MPI_Reduce_scatter_block(in, &out, 1, MPI_INT, MPI_SUM, c));
  CHECK(out == (int)want_sum + n * me);
  free(in);
}

int main(int argc, char **argv) {
  (void)argc;
  (void)argv;
  int provided = -1, world_rank = -1;
  /* The rank is not known before init: the launcher's environment says it. */
  const char *r = getenv("WEFT_RANK");
  CHECK(r != NULL);
  world_rank = atoi(r);
  int want = world_rank == 0 ? MPI_THREAD_MULTIPLE
             : world_rank % 2 ? MPI_THREAD_SERIALIZED
                              : MPI_THREAD_FUNNELED;
  OK(MPI_Init_thread(&argc, &argv, want, &provided));
  CHECK(provided == want);
  OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  CHECK(rank == world_rank);
  long all = (long)size * (size - 1) / 2;
  use(MPI_COMM_WORLD, all);
  MPI_Comm dup, half;
  OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
  use(dup, all);
  OK(MPI_Comm_split(dup, rank % 2, rank, &half));
  long half_sum = 0;
  for (int i = rank % 2; i < size; i += 2) half_sum += i;
  use(half, half_sum);
  if (size > 1) {
    MPI_Comm inter, merged;
    OK(MPI_Intercomm_create(half, 0, dup, rank % 2 ? 0 : 1, 7, &inter));
    int rsize = -1;
    OK(MPI_Comm_remote_size(inter, &rsize));
    CHECK(rsize == (rank % 2 ? (size + 1) / 2 : size / 2));
    OK(MPI_Intercomm_merge(inter, rank % 2, &merged));
    use(merged, all);
    OK(MPI_Comm_free(&merged));
    OK(MPI_Comm_free(&inter));
  }
  /* A window: creation, fence, put to the next rank, fence. */
  int *base = NULL, next = (rank + 1) % size, prev = (rank + size - 1) % size;
  MPI_Win w;
  OK(MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, dup, &base, &w));
  *base = -1;
  OK(MPI_Win_fence(0, w));
  OK(MPI_Put(&rank, 1, MPI_INT, next, 0, 1, MPI_INT, w));
  OK(MPI_Win_fence(0, w));
  CHECK(*base == prev);
  OK(MPI_Win_free(&w));
  OK(MPI_Comm_free(&half));
  OK(MPI_Comm_free(&dup));
  OK(MPI_Finalize());
  return 0;
}
