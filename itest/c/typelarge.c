/* The MPI-4 large-count datatype constructors (MPI-4.1 §5.1.2-5.1.4, §5.1.7, large count)
 * and their decoding (§5.1.13):
 * - each `_c` constructor builds the same type as its int form for small counts: same size,
 *   extent and true extent, and the same bytes arrive when a ring exchange sends with one
 *   and receives with the other;
 * - a count above 2^31 gives a type of exactly that size (never sent), which MPI_Type_size
 *   reports as MPI_UNDEFINED;
 * - MPI_Type_get_envelope_c / get_contents_c return a `_c` type's arguments as large
 *   counts, and the int forms refuse such a type with MPI_ERR_TYPE;
 * - negative counts are MPI_ERR_COUNT, NULL arrays MPI_ERR_ARG, and a type whose size or
 *   bounds overflow 64 bits is an error (never a wrapped type). */
#include "check.h"
#include <stdint.h>
#include <string.h>

#define BUF 4096

static int rank, size;

/* Same size, extent and true extent; and the same received bytes in a ring exchange
 * whichever of the two types sends or receives. */
static void same(MPI_Datatype a, MPI_Datatype b, const char *what) {
  MPI_Count sa, sb, lba, lbb, ea, eb, tla, tlb, tea, teb;
  OK(MPI_Type_size_c(a, &sa));
  OK(MPI_Type_size_c(b, &sb));
  OK(MPI_Type_get_extent_c(a, &lba, &ea));
  OK(MPI_Type_get_extent_c(b, &lbb, &eb));
  OK(MPI_Type_get_true_extent_c(a, &tla, &tea));
  OK(MPI_Type_get_true_extent_c(b, &tlb, &teb));
  if (sa != sb || lba != lbb || ea != eb || tla != tlb || tea != teb) {
    fprintf(stderr, "%s: size %lld/%lld lb %lld/%lld extent %lld/%lld true %lld+%lld/%lld+%lld\n",
            what, (long long)sa, (long long)sb, (long long)lba, (long long)lbb, (long long)ea,
            (long long)eb, (long long)tla, (long long)tea, (long long)tlb, (long long)teb);
  }
  CHECK(sa == sb && lba == lbb && ea == eb && tla == tlb && tea == teb);
  CHECK(sa > 0 && tla >= 0 && tla + tea <= BUF);
  OK(MPI_Type_commit(&a));
  OK(MPI_Type_commit(&b));
  static unsigned char src[BUF], got[4][BUF];
  int to = (rank + 1) % size, from = (rank + size - 1) % size;
  for (int i = 0; i < BUF; i++) src[i] = (unsigned char)(i * 7 + rank * 13 + 1);
  MPI_Datatype pairs[4][2] = {{a, a}, {b, b}, {a, b}, {b, a}};
  for (int k = 0; k < 4; k++) {
    memset(got[k], 0xee, BUF);
    OK(MPI_Sendrecv(src, 1, pairs[k][0], to, k, got[k], 1, pairs[k][1], from, k,
                    MPI_COMM_WORLD, MPI_STATUS_IGNORE));
  }
  for (int k = 1; k < 4; k++) CHECK(memcmp(got[0], got[k], BUF) == 0);
  /* Something arrived: the sender's pattern differs from the fill somewhere. */
  int moved = 0;
  for (int i = 0; i < BUF; i++) moved += got[0][i] != 0xee;
  CHECK(moved > 0);
}

/* The envelope and contents of a `_c` type: ni ints, nl large counts `want`, one old type
 * `old` (or the struct's types), the combiner; the int forms refuse it. */
static void decoded(MPI_Datatype t, int combiner, int ni, const int *ints, int nl,
                    const MPI_Count *want, int nd, const MPI_Datatype *olds) {
  MPI_Count cni, cna, cnl, cnd;
  int comb;
  OK(MPI_Type_get_envelope_c(t, &cni, &cna, &cnl, &cnd, &comb));
  CHECK(comb == combiner);
  CHECK(cni == ni && cna == 0 && cnl == nl && cnd == nd);
  int gi[64];
  MPI_Aint ga[1];
  MPI_Count gl[64];
  MPI_Datatype gt[8];
  CHECK(ni <= 64 && nl <= 64 && nd <= 8);
  OK(MPI_Type_get_contents_c(t, ni, 0, nl, nd, gi, ga, gl, gt));
  for (int i = 0; i < ni; i++) CHECK(gi[i] == ints[i]);
  for (int i = 0; i < nl; i++) CHECK(gl[i] == want[i]);
  for (int i = 0; i < nd; i++) {
    CHECK(gt[i] == olds[i]); /* predefined old types come back as themselves */
  }
  /* Too small a large-count array is refused. */
  if (nl > 0) {
    int rc = MPI_Type_get_contents_c(t, ni, 0, nl - 1, nd, gi, ga, gl, gt);
    CHECK(rc != MPI_SUCCESS);
  }
  /* The int forms cannot describe large counts: MPI_ERR_TYPE. */
  int a, b, c, d, cls;
  int rc = MPI_Type_get_envelope(t, &a, &b, &c, &d);
  MPI_Error_class(rc, &cls);
  CHECK(cls == MPI_ERR_TYPE);
  rc = MPI_Type_get_contents(t, 64, 1, 8, gi, ga, gt);
  MPI_Error_class(rc, &cls);
  CHECK(cls == MPI_ERR_TYPE);
}

static void expect_class(int rc, int cls_want, const char *what) {
  int cls = -1;
  if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
  if (cls != cls_want) fprintf(stderr, "%s: class %d, want %d\n", what, cls, cls_want);
  CHECK(cls == cls_want);
}

static void small_counts(void) {
  MPI_Datatype a, b, olds1[1] = {MPI_INT};

  OK(MPI_Type_contiguous(5, MPI_INT, &a));
  OK(MPI_Type_contiguous_c(5, MPI_INT, &b));
  same(a, b, "contiguous");
  {
    MPI_Count w[] = {5};
    decoded(b, MPI_COMBINER_CONTIGUOUS, 0, NULL, 1, w, 1, olds1);
  }
  OK(MPI_Type_free(&a));
  OK(MPI_Type_free(&b));

  OK(MPI_Type_vector(3, 2, 5, MPI_INT, &a));
  OK(MPI_Type_vector_c(3, 2, 5, MPI_INT, &b));
  same(a, b, "vector");
  {
    MPI_Count w[] = {3, 2, 5};
    decoded(b, MPI_COMBINER_VECTOR, 0, NULL, 3, w, 1, olds1);
  }
  OK(MPI_Type_free(&a));
  OK(MPI_Type_free(&b));

  OK(MPI_Type_create_hvector(3, 2, 24, MPI_INT, &a));
  OK(MPI_Type_create_hvector_c(3, 2, 24, MPI_INT, &b));
  same(a, b, "hvector");
  {
    MPI_Count w[] = {3, 2, 24};
    decoded(b, MPI_COMBINER_HVECTOR, 0, NULL, 3, w, 1, olds1);
  }
  OK(MPI_Type_free(&a));
  OK(MPI_Type_free(&b));

  {
    int bl[] = {2, 1, 3}, d[] = {7, 0, 12};
    MPI_Count blc[] = {2, 1, 3}, dc[] = {7, 0, 12};
    OK(MPI_Type_indexed(3, bl, d, MPI_INT, &a));
    OK(MPI_Type_indexed_c(3, blc, dc, MPI_INT, &b));
    same(a, b, "indexed");
    MPI_Count w[] = {3, 2, 1, 3, 7, 0, 12};
    decoded(b, MPI_COMBINER_INDEXED, 0, NULL, 7, w, 1, olds1);
    OK(MPI_Type_free(&a));
    OK(MPI_Type_free(&b));
  }
  {
    int bl[] = {2, 1, 3};
    MPI_Aint d[] = {28, 0, 48};
    MPI_Count blc[] = {2, 1, 3}, dc[] = {28, 0, 48};
    OK(MPI_Type_create_hindexed(3, bl, d, MPI_INT, &a));
    OK(MPI_Type_create_hindexed_c(3, blc, dc, MPI_INT, &b));
    same(a, b, "hindexed");
    MPI_Count w[] = {3, 2, 1, 3, 28, 0, 48};
    decoded(b, MPI_COMBINER_HINDEXED, 0, NULL, 7, w, 1, olds1);
    OK(MPI_Type_free(&a));
    OK(MPI_Type_free(&b));
  }
  {
    int d[] = {9, 1, 4};
    MPI_Count dc[] = {9, 1, 4};
    OK(MPI_Type_create_indexed_block(3, 2, d, MPI_INT, &a));
    OK(MPI_Type_create_indexed_block_c(3, 2, dc, MPI_INT, &b));
    same(a, b, "indexed_block");
    MPI_Count w[] = {3, 2, 9, 1, 4};
    decoded(b, MPI_COMBINER_INDEXED_BLOCK, 0, NULL, 5, w, 1, olds1);
    OK(MPI_Type_free(&a));
    OK(MPI_Type_free(&b));
  }
  {
    MPI_Aint d[] = {36, 4, 16};
    MPI_Count dc[] = {36, 4, 16};
    OK(MPI_Type_create_hindexed_block(3, 2, d, MPI_INT, &a));
    OK(MPI_Type_create_hindexed_block_c(3, 2, dc, MPI_INT, &b));
    same(a, b, "hindexed_block");
    MPI_Count w[] = {3, 2, 36, 4, 16};
    decoded(b, MPI_COMBINER_HINDEXED_BLOCK, 0, NULL, 5, w, 1, olds1);
    OK(MPI_Type_free(&a));
    OK(MPI_Type_free(&b));
  }
  {
    int bl[] = {1, 3, 2};
    MPI_Aint d[] = {0, 8, 40};
    MPI_Count blc[] = {1, 3, 2}, dc[] = {0, 8, 40};
    MPI_Datatype ty[] = {MPI_CHAR, MPI_INT, MPI_DOUBLE};
    OK(MPI_Type_create_struct(3, bl, d, ty, &a));
    OK(MPI_Type_create_struct_c(3, blc, dc, ty, &b));
    same(a, b, "struct");
    MPI_Count w[] = {3, 1, 3, 2, 0, 8, 40};
    decoded(b, MPI_COMBINER_STRUCT, 0, NULL, 7, w, 3, ty);
    OK(MPI_Type_free(&a));
    OK(MPI_Type_free(&b));
  }
  {
    MPI_Datatype v;
    OK(MPI_Type_vector(2, 1, 3, MPI_INT, &v));
    OK(MPI_Type_create_resized(v, -4, 40, &a));
    OK(MPI_Type_create_resized_c(v, -4, 40, &b));
    OK(MPI_Type_free(&v));
    /* Shift by one extent so lb -4 stays inside the buffer: 2 items. */
    MPI_Datatype a2, b2;
    OK(MPI_Type_contiguous(2, a, &a2));
    OK(MPI_Type_contiguous_c(2, b, &b2));
    MPI_Datatype a3, b3;
    int one = 1;
    MPI_Aint four = 4;
    MPI_Count onec = 1, fourc = 4;
    OK(MPI_Type_create_hindexed(1, &one, &four, a2, &a3));
    OK(MPI_Type_create_hindexed_c(1, &onec, &fourc, b2, &b3));
    same(a3, b3, "resized");
    MPI_Count w[] = {-4, 40};
    MPI_Count ni, na, nl, nd;
    int comb;
    OK(MPI_Type_get_envelope_c(b, &ni, &na, &nl, &nd, &comb));
    CHECK(comb == MPI_COMBINER_RESIZED && ni == 0 && na == 0 && nl == 2 && nd == 1);
    MPI_Count gl[2];
    MPI_Datatype gt[1];
    OK(MPI_Type_get_contents_c(b, 0, 0, 2, 1, NULL, NULL, gl, gt));
    CHECK(gl[0] == w[0] && gl[1] == w[1]);
    /* A derived old type comes back as a new equivalent handle of the int constructor. */
    OK(MPI_Type_get_envelope_c(gt[0], &ni, &na, &nl, &nd, &comb));
    CHECK(comb == MPI_COMBINER_VECTOR && ni == 3 && nl == 0);
    OK(MPI_Type_free(&gt[0]));
    MPI_Datatype *fr[] = {&a, &b, &a2, &b2, &a3, &b3};
    for (int i = 0; i < 6; i++) OK(MPI_Type_free(fr[i]));
  }
  {
    int sz[] = {6, 5}, sub[] = {3, 2}, st[] = {1, 2};
    MPI_Count szc[] = {6, 5}, subc[] = {3, 2}, stc[] = {1, 2};
    OK(MPI_Type_create_subarray(2, sz, sub, st, MPI_ORDER_C, MPI_INT, &a));
    OK(MPI_Type_create_subarray_c(2, szc, subc, stc, MPI_ORDER_C, MPI_INT, &b));
    same(a, b, "subarray");
    int wi[] = {2, MPI_ORDER_C};
    MPI_Count w[] = {6, 5, 3, 2, 1, 2};
    decoded(b, MPI_COMBINER_SUBARRAY, 2, wi, 6, w, 1, olds1);
    OK(MPI_Type_free(&a));
    OK(MPI_Type_free(&b));
  }
  {
    int gs[] = {8, 6}, dist[] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC},
        darg[] = {MPI_DISTRIBUTE_DFLT_DARG, 2}, ps[] = {size, 1};
    MPI_Count gsc[] = {8, 6};
    OK(MPI_Type_create_darray(size, rank, 2, gs, dist, darg, ps, MPI_ORDER_C, MPI_INT, &a));
    OK(MPI_Type_create_darray_c(size, rank, 2, gsc, dist, darg, ps, MPI_ORDER_C, MPI_INT, &b));
    same(a, b, "darray");
    int wi[] = {size, rank, 2, MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC,
                MPI_DISTRIBUTE_DFLT_DARG, 2, size, 1, MPI_ORDER_C};
    MPI_Count w[] = {8, 6};
    decoded(b, MPI_COMBINER_DARRAY, 10, wi, 2, w, 1, olds1);
    OK(MPI_Type_free(&a));
    OK(MPI_Type_free(&b));
  }
  /* An int-built type seen through MPI_Type_get_envelope_c has no large counts. */
  OK(MPI_Type_vector(3, 2, 5, MPI_INT, &a));
  {
    MPI_Count ni, na, nl, nd;
    int comb;
    OK(MPI_Type_get_envelope_c(a, &ni, &na, &nl, &nd, &comb));
    CHECK(comb == MPI_COMBINER_VECTOR && ni == 3 && na == 0 && nl == 0 && nd == 1);
  }
  OK(MPI_Type_free(&a));
}

static void large_counts(void) {
  MPI_Datatype t;
  MPI_Count n = 3LL << 31, s, lb, ext;
  int si;
  OK(MPI_Type_contiguous_c(n, MPI_BYTE, &t));
  OK(MPI_Type_size_c(t, &s));
  CHECK(s == n);
  OK(MPI_Type_get_extent_c(t, &lb, &ext));
  CHECK(lb == 0 && ext == n);
  OK(MPI_Type_size(t, &si));
  CHECK(si == MPI_UNDEFINED);
  OK(MPI_Type_commit(&t));
  {
    MPI_Count w[] = {n};
    MPI_Datatype o[] = {MPI_BYTE};
    decoded(t, MPI_COMBINER_CONTIGUOUS, 0, NULL, 1, w, 1, o);
  }
  /* A vector of 2 blocks of 2^31 ints, 2^32 ints apart: 2^34 bytes of data. */
  MPI_Datatype v;
  OK(MPI_Type_vector_c(2, 1LL << 31, 1LL << 32, MPI_INT, &v));
  OK(MPI_Type_size_c(v, &s));
  CHECK(s == 1LL << 34);
  OK(MPI_Type_get_extent_c(v, &lb, &ext));
  CHECK(lb == 0 && ext == ((1LL << 32) + (1LL << 31)) * 4);
  /* Large counts nest: contiguous of the 3<<31-byte type, 4 times. */
  MPI_Datatype c4;
  OK(MPI_Type_contiguous_c(4, t, &c4));
  OK(MPI_Type_size_c(c4, &s));
  CHECK(s == 4 * n);
  /* An indexed block far out. */
  MPI_Datatype ib;
  MPI_Count d[] = {0, 1LL << 40};
  OK(MPI_Type_create_indexed_block_c(2, 1LL << 33, d, MPI_CHAR, &ib));
  OK(MPI_Type_size_c(ib, &s));
  CHECK(s == 1LL << 34);
  OK(MPI_Type_get_extent_c(ib, &lb, &ext));
  CHECK(lb == 0 && ext == (1LL << 40) + (1LL << 33));
  OK(MPI_Type_free(&t));
  OK(MPI_Type_free(&v));
  OK(MPI_Type_free(&c4));
  OK(MPI_Type_free(&ib));
}

static void bad_cases(void) {
  MPI_Datatype t = MPI_DATATYPE_NULL;
  MPI_Count one = 1, d0 = 0, neg = -1;
  MPI_Datatype ty = MPI_INT;
  expect_class(MPI_Type_contiguous_c(-1, MPI_INT, &t), MPI_ERR_COUNT, "contiguous_c -1");
  expect_class(MPI_Type_vector_c(1, -1, 1, MPI_INT, &t), MPI_ERR_COUNT, "vector_c bl -1");
  expect_class(MPI_Type_vector_c(-2, 1, 1, MPI_INT, &t), MPI_ERR_COUNT, "vector_c -2");
  expect_class(MPI_Type_create_hvector_c(-1, 1, 4, MPI_INT, &t), MPI_ERR_COUNT, "hvector_c");
  expect_class(MPI_Type_indexed_c(-1, &one, &d0, MPI_INT, &t), MPI_ERR_COUNT, "indexed_c -1");
  expect_class(MPI_Type_indexed_c(1, &neg, &d0, MPI_INT, &t), MPI_ERR_COUNT, "indexed_c bl");
  expect_class(MPI_Type_indexed_c(1, NULL, &d0, MPI_INT, &t), MPI_ERR_ARG, "indexed_c NULL");
  expect_class(MPI_Type_create_hindexed_c(1, &one, NULL, MPI_INT, &t), MPI_ERR_ARG,
               "hindexed_c NULL");
  expect_class(MPI_Type_create_indexed_block_c(1, -3, &d0, MPI_INT, &t), MPI_ERR_COUNT,
               "indexed_block_c bl");
  expect_class(MPI_Type_create_hindexed_block_c(-1, 1, &d0, MPI_INT, &t), MPI_ERR_COUNT,
               "hindexed_block_c -1");
  expect_class(MPI_Type_create_struct_c(1, &one, &d0, NULL, &t), MPI_ERR_ARG,
               "struct_c NULL types");
  expect_class(MPI_Type_create_struct_c(-1, &one, &d0, &ty, &t), MPI_ERR_COUNT,
               "struct_c -1");
  expect_class(MPI_Type_create_subarray_c(1, NULL, &one, &d0, MPI_ORDER_C, MPI_INT, &t),
               MPI_ERR_ARG, "subarray_c NULL");
  expect_class(MPI_Type_contiguous_c(1, MPI_INT, NULL), MPI_ERR_ARG, "contiguous_c out NULL");
  /* Sizes or bounds beyond 64 bits: an error, never a wrapped type. */
  int rc = MPI_Type_contiguous_c(1LL << 62, MPI_DOUBLE, &t);
  CHECK(rc != MPI_SUCCESS);
  rc = MPI_Type_create_hvector_c(4, 1, INT64_MAX / 2, MPI_BYTE, &t);
  CHECK(rc != MPI_SUCCESS);
  rc = MPI_Type_create_resized_c(MPI_INT, INT64_MAX - 2, 10, &t);
  CHECK(rc != MPI_SUCCESS);
  MPI_Datatype big;
  OK(MPI_Type_contiguous_c(1LL << 40, MPI_BYTE, &big));
  rc = MPI_Type_vector_c(1LL << 30, 1LL << 30, 1LL << 30, big, &t);
  CHECK(rc != MPI_SUCCESS);
  OK(MPI_Type_free(&big));
  CHECK(t == MPI_DATATYPE_NULL);
}

int main(int argc, char **argv) {
  OK(MPI_Init(&argc, &argv));
  OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  /* The int decoders must return MPI_ERR_TYPE for `_c` types, not abort. */
  OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  small_counts();
  large_counts();
  bad_cases();
  OK(MPI_Barrier(MPI_COMM_WORLD));
  OK(MPI_Finalize());
  if (rank == 0) printf("typelarge: ok\n");
  return 0;
}
