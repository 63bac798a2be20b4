/* Datatype decoding, canonical packing, datatype attributes and the MPI 5.0 status and
 * request queries:
 * - MPI_Type_get_envelope/get_contents (and _c) for every combiner weft builds, with the
 *   arguments given back, predefined old types as themselves and derived ones as new
 *   handles that decode in turn (also after the original was freed) and can be freed;
 * - MPI_Pack_external/Unpack_external/Pack_external_size (and _c): big-endian bytes,
 *   external32's 4-byte MPI_LONG, round trips through a vector and a struct;
 * - MPI_Type_create_keyval/set_attr/get_attr/delete_attr/free_keyval: copy on MPI_Type_dup,
 *   delete on MPI_Type_free and on replacement;
 * - MPI_Status_get_source/tag/error, MPI_Request_get_status_all/any/some;
 * - bad input: each refused with the class the standard names.
 * Rank-local except the request queries (a self send): runs at any size. */
#include "check.h"
#include <stddef.h>
#include <string.h>

static void envelope(MPI_Datatype t, int ni, int na, int nd, int comb) {
  int a, b, c, d;
  OK(MPI_Type_get_envelope(t, &a, &b, &c, &d));
  CHECK(a == ni && b == na && c == nd && d == comb);
  MPI_Count ac, bc, lc, cc;
  OK(MPI_Type_get_envelope_c(t, &ac, &bc, &lc, &cc, &d));
  CHECK(ac == ni && bc == na && lc == 0 && cc == nd && d == comb);
}

/* Decodes `t`, expecting `ni` ints equal to `want_i`, `na` addresses, one old type. Returns
 * the old type (a new handle when derived). */
static MPI_Datatype one_old(MPI_Datatype t, int comb, int ni, const int *want_i, int na,
                            const MPI_Aint *want_a) {
  envelope(t, ni, na, 1, comb);
  int ints[64];
  MPI_Aint addrs[8];
  MPI_Datatype old = MPI_DATATYPE_NULL;
  OK(MPI_Type_get_contents(t, 64, 8, 1, ints, addrs, &old));
  for (int i = 0; i < ni; i++) CHECK(ints[i] == want_i[i]);
  for (int i = 0; i < na; i++) CHECK(addrs[i] == want_a[i]);
  return old;
}

static int delete_calls, copy_calls;
static int copy_fn(MPI_Datatype t, int k, void *extra, void *in, void *out, int *flag) {
  (void)t, (void)k;
  CHECK(extra == (void *)&copy_calls);
  copy_calls++;
  *(void **)out = (char *)in + 1; /* the copy's value differs from the original's */
  *flag = 1;
  return MPI_SUCCESS;
}
static int delete_fn(MPI_Datatype t, int k, void *v, void *extra) {
  (void)t, (void)k, (void)v, (void)extra;
  delete_calls++;
  return MPI_SUCCESS;
}

static void decoding(void) {
  int a, b, c, d;
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  /* Predefined: named, no contents. */
  envelope(MPI_INT, 0, 0, 0, MPI_COMBINER_NAMED);
  envelope(MPI_DOUBLE_INT, 0, 0, 0, MPI_COMBINER_NAMED);
  int ints[64];
  MPI_Aint addrs[8];
  MPI_Datatype types[4];
  CHECK_RC(MPI_Type_get_contents(MPI_INT, 0, 0, 0, ints, addrs, types), MPI_ERR_TYPE);

  MPI_Datatype contig, vec, hvec, idx, hidx, iblk, hblk, st, sub, res, dup, dar;
  OK(MPI_Type_contiguous(3, MPI_INT, &contig));
  int w1[] = {3};
  MPI_Datatype o = one_old(contig, MPI_COMBINER_CONTIGUOUS, 1, w1, 0, NULL);
  CHECK(o == MPI_INT); /* predefined: itself */

  OK(MPI_Type_vector(4, 2, 5, contig, &vec));
  int w2[] = {4, 2, 5};
  MPI_Datatype inner = one_old(vec, MPI_COMBINER_VECTOR, 3, w2, 0, NULL);
  CHECK(inner != contig && inner != MPI_DATATYPE_NULL); /* derived: a new handle */
  o = one_old(inner, MPI_COMBINER_CONTIGUOUS, 1, w1, 0, NULL);
  CHECK(o == MPI_INT);
  int sz;
  OK(MPI_Type_size(inner, &sz));
  CHECK(sz == 12);
  OK(MPI_Type_free(&inner));

  OK(MPI_Type_create_hvector(2, 1, 24, MPI_DOUBLE, &hvec));
  int w3[] = {2, 1};
  MPI_Aint a3[] = {24};
  CHECK(one_old(hvec, MPI_COMBINER_HVECTOR, 2, w3, 1, a3) == MPI_DOUBLE);

  int bl[] = {1, 2}, dp[] = {0, 5};
  OK(MPI_Type_indexed(2, bl, dp, MPI_SHORT, &idx));
  int w4[] = {2, 1, 2, 0, 5};
  CHECK(one_old(idx, MPI_COMBINER_INDEXED, 5, w4, 0, NULL) == MPI_SHORT);

  MPI_Aint hd[] = {8, 40};
  OK(MPI_Type_create_hindexed(2, bl, hd, MPI_FLOAT, &hidx));
  int w5[] = {2, 1, 2};
  CHECK(one_old(hidx, MPI_COMBINER_HINDEXED, 3, w5, 2, hd) == MPI_FLOAT);

  OK(MPI_Type_create_indexed_block(2, 3, dp, MPI_CHAR, &iblk));
  int w6[] = {2, 3, 0, 5};
  CHECK(one_old(iblk, MPI_COMBINER_INDEXED_BLOCK, 4, w6, 0, NULL) == MPI_CHAR);

  OK(MPI_Type_create_hindexed_block(2, 3, hd, MPI_BYTE, &hblk));
  int w7[] = {2, 3};
  CHECK(one_old(hblk, MPI_COMBINER_HINDEXED_BLOCK, 2, w7, 2, hd) == MPI_BYTE);

  int sizes[] = {6, 8}, subs[] = {2, 3}, starts[] = {1, 4};
  OK(MPI_Type_create_subarray(2, sizes, subs, starts, MPI_ORDER_FORTRAN, MPI_INT, &sub));
  int w8[] = {2, 6, 8, 2, 3, 1, 4, MPI_ORDER_FORTRAN};
  CHECK(one_old(sub, MPI_COMBINER_SUBARRAY, 8, w8, 0, NULL) == MPI_INT);

  int gs[] = {8}, di[] = {MPI_DISTRIBUTE_BLOCK}, da[] = {MPI_DISTRIBUTE_DFLT_DARG}, ps[] = {2};
  OK(MPI_Type_create_darray(2, 1, 1, gs, di, da, ps, MPI_ORDER_C, MPI_INT, &dar));
  int w9[] = {2, 1, 1, 8, MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_DFLT_DARG, 2, MPI_ORDER_C};
  CHECK(one_old(dar, MPI_COMBINER_DARRAY, 8, w9, 0, NULL) == MPI_INT);

  MPI_Aint ra[] = {-4, 32};
  OK(MPI_Type_create_resized(hvec, -4, 32, &res));
  MPI_Datatype h2 = one_old(res, MPI_COMBINER_RESIZED, 0, NULL, 2, ra);
  CHECK(h2 != MPI_DOUBLE && h2 != hvec);
  CHECK(one_old(h2, MPI_COMBINER_HVECTOR, 2, w3, 1, a3) == MPI_DOUBLE);
  OK(MPI_Type_free(&h2));

  OK(MPI_Type_dup(MPI_INT, &dup));
  CHECK(one_old(dup, MPI_COMBINER_DUP, 0, NULL, 0, NULL) == MPI_INT);

  /* Struct: three old types, mixed predefined and derived; the derived one is freed by the
   * program before decoding and still decodes. */
  int sbl[] = {1, 2, 1};
  MPI_Aint sd[] = {0, 8, 64};
  MPI_Datatype sty[] = {MPI_INT, contig, MPI_LONG};
  OK(MPI_Type_create_struct(3, sbl, sd, sty, &st));
  OK(MPI_Type_free(&contig));
  OK(MPI_Type_get_envelope(st, &a, &b, &c, &d));
  CHECK(a == 4 && b == 3 && c == 3 && d == MPI_COMBINER_STRUCT);
  OK(MPI_Type_get_contents(st, 4, 3, 3, ints, addrs, types));
  CHECK(ints[0] == 3 && ints[1] == 1 && ints[2] == 2 && ints[3] == 1);
  CHECK(addrs[0] == 0 && addrs[1] == 8 && addrs[2] == 64);
  CHECK(types[0] == MPI_INT && types[2] == MPI_LONG && types[1] != MPI_DATATYPE_NULL);
  CHECK(one_old(types[1], MPI_COMBINER_CONTIGUOUS, 1, w1, 0, NULL) == MPI_INT);
  OK(MPI_Type_free(&types[1]));
  /* The large-count form gives the same arrays and no large counts. */
  MPI_Count lc[1];
  OK(MPI_Type_get_contents_c(st, 4, 3, 0, 3, ints, addrs, lc, types));
  CHECK(ints[0] == 3 && addrs[2] == 64 && types[0] == MPI_INT);
  OK(MPI_Type_free(&types[1]));

  /* Bad input: arrays too small, a freed or null handle, a NULL output. */
  CHECK_RC(MPI_Type_get_contents(st, 3, 3, 3, ints, addrs, types), MPI_ERR_ARG);
  CHECK_RC(MPI_Type_get_contents(st, 4, 3, 2, ints, addrs, types), MPI_ERR_ARG);
  CHECK_RC(MPI_Type_get_envelope(MPI_DATATYPE_NULL, &a, &b, &c, &d), MPI_ERR_TYPE);
  MPI_Datatype gone = vec;
  OK(MPI_Type_free(&vec));
  CHECK_RC(MPI_Type_get_envelope(gone, &a, &b, &c, &d), MPI_ERR_TYPE);
  CHECK_RC(MPI_Type_get_envelope(st, NULL, &b, &c, &d), MPI_ERR_ARG);

  MPI_Datatype all[] = {hvec, idx, hidx, iblk, hblk, st, sub, res, dup, dar};
  for (int i = 0; i < 10; i++) OK(MPI_Type_free(&all[i]));
}

static void external32(void) {
  MPI_Aint sz;
  OK(MPI_Pack_external_size("external32", 3, MPI_INT, &sz));
  CHECK(sz == 12);
  OK(MPI_Pack_external_size("external32", 2, MPI_LONG, &sz));
  CHECK(sz == 8); /* external32's MPI_LONG is 4 bytes */
  MPI_Count szc;
  OK(MPI_Pack_external_size_c("external32", 2, MPI_DOUBLE, &szc));
  CHECK(szc == 16);

  int v[3] = {1, -2, 0x01020304};
  unsigned char buf[64];
  MPI_Aint pos = 0;
  OK(MPI_Pack_external("external32", v, 3, MPI_INT, buf, sizeof buf, &pos));
  CHECK(pos == 12);
  unsigned char want[12] = {0, 0, 0, 1, 0xff, 0xff, 0xff, 0xfe, 1, 2, 3, 4};
  CHECK(memcmp(buf, want, 12) == 0);
  double x = 1.0;
  OK(MPI_Pack_external("external32", &x, 1, MPI_DOUBLE, buf, sizeof buf, &pos));
  CHECK(pos == 20 && buf[12] == 0x3f && buf[13] == 0xf0 && buf[19] == 0);
  int back[3];
  double y = 0;
  MPI_Aint in = 0;
  OK(MPI_Unpack_external("external32", buf, pos, &in, back, 3, MPI_INT));
  OK(MPI_Unpack_external("external32", buf, pos, &in, &y, 1, MPI_DOUBLE));
  CHECK(in == 20 && back[0] == 1 && back[1] == -2 && back[2] == 0x01020304 && y == 1.0);

  /* A struct {short; long} through a vector of two: 2 + 4 bytes each in external32. */
  struct s {
    short a;
    long b;
  } items[2] = {{7, -9}, {-1, 123456}}, got[2];
  int sbl[] = {1, 1};
  MPI_Aint sd[] = {offsetof(struct s, a), offsetof(struct s, b)};
  MPI_Datatype sty[] = {MPI_SHORT, MPI_LONG}, st, rs;
  OK(MPI_Type_create_struct(2, sbl, sd, sty, &st));
  OK(MPI_Type_create_resized(st, 0, sizeof(struct s), &rs));
  OK(MPI_Type_commit(&rs));
  OK(MPI_Pack_external_size("external32", 2, rs, &sz));
  CHECK(sz == 12);
  MPI_Count p = 0;
  OK(MPI_Pack_external_c("external32", items, 2, rs, buf, sizeof buf, &p));
  unsigned char w2[12] = {0, 7, 0xff, 0xff, 0xff, 0xf7, 0xff, 0xff, 0, 1, 0xe2, 0x40};
  CHECK(p == 12 && memcmp(buf, w2, 12) == 0);
  memset(got, 0, sizeof got);
  MPI_Count q = 0;
  OK(MPI_Unpack_external_c("external32", buf, p, &q, got, 2, rs));
  CHECK(q == 12 && got[0].a == 7 && got[0].b == -9 && got[1].a == -1 && got[1].b == 123456);

  /* Bad input. */
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  pos = 0;
  CHECK_RC(MPI_Pack_external("native", v, 3, MPI_INT, buf, sizeof buf, &pos),
           MPI_ERR_UNSUPPORTED_DATAREP);
  CHECK_RC(MPI_Pack_external("external32", v, 3, MPI_INT, buf, 8, &pos), MPI_ERR_TRUNCATE);
  CHECK_RC(MPI_Pack_external("external32", v, -1, MPI_INT, buf, 64, &pos), MPI_ERR_COUNT);
  CHECK_RC(MPI_Unpack_external("external32", buf, 4, &pos, back, 3, MPI_INT), MPI_ERR_TRUNCATE);
  long big = 1L << 40;
  CHECK_RC(MPI_Pack_external("external32", &big, 1, MPI_LONG, buf, 64, &pos), MPI_ERR_CONVERSION);
  CHECK_RC(MPI_Pack_external_size("external32", 1, MPI_DATATYPE_NULL, &sz), MPI_ERR_TYPE);
  OK(MPI_Type_free(&st));
  OK(MPI_Type_free(&rs));
}

static void attributes(void) {
  int key, key2, flag;
  void *val;
  OK(MPI_Type_create_keyval(copy_fn, delete_fn, &key, &copy_calls));
  OK(MPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, MPI_TYPE_NULL_DELETE_FN, &key2, NULL));
  MPI_Datatype t, d;
  OK(MPI_Type_contiguous(2, MPI_INT, &t));
  OK(MPI_Type_get_attr(t, key, &val, &flag));
  CHECK(flag == 0);
  static char base[4];
  OK(MPI_Type_set_attr(t, key, base));
  OK(MPI_Type_set_attr(t, key2, base + 2));
  OK(MPI_Type_get_attr(t, key, &val, &flag));
  CHECK(flag == 1 && val == base);
  /* Replacing runs the delete callback on the old value. */
  OK(MPI_Type_set_attr(t, key, base));
  CHECK(delete_calls == 1);
  /* Dup copies through the callbacks: key's copy gets value + 1, key2 (null copy) none. */
  OK(MPI_Type_dup(t, &d));
  CHECK(copy_calls == 1);
  OK(MPI_Type_get_attr(d, key, &val, &flag));
  CHECK(flag == 1 && val == base + 1);
  OK(MPI_Type_get_attr(d, key2, &val, &flag));
  CHECK(flag == 0);
  OK(MPI_Type_delete_attr(t, key));
  CHECK(delete_calls == 2);
  OK(MPI_Type_get_attr(t, key, &val, &flag));
  CHECK(flag == 0);
  /* Predefined types take attributes too. */
  OK(MPI_Type_set_attr(MPI_DOUBLE, key2, base));
  OK(MPI_Type_get_attr(MPI_DOUBLE, key2, &val, &flag));
  CHECK(flag == 1 && val == base);
  OK(MPI_Type_delete_attr(MPI_DOUBLE, key2));
  /* Freeing the keyval keeps the attribute set; freeing the type deletes it. */
  int kept = key;
  OK(MPI_Type_free_keyval(&key));
  CHECK(key == MPI_KEYVAL_INVALID);
  OK(MPI_Type_get_attr(d, kept, &val, &flag));
  CHECK(flag == 1);
  OK(MPI_Type_free(&d));
  CHECK(delete_calls == 3);

  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  CHECK_RC(MPI_Type_set_attr(t, kept, base), MPI_ERR_KEYVAL); /* freed */
  CHECK_RC(MPI_Type_delete_attr(MPI_FLOAT, key2), MPI_ERR_KEYVAL); /* not set */
  CHECK_RC(MPI_Type_set_attr(t, 12345, base), MPI_ERR_KEYVAL); /* never made */
  int ckey;
  OK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &ckey, NULL));
  CHECK_RC(MPI_Type_set_attr(t, ckey, base), MPI_ERR_KEYVAL); /* a communicator keyval */
  CHECK_RC(MPI_Type_set_attr(MPI_DATATYPE_NULL, key2, base), MPI_ERR_TYPE);
  OK(MPI_Comm_free_keyval(&ckey));
  OK(MPI_Type_free_keyval(&key2));
  OK(MPI_Type_free(&t));
}

static void status_and_requests(void) {
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Status st;
  OK(MPI_Status_set_source(&st, 5));
  OK(MPI_Status_set_tag(&st, 6));
  OK(MPI_Status_set_error(&st, MPI_ERR_TAG));
  int s, t, e;
  OK(MPI_Status_get_source(&st, &s));
  OK(MPI_Status_get_tag(&st, &t));
  OK(MPI_Status_get_error(&st, &e));
  CHECK(s == 5 && t == 6 && e == MPI_ERR_TAG);

  int x = 41, y = 0, flag = -1, index = -2, out = -3, ind[2];
  MPI_Request r[2];
  MPI_Status sts[2];
  OK(MPI_Irecv(&y, 1, MPI_INT, rank, 9, MPI_COMM_WORLD, &r[0]));
  r[1] = MPI_REQUEST_NULL;
  /* Nothing sent yet: not all complete, none complete. */
  OK(MPI_Request_get_status_all(2, r, &flag, sts));
  CHECK(flag == 0);
  OK(MPI_Request_get_status_any(2, r, &index, &flag, &st));
  CHECK(flag == 0 && index == MPI_UNDEFINED);
  OK(MPI_Request_get_status_some(2, r, &out, ind, sts));
  CHECK(out == 0);
  OK(MPI_Send(&x, 1, MPI_INT, rank, 9, MPI_COMM_WORLD));
  do {
    OK(MPI_Request_get_status_any(2, r, &index, &flag, &st));
  } while (!flag);
  CHECK(index == 0 && st.MPI_SOURCE == rank && st.MPI_TAG == 9);
  OK(MPI_Request_get_status_some(2, r, &out, ind, sts));
  CHECK(out == 1 && ind[0] == 0 && sts[0].MPI_TAG == 9);
  OK(MPI_Request_get_status_all(2, r, &flag, sts));
  CHECK(flag == 1 && sts[0].MPI_SOURCE == rank);
  /* The queries did not complete the request: it is still there to wait for. */
  CHECK(r[0] != MPI_REQUEST_NULL);
  OK(MPI_Wait(&r[0], &st));
  CHECK(y == 41);
  /* Only null requests: any gives flag with MPI_UNDEFINED, some MPI_UNDEFINED. */
  OK(MPI_Request_get_status_any(2, r, &index, &flag, &st));
  CHECK(flag == 1 && index == MPI_UNDEFINED);
  OK(MPI_Request_get_status_some(2, r, &out, ind, sts));
  CHECK(out == MPI_UNDEFINED);
  OK(MPI_Request_get_status_all(0, NULL, &flag, MPI_STATUSES_IGNORE));
  CHECK(flag == 1);

  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  CHECK_RC(MPI_Request_get_status_all(-1, r, &flag, sts), MPI_ERR_COUNT);
  CHECK_RC(MPI_Request_get_status_any(1, NULL, &index, &flag, &st), MPI_ERR_ARG);
  MPI_Request bogus = (MPI_Request)(intptr_t)0x7777;
  CHECK_RC(MPI_Request_get_status_some(1, &bogus, &out, ind, sts), MPI_ERR_REQUEST);
  CHECK_RC(MPI_Status_get_source(NULL, &s), MPI_ERR_ARG);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  decoding();
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  external32();
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  attributes();
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  status_and_requests();
  MPI_Finalize();
  printf("decode ok\n");
  return 0;
}
