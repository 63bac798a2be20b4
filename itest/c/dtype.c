/* Derived datatypes: constructors and their extents, point-to-point (blocking,
 * nonblocking, persistent) and collectives with types that have holes, counts and
 * elements, pack/unpack. Runs at any size >= 1. */
#include "check.h"
#include <string.h>

int main(int argc, char **argv) {
  OK(MPI_Init(&argc, &argv));
  int rank, size;
  OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  int right = (rank + 1) % size, left = (rank + size - 1) % size;
  MPI_Aint lb, ext;
  int sz;

  /* A column of a 4x5 row-major matrix: 4 blocks of 1 double, stride 5. */
  MPI_Datatype col;
  OK(MPI_Type_vector(4, 1, 5, MPI_DOUBLE, &col));
  OK(MPI_Type_commit(&col));
  OK(MPI_Type_size(col, &sz));
  CHECK(sz == 32);
  OK(MPI_Type_get_extent(col, &lb, &ext));
  CHECK(lb == 0 && ext == (3 * 5 + 1) * 8);
  MPI_Count lbc, extc;
  OK(MPI_Type_get_extent_c(col, &lbc, &extc));
  CHECK(lbc == 0 && extc == ext);
  OK(MPI_Type_get_true_extent_c(col, &lbc, &extc));
  CHECK(lbc == 0 && extc == ext);
  double m[4][5], got[4][5];
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 5; j++) m[i][j] = rank * 100 + i * 10 + j, got[i][j] = -1;
  /* Send column 1, receive into column 3 of the neighbour. */
  MPI_Status st;
  OK(MPI_Sendrecv(&m[0][1], 1, col, right, 1, &got[0][3], 1, col, left, 1, MPI_COMM_WORLD, &st));
  for (int i = 0; i < 4; i++) {
    CHECK(got[i][3] == left * 100 + i * 10 + 1);
    CHECK(got[i][2] == -1 && got[i][4] == -1);
  }
  int n;
  OK(MPI_Get_count(&st, col, &n));
  CHECK(n == 1);
  OK(MPI_Get_elements(&st, col, &n));
  CHECK(n == 4);
  MPI_Count nel = 0;
  OK(MPI_Get_elements_c(&st, col, &nel));
  CHECK(nel == 4);
  OK(MPI_Get_count(&st, MPI_DOUBLE, &n));
  CHECK(n == 4);

  /* Nonblocking and persistent with the column type; the receive is unpacked on Wait. */
  MPI_Request rq[2];
  for (int i = 0; i < 4; i++) got[i][0] = -1;
  OK(MPI_Irecv(&got[0][0], 1, col, left, 2, MPI_COMM_WORLD, &rq[0]));
  OK(MPI_Isend(&m[0][4], 1, col, right, 2, MPI_COMM_WORLD, &rq[1]));
  OK(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
  for (int i = 0; i < 4; i++) CHECK(got[i][0] == left * 100 + i * 10 + 4);
  OK(MPI_Recv_init(&got[0][2], 1, col, left, 3, MPI_COMM_WORLD, &rq[0]));
  OK(MPI_Send_init(&m[0][0], 1, col, right, 3, MPI_COMM_WORLD, &rq[1]));
  for (int it = 0; it < 2; it++) {
    m[0][0] = rank + it;
    OK(MPI_Startall(2, rq));
    OK(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
    CHECK(got[0][2] == left + it && got[3][2] == left * 100 + 30);
  }
  OK(MPI_Request_free(&rq[0]));
  OK(MPI_Request_free(&rq[1]));

  /* A struct {char c; double d; int i[2];} and its natural padding. */
  struct rec { char c; double d; int i[2]; } recs[3], rrecs[3];
  int bl[3] = {1, 1, 2};
  MPI_Aint disp[3], base;
  OK(MPI_Get_address(&recs[0], &base));
  OK(MPI_Get_address(&recs[0].c, &disp[0]));
  OK(MPI_Get_address(&recs[0].d, &disp[1]));
  OK(MPI_Get_address(&recs[0].i, &disp[2]));
  for (int k = 0; k < 3; k++) disp[k] = MPI_Aint_diff(disp[k], base);
  MPI_Datatype types[3] = {MPI_CHAR, MPI_DOUBLE, MPI_INT}, rect;
  OK(MPI_Type_create_struct(3, bl, disp, types, &rect));
  OK(MPI_Type_commit(&rect));
  OK(MPI_Type_size(rect, &sz));
  CHECK(sz == 1 + 8 + 8);
  OK(MPI_Type_get_extent(rect, &lb, &ext));
  CHECK(lb == 0 && ext == (MPI_Aint)sizeof(struct rec));
  memset(rrecs, 0, sizeof rrecs);
  for (int k = 0; k < 3; k++) {
    recs[k].c = (char)('a' + rank + k);
    recs[k].d = rank + k * 0.25;
    recs[k].i[0] = rank * 7 + k;
    recs[k].i[1] = -k;
  }
  if (rank == 0) memcpy(rrecs, recs, sizeof recs);
  OK(MPI_Bcast(rank == 0 ? recs : rrecs, 3, rect, 0, MPI_COMM_WORLD));
  for (int k = 0; k < 3; k++)
    CHECK(rrecs[k].c == 'a' + k && rrecs[k].d == k * 0.25 && rrecs[k].i[0] == k && rrecs[k].i[1] == -k);

  /* Reductions on a type built from one basic type: the column of doubles. */
  double red[4][5];
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 5; j++) red[i][j] = -7;
  OK(MPI_Allreduce(&m[0][1], &red[0][1], 1, col, MPI_SUM, MPI_COMM_WORLD));
  for (int i = 0; i < 4; i++) {
    CHECK(red[i][1] == 100.0 * size * (size - 1) / 2 + size * (i * 10 + 1));
    CHECK(red[i][0] == -7 && red[i][2] == -7);
  }

  /* Resized: a single int with the extent of two, gathering into every other slot. */
  MPI_Datatype every_other;
  OK(MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &every_other));
  OK(MPI_Type_commit(&every_other));
  int *gath = calloc(2 * size, sizeof(int));
  int mine = 1000 + rank;
  OK(MPI_Gather(&mine, 1, MPI_INT, gath, 1, every_other, 0, MPI_COMM_WORLD));
  if (rank == 0)
    for (int r = 0; r < size; r++) CHECK(gath[2 * r] == 1000 + r && gath[2 * r + 1] == 0);
  OK(MPI_Allgather(&mine, 1, MPI_INT, gath, 1, every_other, MPI_COMM_WORLD));
  for (int r = 0; r < size; r++) CHECK(gath[2 * r] == 1000 + r);
  free(gath);

  /* Subarray: the 2x2 block at (1, 2) of a 4x5 array of ints; indexed and hvector. */
  int sizes[2] = {4, 5}, subs[2] = {2, 2}, starts[2] = {1, 2};
  MPI_Datatype blk;
  OK(MPI_Type_create_subarray(2, sizes, subs, starts, MPI_ORDER_C, MPI_INT, &blk));
  OK(MPI_Type_commit(&blk));
  int arr[4][5], packed[4], pos = 0;
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 5; j++) arr[i][j] = i * 5 + j;
  OK(MPI_Pack(arr, 1, blk, packed, sizeof packed, &pos, MPI_COMM_WORLD));
  CHECK(pos == 16 && packed[0] == 7 && packed[1] == 8 && packed[2] == 12 && packed[3] == 13);
  int back[4][5];
  memset(back, 0, sizeof back);
  pos = 0;
  OK(MPI_Unpack(packed, sizeof packed, &pos, back, 1, blk, MPI_COMM_WORLD));
  CHECK(back[1][2] == 7 && back[2][3] == 13 && back[0][0] == 0 && back[3][4] == 0);
  int ibl[2] = {2, 1}, idp[2] = {0, 4};
  MPI_Datatype idx, hv;
  OK(MPI_Type_indexed(2, ibl, idp, MPI_INT, &idx));
  OK(MPI_Type_create_hvector(2, 1, 12, MPI_INT, &hv));
  OK(MPI_Type_commit(&idx));
  OK(MPI_Type_commit(&hv));
  OK(MPI_Type_size(idx, &sz));
  CHECK(sz == 12);
  OK(MPI_Type_get_true_extent(idx, &lb, &ext));
  CHECK(lb == 0 && ext == 20);
  OK(MPI_Type_get_extent(hv, &lb, &ext));
  CHECK(ext == 16);
  int isrc[5] = {1, 2, 3, 4, 5}, idst[5] = {0};
  OK(MPI_Sendrecv(isrc, 1, idx, rank, 4, idst, 1, idx, rank, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
  CHECK(idst[0] == 1 && idst[1] == 2 && idst[2] == 0 && idst[4] == 5);

  /* Distributed array: a block distribution of 4 * size ints, this rank's 4 of them. */
  int gs[1] = {4 * size}, dis[1] = {MPI_DISTRIBUTE_BLOCK}, dar[1] = {MPI_DISTRIBUTE_DFLT_DARG};
  int ps[1] = {size};
  MPI_Datatype dist;
  OK(MPI_Type_create_darray(size, rank, 1, gs, dis, dar, ps, MPI_ORDER_C, MPI_INT, &dist));
  OK(MPI_Type_commit(&dist));
  OK(MPI_Type_size(dist, &sz));
  CHECK(sz == 16);
  int *glob = malloc(4 * size * sizeof(int)), mine4[4];
  for (int i = 0; i < 4 * size; i++) glob[i] = i;
  pos = 0;
  OK(MPI_Pack(glob, 1, dist, mine4, sizeof mine4, &pos, MPI_COMM_WORLD));
  for (int i = 0; i < 4; i++) CHECK(mine4[i] == 4 * rank + i);
  free(glob);

  MPI_Datatype *all[] = {&col, &rect, &every_other, &blk, &idx, &hv, &dist};
  for (int k = 0; k < 7; k++) OK(MPI_Type_free(all[k]));

  /* Predefined datatypes can be renamed (MPI-4.1 §7.8); a freed handle cannot. */
  {
    char nm[MPI_MAX_OBJECT_NAME];
    int nl = 0;
    OK(MPI_Type_get_name(MPI_INT, nm, &nl));
    CHECK(strcmp(nm, "MPI_INT") == 0 && nl == 7);
    OK(MPI_Type_set_name(MPI_INT, "int"));
    OK(MPI_Type_get_name(MPI_INT, nm, &nl));
    CHECK(strcmp(nm, "int") == 0 && nl == 3);
    OK(MPI_Type_get_name(MPI_FLOAT, nm, &nl));
    CHECK(strcmp(nm, "MPI_FLOAT") == 0);
    MPI_Datatype gone;
    OK(MPI_Type_contiguous(2, MPI_INT, &gone));
    MPI_Datatype stale = gone;
    OK(MPI_Type_free(&gone));
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK_RC(MPI_Type_set_name(stale, "x"), MPI_ERR_TYPE);
  }
  /* MPI_Type_match_size: predefined types of the asked size; unknown sizes refused. */
  {
    MPI_Datatype t;
    int tsz = 0;
    int classes[3] = {MPI_TYPECLASS_INTEGER, MPI_TYPECLASS_REAL, MPI_TYPECLASS_COMPLEX};
    int sizes[3] = {(int)sizeof(int), (int)sizeof(double), 2 * (int)sizeof(float)};
    for (int k = 0; k < 3; k++) {
      OK(MPI_Type_match_size(classes[k], sizes[k], &t));
      OK(MPI_Type_size(t, &tsz));
      CHECK(tsz == sizes[k]);
    }
    OK(MPI_Type_match_size(MPI_TYPECLASS_REAL, (int)sizeof(float), &t));
    CHECK(t == MPI_REAL4);
    CHECK_RC(MPI_Type_match_size(MPI_TYPECLASS_REAL, 3, &t), MPI_ERR_ARG);
    CHECK_RC(MPI_Type_match_size(12345, 4, &t), MPI_ERR_ARG);
  }
  OK(MPI_Finalize());
  return 0;
}
