/* User error classes and codes (MPI_Add_error_class/code/string, MPI_Remove_error_*, with
 * MPI_Error_class and MPI_Error_string on them), MPI_INFO_ENV's keys, and the delete
 * callbacks of MPI_COMM_SELF's attributes at the start of MPI_Finalize, in reverse order of
 * setting. Rank-local: runs at any size. */
#include "check.h"
#include <string.h>

static int order[3], calls;
static int self_delete(MPI_Comm c, int k, void *v, void *extra) {
  (void)k, (void)extra;
  CHECK(c == MPI_COMM_SELF);
  if (calls < 3) order[calls] = (int)(long)v;
  calls++;
  return MPI_SUCCESS;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int size;
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  int cls, code, code2, got, len;
  char text[MPI_MAX_ERROR_STRING];
  OK(MPI_Add_error_class(&cls));
  CHECK(cls > MPI_ERR_LASTCODE);
  OK(MPI_Add_error_code(cls, &code));
  OK(MPI_Add_error_code(MPI_ERR_TAG, &code2));
  CHECK(code != cls && code2 != code && code > MPI_ERR_LASTCODE);
  OK(MPI_Error_class(code, &got));
  CHECK(got == cls);
  OK(MPI_Error_class(cls, &got));
  CHECK(got == cls);
  OK(MPI_Error_class(code2, &got));
  CHECK(got == MPI_ERR_TAG);
  OK(MPI_Error_string(code, text, &len));
  CHECK(len == 0); /* no string yet */
  OK(MPI_Add_error_string(code, "weft test code"));
  OK(MPI_Error_string(code, text, &len));
  CHECK(len == 14 && strcmp(text, "weft test code") == 0);
  OK(MPI_Error_string(MPI_ERR_TAG, text, &len));
  CHECK(len > 0 && strcmp(text, "weft test code") != 0);

  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  CHECK_RC(MPI_Add_error_code(cls + 1000, &got), MPI_ERR_ARG); /* not a class */
  CHECK_RC(MPI_Add_error_string(MPI_ERR_TAG, "x"), MPI_ERR_ARG); /* predefined */
  CHECK_RC(MPI_Remove_error_class(cls), MPI_ERR_ARG);           /* still has a code */
  CHECK_RC(MPI_Add_error_class(NULL), MPI_ERR_ARG);
  OK(MPI_Remove_error_string(code));
  OK(MPI_Remove_error_code(code));
  OK(MPI_Remove_error_code(code2));
  OK(MPI_Remove_error_class(cls));
  CHECK_RC(MPI_Error_class(code, &got), MPI_ERR_ARG); /* removed */

  /* MPI_INFO_ENV: how the process was started. */
  char val[MPI_MAX_INFO_VAL];
  int flag;
  OK(MPI_Info_get(MPI_INFO_ENV, "maxprocs", MPI_MAX_INFO_VAL - 1, val, &flag));
  CHECK(flag && atoi(val) == size);
  OK(MPI_Info_get(MPI_INFO_ENV, "command", MPI_MAX_INFO_VAL - 1, val, &flag));
  CHECK(flag && strstr(val, "errclass") != NULL);
  OK(MPI_Info_get(MPI_INFO_ENV, "thread_level", MPI_MAX_INFO_VAL - 1, val, &flag));
  CHECK(flag && strncmp(val, "MPI_THREAD_", 11) == 0);

  /* MPI_COMM_SELF's attributes are deleted at the start of MPI_Finalize, last set first. */
  int keys[3];
  for (int i = 0; i < 3; i++) {
    OK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, self_delete, &keys[i], NULL));
    OK(MPI_Comm_set_attr(MPI_COMM_SELF, keys[i], (void *)(long)(i + 1)));
  }
  MPI_Finalize();
  if (calls != 3 || order[0] != 3 || order[1] != 2 || order[2] != 1) {
    fprintf(stderr, "MPI_COMM_SELF delete callbacks: %d calls, order %d %d %d\n", calls, order[0],
            order[1], order[2]);
    return 3;
  }
  printf("errclass ok\n");
  return 0;
}
