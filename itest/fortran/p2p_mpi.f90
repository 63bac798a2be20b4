! Point-to-point through `use mpi`: blocking, nonblocking, persistent, probe, wait/test
! families, sendrecv, status fields, MPI_ANY_SOURCE, zero-length and odd sizes, and the
! handle conversions. Every check stops the job with a message and exit code 1.
program p2p_mpi
  use mpi
  implicit none
  integer :: rank, size, ierr, i, n, k, next, prev, count, idx, outcount
  integer :: status(MPI_STATUS_SIZE), statuses(MPI_STATUS_SIZE, 4)
  integer :: reqs(4), indices(4)
  integer, allocatable :: ibuf(:), jbuf(:)
  double precision :: d(7), e(7)
  logical :: flag
  character(len=MPI_MAX_PROCESSOR_NAME) :: pname
  character(len=MPI_MAX_ERROR_STRING) :: estr
  integer :: plen, elen, version, subversion, provided
  integer, parameter :: sizes(4) = (/ 0, 1, 7, 4099 /)
  integer :: greq_frees = 0

  call MPI_Init_thread(MPI_THREAD_FUNNELED, provided, ierr)
  call check(ierr == MPI_SUCCESS, 'init_thread')
  call MPI_Initialized(flag, ierr)
  call check(flag, 'initialized')
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  call MPI_Get_processor_name(pname, plen, ierr)
  call check(plen > 0 .and. len_trim(pname) == plen, 'processor name')
  call MPI_Get_version(version, subversion, ierr)
  call check(version == 5 .and. subversion == 0, 'version')
  call MPI_Error_string(MPI_ERR_TRUNCATE, estr, elen, ierr)
  call check(elen > 0 .and. elen == len_trim(estr), 'error string')
  call check(MPI_Wtick() > 0.0d0 .and. MPI_Wtime() > 0.0d0, 'wtime')

  next = mod(rank + 1, size)
  prev = mod(rank + size - 1, size)

  ! MPI_SIZEOF, and an f90 type as the old type of a constructor.
  call MPI_Sizeof(d, k, ierr)
  call check(k == 8 .and. ierr == MPI_SUCCESS, 'sizeof double precision')
  call MPI_Sizeof(n, k, ierr)
  call check(k == 4, 'sizeof integer')
  call MPI_Type_create_f90_real(15, MPI_UNDEFINED, idx, ierr)
  call MPI_Type_contiguous(3, idx, k, ierr)
  call check(ierr == MPI_SUCCESS, 'contiguous of an f90 type')
  call MPI_Type_commit(k, ierr)
  call MPI_Type_size(k, count, ierr)
  call check(count == 24, 'size of 3 REAL(15)')
  call MPI_Type_free(k, ierr)

  ! Info strings: blanks around keys and values go, a missing key leaves the value alone,
  ! MPI_INFO_GET_STRING's buflen counts characters (0 asks for the length only).
  call MPI_Info_create(k, ierr)
  call MPI_Info_set(k, '  colour ', ' blue  ', ierr)
  estr = 'canary'
  call MPI_Info_get(k, 'missing', MPI_MAX_INFO_VAL, estr, flag, ierr)
  call check(.not. flag .and. estr == 'canary', 'info_get of a missing key')
  call MPI_Info_get(k, 'colour', MPI_MAX_INFO_VAL, estr, flag, ierr)
  call check(flag .and. estr == 'blue', 'info_get')
  n = 0
  estr = 'canary'
  call MPI_Info_get_string(k, 'colour', n, estr, flag, ierr)
  call check(flag .and. n == 4 .and. estr == 'canary', 'info_get_string length')
  n = 2
  call MPI_Info_get_string(k, 'colour', n, estr, flag, ierr)
  call check(flag .and. n == 4 .and. estr == 'bl', 'info_get_string truncated')
  call MPI_Info_free(k, ierr)
  call check(k == MPI_INFO_NULL, 'info_free')

  ! Ring with odd sizes, zero-length included, MPI_ANY_SOURCE and status fields.
  do k = 1, 4
    n = sizes(k)
    allocate(ibuf(max(n, 1)), jbuf(max(n, 1)))
    do i = 1, n
      ibuf(i) = rank * 100000 + i + k
    end do
    jbuf = -1
    call MPI_Sendrecv(ibuf, n, MPI_INTEGER, next, 10 + k, jbuf, n, MPI_INTEGER, &
                      MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, status, ierr)
    call check(ierr == MPI_SUCCESS, 'sendrecv')
    call check(status(MPI_SOURCE) == prev, 'status source')
    call check(status(MPI_TAG) == 10 + k, 'status tag')
    call MPI_Get_count(status, MPI_INTEGER, count, ierr)
    call check(count == n, 'get_count')
    do i = 1, n
      call check(jbuf(i) == prev * 100000 + i + k, 'sendrecv data')
    end do
    deallocate(ibuf, jbuf)
  end do

  ! Nonblocking: irecv/isend, waitall with statuses, then waitany/testall/waitsome.
  d = (/ (dble(rank) + 0.5d0 * i, i = 1, 7) /)
  e = 0
  call MPI_Irecv(e, 7, MPI_DOUBLE_PRECISION, prev, 3, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_Isend(d, 7, MPI_DOUBLE_PRECISION, next, 3, MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_Waitall(2, reqs, statuses, ierr)
  call check(ierr == MPI_SUCCESS, 'waitall')
  call check(reqs(1) == MPI_REQUEST_NULL .and. reqs(2) == MPI_REQUEST_NULL, 'requests freed')
  call check(statuses(MPI_SOURCE, 1) == prev .and. statuses(MPI_TAG, 1) == 3, 'waitall status')
  do i = 1, 7
    call check(e(i) == dble(prev) + 0.5d0 * i, 'isend data')
  end do

  call MPI_Irecv(e, 7, MPI_DOUBLE_PRECISION, prev, 4, MPI_COMM_WORLD, reqs(1), ierr)
  reqs(2) = MPI_REQUEST_NULL
  call MPI_Send(d, 7, MPI_DOUBLE_PRECISION, next, 4, MPI_COMM_WORLD, ierr)
  call MPI_Waitany(2, reqs, idx, status, ierr)
  call check(idx == 1, 'waitany index is 1-based')
  call check(status(MPI_SOURCE) == prev, 'waitany status')

  call MPI_Irecv(e, 7, MPI_DOUBLE_PRECISION, prev, 5, MPI_COMM_WORLD, reqs(2), ierr)
  reqs(1) = MPI_REQUEST_NULL
  call MPI_Send(d, 7, MPI_DOUBLE_PRECISION, next, 5, MPI_COMM_WORLD, ierr)
  call MPI_Waitsome(2, reqs, outcount, indices, MPI_STATUSES_IGNORE, ierr)
  call check(outcount == 1 .and. indices(1) == 2, 'waitsome indices are 1-based')

  call MPI_Irecv(e, 7, MPI_DOUBLE_PRECISION, prev, 6, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_Send(d, 7, MPI_DOUBLE_PRECISION, next, 6, MPI_COMM_WORLD, ierr)
  flag = .false.
  do while (.not. flag)
    call MPI_Test(reqs(1), flag, status, ierr)
  end do
  call check(status(MPI_TAG) == 6, 'test status')

  ! Persistent requests.
  call MPI_Recv_init(e, 7, MPI_DOUBLE_PRECISION, prev, 7, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_Send_init(d, 7, MPI_DOUBLE_PRECISION, next, 7, MPI_COMM_WORLD, reqs(2), ierr)
  do k = 1, 3
    e = 0
    call MPI_Startall(2, reqs, ierr)
    call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE, ierr)
    ! The buffer changed outside the compiler's view (MPI-4.1 §19.1.17).
    call MPI_F_sync_reg(e)
    call check(e(7) == dble(prev) + 3.5d0, 'persistent data')
  end do
  call MPI_Request_free(reqs(1), ierr)
  call MPI_Request_free(reqs(2), ierr)
  call check(reqs(1) == MPI_REQUEST_NULL, 'request_free')

  ! Probe then receive what it announced.
  call MPI_Send(d, 3, MPI_DOUBLE_PRECISION, next, 8, MPI_COMM_WORLD, ierr)
  call MPI_Probe(MPI_ANY_SOURCE, 8, MPI_COMM_WORLD, status, ierr)
  call MPI_Get_count(status, MPI_DOUBLE_PRECISION, count, ierr)
  call check(count == 3 .and. status(MPI_SOURCE) == prev, 'probe')
  call MPI_Recv(e, count, MPI_DOUBLE_PRECISION, status(MPI_SOURCE), 8, MPI_COMM_WORLD, &
                MPI_STATUS_IGNORE, ierr)
  call check(e(3) == dble(prev) + 1.5d0, 'probe data')

  ! Truncation is an error the program sees (errors return on the communicator).
  call MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN, ierr)
  call MPI_Send(d, 7, MPI_DOUBLE_PRECISION, next, 9, MPI_COMM_WORLD, ierr)
  call MPI_Recv(e, 2, MPI_DOUBLE_PRECISION, prev, 9, MPI_COMM_WORLD, status, ierr)
  call check(ierr /= MPI_SUCCESS, 'truncation reported')
  call MPI_Error_class(ierr, k, ierr)
  call check(k == MPI_ERR_TRUNCATE, 'truncation class')

  ! A generalized request with Fortran query and free procedures.
  call MPI_Grequest_start(greq_query, greq_free, greq_cancel, 41_MPI_ADDRESS_KIND, reqs(1), &
                          ierr)
  call check(ierr == MPI_SUCCESS, 'grequest_start')
  call MPI_Test(reqs(1), flag, status, ierr)
  call check(.not. flag, 'generalized request done before MPI_GREQUEST_COMPLETE')
  call MPI_Grequest_complete(reqs(1), ierr)
  call MPI_Wait(reqs(1), status, ierr)
  call check(status(MPI_SOURCE) == 41 .and. status(MPI_TAG) == 42, 'grequest query status')
  call check(greq_frees == 1 .and. reqs(1) == MPI_REQUEST_NULL, 'grequest free procedure')
  call MPI_Info_create_env(k, ierr)
  call check(ierr == MPI_SUCCESS .and. k /= MPI_INFO_NULL, 'info_create_env')
  call MPI_Info_free(k, ierr)

  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call MPI_Finalize(ierr)
  call check(ierr == MPI_SUCCESS, 'finalize')
  call MPI_Finalized(flag, ierr)
  call check(flag, 'finalized')
  if (rank == 0) print '(a,i0,a)', 'p2p_mpi: ok at ', size, ' ranks'
contains
  subroutine greq_query(extra, st, ierr)
    integer(kind=MPI_ADDRESS_KIND) :: extra
    integer :: st(MPI_STATUS_SIZE), ierr
    st(MPI_SOURCE) = int(extra)
    st(MPI_TAG) = int(extra) + 1
    call MPI_Status_set_cancelled(st, .false., ierr)
    call MPI_Status_set_elements(st, MPI_BYTE, 0, ierr)
    ierr = MPI_SUCCESS
  end subroutine greq_query
  subroutine greq_free(extra, ierr)
    integer(kind=MPI_ADDRESS_KIND) :: extra
    integer :: ierr
    if (extra == 41) greq_frees = greq_frees + 1
    ierr = MPI_SUCCESS
  end subroutine greq_free
  subroutine greq_cancel(extra, complete, ierr)
    integer(kind=MPI_ADDRESS_KIND) :: extra
    logical :: complete
    integer :: ierr
    ierr = MPI_SUCCESS
    if (extra /= 41 .or. complete) ierr = MPI_ERR_OTHER
  end subroutine greq_cancel
  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    if (.not. ok) then
      write(0, '(a,i0,2a)') 'p2p_mpi: rank ', rank, ': FAILED: ', what
      call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
      stop 1
    end if
  end subroutine check
end program p2p_mpi
