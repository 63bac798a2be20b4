! The mpi_f08 module: handle types, TYPE(MPI_Status), optional ierror, p2p with status
! fields and MPI_ANY_SOURCE, collectives with MPI_IN_PLACE and a user operation, a derived
! type, a communicator split, MPI_Status_f2f08/f082f. Every check stops with exit code 1.
module f08_ops
  use mpi_f08
  use, intrinsic :: iso_c_binding, only: c_ptr, c_f_pointer
  implicit none
contains
  subroutine prod_plus_one(invec, inoutvec, len, datatype)
    type(c_ptr), value :: invec, inoutvec
    integer :: len
    type(MPI_Datatype) :: datatype
    integer, pointer :: a(:), b(:)
    if (datatype /= MPI_INTEGER) error stop 'prod_plus_one: datatype is not MPI_INTEGER'
    call c_f_pointer(invec, a, (/ len /))
    call c_f_pointer(inoutvec, b, (/ len /))
    b = a + b
  end subroutine prod_plus_one
end module f08_ops

program f08
  use mpi_f08
  use f08_ops
  implicit none
  integer :: rank, size, i, ierr, next, prev, count, fstat(MPI_STATUS_SIZE)
  type(MPI_Status) :: status, st2
  type(MPI_Request) :: reqs(2)
  type(MPI_Comm) :: half
  type(MPI_Datatype) :: pair
  type(MPI_Op) :: op
  integer :: a(5), b(5)
  real :: r(3), q(3)
  type(MPI_Info) :: info
  integer(kind=MPI_ADDRESS_KIND) :: aval
  logical :: flag

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  call check(ierr == MPI_SUCCESS, 'comm_size ierror')
  next = mod(rank + 1, size)
  prev = mod(rank + size - 1, size)

  ! p2p: status fields, MPI_ANY_SOURCE, zero-length.
  a = (/ (rank * 10 + i, i = 1, 5) /)
  call MPI_Sendrecv(a, 5, MPI_INTEGER, next, 4, b, 5, MPI_INTEGER, MPI_ANY_SOURCE, &
                    MPI_ANY_TAG, MPI_COMM_WORLD, status)
  call check(status%MPI_SOURCE == prev .and. status%MPI_TAG == 4, 'status fields')
  call MPI_Get_count(status, MPI_INTEGER, count)
  call check(count == 5 .and. b(5) == prev * 10 + 5, 'sendrecv')
  call MPI_Irecv(b, 0, MPI_INTEGER, prev, 5, MPI_COMM_WORLD, reqs(1))
  call MPI_Isend(a, 0, MPI_INTEGER, next, 5, MPI_COMM_WORLD, reqs(2))
  call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE)
  call check(reqs(1) == MPI_REQUEST_NULL .and. reqs(2) == MPI_REQUEST_NULL, 'waitall')
  r = (/ 1.5, 2.5, real(rank) /)
  call MPI_Send(r, 3, MPI_REAL, next, 6, MPI_COMM_WORLD)
  call MPI_Recv(q, 3, MPI_REAL, MPI_ANY_SOURCE, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE)
  call check(q(3) == real(prev) .and. q(1) == 1.5, 'send/recv real')

  ! Status conversions.
  call MPI_Status_f082f(status, fstat)
  call check(fstat(MPI_SOURCE) == prev .and. fstat(MPI_TAG) == 4, 'status_f082f')
  call MPI_Status_f2f08(fstat, st2)
  call check(st2%MPI_SOURCE == prev .and. st2%MPI_TAG == 4, 'status_f2f08')

  ! Collectives.
  a(1) = rank
  call MPI_Allreduce(MPI_IN_PLACE, a, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  call check(a(1) == size * (size - 1) / 2, 'allreduce in place')
  call MPI_Op_create(prod_plus_one, .true., op)
  a(1:2) = (/ rank, 1 /)
  call MPI_Allreduce(a, b, 2, MPI_INTEGER, op, MPI_COMM_WORLD)
  call check(b(1) == size * (size - 1) / 2 .and. b(2) == size, 'user op')
  call MPI_Op_free(op)
  b = -1
  call MPI_Bcast(b, 5, MPI_INTEGER, 0, MPI_COMM_WORLD)
  a = 0
  if (rank == 0) a = (/ (i, i = 1, 5) /)
  call MPI_Bcast(a, 5, MPI_INTEGER, 0, MPI_COMM_WORLD)
  call check(a(5) == 5, 'bcast')

  ! A derived type: pairs of integers, every other one.
  call MPI_Type_vector(2, 2, 3, MPI_INTEGER, pair)
  call MPI_Type_commit(pair)
  a = (/ (rank * 10 + i, i = 1, 5) /)
  b = -1
  call MPI_Sendrecv(a, 1, pair, next, 7, b, 4, MPI_INTEGER, prev, 7, MPI_COMM_WORLD, status)
  call check(b(1) == prev * 10 + 1 .and. b(2) == prev * 10 + 2 .and. &
             b(3) == prev * 10 + 4 .and. b(4) == prev * 10 + 5, 'vector type')
  call MPI_Type_free(pair)
  call check(pair == MPI_DATATYPE_NULL, 'type_free')

  ! Communicators.
  call MPI_Comm_split(MPI_COMM_WORLD, mod(rank, 2), rank, half)
  call MPI_Comm_size(half, i)
  call check(i == (size + 1 - mod(rank, 2)) / 2, 'split')
  call MPI_Comm_free(half)
  call check(half == MPI_COMM_NULL, 'comm_free')

  ! Procedures written by hand in mpi_f08.
  call MPI_Info_create_env(info)
  call check(info /= MPI_INFO_NULL, 'info_create_env')
  call MPI_Info_free(info)
  call MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, aval, flag)
  call check(flag .and. aval >= 32767, 'MPI_TAG_UB')
  call MPI_Pcontrol(1)
  call MPI_F_sync_reg(a)
  call check(MPI_Wtime() > 0 .and. MPI_Wtick() > 0, 'wtime')

  call MPI_Finalize()
  if (rank == 0) print '(a,i0,a)', 'f08: ok at ', size, ' ranks'
contains
  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    if (.not. ok) then
      write(0, '(a,i0,2a)') 'f08: rank ', rank, ': FAILED: ', what
      call MPI_Abort(MPI_COMM_WORLD, 1)
      stop 1
    end if
  end subroutine check
end program f08
