/* The MPI tool information interface (MPI-4.1 chapter 15): weft's knobs as control
 * variables, before MPI_Init, while MPI runs and after MPI_Finalize; enumerations of the
 * choice knobs; categories; the one pvar, weft_idle_yields, counting while a receive waits;
 * no events or sources; every bad argument gets the standard's MPI_T error code. The job runs
 * with WEFT_SHM_EAGER_BYTES=8K and WEFT_YIELD=on (tests/c_tools.rs), so the values read are
 * the environment's, not the defaults, and a waiting rank yields its CPU. */
#include <time.h>
#include <string.h>
#include "check.h"

static int cvar_index(const char *name) {
  int i = -1;
  OK(MPI_T_cvar_get_index(name, &i));
  CHECK(i >= 0);
  return i;
}

static unsigned long long read_ull(const char *name) {
  MPI_T_cvar_handle h;
  int count = 0;
  unsigned long long v = 0;
  OK(MPI_T_cvar_handle_alloc(cvar_index(name), NULL, &h, &count));
  CHECK(count == 1);
  OK(MPI_T_cvar_read(h, &v));
  OK(MPI_T_cvar_handle_free(&h));
  CHECK(h == MPI_T_CVAR_HANDLE_NULL);
  return v;
}

/* Every cvar: its info, its index by name, one read, and a refused write. */
static int check_all_cvars(void) {
  int num = 0;
  OK(MPI_T_cvar_get_num(&num));
  CHECK(num > 40);
  /* A bad parameter is MPI_T_ERR_INVALID (MPI-4.1 §15.3.10), not an MPI error class. */
  CHECK_RC(MPI_T_cvar_get_num(NULL), MPI_T_ERR_INVALID);
  CHECK_RC(MPI_T_pvar_get_num(NULL), MPI_T_ERR_INVALID);
  for (int i = 0; i < num; i++) {
    char name[256], desc[1024];
    int name_len = 0, desc_len = 0, verbosity = -1, bind = -1, scope = -1;
    MPI_Datatype dt = MPI_DATATYPE_NULL;
    MPI_T_enum e;
    /* Lengths first (NULL buffers), then the strings. */
    OK(MPI_T_cvar_get_info(i, NULL, &name_len, NULL, NULL, NULL, NULL, &desc_len, NULL, NULL));
    CHECK(name_len > 6 && name_len <= (int)sizeof name);
    CHECK(desc_len > 1 && desc_len <= (int)sizeof desc);
    int want_name = name_len;
    OK(MPI_T_cvar_get_info(i, name, &name_len, &verbosity, &dt, &e, desc, &desc_len, &bind,
                           &scope));
    CHECK(name_len == want_name && (int)strlen(name) + 1 == name_len);
    /* weft's knobs, and the standard names a knob table declares (OpenSHMEM's SHMEM_*). */
    CHECK(strncmp(name, "WEFT_", 5) == 0 || strncmp(name, "SHMEM_", 6) == 0);
    CHECK(strstr(desc, name) != NULL); /* the description names the variable */
    CHECK(bind == MPI_T_BIND_NO_OBJECT);
    CHECK(scope == MPI_T_SCOPE_READONLY);
    CHECK(verbosity == MPI_T_VERBOSITY_USER_BASIC || verbosity == MPI_T_VERBOSITY_TUNER_BASIC);
    CHECK(dt == MPI_INT || dt == MPI_UNSIGNED_LONG_LONG || dt == MPI_DOUBLE || dt == MPI_CHAR);
    CHECK(e == MPI_T_ENUM_NULL || dt == MPI_INT);
    int j = -1;
    OK(MPI_T_cvar_get_index(name, &j));
    CHECK(j == i);
    MPI_T_cvar_handle h;
    int count = 0;
    OK(MPI_T_cvar_handle_alloc(i, NULL, &h, &count));
    CHECK(count >= 1);
    char buf[4096];
    CHECK(dt != MPI_CHAR || count <= (int)sizeof buf);
    OK(MPI_T_cvar_read(h, buf));
    if (dt == MPI_CHAR) CHECK((int)strlen(buf) + 1 == count);
    CHECK_RC(MPI_T_cvar_write(h, buf), MPI_T_ERR_CVAR_SET_NEVER);
    OK(MPI_T_cvar_handle_free(&h));
  }
  return num;
}

/* The knobs the job set, a default, a text knob, and a choice knob's enumeration. */
static void check_values(void) {
  CHECK(read_ull("WEFT_SHM_EAGER_BYTES") == 8192);
  CHECK(read_ull("WEFT_SHM_RING_BYTES") == 262144); /* its default, 256K */

  MPI_T_cvar_handle h;
  int count = 0;
  char text[64];
  /* Its default, or the lane a test suite forces on every job (WEFT_TEST_LANES). */
  const char *transports = getenv("WEFT_TRANSPORTS") ? getenv("WEFT_TRANSPORTS") : "shm,cma,tcp";
  OK(MPI_T_cvar_handle_alloc(cvar_index("WEFT_TRANSPORTS"), NULL, &h, &count));
  CHECK(count == (int)strlen(transports) + 1);
  OK(MPI_T_cvar_read(h, text));
  CHECK(strcmp(text, transports) == 0);
  OK(MPI_T_cvar_handle_free(&h));

  int i = cvar_index("WEFT_YIELD"), n = 0, len = sizeof text, value = -1;
  MPI_Datatype dt;
  MPI_T_enum e = MPI_T_ENUM_NULL;
  OK(MPI_T_cvar_get_info(i, NULL, NULL, NULL, &dt, &e, NULL, NULL, NULL, NULL));
  CHECK(dt == MPI_INT && e != MPI_T_ENUM_NULL);
  OK(MPI_T_enum_get_info(e, &n, text, &len));
  CHECK(n == 3 && strcmp(text, "WEFT_YIELD") == 0 && len == 11);
  const char *words[] = {"auto", "on", "off"};
  for (int k = 0; k < n; k++) {
    len = sizeof text;
    OK(MPI_T_enum_get_item(e, k, &value, text, &len));
    CHECK(value == k && strcmp(text, words[k]) == 0);
  }
  CHECK_RC(MPI_T_enum_get_item(e, 3, &value, text, &len), MPI_T_ERR_INVALID_INDEX);
  CHECK_RC(MPI_T_enum_get_item(e, -1, &value, text, &len), MPI_T_ERR_INVALID_INDEX);
  CHECK_RC(MPI_T_enum_get_info((MPI_T_enum)(intptr_t)0x1234, &n, text, &len),
           MPI_T_ERR_INVALID_HANDLE);
  OK(MPI_T_cvar_handle_alloc(i, NULL, &h, &count));
  OK(MPI_T_cvar_read(h, &value));
  CHECK(value == 1); /* WEFT_YIELD=on is item 1 */
  OK(MPI_T_cvar_handle_free(&h));

  /* The job secret (set by the launcher) never shows. */
  OK(MPI_T_cvar_handle_alloc(cvar_index("WEFT_JOB_SECRET"), NULL, &h, &count));
  CHECK(count == 1);
  text[0] = 'x';
  OK(MPI_T_cvar_read(h, text));
  CHECK(text[0] == 0);
  OK(MPI_T_cvar_handle_free(&h));

  /* A short buffer gets the string cut, NUL included, and the length stored. */
  char small[5];
  len = sizeof small;
  OK(MPI_T_cvar_get_info(i, small, &len, NULL, NULL, NULL, NULL, NULL, NULL, NULL));
  CHECK(len == 5 && strcmp(small, "WEFT") == 0);
}

static void check_errors(int num) {
  int x = 0;
  MPI_T_cvar_handle h;
  CHECK_RC(MPI_T_cvar_get_info(-1, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
           MPI_T_ERR_INVALID_INDEX);
  CHECK_RC(MPI_T_cvar_get_info(num, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
           MPI_T_ERR_INVALID_INDEX);
  CHECK_RC(MPI_T_cvar_get_index("WEFT_NO_SUCH_KNOB", &x), MPI_T_ERR_INVALID_NAME);
  CHECK_RC(MPI_T_cvar_handle_alloc(num, NULL, &h, &x), MPI_T_ERR_INVALID_INDEX);
  CHECK_RC(MPI_T_cvar_read((MPI_T_cvar_handle)(intptr_t)0x77, &x), MPI_T_ERR_INVALID_HANDLE);
  CHECK_RC(MPI_T_cvar_write((MPI_T_cvar_handle)(intptr_t)0x77, &x), MPI_T_ERR_INVALID_HANDLE);
  OK(MPI_T_cvar_handle_alloc(0, NULL, &h, &x));
  MPI_T_cvar_handle copy = h;
  OK(MPI_T_cvar_handle_free(&h));
  CHECK_RC(MPI_T_cvar_handle_free(&copy), MPI_T_ERR_INVALID_HANDLE);
  CHECK_RC(MPI_T_cvar_read(copy, &x), MPI_T_ERR_INVALID_HANDLE);

  /* One performance variable; no event types or sources. */
  OK(MPI_T_pvar_get_num(&x));
  CHECK(x == 1);
  OK(MPI_T_event_get_num(&x));
  CHECK(x == 0);
  OK(MPI_T_source_get_num(&x));
  CHECK(x == 0);
  {
    char name[64];
    int len = sizeof name, verb, cls = -1, bind = -1, ro = -1, cont = -1, atomic = -1;
    MPI_Datatype dt;
    MPI_T_enum e;
    OK(MPI_T_pvar_get_info(0, name, &len, &verb, &cls, &dt, &e, NULL, NULL, &bind, &ro, &cont,
                           &atomic));
    CHECK(strcmp(name, "weft_idle_yields") == 0 && len == 17);
    CHECK(cls == MPI_T_PVAR_CLASS_COUNTER && dt == MPI_UNSIGNED_LONG_LONG);
    CHECK(e == MPI_T_ENUM_NULL && bind == MPI_T_BIND_NO_OBJECT);
    CHECK(ro == 1 && cont == 1 && atomic == 0);
  }
  CHECK_RC(MPI_T_pvar_get_info(1, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                               NULL, NULL),
           MPI_T_ERR_INVALID_INDEX);
  OK(MPI_T_pvar_get_index("weft_idle_yields", MPI_T_PVAR_CLASS_COUNTER, &x));
  CHECK(x == 0);
  CHECK_RC(MPI_T_pvar_get_index("weft_idle_yields", MPI_T_PVAR_CLASS_TIMER, &x),
           MPI_T_ERR_INVALID_NAME);
  CHECK_RC(MPI_T_pvar_get_index("anything", MPI_T_PVAR_CLASS_COUNTER, &x), MPI_T_ERR_INVALID_NAME);
  CHECK_RC(MPI_T_event_get_index("anything", &x), MPI_T_ERR_INVALID_NAME);
  CHECK_RC(MPI_T_event_handle_alloc(0, NULL, MPI_INFO_NULL, NULL), MPI_T_ERR_INVALID_INDEX);
  CHECK_RC(MPI_T_event_read((MPI_T_event_instance)(intptr_t)0x9, 0, &x), MPI_T_ERR_INVALID_HANDLE);
  CHECK_RC(MPI_T_source_get_timestamp(0, NULL), MPI_T_ERR_INVALID_INDEX);
  MPI_T_pvar_session ps;
  OK(MPI_T_pvar_session_create(&ps));
  MPI_T_pvar_handle ph;
  CHECK_RC(MPI_T_pvar_handle_alloc(ps, 1, NULL, &ph, &x), MPI_T_ERR_INVALID_INDEX);
  OK(MPI_T_pvar_start(ps, MPI_T_PVAR_ALL_HANDLES));
  CHECK_RC(MPI_T_pvar_start((MPI_T_pvar_session)(intptr_t)0x55, MPI_T_PVAR_ALL_HANDLES),
           MPI_T_ERR_INVALID_SESSION);
  MPI_T_pvar_session pcopy = ps;
  OK(MPI_T_pvar_session_free(&ps));
  CHECK(ps == MPI_T_PVAR_SESSION_NULL);
  CHECK_RC(MPI_T_pvar_session_free(&pcopy), MPI_T_ERR_INVALID_SESSION);
}

/* The pvar outside MPI: not accessible. */
static void check_pvar_outside(void) {
  MPI_T_pvar_session ps;
  MPI_T_pvar_handle ph;
  int count;
  OK(MPI_T_pvar_session_create(&ps));
  CHECK_RC(MPI_T_pvar_handle_alloc(ps, 0, NULL, &ph, &count), MPI_T_ERR_NOT_ACCESSIBLE);
  OK(MPI_T_pvar_session_free(&ps));
}

/* The pvar while MPI runs: rank 1 waits in a receive rank 0 delays, and yields. */
static void check_pvar_running(void) {
  int rank, size, count = 0;
  unsigned long long v = 99, w = 99;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_T_pvar_session ps, other;
  MPI_T_pvar_handle ph;
  OK(MPI_T_pvar_session_create(&ps));
  OK(MPI_T_pvar_session_create(&other));
  OK(MPI_T_pvar_handle_alloc(ps, 0, NULL, &ph, &count));
  CHECK(count == 1);
  CHECK_RC(MPI_T_pvar_start(ps, ph), MPI_T_ERR_PVAR_NO_STARTSTOP);
  CHECK_RC(MPI_T_pvar_stop(ps, ph), MPI_T_ERR_PVAR_NO_STARTSTOP);
  CHECK_RC(MPI_T_pvar_write(ps, ph, &v), MPI_T_ERR_PVAR_NO_WRITE);
  CHECK_RC(MPI_T_pvar_read(other, ph, &v), MPI_T_ERR_INVALID_HANDLE); /* not its session */
  OK(MPI_T_pvar_reset(ps, ph));
  if (size > 1 && rank < 2) {
    /* Rounds until rank 1 has waited idle at least once: nearly always the first, but a
       loaded machine may keep rank 1 off its core for a whole 100 ms round now and then. */
    int more = 1;
    for (int round = 0; round < 50 && more; round++) {
      int msg = 7;
      if (rank == 0) {
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
        OK(MPI_Send(&msg, 1, MPI_INT, 1, 3, MPI_COMM_WORLD));
        OK(MPI_Recv(&more, 1, MPI_INT, 1, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
      } else {
        OK(MPI_Recv(&msg, 1, MPI_INT, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        OK(MPI_T_pvar_read(ps, ph, &v));
        more = v == 0;
        OK(MPI_Send(&more, 1, MPI_INT, 0, 4, MPI_COMM_WORLD));
      }
    }
  }
  OK(MPI_T_pvar_readreset(ps, ph, &v));
  if (size > 1 && rank == 1) CHECK(v > 0); /* it waited in a round with WEFT_YIELD=on */
  OK(MPI_T_pvar_read(ps, ph, &w));
  CHECK(w == 0); /* no MPI call waited since the reset */
  OK(MPI_T_pvar_reset(ps, MPI_T_PVAR_ALL_HANDLES));
  MPI_T_pvar_handle copy = ph;
  OK(MPI_T_pvar_handle_free(ps, &ph));
  CHECK(ph == MPI_T_PVAR_HANDLE_NULL);
  CHECK_RC(MPI_T_pvar_handle_free(ps, &copy), MPI_T_ERR_INVALID_HANDLE);
  CHECK_RC(MPI_T_pvar_read(ps, copy, &v), MPI_T_ERR_INVALID_HANDLE);
  OK(MPI_T_pvar_session_free(&ps));
  OK(MPI_T_pvar_session_free(&other));
}

/* Categories: every cvar in exactly one; names round-trip. */
static void check_categories(int num) {
  int ncat = 0, total = 0, changed = -1, pvars = 0;
  OK(MPI_T_category_get_num(&ncat));
  CHECK(ncat >= 6);
  char *seen = calloc(num, 1);
  for (int c = 0; c < ncat; c++) {
    char name[128];
    int len = sizeof name, ncv = -1, npv = -1, nsub = -1, j = -1;
    OK(MPI_T_category_get_info(c, name, &len, NULL, NULL, &ncv, &npv, &nsub));
    CHECK(nsub == 0 && ncv >= 0 && (npv == 0 || npv == 1));
    if (npv == 1) {
      int p = -1;
      OK(MPI_T_category_get_pvars(c, 1, &p));
      CHECK(p == 0);
      pvars++;
    }
    OK(MPI_T_category_get_index(name, &j));
    CHECK(j == c);
    int *idx = malloc(sizeof(int) * (ncv + 1));
    OK(MPI_T_category_get_cvars(c, ncv, idx));
    for (int k = 0; k < ncv; k++) {
      CHECK(idx[k] >= 0 && idx[k] < num && !seen[idx[k]]);
      seen[idx[k]] = 1;
    }
    free(idx);
    total += ncv;
  }
  CHECK(total == num && pvars == 1);
  free(seen);
  int x;
  CHECK_RC(MPI_T_category_get_info(ncat, NULL, NULL, NULL, NULL, &x, &x, &x),
           MPI_T_ERR_INVALID_INDEX);
  CHECK_RC(MPI_T_category_get_index("no such category", &x), MPI_T_ERR_INVALID_NAME);
  OK(MPI_T_category_changed(&changed));
  CHECK(changed == 0);
}

int main(int argc, char **argv) {
  int provided = -1, x = 0;
  /* Nothing works before MPI_T_init_thread. */
  CHECK_RC(MPI_T_cvar_get_num(&x), MPI_T_ERR_NOT_INITIALIZED);
  CHECK_RC(MPI_T_finalize(), MPI_T_ERR_NOT_INITIALIZED);

  /* Before MPI_Init. */
  CHECK_RC(MPI_T_init_thread(MPI_THREAD_SINGLE, NULL), MPI_T_ERR_INVALID);
  CHECK_RC(MPI_T_init_thread(12345, &provided), MPI_T_ERR_INVALID);
  OK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
  CHECK(provided == MPI_THREAD_SINGLE);
  int num = check_all_cvars();
  check_values();
  check_errors(num);
  check_categories(num);
  check_pvar_outside();

  /* While MPI runs: the same cvars, the values weft read at MPI_Init. */
  OK(MPI_Init(&argc, &argv));
  OK(MPI_T_init_thread(MPI_THREAD_MULTIPLE, &provided)); /* nested */
  CHECK(provided == MPI_THREAD_SERIALIZED);
  CHECK(check_all_cvars() == num);
  check_values();
  check_pvar_running();
  OK(MPI_T_finalize()); /* one of two: still usable */
  OK(MPI_T_cvar_get_num(&x));
  CHECK(x == num);
  OK(MPI_T_finalize());
  CHECK_RC(MPI_T_cvar_get_num(&x), MPI_T_ERR_NOT_INITIALIZED);
  OK(MPI_Barrier(MPI_COMM_WORLD));
  OK(MPI_Finalize());

  /* After MPI_Finalize. */
  OK(MPI_T_init_thread(MPI_THREAD_FUNNELED, &provided));
  CHECK(provided == MPI_THREAD_FUNNELED);
  CHECK(check_all_cvars() == num);
  check_values();
  check_pvar_outside();
  OK(MPI_T_finalize());
  return 0;
}
