! Derived datatypes, one-sided communication and MPI-IO through `include 'mpif.h'`, and the
! C conversions of Fortran handles and statuses (c_side.c, built with weft's mpicc):
! vector and struct types (MPI_BOTTOM with absolute addresses), window fence put/get,
! accumulate, lock/unlock, win_allocate; file write_at_all / read_at_all with a view;
! attributes set in one language and read in the other.
! Every check stops the job with exit code 1.
program types_rma_io
  implicit none
  include 'mpif.h'
  integer :: rank, size, ierr, i, vec, st, next, prev, win, fh, ft, sz, intsize, res
  integer :: status(MPI_STATUS_SIZE), blens(2), types(2)
  integer(kind=MPI_ADDRESS_KIND) :: disps(2), lb, extent, winsize, target, base
  integer(kind=MPI_OFFSET_KIND) :: off
  integer :: m(4, 5), col(5), winbuf(16), got(16), fbuf(6), rbuf(6)
  double precision :: dval
  integer :: ival
  integer :: c_roundtrip, c_attr, fkey, ckey
  integer(kind=MPI_ADDRESS_KIND) :: aval, caddr
  logical :: flag
  external c_roundtrip, c_attr
  character(len=64) :: fname

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  next = mod(rank + 1, size)
  prev = mod(rank + size - 1, size)

  ! A row of a 4x5 column-major matrix: 5 elements with stride 4.
  call MPI_Type_vector(5, 1, 4, MPI_INTEGER, vec, ierr)
  call MPI_Type_commit(vec, ierr)
  call MPI_Type_size(vec, sz, ierr)
  call check(sz == 20, 'vector size')
  call MPI_Type_get_extent(vec, lb, extent, ierr)
  call check(lb == 0 .and. extent == 17 * 4, 'vector extent')
  m = reshape((/ (rank * 100 + i, i = 1, 20) /), (/ 4, 5 /))
  col = -1
  call MPI_Sendrecv(m(2, 1), 1, vec, next, 1, col, 5, MPI_INTEGER, prev, 1, &
                    MPI_COMM_WORLD, status, ierr)
  do i = 1, 5
    call check(col(i) == prev * 100 + 2 + (i - 1) * 4, 'vector data')
  end do
  call MPI_Type_free(vec, ierr)
  call check(vec == MPI_DATATYPE_NULL, 'type_free')

  ! A struct of absolute addresses (a DOUBLE PRECISION and an INTEGER) sent from MPI_BOTTOM.
  call MPI_Get_address(dval, disps(1), ierr)
  call MPI_Get_address(ival, disps(2), ierr)
  blens = 1
  types(1) = MPI_DOUBLE_PRECISION
  types(2) = MPI_INTEGER
  call MPI_Type_create_struct(2, blens, disps, types, st, ierr)
  call MPI_Type_commit(st, ierr)
  dval = rank + 0.25d0
  ival = rank * 3
  ! The values move through addresses the compiler does not see (MPI-4.1 §19.1.17).
  call MPI_F_sync_reg(dval)
  call MPI_F_sync_reg(ival)
  call MPI_Send(MPI_BOTTOM, 1, st, next, 2, MPI_COMM_WORLD, ierr)
  dval = -1
  ival = -1
  call MPI_F_sync_reg(dval)
  call MPI_F_sync_reg(ival)
  call MPI_Recv(MPI_BOTTOM, 1, st, prev, 2, MPI_COMM_WORLD, status, ierr)
  call MPI_F_sync_reg(dval)
  call MPI_F_sync_reg(ival)
  call check(dval == prev + 0.25d0 .and. ival == prev * 3, 'struct from MPI_BOTTOM')
  call MPI_Get_elements(status, st, res, ierr)
  call check(res == 2, 'get_elements')
  call MPI_Type_free(st, ierr)

  ! RMA: fence epochs with put, get and accumulate.
  call MPI_Type_size(MPI_INTEGER, intsize, ierr)
  winbuf = 0
  winsize = 16 * intsize
  call MPI_Win_create(winbuf, winsize, intsize, MPI_INFO_NULL, MPI_COMM_WORLD, win, ierr)
  call check(ierr == MPI_SUCCESS, 'win_create')
  call MPI_Win_fence(0, win, ierr)
  target = rank
  got(1:3) = (/ rank, rank + 1, rank + 2 /)
  call MPI_Put(got, 3, MPI_INTEGER, next, target, 3, MPI_INTEGER, win, ierr)
  call MPI_Win_fence(0, win, ierr)
  call MPI_F_sync_reg(winbuf)
  call check(winbuf(prev + 1) == prev .and. winbuf(prev + 3) == prev + 2, 'put data')
  call MPI_Win_fence(0, win, ierr)
  got = -1
  target = 0
  call MPI_Get(got, 16, MPI_INTEGER, next, target, 16, MPI_INTEGER, win, ierr)
  call MPI_Win_fence(0, win, ierr)
  call MPI_F_sync_reg(got)
  call check(got(rank + 1) == rank .and. got(rank + 3) == rank + 2, 'get data')
  ! Everyone adds rank+1 into element 16 of rank 0.
  target = 15
  ival = rank + 1
  call MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win, ierr)
  call MPI_Accumulate(ival, 1, MPI_INTEGER, 0, target, 1, MPI_INTEGER, MPI_SUM, win, ierr)
  call MPI_Win_unlock(0, win, ierr)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    call MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win, ierr)
    call MPI_Win_unlock(0, win, ierr)
    call MPI_F_sync_reg(winbuf)
    call check(winbuf(16) == size * (size + 1) / 2, 'accumulate')
  end if
  call MPI_Win_free(win, ierr)
  call check(win == MPI_WIN_NULL, 'win_free')

  ! RMA on allocated memory: base comes back as an address.
  call MPI_Win_allocate(winsize, intsize, MPI_INFO_NULL, MPI_COMM_WORLD, base, win, ierr)
  call check(ierr == MPI_SUCCESS .and. base /= 0, 'win_allocate')
  call MPI_Win_fence(0, win, ierr)
  ival = rank + 40
  target = 1
  call MPI_Put(ival, 1, MPI_INTEGER, next, target, 1, MPI_INTEGER, win, ierr)
  call MPI_Win_fence(0, win, ierr)
  got(1) = -1
  call MPI_Get(got, 1, MPI_INTEGER, rank, target, 1, MPI_INTEGER, win, ierr)
  call MPI_Win_fence(0, win, ierr)
  call MPI_F_sync_reg(got)
  call check(got(1) == prev + 40, 'win_allocate put/get')
  call MPI_Win_free(win, ierr)

  ! MPI-IO: each rank writes 6 integers at its own offset collectively, then reads back its
  ! neighbour's through a view.
  fname = 'weft-fortran-io.dat'
  call MPI_File_open(MPI_COMM_WORLD, fname, MPI_MODE_CREATE + MPI_MODE_RDWR, &
                     MPI_INFO_NULL, fh, ierr)
  call check(ierr == MPI_SUCCESS, 'file_open')
  fbuf = (/ (rank * 10 + i, i = 1, 6) /)
  off = rank * 6 * intsize
  call MPI_File_write_at_all(fh, off, fbuf, 6, MPI_INTEGER, status, ierr)
  call check(ierr == MPI_SUCCESS, 'write_at_all')
  call MPI_Get_count(status, MPI_INTEGER, res, ierr)
  call check(res == 6, 'write_at_all count')
  call MPI_File_sync(fh, ierr)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call MPI_File_sync(fh, ierr)
  rbuf = -1
  off = next * 6 * intsize
  call MPI_File_read_at_all(fh, off, rbuf, 6, MPI_INTEGER, MPI_STATUS_IGNORE, ierr)
  do i = 1, 6
    call check(rbuf(i) == next * 10 + i, 'read_at_all data')
  end do
  ! A view of every other integer, starting at the previous rank's block.
  call MPI_Type_vector(3, 1, 2, MPI_INTEGER, ft, ierr)
  call MPI_Type_commit(ft, ierr)
  off = prev * 6 * intsize
  call MPI_File_set_view(fh, off, MPI_INTEGER, ft, 'native', MPI_INFO_NULL, ierr)
  call check(ierr == MPI_SUCCESS, 'set_view')
  rbuf = -1
  off = 0
  call MPI_File_read_at(fh, off, rbuf, 3, MPI_INTEGER, status, ierr)
  do i = 1, 3
    call check(rbuf(i) == prev * 10 + 2 * i - 1, 'read through view')
  end do
  call MPI_File_get_size(fh, off, ierr)
  call check(off == size * 6 * intsize, 'file size')
  call MPI_File_close(fh, ierr)
  call check(fh == MPI_FILE_NULL, 'file_close')
  call MPI_Type_free(ft, ierr)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  if (rank == 0) call MPI_File_delete(fname, MPI_INFO_NULL, ierr)

  ! Attributes across languages (c_side.c).
  call MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, fkey, &
                              lb, ierr)
  aval = 123456789012_MPI_ADDRESS_KIND
  call MPI_Comm_set_attr(MPI_COMM_WORLD, fkey, aval, ierr)
  call check(c_attr(fkey, aval, ckey, caddr) == 0, 'Fortran attribute read from C')
  aval = 0
  call MPI_Comm_get_attr(MPI_COMM_WORLD, ckey, aval, flag, ierr)
  call check(flag .and. aval == caddr, 'C attribute read from Fortran')
  call MPI_Comm_get_attr(MPI_COMM_WORLD, fkey, aval, flag, ierr)
  call check(flag .and. aval == 123456789012_MPI_ADDRESS_KIND, 'Fortran attribute read back')
  call MPI_Comm_delete_attr(MPI_COMM_WORLD, fkey, ierr)
  call MPI_Comm_delete_attr(MPI_COMM_WORLD, ckey, ierr)
  call MPI_Comm_free_keyval(fkey, ierr)
  call MPI_Comm_free_keyval(ckey, ierr)

  ! Handles and statuses through C (c_side.c).
  call check(c_roundtrip(MPI_COMM_WORLD, MPI_INTEGER, MPI_SUM, status, MPI_STATUS_IGNORE) == 0, &
             'c2f/f2c round trips')

  call MPI_Finalize(ierr)
  if (rank == 0) print '(a,i0,a)', 'types_rma_io: ok at ', size, ' ranks'
contains
  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    if (.not. ok) then
      write(0, '(a,i0,2a)') 'types_rma_io: rank ', rank, ': FAILED: ', what
      call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
      stop 1
    end if
  end subroutine check
end program types_rma_io
