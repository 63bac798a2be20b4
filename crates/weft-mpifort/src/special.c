/* The Fortran procedures the generator does not write (they have no C prototype of the same
 * shape: MPI_INIT without argc/argv, the functions MPI_WTIME, MPI_WTICK, MPI_AINT_ADD/DIFF,
 * user operations through trampolines, attributes by value), the C-side handle and status
 * conversions (MPI-4.1 §19.3.4-5), and the helpers of special.h. */
#include "special.h"
#include <pthread.h>
#include <stdio.h>

MPI_Fint weft_f_bottom_, weft_f_in_place_, weft_f_buffer_automatic_;
MPI_Fint weft_f_status_ignore_[MPI_F_STATUS_SIZE];
MPI_Fint weft_f_statuses_ignore_[MPI_F_STATUS_SIZE];
MPI_Fint weft_f_errcodes_ignore_[1], weft_f_unweighted_[1], weft_f_weights_empty_[1];

/* MPI_F_STATUS_IGNORE / MPI_F_STATUSES_IGNORE (MPI-4.1 §19.3.5): C's names of the Fortran
 * special statuses. */
MPI_Fint *MPI_F_STATUS_IGNORE = weft_f_status_ignore_;
MPI_Fint *MPI_F_STATUSES_IGNORE = weft_f_statuses_ignore_;

char *weft_f_str_in(const char *s, size_t len, int strip_leading) {
  while (len > 0 && s[len - 1] == ' ') len--;
  while (strip_leading && len > 0 && s[0] == ' ') {
    s++;
    len--;
  }
  char *c = malloc(len + 1);
  if (!c) return NULL;
  memcpy(c, s, len);
  c[len] = 0;
  return c;
}

void weft_f_str_out(const char *c, char *s, size_t len) {
  size_t n = strnlen(c, WEFT_F_MAX_STRING);
  if (n > len) n = len;
  memcpy(s, c, n);
  memset(s + n, ' ', len - n);
}

int weft_f_degree(MPI_Comm comm, int which) {
  int n = 0, inter = 0, topo = MPI_UNDEFINED;
  if (which == 2) {
    MPI_Comm_test_inter(comm, &inter);
    if (inter) MPI_Comm_remote_size(comm, &n);
    else MPI_Comm_size(comm, &n);
    return n;
  }
  MPI_Topo_test(comm, &topo);
  if (topo == MPI_CART) {
    MPI_Cartdim_get(comm, &n);
    return 2 * n;
  }
  if (topo == MPI_GRAPH) {
    int rank;
    MPI_Comm_rank(comm, &rank);
    MPI_Graph_neighbors_count(comm, rank, &n);
    return n;
  }
  if (topo == MPI_DIST_GRAPH) {
    int in, out, w;
    MPI_Dist_graph_neighbors_count(comm, &in, &out, &w);
    return which == 1 ? out : in;
  }
  return 0;
}

void mpi_init_(MPI_Fint *ierror) { *ierror = MPI_Init(NULL, NULL); }
void weft_f_init_(MPI_Fint *ierror) __attribute__((alias("mpi_init_")));

void mpi_init_thread_(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierror) {
  *ierror = MPI_Init_thread(NULL, NULL, *required, provided);
}
void weft_f_init_thread_(MPI_Fint *, MPI_Fint *, MPI_Fint *)
    __attribute__((alias("mpi_init_thread_")));

double mpi_wtime_(void) { return MPI_Wtime(); }
double mpi_wtick_(void) { return MPI_Wtick(); }
double pmpi_wtime_(void) __attribute__((alias("mpi_wtime_")));
double pmpi_wtick_(void) __attribute__((alias("mpi_wtick_")));
MPI_Aint mpi_aint_add_(MPI_Aint *base, MPI_Aint *disp) { return MPI_Aint_add(*base, *disp); }
MPI_Aint mpi_aint_diff_(MPI_Aint *a, MPI_Aint *b) { return MPI_Aint_diff(*a, *b); }
/* MPI_PCONTROL(LEVEL): no ierror in Fortran. */
void mpi_pcontrol_(MPI_Fint *level) { MPI_Pcontrol(*level); }
/* MPI_F_SYNC_REG (MPI-4.1 §19.1.17): does nothing; calling it is what matters. */
void mpi_f_sync_reg_(void *buf) { (void)buf; }

/* User operations: the C library calls a trampoline of a fixed slot, which calls the
 * Fortran procedure of that slot with the datatype as an INTEGER handle. Fortran's
 * MPI_User_function (mpif.h, mpi: buffers by reference; mpi_f08: TYPE(C_PTR), VALUE) both
 * take the two buffer addresses as the first two words. */
typedef void weft_f_user_fn(void *, void *, MPI_Fint *, MPI_Fint *);
#define WEFT_F_OPS 64
static weft_f_user_fn *op_fn[WEFT_F_OPS];
static MPI_Op op_handle[WEFT_F_OPS];
static pthread_mutex_t op_lock = PTHREAD_MUTEX_INITIALIZER;

#define TRAMPOLINE(a, b)                                                           \
  static void tramp_##a##_##b(void *in, void *inout, int *len, MPI_Datatype *dt) { \
    MPI_Fint f = MPI_Type_toint(*dt);                                              \
    op_fn[(a) * 8 + (b)](in, inout, len, &f);                                      \
  }
#define T8(a) TRAMPOLINE(a, 0) TRAMPOLINE(a, 1) TRAMPOLINE(a, 2) TRAMPOLINE(a, 3) \
  TRAMPOLINE(a, 4) TRAMPOLINE(a, 5) TRAMPOLINE(a, 6) TRAMPOLINE(a, 7)
T8(0) T8(1) T8(2) T8(3) T8(4) T8(5) T8(6) T8(7)
#define A8(a) tramp_##a##_0, tramp_##a##_1, tramp_##a##_2, tramp_##a##_3, tramp_##a##_4, \
  tramp_##a##_5, tramp_##a##_6, tramp_##a##_7
static MPI_User_function *const tramp[WEFT_F_OPS] = {A8(0), A8(1), A8(2), A8(3),
                                                     A8(4), A8(5), A8(6), A8(7)};

void mpi_op_create_(weft_f_user_fn *fn, MPI_Fint *commute, MPI_Fint *op, MPI_Fint *ierror) {
  pthread_mutex_lock(&op_lock);
  int slot = -1;
  for (int i = 0; i < WEFT_F_OPS; i++)
    if (!op_fn[i]) { slot = i; break; }
  if (slot < 0) {
    pthread_mutex_unlock(&op_lock);
    fprintf(stderr, "weft: MPI_OP_CREATE: all %d Fortran user operations are in use "
                    "(free some with MPI_OP_FREE)\n", WEFT_F_OPS);
    *ierror = MPI_ERR_INTERN;
    return;
  }
  MPI_Op h = MPI_OP_NULL;
  int rc = MPI_Op_create(tramp[slot], weft_f_logical_in(*commute), &h);
  if (rc == MPI_SUCCESS) {
    op_fn[slot] = fn;
    op_handle[slot] = h;
    *op = MPI_Op_toint(h);
  }
  pthread_mutex_unlock(&op_lock);
  *ierror = rc;
}
void weft_f_op_create_(weft_f_user_fn *, MPI_Fint *, MPI_Fint *, MPI_Fint *)
    __attribute__((alias("mpi_op_create_")));

void mpi_op_free_(MPI_Fint *op, MPI_Fint *ierror) {
  MPI_Op h = MPI_Op_fromint(*op);
  pthread_mutex_lock(&op_lock);
  int rc = MPI_Op_free(&h);
  if (rc == MPI_SUCCESS) {
    MPI_Op old = MPI_Op_fromint(*op);
    for (int i = 0; i < WEFT_F_OPS; i++)
      if (op_fn[i] && op_handle[i] == old) { op_fn[i] = NULL; op_handle[i] = MPI_OP_NULL; }
    *op = MPI_Op_toint(h);
  }
  pthread_mutex_unlock(&op_lock);
  *ierror = rc;
}
void weft_f_op_free_(MPI_Fint *, MPI_Fint *) __attribute__((alias("mpi_op_free_")));

/* An attribute set from Fortran is stored in a box, and C's get_attr returns the box: a
 * pointer to the INTEGER(KIND=MPI_ADDRESS_KIND) value, as MPI-4.1 §19.3.7 says C sees it.
 * Fortran's get_attr reads a box back as the value, and anything else (set from C) as the
 * address C stored. The boxes are a sorted array of their addresses; a box is freed when a
 * Fortran keyval's delete procedure runs on it (attributes of C keyvals keep theirs). */
static MPI_Aint **boxes;
static size_t nboxes, capboxes;

/* Index of the first box at or after `p` (caller holds op_lock). */
static size_t box_pos(const void *p) {
  size_t lo = 0, hi = nboxes;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if ((const void *)boxes[mid] < p) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

static MPI_Aint *box_new(MPI_Aint v) {
  MPI_Aint *b = malloc(sizeof *b);
  if (!b) return NULL;
  *b = v;
  pthread_mutex_lock(&op_lock);
  if (nboxes == capboxes) {
    size_t cap = capboxes ? 2 * capboxes : 64;
    MPI_Aint **nb = realloc(boxes, cap * sizeof *nb);
    if (!nb) {
      pthread_mutex_unlock(&op_lock);
      free(b);
      return NULL;
    }
    boxes = nb;
    capboxes = cap;
  }
  size_t i = box_pos(b);
  memmove(boxes + i + 1, boxes + i, (nboxes - i) * sizeof *boxes);
  boxes[i] = b;
  nboxes++;
  pthread_mutex_unlock(&op_lock);
  return b;
}

/* The value in box `p`, if `p` is a box. */
static int box_value(const void *p, MPI_Aint *v) {
  pthread_mutex_lock(&op_lock);
  size_t i = box_pos(p);
  int found = i < nboxes && (const void *)boxes[i] == p;
  if (found) *v = *boxes[i];
  pthread_mutex_unlock(&op_lock);
  return found;
}

static void box_free(void *p) {
  pthread_mutex_lock(&op_lock);
  size_t i = box_pos(p);
  if (i < nboxes && (void *)boxes[i] == p) {
    memmove(boxes + i, boxes + i + 1, (nboxes - i - 1) * sizeof *boxes);
    nboxes--;
    free(p);
  }
  pthread_mutex_unlock(&op_lock);
}

/* Attributes: Fortran's value is an INTEGER(KIND=MPI_ADDRESS_KIND); the C library's
 * predefined attributes are pointers to the value (MPI-4.1 §7.7.2, §12.2.6). */
static MPI_Aint predefined_value(int keyval, void *v) {
  switch (keyval) {
  case MPI_TAG_UB: case MPI_IO: case MPI_HOST: case MPI_WTIME_IS_GLOBAL: case MPI_APPNUM:
  case MPI_LASTUSEDCODE: case MPI_UNIVERSE_SIZE: case MPI_WIN_DISP_UNIT:
  case MPI_WIN_CREATE_FLAVOR: case MPI_WIN_MODEL:
    return *(int *)v;
  case MPI_WIN_SIZE:
    return *(MPI_Aint *)v;
  default: /* MPI_WIN_BASE and user attributes: a box's value, else the address itself. */
  {
    MPI_Aint x;
    return box_value(v, &x) ? x : (MPI_Aint)v;
  }
  }
}

#define ATTR(lower, Kind, conv)                                                          \
  void mpi_##lower##_get_attr_(MPI_Fint *h, MPI_Fint *keyval, MPI_Aint *val,             \
                               MPI_Fint *flag, MPI_Fint *ierror) {                       \
    void *v = NULL;                                                                      \
    int f = 0;                                                                           \
    int rc = MPI_##Kind##_get_attr(conv##_fromint(*h), *keyval, &v, &f);                 \
    if (rc == MPI_SUCCESS && f) *val = predefined_value(*keyval, v);                     \
    if (rc == MPI_SUCCESS) *flag = weft_f_logical_out(f);                                \
    *ierror = rc;                                                                        \
  }                                                                                      \
  void weft_f_##lower##_get_attr_(MPI_Fint *, MPI_Fint *, MPI_Aint *, MPI_Fint *,        \
                                  MPI_Fint *) __attribute__((alias("mpi_" #lower "_get_attr_"))); \
  void mpi_##lower##_set_attr_(MPI_Fint *h, MPI_Fint *keyval, MPI_Aint *val,             \
                               MPI_Fint *ierror) {                                       \
    MPI_Aint *b = box_new(*val);                                                         \
    if (!b) {                                                                            \
      *ierror = MPI_ERR_NO_MEM;                                                          \
      return;                                                                            \
    }                                                                                    \
    *ierror = MPI_##Kind##_set_attr(conv##_fromint(*h), *keyval, b);                     \
    if (*ierror != MPI_SUCCESS) box_free(b);                                             \
  }                                                                                      \
  void weft_f_##lower##_set_attr_(MPI_Fint *, MPI_Fint *, MPI_Aint *, MPI_Fint *)        \
      __attribute__((alias("mpi_" #lower "_set_attr_")));
/* MPI_ATTR_GET / MPI_ATTR_PUT (deprecated MPI-1 forms): the value is a default INTEGER. */
void mpi_attr_get_(MPI_Fint *comm, MPI_Fint *keyval, MPI_Fint *val, MPI_Fint *flag,
                   MPI_Fint *ierror) {
  void *v = NULL;
  int f = 0;
  int rc = MPI_Comm_get_attr(MPI_Comm_fromint(*comm), *keyval, &v, &f);
  if (rc == MPI_SUCCESS && f) *val = (MPI_Fint)predefined_value(*keyval, v);
  if (rc == MPI_SUCCESS) *flag = weft_f_logical_out(f);
  *ierror = rc;
}
void mpi_attr_put_(MPI_Fint *comm, MPI_Fint *keyval, MPI_Fint *val, MPI_Fint *ierror) {
  MPI_Aint *b = box_new(*val);
  if (!b) {
    *ierror = MPI_ERR_NO_MEM;
    return;
  }
  *ierror = MPI_Comm_set_attr(MPI_Comm_fromint(*comm), *keyval, b);
  if (*ierror != MPI_SUCCESS) box_free(b);
}

ATTR(comm, Comm, MPI_Comm)
ATTR(win, Win, MPI_Win)
ATTR(type, Type, MPI_Type)

/* MPI_STATUS_F2F08 / MPI_STATUS_F082F for Fortran (mpi and mpi_f08). */
void mpi_status_f2f08_(MPI_Fint *f, MPI_Status *f08, MPI_Fint *ierror) { *ierror = MPI_Status_f2f08(f, f08); }
void mpi_status_f082f_(MPI_Status *f08, MPI_Fint *f, MPI_Fint *ierror) { *ierror = MPI_Status_f082f(f08, f); }

/* Attribute keyvals with Fortran copy and delete procedures (MPI-4.1 §7.7.2). The C library
 * gets C trampolines and, as extra_state, a record of the two Fortran procedures and the
 * program's own extra_state; the trampolines call the Fortran procedure with INTEGER handles
 * and INTEGER(KIND=MPI_ADDRESS_KIND) attribute values. A record lives as long as the
 * program: attributes of a freed keyval are still copied and deleted through it. */
typedef void weft_f_copy_fn(MPI_Fint *, MPI_Fint *, MPI_Aint *, MPI_Aint *, MPI_Aint *,
                            MPI_Fint *, MPI_Fint *);
typedef void weft_f_delete_fn(MPI_Fint *, MPI_Fint *, MPI_Aint *, MPI_Aint *, MPI_Fint *);
struct weft_f_keyval {
  weft_f_copy_fn *copy;
  weft_f_delete_fn *del;
  MPI_Aint extra_state;
};

#define KEYVAL(lower, Kind, T, conv)                                                        \
  static int lower##_copy_tramp(T old, int keyval, void *extra, void *in, void *out,        \
                                int *flag) {                                                \
    struct weft_f_keyval *k = extra;                                                        \
    MPI_Fint h = conv##_toint(old), kv = keyval, f = WEFT_F_FALSE, ierr = MPI_SUCCESS;      \
    MPI_Aint vin = predefined_value(keyval, in), vout = 0;                                  \
    k->copy(&h, &kv, &k->extra_state, &vin, &vout, &f, &ierr);                              \
    *flag = weft_f_logical_in(f);                                                           \
    if (ierr == MPI_SUCCESS && *flag) {                                                     \
      MPI_Aint *b = box_new(vout);                                                          \
      if (!b) return MPI_ERR_NO_MEM;                                                        \
      *(void **)out = b;                                                                    \
    }                                                                                       \
    return ierr;                                                                            \
  }                                                                                         \
  static int lower##_delete_tramp(T obj, int keyval, void *val, void *extra) {              \
    struct weft_f_keyval *k = extra;                                                        \
    MPI_Fint h = conv##_toint(obj), kv = keyval, ierr = MPI_SUCCESS;                        \
    MPI_Aint v = predefined_value(keyval, val);                                             \
    k->del(&h, &kv, &v, &k->extra_state, &ierr);                                            \
    if (ierr == MPI_SUCCESS) box_free(val);                                                 \
    return ierr;                                                                            \
  }                                                                                         \
  void mpi_##lower##_create_keyval_(weft_f_copy_fn *copy, weft_f_delete_fn *del,            \
                                    MPI_Fint *keyval, MPI_Aint *extra, MPI_Fint *ierror) {  \
    struct weft_f_keyval *k = malloc(sizeof *k);                                            \
    if (!k) {                                                                               \
      *ierror = MPI_ERR_NO_MEM;                                                             \
      return;                                                                               \
    }                                                                                       \
    k->copy = copy;                                                                         \
    k->del = del;                                                                           \
    k->extra_state = *extra;                                                                \
    int kv = 0;                                                                             \
    int rc = MPI_##Kind##_create_keyval(lower##_copy_tramp, lower##_delete_tramp, &kv, k);  \
    if (rc == MPI_SUCCESS) *keyval = kv;                                                    \
    else free(k);                                                                           \
    *ierror = rc;                                                                           \
  }                                                                                         \
  void pmpi_##lower##_create_keyval_(weft_f_copy_fn *, weft_f_delete_fn *, MPI_Fint *,      \
                                     MPI_Aint *, MPI_Fint *)                                \
      __attribute__((alias("mpi_" #lower "_create_keyval_")));                              \
  /* The predefined copy and delete procedures, as Fortran sees them. */                    \
  void mpi_##lower##_null_copy_fn_(MPI_Fint *old, MPI_Fint *kv, MPI_Aint *extra,            \
                                   MPI_Aint *in, MPI_Aint *out, MPI_Fint *flag,             \
                                   MPI_Fint *ierr) {                                        \
    (void)old; (void)kv; (void)extra; (void)in; (void)out;                                  \
    *flag = WEFT_F_FALSE;                                                                   \
    *ierr = MPI_SUCCESS;                                                                    \
  }                                                                                         \
  void mpi_##lower##_dup_fn_(MPI_Fint *old, MPI_Fint *kv, MPI_Aint *extra, MPI_Aint *in,    \
                             MPI_Aint *out, MPI_Fint *flag, MPI_Fint *ierr) {               \
    (void)old; (void)kv; (void)extra;                                                       \
    *out = *in;                                                                             \
    *flag = WEFT_F_TRUE;                                                                    \
    *ierr = MPI_SUCCESS;                                                                    \
  }                                                                                         \
  void mpi_##lower##_null_delete_fn_(MPI_Fint *obj, MPI_Fint *kv, MPI_Aint *val,            \
                                     MPI_Aint *extra, MPI_Fint *ierr) {                     \
    (void)obj; (void)kv; (void)val; (void)extra;                                            \
    *ierr = MPI_SUCCESS;                                                                    \
  }
KEYVAL(comm, Comm, MPI_Comm, MPI_Comm)
KEYVAL(type, Type, MPI_Datatype, MPI_Type)
KEYVAL(win, Win, MPI_Win, MPI_Win)

/* Error handlers with Fortran procedures (MPI-4.1 §9.3): as user operations, a fixed pool of
 * trampolines per kind, each calling the Fortran procedure of its slot with the INTEGER
 * handle and error code. Error handlers are never freed by weft's C library while an object
 * uses them; a slot stays taken for the program's life. */
typedef void weft_f_errh_fn(MPI_Fint *, MPI_Fint *);
#define WEFT_F_ERRHS 16
#define ERRH(lower, Kind, T, conv)                                                         \
  static weft_f_errh_fn *lower##_errh_fn[WEFT_F_ERRHS];                                    \
  static int lower##_errh_used;                                                            \
  static void lower##_errh_call(int slot, T *obj, int *code) {                             \
    MPI_Fint h = conv##_toint(*obj), c = *code;                                            \
    lower##_errh_fn[slot](&h, &c);                                                         \
  }                                                                                        \
  ERRH_TRAMPS(lower, T)                                                                    \
  void mpi_##lower##_create_errhandler_(weft_f_errh_fn *fn, MPI_Fint *errh,                \
                                        MPI_Fint *ierror) {                                \
    pthread_mutex_lock(&op_lock);                                                          \
    if (lower##_errh_used == WEFT_F_ERRHS) {                                               \
      pthread_mutex_unlock(&op_lock);                                                      \
      fprintf(stderr, "weft: MPI_" #Kind "_CREATE_ERRHANDLER: all %d Fortran error "      \
                      "handlers of this kind are in use\n", WEFT_F_ERRHS);                 \
      *ierror = MPI_ERR_INTERN;                                                            \
      return;                                                                              \
    }                                                                                      \
    int slot = lower##_errh_used;                                                          \
    MPI_Errhandler e = MPI_ERRHANDLER_NULL;                                                \
    int rc = MPI_##Kind##_create_errhandler(lower##_errh_tramp[slot], &e);                 \
    if (rc == MPI_SUCCESS) {                                                               \
      lower##_errh_fn[slot] = fn;                                                          \
      lower##_errh_used++;                                                                 \
      *errh = MPI_Errhandler_toint(e);                                                     \
    }                                                                                      \
    pthread_mutex_unlock(&op_lock);                                                        \
    *ierror = rc;                                                                          \
  }
#define ERRH_T(lower, T, i)                                                                \
  static void lower##_errh_##i(T *obj, int *code, ...) { lower##_errh_call(i, obj, code); }
#define ERRH_TRAMPS(lower, T)                                                              \
  ERRH_T(lower, T, 0) ERRH_T(lower, T, 1) ERRH_T(lower, T, 2) ERRH_T(lower, T, 3)          \
  ERRH_T(lower, T, 4) ERRH_T(lower, T, 5) ERRH_T(lower, T, 6) ERRH_T(lower, T, 7)          \
  ERRH_T(lower, T, 8) ERRH_T(lower, T, 9) ERRH_T(lower, T, 10) ERRH_T(lower, T, 11)        \
  ERRH_T(lower, T, 12) ERRH_T(lower, T, 13) ERRH_T(lower, T, 14) ERRH_T(lower, T, 15)      \
  static void (*const lower##_errh_tramp[WEFT_F_ERRHS])(T *, int *, ...) = {               \
      lower##_errh_0,  lower##_errh_1,  lower##_errh_2,  lower##_errh_3,                   \
      lower##_errh_4,  lower##_errh_5,  lower##_errh_6,  lower##_errh_7,                   \
      lower##_errh_8,  lower##_errh_9,  lower##_errh_10, lower##_errh_11,                  \
      lower##_errh_12, lower##_errh_13, lower##_errh_14, lower##_errh_15};
ERRH(comm, Comm, MPI_Comm, MPI_Comm)
ERRH(win, Win, MPI_Win, MPI_Win)
ERRH(file, File, MPI_File, MPI_File)
ERRH(session, Session, MPI_Session, MPI_Session)

/* The MPI-1 predefined copy and delete procedures (MPI_KEYVAL_CREATE's, deprecated), whose
 * values are default INTEGERs; programs also pass the null ones to MPI_COMM_CREATE_KEYVAL. */
void mpi_null_copy_fn_(MPI_Fint *old, MPI_Fint *kv, MPI_Fint *extra, MPI_Fint *in,
                       MPI_Fint *out, MPI_Fint *flag, MPI_Fint *ierr) {
  (void)old; (void)kv; (void)extra; (void)in; (void)out;
  *flag = WEFT_F_FALSE;
  *ierr = MPI_SUCCESS;
}
void mpi_dup_fn_(MPI_Fint *old, MPI_Fint *kv, MPI_Fint *extra, MPI_Fint *in, MPI_Fint *out,
                 MPI_Fint *flag, MPI_Fint *ierr) {
  (void)old; (void)kv; (void)extra;
  *out = *in;
  *flag = WEFT_F_TRUE;
  *ierr = MPI_SUCCESS;
}
void mpi_null_delete_fn_(MPI_Fint *obj, MPI_Fint *kv, MPI_Fint *val, MPI_Fint *extra,
                         MPI_Fint *ierr) {
  (void)obj; (void)kv; (void)val; (void)extra;
  *ierr = MPI_SUCCESS;
}

/* MPI_KEYVAL_CREATE (MPI-1, deprecated): as MPI_COMM_CREATE_KEYVAL with default INTEGER
 * extra state and attribute values. */
typedef void weft_f_copy1_fn(MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *,
                             MPI_Fint *, MPI_Fint *);
typedef void weft_f_delete1_fn(MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *);
struct weft_f_keyval1 {
  weft_f_copy1_fn *copy;
  weft_f_delete1_fn *del;
  MPI_Fint extra_state;
};

static int keyval1_copy_tramp(MPI_Comm old, int keyval, void *extra, void *in, void *out,
                              int *flag) {
  struct weft_f_keyval1 *k = extra;
  MPI_Fint h = MPI_Comm_toint(old), kv = keyval, f = WEFT_F_FALSE, ierr = MPI_SUCCESS;
  MPI_Fint vin = (MPI_Fint)predefined_value(keyval, in), vout = 0;
  k->copy(&h, &kv, &k->extra_state, &vin, &vout, &f, &ierr);
  *flag = weft_f_logical_in(f);
  if (ierr == MPI_SUCCESS && *flag) {
    MPI_Aint *b = box_new(vout);
    if (!b) return MPI_ERR_NO_MEM;
    *(void **)out = b;
  }
  return ierr;
}

static int keyval1_delete_tramp(MPI_Comm obj, int keyval, void *val, void *extra) {
  struct weft_f_keyval1 *k = extra;
  MPI_Fint h = MPI_Comm_toint(obj), kv = keyval, ierr = MPI_SUCCESS;
  MPI_Fint v = (MPI_Fint)predefined_value(keyval, val);
  k->del(&h, &kv, &v, &k->extra_state, &ierr);
  if (ierr == MPI_SUCCESS) box_free(val);
  return ierr;
}

void mpi_keyval_create_(weft_f_copy1_fn *copy, weft_f_delete1_fn *del, MPI_Fint *keyval,
                        MPI_Fint *extra, MPI_Fint *ierror) {
  struct weft_f_keyval1 *k = malloc(sizeof *k);
  if (!k) {
    *ierror = MPI_ERR_NO_MEM;
    return;
  }
  k->copy = copy;
  k->del = del;
  k->extra_state = *extra;
  int kv = 0;
  int rc = MPI_Comm_create_keyval(keyval1_copy_tramp, keyval1_delete_tramp, &kv, k);
  if (rc == MPI_SUCCESS) *keyval = kv;
  else free(k);
  *ierror = rc;
}

/* MPI_INFO_CREATE_ENV(INFO, IERROR): Fortran has no argc/argv to pass (MPI-4.1 §11.4). */
void mpi_info_create_env_(MPI_Fint *info, MPI_Fint *ierror) {
  MPI_Info h = MPI_INFO_NULL;
  *ierror = MPI_Info_create_env(0, NULL, &h);
  if (*ierror == MPI_SUCCESS) *info = MPI_Info_toint(h);
}
void pmpi_info_create_env_(MPI_Fint *, MPI_Fint *) __attribute__((alias("mpi_info_create_env_")));

/* Generalized requests with Fortran query, free and cancel procedures (MPI-4.1 §13.2): the
 * C library gets trampolines and a record of the procedures as extra state; the record is
 * freed after the free procedure ran. The procedures get the program's EXTRA_STATE
 * variable itself (its address was recorded), so what they write there the program sees,
 * as with MPICH (its test pt2pt/greqf counts on it). */
typedef void weft_f_query_fn(MPI_Aint *, MPI_Status *, MPI_Fint *);
typedef void weft_f_free_fn(MPI_Aint *, MPI_Fint *);
typedef void weft_f_cancel_fn(MPI_Aint *, MPI_Fint *, MPI_Fint *);
struct weft_f_greq {
  weft_f_query_fn *query;
  weft_f_free_fn *free;
  weft_f_cancel_fn *cancel;
  MPI_Aint *extra_state;
};

static int greq_query(void *extra, MPI_Status *status) {
  struct weft_f_greq *g = extra;
  MPI_Fint ierr = MPI_SUCCESS;
  g->query(g->extra_state, status, &ierr);
  return ierr;
}

static int greq_free(void *extra) {
  struct weft_f_greq *g = extra;
  MPI_Fint ierr = MPI_SUCCESS;
  g->free(g->extra_state, &ierr);
  free(g);
  return ierr;
}

static int greq_cancel(void *extra, int complete) {
  struct weft_f_greq *g = extra;
  MPI_Fint ierr = MPI_SUCCESS, c = weft_f_logical_out(complete);
  g->cancel(g->extra_state, &c, &ierr);
  return ierr;
}

void mpi_grequest_start_(weft_f_query_fn *query, weft_f_free_fn *freefn,
                         weft_f_cancel_fn *cancel, MPI_Aint *extra, MPI_Fint *request,
                         MPI_Fint *ierror) {
  struct weft_f_greq *g = malloc(sizeof *g);
  if (!g) {
    *ierror = MPI_ERR_NO_MEM;
    return;
  }
  g->query = query;
  g->free = freefn;
  g->cancel = cancel;
  g->extra_state = extra;
  MPI_Request r = MPI_REQUEST_NULL;
  int rc = MPI_Grequest_start(greq_query, greq_free, greq_cancel, g, &r);
  if (rc == MPI_SUCCESS) *request = MPI_Request_toint(r);
  else free(g);
  *ierror = rc;
}
void pmpi_grequest_start_(weft_f_query_fn *, weft_f_free_fn *, weft_f_cancel_fn *, MPI_Aint *,
                          MPI_Fint *, MPI_Fint *) __attribute__((alias("mpi_grequest_start_")));
