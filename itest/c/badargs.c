/* The bad-argument table (docs/mpi-bad-arguments.md): every case calls one MPI function
 * with one bad argument, with MPI_ERRORS_RETURN, and prints `CASE <id> <class name>`.
 * The test (crates/weft-mpi/tests/c_badargs.rs) checks every row of the table against this
 * output. Collective cases pass the same bad argument on every rank (so all return before
 * any message moves) or run on MPI_COMM_SELF; the one case that is bad on one rank only
 * (a receiver's shorter MPI_Bcast) comes last. Run with 2 ranks. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank;

static const char *cls(int rc) {
  switch (rc) {
  case MPI_SUCCESS: return "MPI_SUCCESS";
  case MPI_ERR_BUFFER: return "MPI_ERR_BUFFER";
  case MPI_ERR_COUNT: return "MPI_ERR_COUNT";
  case MPI_ERR_TYPE: return "MPI_ERR_TYPE";
  case MPI_ERR_TAG: return "MPI_ERR_TAG";
  case MPI_ERR_COMM: return "MPI_ERR_COMM";
  case MPI_ERR_RANK: return "MPI_ERR_RANK";
  case MPI_ERR_REQUEST: return "MPI_ERR_REQUEST";
  case MPI_ERR_ROOT: return "MPI_ERR_ROOT";
  case MPI_ERR_GROUP: return "MPI_ERR_GROUP";
  case MPI_ERR_OP: return "MPI_ERR_OP";
  case MPI_ERR_TOPOLOGY: return "MPI_ERR_TOPOLOGY";
  case MPI_ERR_DIMS: return "MPI_ERR_DIMS";
  case MPI_ERR_ARG: return "MPI_ERR_ARG";
  case MPI_ERR_UNKNOWN: return "MPI_ERR_UNKNOWN";
  case MPI_ERR_TRUNCATE: return "MPI_ERR_TRUNCATE";
  case MPI_ERR_OTHER: return "MPI_ERR_OTHER";
  case MPI_ERR_INTERN: return "MPI_ERR_INTERN";
  case MPI_ERR_INFO: return "MPI_ERR_INFO";
  case MPI_ERR_INFO_KEY: return "MPI_ERR_INFO_KEY";
  case MPI_ERR_INFO_VALUE: return "MPI_ERR_INFO_VALUE";
  case MPI_ERR_KEYVAL: return "MPI_ERR_KEYVAL";
  case MPI_ERR_ERRHANDLER: return "MPI_ERR_ERRHANDLER";
  case MPI_ERR_UNSUPPORTED_OPERATION: return "MPI_ERR_UNSUPPORTED_OPERATION";
  case MPI_ERR_NO_SUCH_FILE: return "MPI_ERR_NO_SUCH_FILE";
  case MPI_ERR_SPAWN: return "MPI_ERR_SPAWN";
  default: {
    static char other[32];
    snprintf(other, sizeof other, "class-%d", rc);
    return other;
  }
  }
}

/* Every rank runs the call; rank `who` prints its class. */
#define CASE_ON(who, id, expr)                                                  \
  do {                                                                         \
    int rc_ = (expr);                                                          \
    int class_ = rc_;                                                          \
    if (rc_ != MPI_SUCCESS) MPI_Error_class(rc_, &class_);                     \
    if (rank == (who)) {                                                       \
      printf("CASE %s %s\n", id, cls(class_));                                 \
      fflush(stdout);                                                          \
    }                                                                          \
  } while (0)
#define CASE(id, expr) CASE_ON(0, id, expr)

static void noop(void *in, void *inout, int *len, MPI_Datatype *dt) {
  (void)in; (void)inout; (void)len; (void)dt;
}

int main(int argc, char **argv) {
  int size;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm w = MPI_COMM_WORLD, self = MPI_COMM_SELF;
  int buf[64] = {0}, out[64] = {0}, counts[8] = {0}, displs[8] = {0}, flag = 0, n = 0;
  MPI_Status st;
  MPI_Request req;
  MPI_Comm newcomm;
  MPI_Group wg, g;
  MPI_Datatype t;
  MPI_Op op;
  char name[MPI_MAX_PROCESSOR_NAME];

  /* Errors on a communicator whose handler returns while MPI_COMM_WORLD's is still fatal:
   * they must return, not end the job. */
  MPI_Comm quiet;
  MPI_Comm_dup(w, &quiet);
  MPI_Comm_set_errhandler(quiet, MPI_ERRORS_RETURN);
  MPI_Comm inter;
  CASE("spawn-missing-on-returning-comm",
       MPI_Comm_spawn("weft-no-such-program", MPI_ARGV_NULL, 1, MPI_INFO_NULL, 0, quiet, &inter,
                      MPI_ERRCODES_IGNORE));
  CASE("file-open-missing",
       MPI_File_open(quiet, "weft-badargs-no-such-folder/x", MPI_MODE_RDONLY, MPI_INFO_NULL,
                     (MPI_File *)buf));
  MPI_Comm_set_errhandler(w, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(self, MPI_ERRORS_RETURN);

  /* Point-to-point. */
  CASE("send-negative-count", MPI_Send(buf, -1, MPI_INT, 0, 0, w));
  CASE("send-dest-too-large", MPI_Send(buf, 1, MPI_INT, size, 0, w));
  CASE("send-dest-negative", MPI_Send(buf, 1, MPI_INT, -5, 0, w));
  CASE("send-negative-tag", MPI_Send(buf, 1, MPI_INT, 0, -1, w));
  CASE("send-any-tag", MPI_Send(buf, 1, MPI_INT, 0, MPI_ANY_TAG, w));
  CASE("send-null-type", MPI_Send(buf, 1, MPI_DATATYPE_NULL, 0, 0, w));
  CASE("send-null-comm", MPI_Send(buf, 1, MPI_INT, 0, 0, MPI_COMM_NULL));
  CASE("send-null-buffer", MPI_Send(NULL, 4, MPI_INT, 0, 0, w));
  CASE("recv-negative-count", MPI_Recv(buf, -1, MPI_INT, 0, 0, w, &st));
  CASE("recv-source-too-large", MPI_Recv(buf, 1, MPI_INT, size, 0, w, &st));
  CASE("recv-negative-tag", MPI_Recv(buf, 1, MPI_INT, 0, -5, w, &st));
  CASE("recv-null-type", MPI_Recv(buf, 1, MPI_DATATYPE_NULL, 0, 0, w, &st));
  CASE("recv-null-comm", MPI_Recv(buf, 1, MPI_INT, 0, 0, MPI_COMM_NULL, &st));
  CASE("isend-null-request", MPI_Isend(buf, 1, MPI_INT, 0, 0, w, NULL));
  CASE("irecv-null-request", MPI_Irecv(buf, 1, MPI_INT, 0, 0, w, NULL));
  CASE("isend-dest-too-large", MPI_Isend(buf, 1, MPI_INT, size, 0, w, &req));
  CASE("issend-null-request", MPI_Issend(buf, 1, MPI_INT, 0, 0, w, NULL));
  CASE("ssend-negative-count", MPI_Ssend(buf, -1, MPI_INT, 0, 0, w));
  CASE("rsend-dest-too-large", MPI_Rsend(buf, 1, MPI_INT, size, 0, w));
  CASE("sendrecv-bad-dest",
       MPI_Sendrecv(buf, 1, MPI_INT, size, 0, out, 1, MPI_INT, 0, 0, w, &st));
  CASE("sendrecv-null-recvtype",
       MPI_Sendrecv(buf, 1, MPI_INT, rank, 0, out, 1, MPI_DATATYPE_NULL, rank, 0, w, &st));
  CASE("probe-source-too-large", MPI_Probe(size, 0, w, &st));
  CASE("iprobe-negative-tag", MPI_Iprobe(0, -9, w, &flag, &st));
  CASE("send-init-null-request", MPI_Send_init(buf, 1, MPI_INT, 0, 0, w, NULL));
  CASE("recv-init-negative-count", MPI_Recv_init(buf, -1, MPI_INT, 0, 0, w, &req));
  MPI_Request bogus = (MPI_Request)(intptr_t)0x3000000ff;
  CASE("wait-unknown-request", MPI_Wait(&bogus, &st));
  CASE("test-unknown-request", MPI_Test(&bogus, &flag, &st));
  CASE("start-unknown-request", MPI_Start(&bogus));
  CASE("waitall-negative-count", MPI_Waitall(-1, &req, MPI_STATUSES_IGNORE));
  CASE("waitall-null-array", MPI_Waitall(2, NULL, MPI_STATUSES_IGNORE));
  CASE("get-count-bad-type", MPI_Get_count(&st, (MPI_Datatype)(intptr_t)0x999, &n));
  CASE("bsend-without-buffer", MPI_Bsend(buf, 1, MPI_INT, 0, 0, w));
  /* A message longer than the receive buffer. */
  CASE("recv-truncated",
       MPI_Sendrecv(buf, 4, MPI_INT, rank, 7, out, 2, MPI_INT, rank, 7, w, &st));

  /* Collectives, the same bad argument on every rank. */
  CASE("bcast-root-too-large", MPI_Bcast(buf, 1, MPI_INT, size, w));
  CASE("bcast-root-negative", MPI_Bcast(buf, 1, MPI_INT, -1, w));
  CASE("bcast-negative-count", MPI_Bcast(buf, -1, MPI_INT, 0, w));
  CASE("bcast-null-type", MPI_Bcast(buf, 1, MPI_DATATYPE_NULL, 0, w));
  CASE("bcast-null-comm", MPI_Bcast(buf, 1, MPI_INT, 0, MPI_COMM_NULL));
  CASE("barrier-null-comm", MPI_Barrier(MPI_COMM_NULL));
  CASE("reduce-root-too-large", MPI_Reduce(buf, out, 1, MPI_INT, MPI_SUM, size, w));
  CASE("reduce-null-op", MPI_Reduce(buf, out, 1, MPI_INT, MPI_OP_NULL, 0, w));
  CASE("allreduce-null-op", MPI_Allreduce(buf, out, 1, MPI_INT, MPI_OP_NULL, w));
  CASE("allreduce-band-on-double", MPI_Allreduce(buf, out, 1, MPI_DOUBLE, MPI_BAND, w));
  CASE("allreduce-negative-count", MPI_Allreduce(buf, out, -2, MPI_INT, MPI_SUM, w));
  CASE("allreduce-null-type", MPI_Allreduce(buf, out, 1, MPI_DATATYPE_NULL, MPI_SUM, w));
  CASE("allreduce-aliased", MPI_Allreduce(buf, buf, 1, MPI_INT, MPI_SUM, w));
  CASE("alltoall-aliased", MPI_Alltoall(buf, 1, MPI_INT, buf, 1, MPI_INT, w));
  CASE("allgather-aliased", MPI_Allgather(buf, 1, MPI_INT, buf, 1, MPI_INT, w));
  CASE("scan-aliased", MPI_Scan(buf, buf, 1, MPI_INT, MPI_SUM, w));
  CASE("exscan-aliased", MPI_Exscan(buf, buf, 1, MPI_INT, MPI_SUM, w));
  CASE("reduce-scatter-block-aliased",
       MPI_Reduce_scatter_block(buf, buf, 1, MPI_INT, MPI_SUM, w));
  for (int i = 0; i < size; i++) counts[i] = 1, displs[i] = i;
  CASE("reduce-scatter-aliased", MPI_Reduce_scatter(buf, buf, counts, MPI_INT, MPI_SUM, w));
  CASE("allgatherv-aliased",
       MPI_Allgatherv(buf, 1, MPI_INT, buf, counts, displs, MPI_INT, w));
  CASE("alltoallv-aliased",
       MPI_Alltoallv(buf, counts, displs, MPI_INT, buf, counts, displs, MPI_INT, w));
  CASE("reduce-aliased-at-root", MPI_Reduce(buf, buf, 1, MPI_INT, MPI_SUM, 0, self));
  CASE("gather-aliased-at-root", MPI_Gather(buf, 1, MPI_INT, buf, 1, MPI_INT, 0, self));
  CASE("scatter-aliased-at-root", MPI_Scatter(buf, 1, MPI_INT, buf, 1, MPI_INT, 0, self));
  CASE("iallreduce-aliased", MPI_Iallreduce(buf, buf, 1, MPI_INT, MPI_SUM, w, &req));
  CASE("ialltoall-aliased", MPI_Ialltoall(buf, 1, MPI_INT, buf, 1, MPI_INT, w, &req));
  CASE("iallreduce-null-request", MPI_Iallreduce(buf, out, 1, MPI_INT, MPI_SUM, w, NULL));
  CASE("ibarrier-null-request", MPI_Ibarrier(w, NULL));
  CASE("gather-root-too-large", MPI_Gather(buf, 1, MPI_INT, out, 1, MPI_INT, size, w));
  CASE("scatter-negative-count", MPI_Scatter(buf, -1, MPI_INT, out, -1, MPI_INT, 0, w));
  counts[0] = -1;
  CASE("alltoallv-negative-count",
       MPI_Alltoallv(buf, counts, displs, MPI_INT, out, counts, displs, MPI_INT, w));
  counts[0] = 1;

  /* Communicators and groups. */
  CASE("comm-rank-null-comm", MPI_Comm_rank(MPI_COMM_NULL, &n));
  CASE("comm-rank-null-result", MPI_Comm_rank(w, NULL));
  CASE("comm-size-null-result", MPI_Comm_size(w, NULL));
  CASE("comm-dup-null-comm", MPI_Comm_dup(MPI_COMM_NULL, &newcomm));
  CASE("comm-split-null-comm", MPI_Comm_split(MPI_COMM_NULL, 0, 0, &newcomm));
  MPI_Comm nullc = MPI_COMM_NULL;
  CASE("comm-free-null", MPI_Comm_free(&nullc));
  MPI_Comm wc = MPI_COMM_WORLD;
  CASE("comm-free-world", MPI_Comm_free(&wc));
  MPI_Comm_group(w, &wg);
  int bad_ranks[1] = {size};
  CASE("group-incl-rank-too-large", MPI_Group_incl(wg, 1, bad_ranks, &g));
  CASE("group-rank-null-group", MPI_Group_rank(MPI_GROUP_NULL, &n));
  CASE("comm-create-null-group", MPI_Comm_create(w, MPI_GROUP_NULL, &newcomm));
  CASE("comm-set-errhandler-null", MPI_Comm_set_errhandler(w, MPI_ERRHANDLER_NULL));
  CASE("comm-get-name-null-name", MPI_Comm_get_name(w, NULL, &n));
  CASE("comm-compare-null-comm", MPI_Comm_compare(MPI_COMM_NULL, w, &n));

  /* Datatypes and operations. */
  CASE("type-contiguous-negative-count", MPI_Type_contiguous(-1, MPI_INT, &t));
  CASE("type-contiguous-null-type", MPI_Type_contiguous(2, MPI_DATATYPE_NULL, &t));
  CASE("type-vector-negative-count", MPI_Type_vector(-1, 1, 1, MPI_INT, &t));
  MPI_Datatype nullt = MPI_DATATYPE_NULL, intt = MPI_INT;
  CASE("type-commit-null-type", MPI_Type_commit(&nullt));
  CASE("type-free-predefined", MPI_Type_free(&intt));
  CASE("type-size-null-type", MPI_Type_size(MPI_DATATYPE_NULL, &n));
  CASE("type-size-null-result", MPI_Type_size(MPI_INT, NULL));
  MPI_Op sum = MPI_SUM;
  CASE("op-free-predefined", MPI_Op_free(&sum));
  CASE("op-create-null-function", MPI_Op_create(NULL, 1, &op));
  (void)noop;
  CASE("reduce-local-null-op", MPI_Reduce_local(buf, out, 1, MPI_INT, MPI_OP_NULL));

  /* Environment. */
  CASE("get-processor-name-null-name", MPI_Get_processor_name(NULL, &n));
  CASE("get-processor-name-null-length", MPI_Get_processor_name(name, NULL));
  CASE("error-class-bad-code", MPI_Error_class(-5, &n));

  /* Topologies. */
  int dims[2] = {0, 0}, periods[2] = {0, 0};
  CASE("cart-create-negative-ndims", MPI_Cart_create(w, -1, dims, periods, 0, &newcomm));
  CASE("dims-create-negative-nodes", MPI_Dims_create(-1, 2, dims));
  CASE("cart-rank-not-cartesian", MPI_Cart_rank(w, dims, &n));

  /* Bad on one rank only: a receiver's count shorter than the root's (last: the others
   * have returned successfully and nothing else follows). */
  CASE_ON(1, "bcast-receiver-count-shorter",
          MPI_Bcast(buf, rank == 0 ? 4 : 1, MPI_INT, 0, w));
  MPI_Barrier(w);
  if (rank == 0) printf("ALL CASES DONE\n");
  MPI_Finalize();
  return 0;
}
