C     Fixed-form FORTRAN 77 with mpif.h: a ring and an allreduce.
      PROGRAM RING
      IMPLICIT NONE
      INCLUDE 'mpif.h'
      INTEGER RANK, NP, IERR, NEXT, PREV, IVAL, JVAL, ISUM
      INTEGER STATUS(MPI_STATUS_SIZE)
      CALL MPI_INIT(IERR)
      CALL MPI_COMM_RANK(MPI_COMM_WORLD, RANK, IERR)
      CALL MPI_COMM_SIZE(MPI_COMM_WORLD, NP, IERR)
      NEXT = MOD(RANK + 1, NP)
      PREV = MOD(RANK + NP - 1, NP)
      IVAL = RANK + 100
      CALL MPI_SENDRECV(IVAL, 1, MPI_INTEGER, NEXT, 1, JVAL, 1,
     &     MPI_INTEGER, PREV, 1, MPI_COMM_WORLD, STATUS, IERR)
      IF (JVAL .NE. PREV + 100 .OR. STATUS(MPI_SOURCE) .NE. PREV) THEN
         WRITE(0, *) 'ring: FAILED: sendrecv on rank', RANK
         CALL MPI_ABORT(MPI_COMM_WORLD, 1, IERR)
      END IF
      CALL MPI_ALLREDUCE(IVAL, ISUM, 1, MPI_INTEGER, MPI_SUM,
     &     MPI_COMM_WORLD, IERR)
      IF (ISUM .NE. NP * 100 + NP * (NP - 1) / 2) THEN
         WRITE(0, *) 'ring: FAILED: allreduce on rank', RANK
         CALL MPI_ABORT(MPI_COMM_WORLD, 1, IERR)
      END IF
      CALL MPI_FINALIZE(IERR)
      IF (RANK .EQ. 0) WRITE(*, '(A,I0,A)') 'ring: ok at ', NP, ' ranks'
      END
