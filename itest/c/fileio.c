/* MPI-IO conformance (MPI-4.1 chapter 14) at any number of ranks: open modes and their
 * errors, sizes, info, views with derived datatypes (interleaved, noncontiguous in memory
 * and in the file, subarrays), explicit offsets, individual and shared file pointers,
 * blocking, nonblocking and split collective accesses, reads past the end of the file,
 * atomic mode, file error handlers, "external32" and a registered data representation.
 * Every access is checked byte for byte against what the ranks wrote. Files go to
 * $TMPDIR (else /tmp) under a name rank 0 makes. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

static int rank, size;
static char dir[400];
static long jobid;

static void name_of(char *out, const char *what) {
  snprintf(out, 600, "%s/weft-fileio-%ld-%s", dir, jobid, what);
}

/* The byte rank r writes at byte b of a test pattern. */
static unsigned char pat(int r, long b) { return (unsigned char)(r * 37 + b * 11 + 5); }

static int errh_calls;
static int errh_last;
static void on_file_error(MPI_File *fh, int *code, ...) {
  (void)fh;
  errh_calls++;
  errh_last = *code;
}

static int class_of(int rc) {
  int c;
  MPI_Error_class(rc, &c);
  return c;
}

/* Open modes, their errors, sizes, group, amode, info, delete. */
static void test_open_and_errors(void) {
  char f[600], g[600];
  name_of(f, "modes");
  MPI_File fh;
  if (rank == 0) MPI_File_delete(f, MPI_INFO_NULL);
  MPI_Barrier(MPI_COMM_WORLD);
  /* The default file error handler returns. */
  int rc = MPI_File_open(MPI_COMM_WORLD, f, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
  CHECK(class_of(rc) == MPI_ERR_NO_SUCH_FILE);
  rc = MPI_File_open(MPI_COMM_WORLD, f, MPI_MODE_RDONLY | MPI_MODE_CREATE, MPI_INFO_NULL, &fh);
  CHECK(class_of(rc) == MPI_ERR_AMODE);
  rc = MPI_File_open(MPI_COMM_WORLD, f, MPI_MODE_RDWR | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
  CHECK(class_of(rc) == MPI_ERR_AMODE);
  MPI_Info info;
  OK(MPI_Info_create(&info));
  OK(MPI_Info_set(info, "access_style", "write_once"));
  OK(MPI_Info_set(info, "cb_buffer_size", "65536"));
  OK(MPI_File_open(MPI_COMM_WORLD, f, MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_EXCL, info,
                   &fh));
  OK(MPI_Info_free(&info));
  int amode;
  OK(MPI_File_get_amode(fh, &amode));
  CHECK(amode == (MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_EXCL));
  MPI_Group fg, wg;
  int cmp;
  OK(MPI_File_get_group(fh, &fg));
  OK(MPI_Comm_group(MPI_COMM_WORLD, &wg));
  OK(MPI_Group_compare(fg, wg, &cmp));
  CHECK(cmp == MPI_IDENT);
  MPI_Group_free(&fg);
  MPI_Group_free(&wg);
  MPI_Info used;
  char v[MPI_MAX_INFO_VAL + 1];
  int flag;
  OK(MPI_File_get_info(fh, &used));
  OK(MPI_Info_get(used, "access_style", MPI_MAX_INFO_VAL, v, &flag));
  CHECK(flag && strcmp(v, "write_once") == 0);
  OK(MPI_Info_get(used, "cb_buffer_size", MPI_MAX_INFO_VAL, v, &flag));
  CHECK(flag && strcmp(v, "65536") == 0);
  MPI_Info_free(&used);
  OK(MPI_Info_create(&info));
  OK(MPI_Info_set(info, "romio_cb_write", "enable"));
  OK(MPI_File_set_info(fh, info));
  MPI_Info_free(&info);
  OK(MPI_File_get_info(fh, &used));
  OK(MPI_Info_get(used, "romio_cb_write", MPI_MAX_INFO_VAL, v, &flag));
  CHECK(flag && strcmp(v, "enable") == 0);
  MPI_Info_free(&used);
  /* Sizes: set_size, preallocate (never shrinks), get_size. */
  MPI_Offset sz;
  OK(MPI_File_set_size(fh, 1000));
  OK(MPI_File_get_size(fh, &sz));
  CHECK(sz == 1000);
  OK(MPI_File_preallocate(fh, 4096));
  OK(MPI_File_get_size(fh, &sz));
  CHECK(sz == 4096);
  OK(MPI_File_preallocate(fh, 10));
  OK(MPI_File_get_size(fh, &sz));
  CHECK(sz == 4096);
  OK(MPI_File_set_size(fh, 100));
  OK(MPI_File_get_size(fh, &sz));
  CHECK(sz == 100);
  OK(MPI_File_sync(fh));
  /* Creating it again exclusively fails; the error reaches MPI_FILE_NULL's handler. */
  MPI_Errhandler eh, got;
  OK(MPI_File_create_errhandler(on_file_error, &eh));
  OK(MPI_File_set_errhandler(MPI_FILE_NULL, eh));
  OK(MPI_File_get_errhandler(MPI_FILE_NULL, &got));
  CHECK(got == eh);
  MPI_File fh2;
  errh_calls = 0;
  rc = MPI_File_open(MPI_COMM_WORLD, f, MPI_MODE_WRONLY | MPI_MODE_CREATE | MPI_MODE_EXCL,
                     MPI_INFO_NULL, &fh2);
  CHECK(class_of(rc) == MPI_ERR_FILE_EXISTS);
  CHECK(errh_calls == 1 && class_of(errh_last) == MPI_ERR_FILE_EXISTS);
  OK(MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN));
  /* A file opened read-only refuses writes; write-only refuses reads. */
  int buf[4] = {1, 2, 3, 4};
  MPI_Status st;
  OK(MPI_File_open(MPI_COMM_WORLD, f, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh2));
  rc = MPI_File_write_at(fh2, 0, buf, 4, MPI_INT, &st);
  CHECK(class_of(rc) == MPI_ERR_READ_ONLY);
  OK(MPI_File_close(&fh2));
  CHECK(fh2 == MPI_FILE_NULL);
  OK(MPI_File_open(MPI_COMM_WORLD, f, MPI_MODE_WRONLY, MPI_INFO_NULL, &fh2));
  rc = MPI_File_read_at(fh2, 0, buf, 4, MPI_INT, &st);
  CHECK(class_of(rc) == MPI_ERR_ACCESS);
  /* A file's own handler: set, got back, called. */
  OK(MPI_File_set_errhandler(fh2, eh));
  OK(MPI_File_get_errhandler(fh2, &got));
  CHECK(got == eh);
  errh_calls = 0;
  rc = MPI_File_read_at(fh2, 0, buf, 4, MPI_INT, &st);
  CHECK(errh_calls == 1 && class_of(rc) == MPI_ERR_ACCESS);
  OK(MPI_File_call_errhandler(fh2, MPI_ERR_IO));
  CHECK(errh_calls == 2 && errh_last == MPI_ERR_IO);
  OK(MPI_File_close(&fh2));
  OK(MPI_Errhandler_free(&eh));
  /* No valid file: MPI_ERR_FILE. */
  rc = MPI_File_get_size(MPI_FILE_NULL, &sz);
  CHECK(class_of(rc) == MPI_ERR_FILE);
  OK(MPI_File_close(&fh));
  /* Ranks must agree on the mode. */
  rc = MPI_File_open(MPI_COMM_WORLD, f, rank == 0 ? MPI_MODE_RDONLY : MPI_MODE_RDWR,
                     MPI_INFO_NULL, &fh);
  if (size > 1)
    CHECK(class_of(rc) == MPI_ERR_NOT_SAME);
  else
    OK(MPI_File_close(&fh));
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) OK(MPI_File_delete(f, MPI_INFO_NULL));
  MPI_Barrier(MPI_COMM_WORLD);
  rc = MPI_File_delete(f, MPI_INFO_NULL);
  CHECK(class_of(rc) == MPI_ERR_NO_SUCH_FILE);
  /* Delete on close, and the ufs: prefix. */
  name_of(g, "doc");
  char pg[640];
  snprintf(pg, sizeof pg, "ufs:%s", g);
  OK(MPI_File_open(MPI_COMM_WORLD, pg, MPI_MODE_WRONLY | MPI_MODE_CREATE | MPI_MODE_DELETE_ON_CLOSE,
                   MPI_INFO_NULL, &fh));
  OK(MPI_File_close(&fh));
  CHECK(access(g, F_OK) != 0);
}

/* Interleaved blocks through a strided view: collective and independent, blocking,
 * nonblocking and split; every rank checks the whole file. */
static void test_views(long block, int blocks, const char *tag) {
  char f[600];
  char what[64];
  snprintf(what, sizeof what, "view-%s", tag);
  name_of(f, what);
  MPI_File fh;
  OK(MPI_File_open(MPI_COMM_WORLD, f, MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_DELETE_ON_CLOSE,
                   MPI_INFO_NULL, &fh));
  MPI_Datatype one, tile;
  int bl = (int)block;
  MPI_Aint d = (MPI_Aint)rank * block;
  OK(MPI_Type_create_hindexed(1, &bl, &d, MPI_BYTE, &one));
  OK(MPI_Type_create_resized(one, 0, block * size, &tile));
  OK(MPI_Type_commit(&tile));
  long mine = block * blocks;
  unsigned char *out = malloc(mine), *in = malloc(mine), *all = malloc(mine * size);
  for (long b = 0; b < mine; b++) out[b] = pat(rank, b);
  OK(MPI_File_set_view(fh, 16, MPI_BYTE, tile, "native", MPI_INFO_NULL));
  MPI_Offset disp;
  MPI_Datatype et, ft;
  char rep[MPI_MAX_DATAREP_STRING];
  OK(MPI_File_get_view(fh, &disp, &et, &ft, rep));
  CHECK(disp == 16 && et == MPI_BYTE && strcmp(rep, "native") == 0);
  MPI_Aint lb, ext;
  OK(MPI_Type_get_extent(ft, &lb, &ext));
  CHECK(lb == 0 && ext == block * size);
  OK(MPI_Type_free(&ft));
  MPI_Status st;
  int count;
  OK(MPI_File_write_all(fh, out, (int)mine, MPI_BYTE, &st));
  OK(MPI_Get_count(&st, MPI_BYTE, &count));
  CHECK(count == mine);
  MPI_Offset pos, byte;
  OK(MPI_File_get_position(fh, &pos));
  CHECK(pos == mine);
  OK(MPI_File_get_byte_offset(fh, 1, &byte));
  CHECK(byte == 16 + rank * block + (block > 1 ? 1 : block * size));
  /* The file holds every rank's blocks in turn. */
  OK(MPI_File_sync(fh));
  OK(MPI_File_read_at_all(fh, 0, in, (int)mine, MPI_BYTE, &st));
  CHECK(memcmp(in, out, mine) == 0);
  OK(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
  memset(all, 0, mine * size);
  OK(MPI_File_read_at(fh, 16, all, (int)(mine * size), MPI_BYTE, &st));
  for (long k = 0; k < blocks; k++)
    for (int r = 0; r < size; r++)
      for (long b = 0; b < block; b++)
        CHECK(all[(k * size + r) * block + b] == pat(r, k * block + b));
  /* Nonblocking collective write of other data, then nonblocking reads. */
  OK(MPI_File_set_view(fh, 16, MPI_BYTE, tile, "native", MPI_INFO_NULL));
  for (long b = 0; b < mine; b++) out[b] = pat(rank + 7, b);
  MPI_Request rq[2];
  OK(MPI_File_iwrite_at_all(fh, 0, out, (int)mine, MPI_BYTE, &rq[0]));
  OK(MPI_Waitall(1, rq, MPI_STATUSES_IGNORE));
  memset(in, 0, mine);
  long half = (mine / 2 / block) * block;
  OK(MPI_File_iread_at(fh, 0, in, (int)half, MPI_BYTE, &rq[0]));
  OK(MPI_File_iread_at_all(fh, half, in + half, (int)(mine - half), MPI_BYTE, &rq[1]));
  MPI_Status sts[2];
  OK(MPI_Waitall(2, rq, sts));
  OK(MPI_Get_count(&sts[1], MPI_BYTE, &count));
  CHECK(count == mine - half);
  CHECK(memcmp(in, out, mine) == 0);
  /* Split collectives at the individual pointer. */
  OK(MPI_File_seek(fh, 0, MPI_SEEK_SET));
  for (long b = 0; b < mine; b++) out[b] = pat(rank + 3, b);
  OK(MPI_File_write_all_begin(fh, out, (int)mine, MPI_BYTE));
  int rc = MPI_File_write_all_begin(fh, out, (int)mine, MPI_BYTE);
  CHECK(rc != MPI_SUCCESS);
  OK(MPI_File_write_all_end(fh, out, &st));
  OK(MPI_File_seek(fh, 0, MPI_SEEK_SET));
  memset(in, 0, mine);
  OK(MPI_File_read_all_begin(fh, in, (int)mine, MPI_BYTE));
  OK(MPI_File_read_all_end(fh, in, &st));
  OK(MPI_Get_count(&st, MPI_BYTE, &count));
  CHECK(count == mine && memcmp(in, out, mine) == 0);
  OK(MPI_File_read_at_all_begin(fh, 0, in, (int)mine, MPI_BYTE));
  OK(MPI_File_read_at_all_end(fh, in, &st));
  CHECK(memcmp(in, out, mine) == 0);
  /* Noncontiguous in memory too: every other int of a buffer twice the size. */
  if (block % 4 == 0) {
    int n = (int)(mine / 4);
    int *src = malloc(2 * mine), *dst = malloc(2 * mine);
    for (int i = 0; i < 2 * n; i++) src[i] = (i % 2) ? -1 : rank * 100000 + i;
    MPI_Datatype gaps;
    OK(MPI_Type_vector(n, 1, 2, MPI_INT, &gaps));
    OK(MPI_Type_commit(&gaps));
    OK(MPI_File_write_at_all(fh, 0, src, 1, gaps, &st));
    OK(MPI_Get_count(&st, gaps, &count));
    CHECK(count == 1);
    for (int i = 0; i < 2 * n; i++) dst[i] = -7;
    OK(MPI_File_read_at_all(fh, 0, dst, 1, gaps, &st));
    for (int i = 0; i < 2 * n; i++) CHECK(dst[i] == ((i % 2) ? -7 : src[i]));
    for (int i = 0; i < 2 * n; i++) dst[i] = -7;
    OK(MPI_File_iread_at(fh, 0, dst, 1, gaps, &rq[0]));
    OK(MPI_Wait(&rq[0], &st));
    for (int i = 0; i < 2 * n; i++) CHECK(dst[i] == ((i % 2) ? -7 : src[i]));
    MPI_Type_free(&gaps);
    free(src);
    free(dst);
  }
  OK(MPI_Type_free(&one));
  OK(MPI_Type_free(&tile));
  OK(MPI_File_close(&fh));
  free(out);
  free(in);
  free(all);
}

/* Individual and shared file pointers, ordered accesses, reads past the end. */
static void test_pointers(void) {
  char f[600];
  name_of(f, "pointers");
  MPI_File fh;
  OK(MPI_File_open(MPI_COMM_WORLD, f, MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_DELETE_ON_CLOSE,
                   MPI_INFO_NULL, &fh));
  OK(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
  /* Ordered: rank r writes r + 1 ints valued r. */
  int mine[64], got[64 * 8];
  for (int i = 0; i <= rank; i++) mine[i] = rank;
  MPI_Status st;
  int count;
  OK(MPI_File_write_ordered(fh, mine, rank + 1, MPI_INT, &st));
  MPI_Offset sp;
  OK(MPI_File_get_position_shared(fh, &sp));
  CHECK(sp == size * (size + 1) / 2);
  OK(MPI_File_seek_shared(fh, 0, MPI_SEEK_SET));
  OK(MPI_File_read_ordered(fh, got, rank + 1, MPI_INT, &st));
  OK(MPI_Get_count(&st, MPI_INT, &count));
  CHECK(count == rank + 1);
  for (int i = 0; i <= rank; i++) CHECK(got[i] == rank);
  int n = size * (size + 1) / 2;
  OK(MPI_File_read_at(fh, 0, got, n, MPI_INT, &st));
  for (int r = 0, k = 0; r < size; r++)
    for (int i = 0; i <= r; i++) CHECK(got[k++] == r);
  /* Shared pointer: every rank appends one record; the records are all there, once. */
  OK(MPI_File_seek_shared(fh, 0, MPI_SEEK_END));
  int rec[2] = {rank, -rank};
  OK(MPI_File_write_shared(fh, rec, 2, MPI_INT, &st));
  MPI_Barrier(MPI_COMM_WORLD);
  OK(MPI_File_get_position_shared(fh, &sp));
  CHECK(sp == n + 2 * size);
  OK(MPI_File_read_at(fh, n, got, 2 * size, MPI_INT, &st));
  int seen = 0;
  for (int k = 0; k < size; k++) {
    CHECK(got[2 * k] == -got[2 * k + 1]);
    seen |= 1 << got[2 * k];
  }
  CHECK(seen == (1 << size) - 1);
  OK(MPI_File_seek_shared(fh, n, MPI_SEEK_SET));
  MPI_Request rq;
  int back[2];
  OK(MPI_File_iread_shared(fh, back, 2, MPI_INT, &rq));
  OK(MPI_Wait(&rq, &st));
  CHECK(back[0] == -back[1] && back[0] >= 0 && back[0] < size);
  MPI_Barrier(MPI_COMM_WORLD);
  /* Split ordered accesses. */
  OK(MPI_File_seek_shared(fh, 0, MPI_SEEK_SET));
  OK(MPI_File_write_ordered_begin(fh, mine, rank + 1, MPI_INT));
  OK(MPI_File_write_ordered_end(fh, mine, &st));
  OK(MPI_File_seek_shared(fh, 0, MPI_SEEK_SET));
  OK(MPI_File_read_ordered_begin(fh, got, rank + 1, MPI_INT));
  OK(MPI_File_read_ordered_end(fh, got, &st));
  for (int i = 0; i <= rank; i++) CHECK(got[i] == rank);
  /* Individual pointers: each rank its own region; seek from the current and the end. */
  MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL);
  MPI_Offset end;
  OK(MPI_File_get_size(fh, &end));
  OK(MPI_File_seek(fh, 100 + 10 * rank, MPI_SEEK_SET));
  OK(MPI_File_seek(fh, 2, MPI_SEEK_CUR));
  MPI_Offset pos;
  OK(MPI_File_get_position(fh, &pos));
  CHECK(pos == 102 + 10 * rank);
  int v[3] = {rank, rank + 1, rank + 2};
  OK(MPI_File_write(fh, v, 3, MPI_INT, &st));
  OK(MPI_File_get_position(fh, &pos));
  CHECK(pos == 105 + 10 * rank);
  OK(MPI_File_iwrite(fh, v, 3, MPI_INT, &rq));
  OK(MPI_Wait(&rq, &st));
  OK(MPI_File_seek(fh, -6, MPI_SEEK_CUR));
  int w[6];
  OK(MPI_File_read(fh, w, 6, MPI_INT, &st));
  for (int i = 0; i < 6; i++) CHECK(w[i] == rank + i % 3);
  int rc = MPI_File_seek(fh, -1000, MPI_SEEK_CUR);
  CHECK(rc != MPI_SUCCESS);
  MPI_Barrier(MPI_COMM_WORLD);
  OK(MPI_File_get_size(fh, &end));
  CHECK(end == 4 * (105 + 10 * (size - 1) + 3));
  OK(MPI_File_seek(fh, -2, MPI_SEEK_END));
  OK(MPI_File_get_position(fh, &pos));
  CHECK(pos == end / 4 - 2);
  /* Past the end: a short count, at the individual pointer and collectively. */
  OK(MPI_File_read(fh, w, 6, MPI_INT, &st));
  OK(MPI_Get_count(&st, MPI_INT, &count));
  CHECK(count == 2);
  OK(MPI_File_read_at_all(fh, end / 4 - 1, w, 6, MPI_INT, &st));
  OK(MPI_Get_count(&st, MPI_INT, &count));
  CHECK(count == 1);
  OK(MPI_File_read_at(fh, end / 4 + 5, w, 6, MPI_INT, &st));
  OK(MPI_Get_count(&st, MPI_INT, &count));
  CHECK(count == 0);
  OK(MPI_File_close(&fh));
}

/* A 2-D array of doubles, 6 x (5 * size) elements, by column blocks (a subarray view):
 * written collectively, read back by rank 0 whole, and by a darray-free transposed read. */
static void test_subarray(void) {
  char f[600];
  name_of(f, "subarray");
  MPI_File fh;
  OK(MPI_File_open(MPI_COMM_WORLD, f, MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_DELETE_ON_CLOSE,
                   MPI_INFO_NULL, &fh));
  int gs[2] = {6, 5 * size}, ss[2] = {6, 5}, st0[2] = {0, 5 * rank};
  MPI_Datatype sub;
  OK(MPI_Type_create_subarray(2, gs, ss, st0, MPI_ORDER_C, MPI_DOUBLE, &sub));
  OK(MPI_Type_commit(&sub));
  OK(MPI_File_set_view(fh, 0, MPI_DOUBLE, sub, "native", MPI_INFO_NULL));
  double a[30], b[30];
  for (int i = 0; i < 30; i++) a[i] = (i / 5) * 1000 + 5 * rank + i % 5;
  MPI_Status st;
  OK(MPI_File_write_all(fh, a, 30, MPI_DOUBLE, &st));
  OK(MPI_File_seek(fh, 0, MPI_SEEK_SET));
  OK(MPI_File_read_all(fh, b, 30, MPI_DOUBLE, &st));
  CHECK(memcmp(a, b, sizeof a) == 0);
  OK(MPI_File_set_view(fh, 0, MPI_DOUBLE, MPI_DOUBLE, "native", MPI_INFO_NULL));
  if (rank == 0) {
    double *all = malloc(sizeof(double) * 30 * size);
    OK(MPI_File_read_at(fh, 0, all, 30 * size, MPI_DOUBLE, &st));
    for (int r = 0; r < 6; r++)
      for (int c = 0; c < 5 * size; c++) CHECK(all[r * 5 * size + c] == r * 1000 + c);
    free(all);
  }
  OK(MPI_Type_free(&sub));
  OK(MPI_File_close(&fh));
}

/* Atomic mode: every rank writes its whole record over the same bytes many times; each
 * read sees one rank's record, never a mix. */
static void test_atomic(void) {
  char f[600];
  name_of(f, "atomic");
  MPI_File fh;
  OK(MPI_File_open(MPI_COMM_WORLD, f, MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_DELETE_ON_CLOSE,
                   MPI_INFO_NULL, &fh));
  int flag;
  OK(MPI_File_get_atomicity(fh, &flag));
  CHECK(flag == 0);
  OK(MPI_File_set_atomicity(fh, 1));
  OK(MPI_File_get_atomicity(fh, &flag));
  CHECK(flag == 1);
  /* A strided record (data sieving under a lock) of 4 KiB. */
  MPI_Datatype vec;
  OK(MPI_Type_vector(512, 1, 2, MPI_INT, &vec));
  OK(MPI_Type_commit(&vec));
  OK(MPI_File_set_view(fh, 0, MPI_INT, vec, "native", MPI_INFO_NULL));
  int rec[512], got[512];
  MPI_Status st;
  for (int it = 0; it < 20; it++) {
    for (int i = 0; i < 512; i++) rec[i] = rank * 1000 + it;
    OK(MPI_File_write_at(fh, 0, rec, 512, MPI_INT, &st));
    OK(MPI_File_read_at(fh, 0, got, 512, MPI_INT, &st));
    for (int i = 1; i < 512; i++) CHECK(got[i] == got[0]);
  }
  OK(MPI_Type_free(&vec));
  OK(MPI_File_set_atomicity(fh, 0));
  OK(MPI_File_close(&fh));
}

/* A representation that stores each int in 8 bytes, big-endian. */
static int wide_extent(MPI_Datatype dt, MPI_Aint *extent, void *extra) {
  (void)extra;
  if (dt != MPI_INT) return MPI_ERR_TYPE;
  *extent = 8;
  return MPI_SUCCESS;
}
static int wide_write(void *user, MPI_Datatype dt, int count, void *file, MPI_Offset pos,
                      void *extra) {
  (void)extra;
  if (dt != MPI_INT) return MPI_ERR_TYPE;
  int *u = (int *)user + pos;
  unsigned char *o = file;
  for (int i = 0; i < count; i++) {
    int64_t v = u[i];
    for (int k = 0; k < 8; k++) o[8 * i + k] = (unsigned char)((uint64_t)v >> (56 - 8 * k));
  }
  return MPI_SUCCESS;
}
static int wide_read(void *user, MPI_Datatype dt, int count, void *file, MPI_Offset pos,
                     void *extra) {
  (void)extra;
  if (dt != MPI_INT) return MPI_ERR_TYPE;
  int *u = (int *)user + pos;
  unsigned char *in = file;
  for (int i = 0; i < count; i++) {
    uint64_t v = 0;
    for (int k = 0; k < 8; k++) v = (v << 8) | in[8 * i + k];
    u[i] = (int)(int64_t)v;
  }
  return MPI_SUCCESS;
}

static void test_datareps(void) {
  char f[600];
  name_of(f, "datarep");
  MPI_File fh;
  OK(MPI_File_open(MPI_COMM_WORLD, f, MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_DELETE_ON_CLOSE,
                   MPI_INFO_NULL, &fh));
  int rc = MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "no-such-rep", MPI_INFO_NULL);
  CHECK(class_of(rc) == MPI_ERR_UNSUPPORTED_DATAREP);
  /* external32: big-endian ints; MPI_LONG is 4 bytes there. */
  OK(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "external32", MPI_INFO_NULL));
  MPI_Aint ext;
  OK(MPI_File_get_type_extent(fh, MPI_LONG, &ext));
  CHECK(ext == 4);
  OK(MPI_File_get_type_extent(fh, MPI_DOUBLE, &ext));
  CHECK(ext == 8);
  int v[4] = {1, -2, 0x01020304, rank};
  MPI_Status st;
  OK(MPI_File_write_at(fh, 4 * rank, v, 4, MPI_INT, &st));
  int back[4];
  OK(MPI_File_read_at(fh, 4 * rank, back, 4, MPI_INT, &st));
  CHECK(memcmp(v, back, sizeof v) == 0);
  MPI_Barrier(MPI_COMM_WORLD);
  OK(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
  unsigned char raw[16];
  OK(MPI_File_read_at(fh, 16 * rank, raw, 16, MPI_BYTE, &st));
  unsigned char want[16] = {0, 0, 0, 1, 255, 255, 255, 254, 1, 2, 3, 4, 0, 0, 0,
                            (unsigned char)rank};
  CHECK(memcmp(raw, want, 16) == 0);
  /* internal: weft's is the memory's layout; the view reports its name. */
  OK(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "internal", MPI_INFO_NULL));
  {
    MPI_Offset d;
    MPI_Datatype et, ft;
    char rep[MPI_MAX_DATAREP_STRING];
    OK(MPI_File_get_view(fh, &d, &et, &ft, rep));
    CHECK(d == 0 && et == MPI_INT && ft == MPI_INT && strcmp(rep, "internal") == 0);
    OK(MPI_File_get_type_extent(fh, MPI_LONG, &ext));
    CHECK(ext == (MPI_Aint)sizeof(long));
    int in4[4] = {7 * rank, -1, 3, 9};
    OK(MPI_File_write_at_all(fh, 4 * size + 4 * rank, in4, 4, MPI_INT, &st));
    memset(back, 0, sizeof back);
    OK(MPI_File_read_at_all(fh, 4 * size + 4 * rank, back, 4, MPI_INT, &st));
    CHECK(memcmp(in4, back, sizeof in4) == 0);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  /* A registered representation. */
  rc = MPI_Register_datarep("external32", wide_read, wide_write, wide_extent, NULL);
  CHECK(class_of(rc) == MPI_ERR_DUP_DATAREP);
  OK(MPI_Register_datarep("weft-wide", wide_read, wide_write, wide_extent, NULL));
  rc = MPI_Register_datarep("weft-wide", wide_read, wide_write, wide_extent, NULL);
  CHECK(class_of(rc) == MPI_ERR_DUP_DATAREP);
  OK(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "weft-wide", MPI_INFO_NULL));
  OK(MPI_File_get_type_extent(fh, MPI_INT, &ext));
  CHECK(ext == 8);
  OK(MPI_File_write_at_all(fh, 4 * rank, v, 4, MPI_INT, &st));
  memset(back, 0, sizeof back);
  OK(MPI_File_read_at_all(fh, 4 * rank, back, 4, MPI_INT, &st));
  CHECK(memcmp(v, back, sizeof v) == 0);
  OK(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
  unsigned char wide[32];
  OK(MPI_File_read_at(fh, 32 * rank, wide, 32, MPI_BYTE, &st));
  for (int k = 0; k < 7; k++) CHECK(wide[8 + k] == 255);
  CHECK(wide[15] == 254 && wide[31] == rank);
  OK(MPI_File_close(&fh));
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char *t = getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s", t && *t ? t : "/tmp");
  /* Unique names: the pid of rank 0 in every file name. */
  jobid = rank == 0 ? (long)getpid() : 0;
  MPI_Bcast(&jobid, 1, MPI_LONG, 0, MPI_COMM_WORLD);

  test_open_and_errors();
  test_views(1, 1, "tiny");
  test_views(40, 3, "small");
  test_views(4096, 8, "pages");
  test_views(1 << 20, 5, "big");
  test_pointers();
  test_subarray();
  test_atomic();
  test_datareps();
  MPI_Finalize();
  if (rank == 0) printf("fileio: ok on %d ranks\n", size);
  return 0;
}
