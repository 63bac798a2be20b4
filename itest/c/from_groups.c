/* Communicators from groups with no parent communicator (MPI-4.1 §7.4.2
 * MPI_Comm_create_from_group, §7.6.2 MPI_Intercomm_create_from_groups): members, ranks,
 * the error handler given, traffic on the result, concurrent creations on disjoint groups
 * told apart by their string tags, and bad arguments refused alike on every rank. */
#include "check.h"

int main(int argc, char **argv) {
  int wrank, wsize;
  OK(MPI_Init(&argc, &argv));
  OK(MPI_Comm_rank(MPI_COMM_WORLD, &wrank));
  OK(MPI_Comm_size(MPI_COMM_WORLD, &wsize));
  OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  MPI_Group world;
  OK(MPI_Comm_group(MPI_COMM_WORLD, &world));

  /* The whole world, reversed: ranks follow the group's order. */
  {
    int *rev = malloc(sizeof(int) * wsize);
    for (int i = 0; i < wsize; i++) rev[i] = wsize - 1 - i;
    MPI_Group g;
    OK(MPI_Group_incl(world, wsize, rev, &g));
    MPI_Comm c;
    OK(MPI_Comm_create_from_group(g, "weft.test.reversed", MPI_INFO_NULL, MPI_ERRORS_RETURN, &c));
    int r, n, sum = 0;
    OK(MPI_Comm_rank(c, &r));
    OK(MPI_Comm_size(c, &n));
    CHECK(n == wsize && r == wsize - 1 - wrank);
    MPI_Errhandler eh;
    OK(MPI_Comm_get_errhandler(c, &eh));
    CHECK(eh == MPI_ERRORS_RETURN);
    /* ERRORS_RETURN really is in force: a bad rank comes back as a code. */
    CHECK_RC(MPI_Send(&r, 1, MPI_INT, n, 0, c), MPI_ERR_RANK);
    OK(MPI_Allreduce(&r, &sum, 1, MPI_INT, MPI_SUM, c));
    CHECK(sum == n * (n - 1) / 2);
    /* The new communicator's traffic is its own: a message on it is not seen on world. */
    int flag = 1;
    OK(MPI_Sendrecv_replace(&r, 1, MPI_INT, (r + 1) % n, 4, (r + n - 1) % n, 4, c,
                            MPI_STATUS_IGNORE));
    CHECK(r == (wsize - 1 - wrank + n - 1) % n);
    OK(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
    CHECK(flag == 0);
    OK(MPI_Comm_free(&c));
    OK(MPI_Group_free(&g));
    free(rev);
  }

  /* Even and odd ranks create their own communicators at the same time. */
  {
    int parity = wrank % 2, n = 0, mine[64];
    for (int i = parity; i < wsize; i += 2) mine[n++] = i;
    MPI_Group g;
    OK(MPI_Group_incl(world, n, mine, &g));
    MPI_Comm c;
    OK(MPI_Comm_create_from_group(g, parity ? "odd" : "even", MPI_INFO_NULL,
                                  MPI_ERRORS_ARE_FATAL, &c));
    int r, size, x = wrank, total = 0;
    OK(MPI_Comm_rank(c, &r));
    OK(MPI_Comm_size(c, &size));
    CHECK(size == n && r == wrank / 2);
    OK(MPI_Allreduce(&x, &total, 1, MPI_INT, MPI_SUM, c));
    int want = 0;
    for (int i = 0; i < n; i++) want += mine[i];
    CHECK(total == want);
    OK(MPI_Comm_free(&c));
    OK(MPI_Group_free(&g));
  }

  /* Empty group: MPI_COMM_NULL, no communication. Bad arguments. */
  {
    MPI_Comm c = MPI_COMM_WORLD;
    OK(MPI_Comm_create_from_group(MPI_GROUP_EMPTY, "empty", MPI_INFO_NULL, MPI_ERRORS_RETURN, &c));
    CHECK(c == MPI_COMM_NULL);
    CHECK_RC(MPI_Comm_create_from_group(world, NULL, MPI_INFO_NULL, MPI_ERRORS_RETURN, &c),
             MPI_ERR_ARG);
    CHECK_RC(MPI_Comm_create_from_group(MPI_GROUP_NULL, "x", MPI_INFO_NULL, MPI_ERRORS_RETURN, &c),
             MPI_ERR_GROUP);
    CHECK_RC(MPI_Comm_create_from_group(world, "x", MPI_INFO_NULL, MPI_ERRHANDLER_NULL, &c),
             MPI_ERR_ERRHANDLER);
    if (wsize > 1) {
      /* A group without the caller. */
      MPI_Group others;
      int me[1] = {wrank};
      OK(MPI_Group_excl(world, 1, me, &others));
      CHECK_RC(MPI_Comm_create_from_group(others, "x", MPI_INFO_NULL, MPI_ERRORS_RETURN, &c),
               MPI_ERR_GROUP);
      OK(MPI_Group_free(&others));
    }
  }

  if (wsize >= 2) {
    /* Low half and high half as an intercommunicator; leaders are the last of the low
     * half and the first of the high half. */
    int half = wsize / 2, g = wrank >= half, lo[64], hi[64];
    for (int i = 0; i < half; i++) lo[i] = i;
    for (int i = half; i < wsize; i++) hi[i - half] = i;
    MPI_Group glo, ghi;
    OK(MPI_Group_incl(world, half, lo, &glo));
    OK(MPI_Group_incl(world, wsize - half, hi, &ghi));
    MPI_Group mine = g ? ghi : glo, other = g ? glo : ghi;
    int my_leader = g ? 0 : half - 1, their_leader = g ? half - 1 : 0;
    MPI_Comm ic = MPI_COMM_NULL;
    /* Refused alike everywhere, before any message. */
    CHECK_RC(MPI_Intercomm_create_from_groups(mine, 99, other, their_leader, "ic",
                                              MPI_INFO_NULL, MPI_ERRORS_RETURN, &ic),
             MPI_ERR_RANK);
    CHECK_RC(MPI_Intercomm_create_from_groups(mine, my_leader, other, -1, "ic", MPI_INFO_NULL,
                                              MPI_ERRORS_RETURN, &ic),
             MPI_ERR_RANK);
    CHECK_RC(MPI_Intercomm_create_from_groups(mine, my_leader, world, 0, "ic", MPI_INFO_NULL,
                                              MPI_ERRORS_RETURN, &ic),
             MPI_ERR_GROUP);
    CHECK_RC(MPI_Intercomm_create_from_groups(other, 0, mine, 0, "ic", MPI_INFO_NULL,
                                              MPI_ERRORS_RETURN, &ic),
             MPI_ERR_GROUP);
    CHECK(ic == MPI_COMM_NULL);
    OK(MPI_Intercomm_create_from_groups(mine, my_leader, other, their_leader, "weft.ic",
                                        MPI_INFO_NULL, MPI_ERRORS_RETURN, &ic));
    int flag = 0, lsize, rsize, lrank;
    OK(MPI_Comm_test_inter(ic, &flag));
    CHECK(flag == 1);
    OK(MPI_Comm_size(ic, &lsize));
    OK(MPI_Comm_remote_size(ic, &rsize));
    OK(MPI_Comm_rank(ic, &lrank));
    CHECK(lsize == (g ? wsize - half : half) && rsize == (g ? half : wsize - half));
    CHECK(lrank == (g ? wrank - half : wrank));
    MPI_Errhandler eh;
    OK(MPI_Comm_get_errhandler(ic, &eh));
    CHECK(eh == MPI_ERRORS_RETURN);
    /* Each group gets the sum of the other group's world ranks. */
    int x = wrank, s = -1, want = 0;
    OK(MPI_Allreduce(&x, &s, 1, MPI_INT, MPI_SUM, ic));
    for (int i = 0; i < wsize; i++)
      if ((i >= half) != g) want += i;
    CHECK(s == want);
    /* Point-to-point names remote ranks: the local ranks 0 trade their world ranks. */
    if (lrank == 0) {
      int v = 100 + wrank, got = -1;
      MPI_Status st;
      OK(MPI_Sendrecv(&v, 1, MPI_INT, 0, 6, &got, 1, MPI_INT, MPI_ANY_SOURCE, 6, ic, &st));
      CHECK(got == 100 + (g ? 0 : half) && st.MPI_SOURCE == 0);
    }
    /* Merged, low group first. */
    MPI_Comm m;
    OK(MPI_Intercomm_merge(ic, g, &m));
    int mr;
    OK(MPI_Comm_rank(m, &mr));
    CHECK(mr == wrank);
    OK(MPI_Comm_free(&m));
    OK(MPI_Comm_free(&ic));
    OK(MPI_Group_free(&glo));
    OK(MPI_Group_free(&ghi));
  }
  OK(MPI_Group_free(&world));
  OK(MPI_Finalize());
  return 0;
}
