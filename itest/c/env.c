/* Environment, info, error strings, versions, attributes and the ABI queries. */
#include "check.h"
#include <string.h>

int main(int argc, char **argv) {
  int flag = 1, provided = -1;
  OK(MPI_Initialized(&flag));
  CHECK(flag == 0);
  OK(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
  CHECK(provided == MPI_THREAD_MULTIPLE);
  OK(MPI_Query_thread(&flag));
  CHECK(flag == provided);
  OK(MPI_Is_thread_main(&flag));
  CHECK(flag == 1);
  OK(MPI_Initialized(&flag));
  CHECK(flag == 1);

  int v = 0, sv = -1;
  OK(MPI_Get_version(&v, &sv));
  CHECK(v == 5 && sv == 0);
  OK(MPI_Abi_get_version(&v, &sv));
  CHECK(v == 1 && sv == 0);
  char lib[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  OK(MPI_Get_library_version(lib, &len));
  CHECK(len > 0 && strncmp(lib, "weft", 4) == 0 && (int)strlen(lib) == len);
  char host[MPI_MAX_PROCESSOR_NAME];
  OK(MPI_Get_processor_name(host, &len));
  CHECK(len > 0 && (int)strlen(host) == len);

  double t0 = MPI_Wtime();
  CHECK(MPI_Wtick() > 0 && MPI_Wtick() < 1e-3);
  double t1 = MPI_Wtime();
  CHECK(t1 >= t0 && t0 >= 0);

  char msg[MPI_MAX_ERROR_STRING];
  OK(MPI_Error_string(MPI_ERR_RANK, msg, &len));
  CHECK(len > 0 && strstr(msg, "rank") != NULL);
  int cls = -1;
  OK(MPI_Error_class(MPI_ERR_TRUNCATE, &cls));
  CHECK(cls == MPI_ERR_TRUNCATE);

  /* Predefined attributes. */
  int *ub = NULL;
  OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag));
  CHECK(flag == 1 && ub != NULL && *ub >= 32767);
  int *global = NULL;
  OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, &global, &flag));
  CHECK(flag == 1 && (*global == 0 || *global == 1));

  /* Info objects. */
  MPI_Info info, dup;
  OK(MPI_Info_create(&info));
  OK(MPI_Info_set(info, "alpha", "1"));
  OK(MPI_Info_set(info, "beta", "two"));
  OK(MPI_Info_set(info, "alpha", "one"));
  int nkeys = 0;
  OK(MPI_Info_get_nkeys(info, &nkeys));
  CHECK(nkeys == 2);
  char key[MPI_MAX_INFO_KEY], val[64];
  OK(MPI_Info_get_nthkey(info, 1, key));
  CHECK(strcmp(key, "beta") == 0);
  OK(MPI_Info_get(info, "alpha", sizeof val - 1, val, &flag));
  CHECK(flag == 1 && strcmp(val, "one") == 0);
  int buflen = sizeof val;
  OK(MPI_Info_get_string(info, "beta", &buflen, val, &flag));
  CHECK(flag == 1 && strcmp(val, "two") == 0 && buflen == 4);
  OK(MPI_Info_get_valuelen(info, "beta", &len, &flag));
  CHECK(flag == 1 && len == 3);
  OK(MPI_Info_dup(info, &dup));
  OK(MPI_Info_delete(info, "alpha"));
  OK(MPI_Info_get(info, "alpha", sizeof val - 1, val, &flag));
  CHECK(flag == 0);
  OK(MPI_Info_get(dup, "alpha", sizeof val - 1, val, &flag));
  CHECK(flag == 1);
  OK(MPI_Info_free(&info));
  CHECK(info == MPI_INFO_NULL);
  OK(MPI_Info_free(&dup));
  MPI_Info abi;
  OK(MPI_Abi_get_info(&abi));
  OK(MPI_Info_get(abi, "mpi_aint_size", sizeof val - 1, val, &flag));
  CHECK(flag == 1 && atoi(val) == (int)sizeof(MPI_Aint));
  OK(MPI_Info_free(&abi));

  void *mem = NULL;
  OK(MPI_Alloc_mem(1024, MPI_INFO_NULL, &mem));
  CHECK(mem != NULL);
  memset(mem, 7, 1024);
  OK(MPI_Free_mem(mem));

  CHECK(sizeof(MPI_Status) == 8 * sizeof(int));
  CHECK(sizeof(MPI_Comm) == sizeof(void *));

  OK(MPI_Finalized(&flag));
  CHECK(flag == 0);
  OK(MPI_Finalize());
  MPI_Finalized(&flag);
  CHECK(flag == 1);
  return 0;
}
