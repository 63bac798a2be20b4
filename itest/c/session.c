/* MPI sessions (MPI-4.1 §11.3): info objects and a session error handler made before
 * anything is initialized; a session's process sets, their info and groups; a communicator
 * from a group; the world model started after a session and finalized before it, the session
 * still working; error handlers of sessions; errors get their classes; a second session
 * after everything ended starts weft again; info objects work after the end too. */
#include <string.h>
#include "check.h"

static int handler_calls = 0, handler_code = 0;
static MPI_Session handler_session = MPI_SESSION_NULL;

static void on_error(MPI_Session *s, int *code, ...) {
  handler_calls++;
  handler_code = *code;
  handler_session = *s;
}

static void check_info(MPI_Info info, const char *key, const char *want) {
  char v[256];
  int flag = 0;
  OK(MPI_Info_get(info, key, sizeof v - 1, v, &flag));
  CHECK(flag);
  if (strcmp(v, want) != 0) fprintf(stderr, "%s = %s, want %s\n", key, v, want);
  CHECK(strcmp(v, want) == 0);
}

/* A communicator of every rank from the session's mpi://WORLD; checks a reduction on it. */
static MPI_Comm world_of(MPI_Session s, const char *tag, int *rank, int *size) {
  MPI_Group g;
  MPI_Comm c;
  OK(MPI_Group_from_session_pset(s, "mpi://WORLD", &g));
  OK(MPI_Group_size(g, size));
  OK(MPI_Group_rank(g, rank));
  CHECK(*rank >= 0 && *rank < *size);
  OK(MPI_Comm_create_from_group(g, tag, MPI_INFO_NULL, MPI_ERRORS_RETURN, &c));
  OK(MPI_Group_free(&g));
  int sum = -1;
  OK(MPI_Allreduce(rank, &sum, 1, MPI_INT, MPI_SUM, c));
  CHECK(sum == *size * (*size - 1) / 2);
  return c;
}

int main(int argc, char **argv) {
  int flag = -1, rank, size, n = 0, len;
  char name[MPI_MAX_PSET_NAME_LEN];

  /* Before anything: info objects and a session error handler. */
  MPI_Info sinfo;
  OK(MPI_Info_create(&sinfo));
  OK(MPI_Info_set(sinfo, "thread_level", "MPI_THREAD_MULTIPLE"));
  OK(MPI_Info_set(sinfo, "weft_test_key", "kept"));
  MPI_Errhandler eh, eh2;
  OK(MPI_Session_create_errhandler(on_error, &eh));
  OK(MPI_Session_create_errhandler(on_error, &eh2));
  OK(MPI_Errhandler_free(&eh2));
  CHECK(eh2 == MPI_ERRHANDLER_NULL);
  OK(MPI_Initialized(&flag));
  CHECK(flag == 0);

  MPI_Session s = MPI_SESSION_NULL;
  OK(MPI_Session_init(sinfo, MPI_ERRORS_RETURN, &s));
  CHECK(s != MPI_SESSION_NULL);
  CHECK(MPI_Session_fromint(MPI_Session_toint(s)) == s);
  CHECK(MPI_Session_toint(MPI_SESSION_NULL) == (int)(intptr_t)MPI_SESSION_NULL);
  OK(MPI_Info_free(&sinfo));
  OK(MPI_Initialized(&flag));
  CHECK(flag == 0); /* a session is not the world model */

  /* The session's info: the thread level it got (the MULTIPLE it asked for) and the keys it
   * was given. */
  MPI_Info used;
  OK(MPI_Session_get_info(s, &used));
  check_info(used, "thread_level", "MPI_THREAD_MULTIPLE");
  check_info(used, "weft_test_key", "kept");
  OK(MPI_Info_free(&used));

  /* Process sets. */
  OK(MPI_Session_get_num_psets(s, MPI_INFO_NULL, &n));
  CHECK(n == 2);
  const char *want[] = {"mpi://WORLD", "mpi://SELF"};
  for (int i = 0; i < n; i++) {
    len = 0;
    OK(MPI_Session_get_nth_pset(s, MPI_INFO_NULL, i, &len, NULL));
    CHECK(len == (int)strlen(want[i]) + 1);
    OK(MPI_Session_get_nth_pset(s, MPI_INFO_NULL, i, &len, name));
    CHECK(strcmp(name, want[i]) == 0 && len == (int)strlen(name) + 1);
  }
  len = 6; /* a short buffer gets the name cut, NUL included */
  OK(MPI_Session_get_nth_pset(s, MPI_INFO_NULL, 0, &len, name));
  CHECK(strcmp(name, "mpi:/") == 0 && len == 12);
  len = sizeof name;
  CHECK_RC(MPI_Session_get_nth_pset(s, MPI_INFO_NULL, 2, &len, name), MPI_ERR_ARG);
  CHECK_RC(MPI_Session_get_nth_pset(s, MPI_INFO_NULL, -1, &len, name), MPI_ERR_ARG);

  MPI_Comm c = world_of(s, "weft.session.a", &rank, &size);
  char num[16];
  MPI_Info pinfo;
  OK(MPI_Session_get_pset_info(s, "mpi://WORLD", &pinfo));
  snprintf(num, sizeof num, "%d", size);
  check_info(pinfo, "mpi_size", num);
  OK(MPI_Info_free(&pinfo));
  OK(MPI_Session_get_pset_info(s, "mpi://SELF", &pinfo));
  check_info(pinfo, "mpi_size", "1");
  OK(MPI_Info_free(&pinfo));

  /* mpi://SELF, named in another case: a communicator of this rank alone. */
  MPI_Group g;
  MPI_Comm self;
  OK(MPI_Group_from_session_pset(s, "mpi://self", &g));
  OK(MPI_Group_size(g, &n));
  CHECK(n == 1);
  OK(MPI_Comm_create_from_group(g, "weft.session.self", MPI_INFO_NULL, MPI_ERRORS_RETURN,
                                &self));
  OK(MPI_Group_free(&g));
  {
    MPI_Request rq;
    int in = -1, out = 42;
    OK(MPI_Irecv(&in, 1, MPI_INT, 0, 5, self, &rq));
    OK(MPI_Send(&out, 1, MPI_INT, 0, 5, self));
    OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    CHECK(in == 42);
  }
  OK(MPI_Comm_free(&self));

  /* Errors through the session's handler: MPI_ERRORS_RETURN, then the user's. */
  CHECK_RC(MPI_Group_from_session_pset(s, "mpi://NOPE", &g), MPI_ERR_ARG);
  CHECK_RC(MPI_Session_get_pset_info(s, "nope", &pinfo), MPI_ERR_ARG);
  CHECK_RC(MPI_Session_set_errhandler(s, (MPI_Errhandler)(intptr_t)0x7000000ff),
           MPI_ERR_ERRHANDLER);
  MPI_Errhandler got;
  OK(MPI_Session_get_errhandler(s, &got));
  CHECK(got == MPI_ERRORS_RETURN);
  OK(MPI_Session_set_errhandler(s, eh));
  OK(MPI_Session_get_errhandler(s, &got));
  CHECK(got == eh);
  OK(MPI_Session_call_errhandler(s, MPI_ERR_OTHER));
  CHECK(handler_calls == 1 && handler_code == MPI_ERR_OTHER && handler_session == s);
  CHECK_RC(MPI_Group_from_session_pset(s, "mpi://NOPE", &g), MPI_ERR_ARG);
  CHECK(handler_calls == 2 && handler_code == MPI_ERR_ARG);
  OK(MPI_Session_set_errhandler(s, MPI_ERRORS_RETURN));

  /* The world model starts on the same weft; bad session handles are reported through
   * MPI_COMM_SELF's handler. */
  int provided = -1;
  OK(MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided));
  CHECK(provided == MPI_THREAD_FUNNELED); /* its own level, not the session's */
  OK(MPI_Query_thread(&provided));
  CHECK(provided == MPI_THREAD_FUNNELED);
  OK(MPI_Initialized(&flag));
  CHECK(flag == 1);
  OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
  int wsize = -1, wrank = -1;
  OK(MPI_Comm_size(MPI_COMM_WORLD, &wsize));
  OK(MPI_Comm_rank(MPI_COMM_WORLD, &wrank));
  CHECK(wsize == size && wrank == rank);
  CHECK_RC(MPI_Session_get_num_psets(MPI_SESSION_NULL, MPI_INFO_NULL, &n), MPI_ERR_SESSION);
  CHECK_RC(MPI_Session_get_num_psets((MPI_Session)(intptr_t)0x777, MPI_INFO_NULL, &n),
           MPI_ERR_SESSION);
  MPI_Session bad = (MPI_Session)(intptr_t)0x777;
  CHECK_RC(MPI_Session_finalize(&bad), MPI_ERR_SESSION);
  OK(MPI_Barrier(MPI_COMM_WORLD));
  OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  OK(MPI_Finalize());
  /* Once per process, also while a session keeps weft running. */
  CHECK_RC(MPI_Finalize(), MPI_ERR_OTHER);

  /* The session outlives the world model. */
  int sum = -1;
  OK(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, c));
  CHECK(sum == size * (size - 1) / 2);
  OK(MPI_Comm_free(&c));
  OK(MPI_Session_finalize(&s));
  CHECK(s == MPI_SESSION_NULL);
  OK(MPI_Finalized(&flag));
  CHECK(flag == 1);

  /* A new session starts weft again (every rank does it). */
  OK(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s));
  c = world_of(s, "weft.session.b", &rank, &size);
  OK(MPI_Comm_free(&c));
  OK(MPI_Session_finalize(&s));

  /* Info objects after the end. */
  OK(MPI_Info_create(&sinfo));
  OK(MPI_Info_set(sinfo, "k", "v"));
  check_info(sinfo, "k", "v");
  OK(MPI_Info_free(&sinfo));
  return 0;
}
