/* C half of types_rma_io.f90: the handles a Fortran program passes convert to the C
 * handles they name (MPI_Comm_f2c ...) and back, a Fortran status converts both ways, and
 * MPI_F_STATUS_IGNORE is the address of Fortran's MPI_STATUS_IGNORE. Returns 0 or the
 * number of the first failed check. */
#include <mpi.h>
#include <stdio.h>

int c_roundtrip_(MPI_Fint *comm, MPI_Fint *type, MPI_Fint *op, MPI_Fint *fstatus,
                 MPI_Fint *fignore) {
  MPI_Comm c = MPI_Comm_f2c(*comm);
  if (c != MPI_COMM_WORLD) return 1;
  if (MPI_Comm_c2f(c) != *comm) return 2;
  if (MPI_Type_f2c(*type) != MPI_INTEGER || MPI_Type_c2f(MPI_INTEGER) != *type) return 3;
  if (MPI_Op_f2c(*op) != MPI_SUM || MPI_Op_c2f(MPI_SUM) != *op) return 4;
  /* A created handle: a duplicate communicator survives the round trip and works. */
  MPI_Comm dup;
  MPI_Comm_dup(c, &dup);
  MPI_Fint f = MPI_Comm_c2f(dup);
  int n = 0, m = 0;
  MPI_Comm_size(MPI_Comm_f2c(f), &n);
  MPI_Comm_size(c, &m);
  if (MPI_Comm_f2c(f) != dup || n != m) return 5;
  MPI_Comm_free(&dup);
  MPI_Status s;
  if (MPI_Status_f2c(fstatus, &s) != MPI_SUCCESS) return 6;
  if (s.MPI_SOURCE != fstatus[MPI_F_SOURCE] || s.MPI_TAG != fstatus[MPI_F_TAG]) return 7;
  MPI_Fint back[MPI_F_STATUS_SIZE];
  if (MPI_Status_c2f(&s, back) != MPI_SUCCESS) return 8;
  for (int i = 0; i < MPI_F_STATUS_SIZE; i++)
    if (back[i] != fstatus[i]) return 9;
  if (fignore != MPI_F_STATUS_IGNORE) return 10;
  return 0;
}

/* Attributes across languages (MPI-4.1 §19.3.7): one set from Fortran reads in C as a
 * pointer to its INTEGER(KIND=MPI_ADDRESS_KIND) value; one set from C (here a pointer to
 * `c_value`) reads in Fortran as that address. Returns 0 or the first failed check. */
static MPI_Aint c_value = 77;
int c_attr_(MPI_Fint *fkeyval, MPI_Aint *expected, MPI_Fint *ckeyval, MPI_Aint *caddr) {
  void *v = NULL;
  int flag = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, *fkeyval, &v, &flag);
  if (!flag) return 1;
  if (*(MPI_Aint *)v != *expected) return 2;
  int kv;
  if (MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &kv, NULL))
    return 3;
  if (MPI_Comm_set_attr(MPI_COMM_WORLD, kv, &c_value)) return 4;
  *ckeyval = kv;
  *caddr = (MPI_Aint)&c_value;
  return 0;
}
