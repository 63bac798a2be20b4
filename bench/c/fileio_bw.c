/* Collective MPI-IO bandwidth: every rank writes its share of a file of TOTAL bytes with
 * MPI_File_write_all, then reads it back with MPI_File_read_all, through one of two views:
 *   contig   rank r's share is one contiguous range (disp r * TOTAL / P, filetype MPI_BYTE);
 *   strided  the ranks' blocks of BLOCK bytes interleave (filetype: BLOCK bytes resized to
 *            an extent of P * BLOCK, disp r * BLOCK), the pattern two-phase I/O is for.
 * Each repetition opens the file (MPI_MODE_CREATE | MPI_MODE_RDWR), sets the view, times
 * write_all, then read_all (each between barriers; the time of a call is the slowest
 * rank's), closes it and checks every byte read against what was written. No fsync: the
 * file lives in the page cache, so this measures the library's own path (exchange,
 * aggregation, system calls), not the disk. Output: one line per direction with the
 * median over repetitions of the bandwidth in MB/s (10^6 bytes).
 * Standard MPI only: every MPI library runs the same code.
 *
 * Usage: fileio_bw [-n REPS] [-b BLOCK] PATH TOTAL contig|strided */
#include "bench_util.h"

static const char *USAGE = "fileio_bw [-n REPS] [-b BLOCK] PATH TOTAL contig|strided";

static unsigned char byte_at(long file_byte) { return (unsigned char)(file_byte * 7 + file_byte / 4093 + 3); }

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int reps = 5;
  long block = 16384;
  const char *path = NULL, *pattern = NULL;
  long total = -1;
  for (int a = 1; a < argc; a++) {
    if (strcmp(argv[a], "-n") == 0 && a + 1 < argc) {
      reps = atoi(argv[++a]);
      if (reps <= 0 || reps > 1000) bench_usage_error(rank, "fileio_bw", "-n: 1 to 1000", USAGE);
    } else if (strcmp(argv[a], "-b") == 0 && a + 1 < argc) {
      block = bench_parse_bytes(argv[++a]);
      if (block <= 0) bench_usage_error(rank, "fileio_bw", "-b: a positive byte count", USAGE);
    } else if (!path) {
      path = argv[a];
    } else if (total < 0) {
      total = bench_parse_bytes(argv[a]);
      if (total <= 0) bench_usage_error(rank, "fileio_bw", "TOTAL: a positive byte count", USAGE);
    } else if (!pattern) {
      pattern = argv[a];
    } else {
      bench_usage_error(rank, "fileio_bw", "too many arguments", USAGE);
    }
  }
  if (!pattern || (strcmp(pattern, "contig") && strcmp(pattern, "strided")))
    bench_usage_error(rank, "fileio_bw", "PATH TOTAL and contig or strided expected", USAGE);
  int strided = strcmp(pattern, "strided") == 0;
  if (total % ((long)size * block) != 0)
    bench_usage_error(rank, "fileio_bw", "TOTAL must be a multiple of ranks * BLOCK", USAGE);
  long mine = total / size;
  unsigned char *out = malloc((size_t)mine), *in = malloc((size_t)mine);
  if (!out || !in) bench_usage_error(rank, "fileio_bw", "out of memory", USAGE);
  /* The file byte each of my stream bytes lands on. */
  for (long i = 0; i < mine; i++) {
    long fb = strided ? (i / block) * size * block + rank * block + i % block : rank * mine + i;
    out[i] = byte_at(fb);
  }
  MPI_Datatype ftype = MPI_BYTE;
  MPI_Offset disp = (MPI_Offset)rank * mine;
  if (strided) {
    MPI_Datatype blk;
    MPI_Type_contiguous((int)block, MPI_BYTE, &blk);
    MPI_Type_create_resized(blk, 0, (MPI_Aint)size * block, &ftype);
    MPI_Type_commit(&ftype);
    MPI_Type_free(&blk);
    disp = (MPI_Offset)rank * block;
  }
  double *wt = malloc(sizeof(double) * (size_t)reps), *rt = malloc(sizeof(double) * (size_t)reps);
  int bad = 0;
  if (rank == 0) MPI_File_delete(path, MPI_INFO_NULL);
  MPI_Barrier(MPI_COMM_WORLD);
  for (int r = 0; r < reps; r++) {
    MPI_File fh;
    int rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    if (rc != MPI_SUCCESS) {
      if (rank == 0) fprintf(stderr, "fileio_bw: MPI_File_open %s failed (%d)\n", path, rc);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_File_set_view(fh, disp, MPI_BYTE, ftype, "native", MPI_INFO_NULL);
    memset(in, 0, (size_t)mine);
    MPI_Status st;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    MPI_File_write_all(fh, out, (int)mine, MPI_BYTE, &st);
    double t = MPI_Wtime() - t0;
    MPI_Allreduce(&t, &wt[r], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_File_seek(fh, 0, MPI_SEEK_SET);
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    MPI_File_read_all(fh, in, (int)mine, MPI_BYTE, &st);
    t = MPI_Wtime() - t0;
    MPI_Allreduce(&t, &rt[r], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    int got;
    MPI_Get_count(&st, MPI_BYTE, &got);
    if (got != mine || memcmp(in, out, (size_t)mine) != 0) bad = 1;
    MPI_File_close(&fh);
  }
  int anybad;
  MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0) {
    MPI_File_delete(path, MPI_INFO_NULL);
    if (anybad) {
      fprintf(stderr, "fileio_bw: wrong bytes read back\n");
    } else {
      printf("write_all %s %ld %d %.1f\n", pattern, total, size, total / bench_median(wt, reps) / 1e6);
      printf("read_all %s %ld %d %.1f\n", pattern, total, size, total / bench_median(rt, reps) / 1e6);
    }
  }
  if (strided) MPI_Type_free(&ftype);
  free(out);
  free(in);
  free(wt);
  free(rt);
  MPI_Finalize();
  return anybad ? 1 : 0;
}
