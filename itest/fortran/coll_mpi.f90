! Collectives through `use mpi`: bcast, reduce and allreduce (predefined and user
! operations, MPI_IN_PLACE), gather(v), scatter(v), allgather(v), alltoall(v), scan,
! reduce_scatter_block, nonblocking forms, communicator split/dup and groups,
! attribute keyvals with Fortran copy/delete procedures (and the predefined ones), a Fortran
! error handler. Every check stops the job with exit code 1.
module user_ops
  use mpi, only: MPI_INTEGER, MPI_DOUBLE_PRECISION
  implicit none
contains
  ! inoutvec = invec * 10 + inoutvec: not commutative, so the order of ranks shows.
  subroutine shift_add(invec, inoutvec, len, datatype)
    integer :: len, datatype
    integer :: invec(len), inoutvec(len)
    integer :: i
    ! The datatype arrives as the Fortran handle.
    if (datatype /= MPI_INTEGER) error stop 'shift_add: datatype is not MPI_INTEGER'
    do i = 1, len
      inoutvec(i) = invec(i) * 10 + inoutvec(i)
    end do
  end subroutine shift_add
  subroutine max_abs(invec, inoutvec, len, datatype)
    integer :: len, datatype
    double precision :: invec(len), inoutvec(len)
    integer :: i
    if (datatype /= MPI_DOUBLE_PRECISION) error stop 'max_abs: not MPI_DOUBLE_PRECISION'
    do i = 1, len
      inoutvec(i) = max(abs(invec(i)), abs(inoutvec(i)))
    end do
  end subroutine max_abs
  ! Attribute copy: the duplicate gets the value plus the extra state; delete counts.
  subroutine copy_plus(oldcomm, keyval, extra, valin, valout, flag, ierr)
    use mpi, only: MPI_ADDRESS_KIND, MPI_SUCCESS
    integer :: oldcomm, keyval, ierr
    integer(kind=MPI_ADDRESS_KIND) :: extra, valin, valout
    logical :: flag
    if (oldcomm == keyval) error stop 'copy_plus: oldcomm and keyval mixed up'
    valout = valin + extra
    flag = .true.
    ierr = MPI_SUCCESS
  end subroutine copy_plus
  subroutine delete_count(comm, keyval, val, extra, ierr)
    use mpi, only: MPI_ADDRESS_KIND, MPI_SUCCESS
    integer :: comm, keyval, ierr
    integer(kind=MPI_ADDRESS_KIND) :: val, extra
    integer :: deletes
    common /counts/ deletes
    if (comm == keyval .or. extra /= 5) error stop 'delete_count: wrong arguments'
    deletes = deletes + int(val)
    ierr = MPI_SUCCESS
  end subroutine delete_count
  ! Error handler: records the error code it saw.
  subroutine record_error(comm, code)
    integer :: comm, code
    integer :: seen_comm, seen_code
    common /errors/ seen_comm, seen_code
    seen_comm = comm
    seen_code = code
  end subroutine record_error
end module user_ops

program coll_mpi
  use mpi
  use user_ops
  implicit none
  integer :: rank, size, ierr, i, j, op, op2, comm2, half, hrank, hsize, grp, wgrp, req
  integer :: res, expect
  integer, allocatable :: a(:), b(:), counts(:), displs(:)
  double precision :: x(3), y(3)
  integer :: status(MPI_STATUS_SIZE), ranks1(1), ranks2(1)
  integer :: key, errh, deletes, seen_comm, seen_code
  integer(kind=MPI_ADDRESS_KIND) :: aval
  logical :: flag
  common /counts/ deletes
  common /errors/ seen_comm, seen_code

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  allocate(a(size * 5 + 7), b(size * 5 + 7), counts(size), displs(size))

  ! Bcast of an odd size from the last rank.
  a = -1
  if (rank == size - 1) a(1:7) = (/ (i * 3, i = 1, 7) /)
  call MPI_Bcast(a, 7, MPI_INTEGER, size - 1, MPI_COMM_WORLD, ierr)
  do i = 1, 7
    call check(a(i) == 3 * i, 'bcast')
  end do

  ! Reduce / allreduce, predefined ops, MPI_IN_PLACE.
  a(1) = rank + 1
  a(2) = rank
  call MPI_Allreduce(a, b, 2, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(b(1) == size * (size + 1) / 2 .and. b(2) == size * (size - 1) / 2, 'allreduce')
  a(1) = rank
  call MPI_Allreduce(MPI_IN_PLACE, a, 1, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD, ierr)
  call check(a(1) == size - 1, 'allreduce in place')
  a(1) = rank + 1
  if (rank == 0) then
    call MPI_Reduce(MPI_IN_PLACE, a, 1, MPI_INTEGER, MPI_PROD, 0, MPI_COMM_WORLD, ierr)
    expect = 1
    do i = 1, size
      expect = expect * i
    end do
    call check(a(1) == expect, 'reduce in place')
  else
    call MPI_Reduce(a, b, 1, MPI_INTEGER, MPI_PROD, 0, MPI_COMM_WORLD, ierr)
  end if

  ! User operations: non-commutative on integers (rank order), commutative on doubles.
  call MPI_Op_create(shift_add, .false., op, ierr)
  call check(ierr == MPI_SUCCESS, 'op_create')
  a(1) = rank + 1
  a(2) = 1
  call MPI_Allreduce(a, b, 2, MPI_INTEGER, op, MPI_COMM_WORLD, ierr)
  ! Ranks combine in order: r0 op (r1 op (...)) = sum of (i+1) * 10^(size-1-i).
  expect = 0
  res = 0
  do i = 0, size - 1
    expect = expect * 10 + (i + 1)
    res = res * 10 + 1
  end do
  call check(b(1) == expect .and. b(2) == res, 'user op (non-commutative)')
  call MPI_Op_create(max_abs, .true., op2, ierr)
  x = (/ dble(rank), -dble(rank) * 2, 0.5d0 /)
  call MPI_Allreduce(x, y, 3, MPI_DOUBLE_PRECISION, op2, MPI_COMM_WORLD, ierr)
  call check(y(1) == size - 1 .and. y(2) == 2 * (size - 1) .and. y(3) == 0.5d0, 'user op 2')
  call MPI_Op_free(op, ierr)
  call check(op == MPI_OP_NULL, 'op_free')
  call MPI_Op_free(op2, ierr)

  ! Scan and exscan-free forms.
  a(1) = rank + 1
  call MPI_Scan(a, b, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(b(1) == (rank + 1) * (rank + 2) / 2, 'scan')

  ! Gather / scatter / allgather / alltoall.
  a(1) = rank * 7
  call MPI_Gather(a, 1, MPI_INTEGER, b, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    do i = 1, size
      call check(b(i) == (i - 1) * 7, 'gather')
    end do
  end if
  do i = 1, size
    a(i) = i * 11
  end do
  call MPI_Scatter(a, 1, MPI_INTEGER, b, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  call check(b(1) == (rank + 1) * 11, 'scatter')
  a(1) = rank
  call MPI_Allgather(a, 1, MPI_INTEGER, b, 1, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  do i = 1, size
    call check(b(i) == i - 1, 'allgather')
  end do
  do i = 1, size
    a(i) = rank * 1000 + (i - 1)
  end do
  call MPI_Alltoall(a, 1, MPI_INTEGER, b, 1, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  do i = 1, size
    call check(b(i) == (i - 1) * 1000 + rank, 'alltoall')
  end do

  ! v-forms: rank i contributes i+1 elements (rank 0 one, ...), zero-length allowed below.
  do i = 1, size
    counts(i) = mod(i - 1, 3)
  end do
  displs(1) = 0
  do i = 2, size
    displs(i) = displs(i - 1) + counts(i - 1)
  end do
  a(1:counts(rank + 1)) = rank
  b = -1
  call MPI_Allgatherv(a, counts(rank + 1), MPI_INTEGER, b, counts, displs, MPI_INTEGER, &
                      MPI_COMM_WORLD, ierr)
  do i = 1, size
    do j = 1, counts(i)
      call check(b(displs(i) + j) == i - 1, 'allgatherv')
    end do
  end do
  b = -1
  call MPI_Gatherv(a, counts(rank + 1), MPI_INTEGER, b, counts, displs, MPI_INTEGER, &
                   size - 1, MPI_COMM_WORLD, ierr)
  if (rank == size - 1) then
    do i = 1, size
      do j = 1, counts(i)
        call check(b(displs(i) + j) == i - 1, 'gatherv')
      end do
    end do
  end if
  do i = 1, size * 5 + 7
    a(i) = i
  end do
  b = -1
  call MPI_Scatterv(a, counts, displs, MPI_INTEGER, b, counts(rank + 1), MPI_INTEGER, 0, &
                    MPI_COMM_WORLD, ierr)
  do j = 1, counts(rank + 1)
    call check(b(j) == displs(rank + 1) + j, 'scatterv')
  end do

  ! Reduce_scatter_block in place.
  do i = 1, size
    a(i) = i
  end do
  call MPI_Reduce_scatter_block(MPI_IN_PLACE, a, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(a(1) == (rank + 1) * size, 'reduce_scatter_block in place')

  ! Nonblocking collectives.
  a(1) = rank
  call MPI_Iallreduce(a, b, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, req, ierr)
  call MPI_Wait(req, status, ierr)
  call MPI_F_sync_reg(b)
  call check(b(1) == size * (size - 1) / 2, 'iallreduce')
  call MPI_Ibarrier(MPI_COMM_WORLD, req, ierr)
  call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
  call check(req == MPI_REQUEST_NULL, 'ibarrier')

  ! Communicators and groups.
  call MPI_Comm_split(MPI_COMM_WORLD, mod(rank, 2), -rank, half, ierr)
  call MPI_Comm_rank(half, hrank, ierr)
  call MPI_Comm_size(half, hsize, ierr)
  call check(hsize == (size + 1 - mod(rank, 2)) / 2, 'split size')
  call MPI_Allreduce(rank, res, 1, MPI_INTEGER, MPI_MIN, half, ierr)
  call check(res == mod(rank, 2), 'split members')
  call MPI_Comm_dup(half, comm2, ierr)
  call MPI_Comm_compare(half, comm2, res, ierr)
  call check(res == MPI_CONGRUENT, 'dup compare')
  call MPI_Comm_set_name(comm2, 'fortran half', ierr)
  call MPI_Comm_free(comm2, ierr)
  call check(comm2 == MPI_COMM_NULL, 'comm_free')
  call MPI_Comm_group(MPI_COMM_WORLD, wgrp, ierr)
  call MPI_Comm_group(half, grp, ierr)
  ranks1(1) = 0
  call MPI_Group_translate_ranks(grp, 1, ranks1, wgrp, ranks2, ierr)
  ! Keys are -rank: local rank 0 is the highest world rank of the same parity.
  call check(ranks2(1) == size - 1 - mod(size - 1 - mod(rank, 2), 2), 'translate_ranks')
  call MPI_Group_free(grp, ierr)
  call MPI_Group_free(wgrp, ierr)
  call MPI_Comm_free(half, ierr)

  ! Keyvals with Fortran copy and delete procedures, and the predefined ones.
  deletes = 0
  call MPI_Comm_create_keyval(copy_plus, delete_count, key, 5_MPI_ADDRESS_KIND, ierr)
  call check(ierr == MPI_SUCCESS, 'comm_create_keyval')
  aval = 100
  call MPI_Comm_set_attr(MPI_COMM_WORLD, key, aval, ierr)
  call MPI_Comm_dup(MPI_COMM_WORLD, comm2, ierr)
  call MPI_Comm_get_attr(comm2, key, aval, flag, ierr)
  call check(flag .and. aval == 105, 'attribute copied by a Fortran procedure')
  call MPI_Comm_free(comm2, ierr)
  call check(deletes == 105, 'attribute deleted by a Fortran procedure')
  call MPI_Comm_delete_attr(MPI_COMM_WORLD, key, ierr)
  call check(deletes == 205, 'delete_attr')
  call MPI_Comm_free_keyval(key, ierr)
  call MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, key, &
                              0_MPI_ADDRESS_KIND, ierr)
  call MPI_Comm_set_attr(MPI_COMM_WORLD, key, aval, ierr)
  call MPI_Comm_dup(MPI_COMM_WORLD, comm2, ierr)
  call MPI_Comm_get_attr(comm2, key, aval, flag, ierr)
  call check(.not. flag, 'MPI_COMM_NULL_COPY_FN copies nothing')
  call MPI_Comm_free(comm2, ierr)
  call MPI_Comm_delete_attr(MPI_COMM_WORLD, key, ierr)
  call MPI_Comm_free_keyval(key, ierr)
  call MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, aval, flag, ierr)
  call check(flag .and. aval >= 32767, 'MPI_TAG_UB')

  ! A Fortran error handler sees the communicator and the error code.
  call MPI_Comm_create_errhandler(record_error, errh, ierr)
  call check(ierr == MPI_SUCCESS, 'comm_create_errhandler')
  call MPI_Comm_dup(MPI_COMM_WORLD, comm2, ierr)
  call MPI_Comm_set_errhandler(comm2, errh, ierr)
  seen_comm = -1
  seen_code = MPI_SUCCESS
  call MPI_Send(a, 1, MPI_INTEGER, size + 5, 0, comm2, ierr)
  call check(ierr /= MPI_SUCCESS .and. seen_code == ierr .and. seen_comm == comm2, &
             'Fortran error handler called')
  call MPI_Error_class(seen_code, res, ierr)
  call check(res == MPI_ERR_RANK, 'error handler code is MPI_ERR_RANK')
  call MPI_Comm_free(comm2, ierr)
  call MPI_Errhandler_free(errh, ierr)

  call MPI_Finalize(ierr)
  if (rank == 0) print '(a,i0,a)', 'coll_mpi: ok at ', size, ' ranks'
contains
  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    if (.not. ok) then
      write(0, '(a,i0,2a)') 'coll_mpi: rank ', rank, ': FAILED: ', what
      call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
      stop 1
    end if
  end subroutine check
end program coll_mpi
