/* where: each rank prints where it runs and what it was given, one line each:
 *
 *   rank=R size=N node=NAME cpus=LIST var=$WHERE_VAR stdin=BYTES sum=S
 *
 * node is MPI_Get_processor_name (the host's name in the host list), cpus the CPUs the rank
 * may run on (one after --bind-to core), var the variable WHERE_VAR ("-" when unset),
 * stdin the bytes the rank read from its stdin (with the argument "stdin"; "-" otherwise),
 * and sum an MPI_Allreduce of the ranks (checked: the program fails if it is wrong).
 *
 *   mpicc crates/weft-mpi/examples/c/where.c -o where && mpiexec -n 4 ./where
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The CPUs this process may use, as "0-3,6". */
static void cpu_list(char *out, size_t len) {
    cpu_set_t set;
    out[0] = '\0';
    if (sched_getaffinity(0, sizeof set, &set) != 0) {
        snprintf(out, len, "?");
        return;
    }
    size_t used = 0;
    for (int c = 0; c < CPU_SETSIZE; c++) {
        if (!CPU_ISSET(c, &set)) continue;
        int end = c;
        while (end + 1 < CPU_SETSIZE && CPU_ISSET(end + 1, &set)) end++;
        int n = (c == end) ? snprintf(out + used, len - used, "%s%d", used ? "," : "", c)
                           : snprintf(out + used, len - used, "%s%d-%d", used ? "," : "", c, end);
        if (n < 0 || (size_t)n >= len - used) break;
        used += (size_t)n;
        c = end;
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size, len;
    char node[MPI_MAX_PROCESSOR_NAME], cpus[256], input[32];
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_processor_name(node, &len);
    cpu_list(cpus, sizeof cpus);
    snprintf(input, sizeof input, "-");
    if (argc > 1 && strcmp(argv[1], "stdin") == 0) {
        char buf[4096];
        long total = 0;
        size_t n;
        while ((n = fread(buf, 1, sizeof buf, stdin)) > 0) total += (long)n;
        snprintf(input, sizeof input, "%ld", total);
    }
    long mine = rank, sum = -1;
    MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    const char *var = getenv("WHERE_VAR");
    printf("rank=%d size=%d node=%s cpus=%s var=%s stdin=%s sum=%ld\n", rank, size, node, cpus,
           var ? var : "-", input, sum);
    fflush(stdout);
    if (sum != (long)size * (size - 1) / 2) {
        fprintf(stderr, "where: rank %d: allreduce gave %ld\n", rank, sum);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    MPI_Finalize();
    return 0;
}
