/* MPI_Cart_create across hosts: the bytes a halo exchange sends to ranks on other hosts.
 *
 *   cart_hosts bytes B D1 D2 ...   for reorder 0 then 1: a grid of dims D1 x D2 x ...
 *                                  (not periodic) over the first ranks; each member sends B
 *                                  bytes to both neighbours of every dimension, checks what
 *                                  arrives, and counts the bytes it sent to a rank whose
 *                                  host (MPI_Get_processor_name) is not its own. Rank 0
 *                                  prints "bytes across hosts identity N reordered M".
 *   cart_hosts torus B             under weft run --map: a periodic grid of WEFT_TORUS_DIMS
 *                                  with reorder 0 and 1 puts every rank at its host's
 *                                  WEFT_TORUS_COORDS (one rank per host); the same exchange
 *                                  on it. Each rank prints "rank R host H coords C".
 *   cart_hosts hops B P D1 D2 ...  under weft run --map with several ranks per host: for
 *                                  reorder 0 then 1 a grid of dims D1 x D2 x ... with periods
 *                                  P ("1,0") over every rank, the exchange of "bytes", and
 *                                  the bytes times the torus hops between the sender's and
 *                                  the receiver's hosts (WEFT_TORUS_COORDS, the shorter way
 *                                  round WEFT_TORUS_DIMS). Rank 0 prints "hop-bytes identity
 *                                  N reordered M" and "bytes across hosts identity N
 *                                  reordered M". */
#include "check.h"
#include <string.h>

#define MAXD 8

static char host[MPI_MAX_PROCESSOR_NAME];
/* The job's torus of hosts and this rank's host's coordinates on it (mode "hops"). */
static int tdims[MAXD], tcoords[MAXD], tn;

/* The byte `i` of the message `from` (a rank of the grid) sends in direction `dir` of
 * dimension `d`. */
static unsigned char pattern(int from, int d, int dir, int i) {
  return (unsigned char)(from * 131 + d * 17 + dir * 7 + i * 3 + 1);
}

/* The halo exchange on `cart` with `bytes` per message; returns the bytes this rank sent
 * to ranks of other hosts (all ranks' sum), and in `*hop_bytes` (when not NULL) the bytes
 * times the torus hops they went (all ranks' sum). */
static long long exchange(MPI_Comm cart, int ndims, int bytes, long long *hop_bytes) {
  int me, size;
  OK(MPI_Comm_rank(cart, &me));
  OK(MPI_Comm_size(cart, &size));
  char *hosts = malloc((size_t)size * MPI_MAX_PROCESSOR_NAME);
  int *coords = malloc((size_t)size * MAXD * sizeof(int));
  CHECK(hosts != NULL && coords != NULL);
  OK(MPI_Allgather(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, hosts, MPI_MAX_PROCESSOR_NAME,
                   MPI_CHAR, cart));
  OK(MPI_Allgather(tcoords, MAXD, MPI_INT, coords, MAXD, MPI_INT, cart));
  long long far = 0;
  unsigned char *out = malloc(bytes + 1), *in = malloc(bytes + 1);
  CHECK(out != NULL && in != NULL);
  long long across = 0;
  for (int d = 0; d < ndims; d++) {
    int down, up;
    OK(MPI_Cart_shift(cart, d, 1, &down, &up));
    for (int dir = 0; dir < 2; dir++) {
      int to = dir == 0 ? up : down, from = dir == 0 ? down : up;
      for (int i = 0; i < bytes; i++) out[i] = pattern(me, d, dir, i);
      memset(in, 0, bytes + 1);
      MPI_Status st;
      OK(MPI_Sendrecv(out, bytes, MPI_BYTE, to, 10 + dir, in, bytes, MPI_BYTE, from, 10 + dir,
                      cart, &st));
      if (from != MPI_PROC_NULL) {
        int got;
        OK(MPI_Get_count(&st, MPI_BYTE, &got));
        CHECK(got == bytes && st.MPI_SOURCE == from);
        for (int i = 0; i < bytes; i++) CHECK(in[i] == pattern(from, d, dir, i));
      }
      if (to != MPI_PROC_NULL &&
          strncmp(hosts + (size_t)to * MPI_MAX_PROCESSOR_NAME, host, MPI_MAX_PROCESSOR_NAME))
        across += bytes;
      if (to != MPI_PROC_NULL)
        for (int t = 0; t < tn; t++) {
          int diff = abs(tcoords[t] - coords[(size_t)to * MAXD + t]);
          far += (long long)bytes * (diff < tdims[t] - diff ? diff : tdims[t] - diff);
        }
    }
  }
  long long all = 0;
  OK(MPI_Allreduce(&across, &all, 1, MPI_LONG_LONG, MPI_SUM, cart));
  if (hop_bytes) OK(MPI_Allreduce(&far, hop_bytes, 1, MPI_LONG_LONG, MPI_SUM, cart));
  free(out);
  free(in);
  free(hosts);
  free(coords);
  return all;
}

/* "2x2" or "1,0" into `v`; returns the count. */
static int parse_list(const char *text, char sep, int *v) {
  int n = 0;
  CHECK(text != NULL && *text);
  for (const char *p = text; n < MAXD;) {
    char *end;
    v[n++] = (int)strtol(p, &end, 10);
    CHECK(end != p);
    if (*end == 0) return n;
    CHECK(*end == sep);
    p = end + 1;
  }
  CHECK(0);
  return n;
}

int main(int argc, char **argv) {
  int rank, size, len;
  OK(MPI_Init(&argc, &argv));
  OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  OK(MPI_Get_processor_name(host, &len));
  CHECK(argc >= 3);
  int bytes = atoi(argv[2]);
  int dims[MAXD], periods[MAXD] = {0}, ndims;
  int torus = strcmp(argv[1], "torus") == 0;
  if (torus) {
    ndims = parse_list(getenv("WEFT_TORUS_DIMS"), 'x', dims);
    int want[MAXD];
    CHECK(parse_list(getenv("WEFT_TORUS_COORDS"), ',', want) == ndims);
    for (int i = 0; i < ndims; i++) periods[i] = 1;
    for (int reorder = 0; reorder < 2; reorder++) {
      MPI_Comm cart;
      OK(MPI_Cart_create(MPI_COMM_WORLD, ndims, dims, periods, reorder, &cart));
      CHECK(cart != MPI_COMM_NULL);
      int me, coords[MAXD];
      OK(MPI_Comm_rank(cart, &me));
      OK(MPI_Cart_coords(cart, me, ndims, coords));
      CHECK(memcmp(coords, want, ndims * sizeof(int)) == 0);
      long long across = exchange(cart, ndims, bytes, NULL);
      if (reorder) {
        printf("rank %d host %s coords %s\n", rank, host, getenv("WEFT_TORUS_COORDS"));
        if (rank == 0) printf("bytes across hosts %lld\n", across);
      }
      OK(MPI_Comm_free(&cart));
    }
  } else if (strcmp(argv[1], "hops") == 0) {
    tn = parse_list(getenv("WEFT_TORUS_DIMS"), 'x', tdims);
    CHECK(parse_list(getenv("WEFT_TORUS_COORDS"), ',', tcoords) == tn);
    CHECK(argc >= 5);
    ndims = argc - 4;
    CHECK(ndims <= MAXD && parse_list(argv[3], ',', periods) == ndims);
    int grid = 1;
    for (int i = 0; i < ndims; i++) grid *= dims[i] = atoi(argv[4 + i]);
    CHECK(grid == size);
    long long across[2], far[2];
    for (int reorder = 0; reorder < 2; reorder++) {
      MPI_Comm cart;
      OK(MPI_Cart_create(MPI_COMM_WORLD, ndims, dims, periods, reorder, &cart));
      across[reorder] = exchange(cart, ndims, bytes, &far[reorder]);
      OK(MPI_Comm_free(&cart));
    }
    if (rank == 0) {
      printf("hop-bytes identity %lld reordered %lld\n", far[0], far[1]);
      printf("bytes across hosts identity %lld reordered %lld\n", across[0], across[1]);
    }
  } else {
    CHECK(strcmp(argv[1], "bytes") == 0);
    ndims = argc - 3;
    CHECK(ndims >= 1 && ndims <= MAXD);
    int grid = 1;
    for (int i = 0; i < ndims; i++) grid *= dims[i] = atoi(argv[3 + i]);
    CHECK(grid <= size);
    long long across[2];
    for (int reorder = 0; reorder < 2; reorder++) {
      MPI_Comm cart;
      OK(MPI_Cart_create(MPI_COMM_WORLD, ndims, dims, periods, reorder, &cart));
      CHECK((cart == MPI_COMM_NULL) == (rank >= grid));
      across[reorder] = 0;
      if (cart != MPI_COMM_NULL) {
        across[reorder] = exchange(cart, ndims, bytes, NULL);
        OK(MPI_Comm_free(&cart));
      }
    }
    if (rank == 0) printf("bytes across hosts identity %lld reordered %lld\n", across[0], across[1]);
  }
  OK(MPI_Finalize());
  return 0;
}
