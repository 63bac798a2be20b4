/* Communicators, groups, names, comparisons, datatypes of contiguous layout, pack/unpack,
 * and Cartesian topologies. Runs at any size >= 1. */
#include "check.h"
#include <string.h>

static int copies = 0, deletes = 0;
static int copy_cb(MPI_Comm old, int key, void *extra, void *in, void *out, int *flag) {
  (void)old, (void)key;
  CHECK(*(int *)extra == 99);
  copies++;
  *(void **)out = (char *)in + 1; /* the copy's value differs, to tell them apart */
  *flag = 1;
  return MPI_SUCCESS;
}
static int delete_cb(MPI_Comm c, int key, void *val, void *extra) {
  (void)c, (void)key, (void)val, (void)extra;
  deletes++;
  return MPI_SUCCESS;
}

int main(int argc, char **argv) {
  OK(MPI_Init(&argc, &argv));
  int rank, size, r;
  OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  OK(MPI_Comm_size(MPI_COMM_WORLD, &size));

  MPI_Comm dup;
  OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
  OK(MPI_Comm_compare(MPI_COMM_WORLD, dup, &r));
  CHECK(r == MPI_CONGRUENT);
  OK(MPI_Comm_compare(dup, dup, &r));
  CHECK(r == MPI_IDENT);
  /* MPI_Comm_dup_with_info: a congruent duplicate with the error handler; a bad info handle
   * is refused before anything collective happens. */
  {
    MPI_Info info;
    MPI_Comm wi;
    OK(MPI_Info_create(&info));
    OK(MPI_Info_set(info, "mpi_assert_no_any_tag", "true"));
    OK(MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN));
    OK(MPI_Comm_dup_with_info(dup, info, &wi));
    OK(MPI_Comm_compare(dup, wi, &r));
    CHECK(r == MPI_CONGRUENT);
    MPI_Errhandler eh;
    OK(MPI_Comm_get_errhandler(wi, &eh));
    CHECK(eh == MPI_ERRORS_RETURN);
    int s = -1;
    OK(MPI_Allreduce(&rank, &s, 1, MPI_INT, MPI_SUM, wi));
    CHECK(s == size * (size - 1) / 2);
    OK(MPI_Comm_free(&wi));
    MPI_Info stale = info;
    OK(MPI_Info_free(&info));
    MPI_Comm never = MPI_COMM_NULL;
    CHECK_RC(MPI_Comm_dup_with_info(dup, stale, &never), MPI_ERR_INFO);
    CHECK(never == MPI_COMM_NULL);
    OK(MPI_Comm_dup_with_info(dup, MPI_INFO_NULL, &wi));
    OK(MPI_Comm_free(&wi));
  }
  /* Traffic on the dup does not meet traffic on world. */
  int a = rank, b = -1, c = -1;
  MPI_Request q[2];
  OK(MPI_Irecv(&b, 1, MPI_INT, rank, 1, MPI_COMM_WORLD, &q[0]));
  OK(MPI_Irecv(&c, 1, MPI_INT, rank, 1, dup, &q[1]));
  int a2 = rank + 50;
  OK(MPI_Send(&a2, 1, MPI_INT, rank, 1, dup));
  OK(MPI_Send(&a, 1, MPI_INT, rank, 1, MPI_COMM_WORLD));
  OK(MPI_Waitall(2, q, MPI_STATUSES_IGNORE));
  CHECK(b == rank && c == rank + 50);
  OK(MPI_Comm_set_name(dup, "my dup"));
  char name[MPI_MAX_OBJECT_NAME];
  int len;
  OK(MPI_Comm_get_name(dup, name, &len));
  CHECK(strcmp(name, "my dup") == 0 && len == 6);
  OK(MPI_Comm_get_name(MPI_COMM_WORLD, name, &len));
  CHECK(strcmp(name, "MPI_COMM_WORLD") == 0);

  /* Split into even and odd ranks, reversed order by key. */
  MPI_Comm half;
  OK(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &half));
  int hr, hs;
  OK(MPI_Comm_rank(half, &hr));
  OK(MPI_Comm_size(half, &hs));
  CHECK(hs == (size + 1 - rank % 2) / 2);
  CHECK(hr == hs - 1 - rank / 2);
  int sum = 0;
  OK(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, half));
  int want = 0;
  for (int i = rank % 2; i < size; i += 2) want += i;
  CHECK(sum == want);
  MPI_Comm none;
  OK(MPI_Comm_split(MPI_COMM_WORLD, rank == 0 ? 0 : MPI_UNDEFINED, 0, &none));
  CHECK((rank == 0) == (none != MPI_COMM_NULL));
  if (none != MPI_COMM_NULL) OK(MPI_Comm_free(&none));

  MPI_Comm node;
  OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node));
  int ns;
  OK(MPI_Comm_size(node, &ns));
  CHECK(ns >= 1 && ns <= size);

  /* Groups. */
  MPI_Group world, evens, odds, uni, inter, diff;
  OK(MPI_Comm_group(MPI_COMM_WORLD, &world));
  OK(MPI_Group_size(world, &r));
  CHECK(r == size);
  OK(MPI_Group_rank(world, &r));
  CHECK(r == rank);
  int ev[64], ne = 0;
  for (int i = 0; i < size; i += 2) ev[ne++] = i;
  OK(MPI_Group_incl(world, ne, ev, &evens));
  OK(MPI_Group_excl(world, ne, ev, &odds));
  OK(MPI_Group_size(odds, &r));
  CHECK(r == size - ne);
  OK(MPI_Group_rank(evens, &r));
  CHECK(r == (rank % 2 == 0 ? rank / 2 : MPI_UNDEFINED));
  OK(MPI_Group_union(odds, evens, &uni));
  OK(MPI_Group_size(uni, &r));
  CHECK(r == size);
  OK(MPI_Group_compare(uni, world, &r));
  CHECK(r == (size == 1 ? MPI_IDENT : MPI_SIMILAR));
  OK(MPI_Group_intersection(evens, world, &inter));
  OK(MPI_Group_compare(inter, evens, &r));
  CHECK(r == MPI_IDENT);
  OK(MPI_Group_difference(world, evens, &diff));
  OK(MPI_Group_compare(diff, odds, &r));
  CHECK(r == MPI_IDENT);
  int tr_in[2] = {0, size - 1}, tr_out[2];
  OK(MPI_Group_translate_ranks(world, 2, tr_in, evens, tr_out));
  CHECK(tr_out[0] == 0);
  CHECK(tr_out[1] == ((size - 1) % 2 == 0 ? (size - 1) / 2 : MPI_UNDEFINED));
  MPI_Comm ecomm;
  OK(MPI_Comm_create(MPI_COMM_WORLD, evens, &ecomm));
  CHECK((rank % 2 == 0) == (ecomm != MPI_COMM_NULL));
  if (ecomm != MPI_COMM_NULL) {
    OK(MPI_Comm_size(ecomm, &r));
    CHECK(r == ne);
    OK(MPI_Barrier(ecomm));
    OK(MPI_Comm_free(&ecomm));
    CHECK(ecomm == MPI_COMM_NULL);
  }
  /* Disjoint groups at once (MPI-2.2): evens pass the evens, odds the odds, each gets a
   * communicator of its own parity in world order. */
  {
    MPI_Group mine = rank % 2 ? odds : evens;
    MPI_Comm pc;
    OK(MPI_Comm_create(MPI_COMM_WORLD, mine, &pc));
    CHECK(pc != MPI_COMM_NULL);
    int n, pr, sum = -1, want = 0;
    OK(MPI_Comm_size(pc, &n));
    OK(MPI_Comm_rank(pc, &pr));
    CHECK(n == (rank % 2 ? size / 2 : ne) && pr == rank / 2);
    OK(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, pc));
    for (int i = rank % 2; i < size; i += 2) want += i;
    CHECK(sum == want);
    OK(MPI_Comm_free(&pc));
  }
  /* Range forms: every other rank from the last down, and the rest. */
  MPI_Group rng, rngx;
  int rtrip[1][3] = {{size - 1, 0, -2}};
  OK(MPI_Group_range_incl(world, 1, rtrip, &rng));
  OK(MPI_Group_range_excl(world, 1, rtrip, &rngx));
  int rs1, rs2;
  OK(MPI_Group_size(rng, &rs1));
  OK(MPI_Group_size(rngx, &rs2));
  CHECK(rs1 == (size + 1) / 2 && rs1 + rs2 == size);
  int zero = 0, back0 = -1;
  OK(MPI_Group_translate_ranks(rng, 1, &zero, world, &back0));
  CHECK(back0 == size - 1);
  OK(MPI_Group_free(&rng));
  OK(MPI_Group_free(&rngx));
  /* The MPI-1 attribute calls are the communicator ones. */
  int oldkey, *got_attr = NULL, fl = 0;
  static int attr_value = 31;
  OK(MPI_Keyval_create(MPI_NULL_COPY_FN, MPI_NULL_DELETE_FN, &oldkey, NULL));
  OK(MPI_Attr_put(MPI_COMM_WORLD, oldkey, &attr_value));
  OK(MPI_Attr_get(MPI_COMM_WORLD, oldkey, &got_attr, &fl));
  CHECK(fl == 1 && got_attr == &attr_value);
  OK(MPI_Attr_delete(MPI_COMM_WORLD, oldkey));
  OK(MPI_Keyval_free(&oldkey));

  MPI_Group *gs[] = {&world, &evens, &odds, &uni, &inter, &diff};
  for (int i = 0; i < 6; i++) {
    OK(MPI_Group_free(gs[i]));
    CHECK(*gs[i] == MPI_GROUP_NULL);
  }

  /* Contiguous datatypes, names, extents, pack/unpack. */
  MPI_Datatype t3, tdup;
  OK(MPI_Type_contiguous(3, MPI_DOUBLE, &t3));
  OK(MPI_Type_commit(&t3));
  int ts;
  OK(MPI_Type_size(t3, &ts));
  CHECK(ts == 24);
  MPI_Aint lb, ext;
  OK(MPI_Type_get_extent(t3, &lb, &ext));
  CHECK(lb == 0 && ext == 24);
  OK(MPI_Type_get_true_extent(MPI_INT, &lb, &ext));
  CHECK(lb == 0 && ext == 4);
  OK(MPI_Type_set_name(t3, "triple"));
  OK(MPI_Type_get_name(t3, name, &len));
  CHECK(strcmp(name, "triple") == 0);
  OK(MPI_Type_get_name(MPI_DOUBLE, name, &len));
  CHECK(strcmp(name, "MPI_DOUBLE") == 0);
  OK(MPI_Type_dup(t3, &tdup));
  double tri[6] = {1, 2, 3, 4, 5, 6}, tro[6] = {0};
  OK(MPI_Sendrecv(tri, 2, t3, rank, 9, tro, 2, tdup, rank, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
  CHECK(tro[5] == 6 && tro[0] == 1);
  double tsum[3];
  OK(MPI_Allreduce(tri, tsum, 1, t3, MPI_SUM, MPI_COMM_WORLD));
  CHECK(tsum[2] == 3.0 * size);
  OK(MPI_Type_free(&tdup));
  OK(MPI_Type_free(&t3));
  CHECK(t3 == MPI_DATATYPE_NULL);
  char packed[64];
  int pos = 0, pi = 42, po = 0;
  double pd = 2.5, pdo = 0;
  OK(MPI_Pack_size(1, MPI_INT, MPI_COMM_WORLD, &r));
  CHECK(r >= 4);
  OK(MPI_Pack(&pi, 1, MPI_INT, packed, sizeof packed, &pos, MPI_COMM_WORLD));
  OK(MPI_Pack(&pd, 1, MPI_DOUBLE, packed, sizeof packed, &pos, MPI_COMM_WORLD));
  CHECK(pos == 12);
  int upos = 0;
  OK(MPI_Unpack(packed, pos, &upos, &po, 1, MPI_INT, MPI_COMM_WORLD));
  OK(MPI_Unpack(packed, pos, &upos, &pdo, 1, MPI_DOUBLE, MPI_COMM_WORLD));
  CHECK(po == 42 && pdo == 2.5 && upos == 12);
  MPI_Aint addr1, addr2;
  OK(MPI_Get_address(&tri[0], &addr1));
  OK(MPI_Get_address(&tri[2], &addr2));
  CHECK(addr2 - addr1 == 16);

  /* Cartesian topology over all ranks. */
  int dims[2] = {0, 0};
  OK(MPI_Dims_create(size, 2, dims));
  CHECK(dims[0] * dims[1] == size && dims[0] >= dims[1]);
  int d3[3] = {0, 3, 0};
  OK(MPI_Dims_create(12, 3, d3));
  CHECK(d3[0] == 2 && d3[1] == 3 && d3[2] == 2);
  int periods[2] = {1, 0};
  MPI_Comm cart;
  OK(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart));
  OK(MPI_Topo_test(cart, &r));
  CHECK(r == MPI_CART);
  OK(MPI_Topo_test(MPI_COMM_WORLD, &r));
  CHECK(r == MPI_UNDEFINED);
  int nd, coords[2], cr;
  OK(MPI_Cartdim_get(cart, &nd));
  CHECK(nd == 2);
  OK(MPI_Comm_rank(cart, &cr));
  OK(MPI_Cart_coords(cart, cr, 2, coords));
  CHECK(coords[0] == cr / dims[1] && coords[1] == cr % dims[1]);
  OK(MPI_Cart_rank(cart, coords, &r));
  CHECK(r == cr);
  int src, dst;
  OK(MPI_Cart_shift(cart, 0, 1, &src, &dst));
  CHECK(dst == ((coords[0] + 1) % dims[0]) * dims[1] + coords[1]);
  OK(MPI_Cart_shift(cart, 1, 1, &src, &dst));
  CHECK(coords[1] + 1 < dims[1] ? dst == cr + 1 : dst == MPI_PROC_NULL);
  int gd[2], gp[2], gc[2];
  OK(MPI_Cart_get(cart, 2, gd, gp, gc));
  CHECK(gd[0] == dims[0] && gp[0] == 1 && gp[1] == 0 && gc[1] == coords[1]);
  int remain[2] = {0, 1};
  MPI_Comm row;
  OK(MPI_Cart_sub(cart, remain, &row));
  OK(MPI_Comm_size(row, &r));
  CHECK(r == dims[1]);
  OK(MPI_Comm_free(&row));
  OK(MPI_Comm_free(&cart));

  /* User attributes: copied on dup by the callback, deleted on free and replace. */
  int extra = 99, key, nocopy;
  static char slot[4];
  OK(MPI_Comm_create_keyval(copy_cb, delete_cb, &key, &extra));
  OK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &nocopy, NULL));
  OK(MPI_Comm_set_attr(node, key, &slot[0]));
  OK(MPI_Comm_set_attr(node, nocopy, &slot[2]));
  void *val = NULL;
  int found = 0;
  OK(MPI_Comm_get_attr(node, key, &val, &found));
  CHECK(found == 1 && val == &slot[0]);
  MPI_Comm ndup;
  OK(MPI_Comm_dup(node, &ndup));
  CHECK(copies == 1);
  OK(MPI_Comm_get_attr(ndup, key, &val, &found));
  CHECK(found == 1 && val == &slot[1]);
  OK(MPI_Comm_get_attr(ndup, nocopy, &val, &found));
  CHECK(found == 0);
  OK(MPI_Comm_set_attr(node, key, &slot[3])); /* replaces: deletes the old value */
  CHECK(deletes == 1);
  OK(MPI_Comm_delete_attr(node, key));
  CHECK(deletes == 2);
  OK(MPI_Comm_get_attr(node, key, &val, &found));
  CHECK(found == 0);
  OK(MPI_Comm_free(&ndup)); /* frees its copy */
  CHECK(deletes == 3);
  OK(MPI_Comm_free_keyval(&key));
  CHECK(key == MPI_KEYVAL_INVALID);
  OK(MPI_Comm_free_keyval(&nocopy));

  /* Handle conversion round trips, status setters, small queries. */
  CHECK(MPI_Comm_fromint(MPI_Comm_toint(MPI_COMM_WORLD)) == MPI_COMM_WORLD);
  CHECK(MPI_Comm_fromint(MPI_Comm_toint(node)) == node);
  CHECK(MPI_Type_fromint(MPI_Type_toint(MPI_DOUBLE)) == MPI_DOUBLE);
  CHECK(MPI_Op_fromint(MPI_Op_toint(MPI_SUM)) == MPI_SUM);
  int flag2 = -1;
  OK(MPI_Comm_test_inter(node, &flag2));
  CHECK(flag2 == 0);
  MPI_Comm parent;
  OK(MPI_Comm_get_parent(&parent));
  CHECK(parent == MPI_COMM_NULL);
  MPI_Info hints;
  OK(MPI_Comm_get_info(node, &hints));
  OK(MPI_Comm_set_info(node, hints));
  OK(MPI_Info_free(&hints));
  OK(MPI_Pcontrol(1));
  MPI_Status fake;
  OK(MPI_Status_set_elements(&fake, MPI_INT, 6));
  OK(MPI_Status_set_cancelled(&fake, 1));
  int cnt = 0, canc = 0;
  OK(MPI_Get_count(&fake, MPI_INT, &cnt));
  OK(MPI_Test_cancelled(&fake, &canc));
  CHECK(cnt == 6 && canc == 1);

  /* Comm_create_group: only the even ranks take part. */
  if (rank % 2 == 0) {
    MPI_Group wg, eg;
    OK(MPI_Comm_group(MPI_COMM_WORLD, &wg));
    int evs[64], nev = 0;
    for (int i = 0; i < size; i += 2) evs[nev++] = i;
    OK(MPI_Group_incl(wg, nev, evs, &eg));
    MPI_Comm ec;
    OK(MPI_Comm_create_group(MPI_COMM_WORLD, eg, 7, &ec));
    int ecs, ecr, esum = 0;
    OK(MPI_Comm_size(ec, &ecs));
    OK(MPI_Comm_rank(ec, &ecr));
    CHECK(ecs == nev && ecr == rank / 2);
    OK(MPI_Allreduce(&rank, &esum, 1, MPI_INT, MPI_SUM, ec));
    CHECK(esum == (nev - 1) * nev); /* 0 + 2 + ... + 2(nev-1) */
    OK(MPI_Comm_free(&ec));
    OK(MPI_Group_free(&eg));
    OK(MPI_Group_free(&wg));
  }
  OK(MPI_Barrier(MPI_COMM_WORLD));

  OK(MPI_Comm_free(&node));
  OK(MPI_Comm_free(&half));
  OK(MPI_Comm_free(&dup));
  OK(MPI_Finalize());
  return 0;
}
