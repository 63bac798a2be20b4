    ! Module mpi: interfaces of the procedures written by hand (src/special.c), inside the
    ! generated interface block.
    subroutine MPI_Init(ierror)
      integer :: ierror
    end subroutine MPI_Init
    subroutine MPI_Init_thread(required, provided, ierror)
      integer :: required, provided, ierror
    end subroutine MPI_Init_thread
    double precision function MPI_Wtime()
    end function MPI_Wtime
    double precision function MPI_Wtick()
    end function MPI_Wtick
    double precision function PMPI_Wtime()
    end function PMPI_Wtime
    double precision function PMPI_Wtick()
    end function PMPI_Wtick
    subroutine MPI_Attr_get(comm, keyval, attribute_val, flag, ierror)
      integer :: comm, keyval, attribute_val, ierror
      logical :: flag
    end subroutine MPI_Attr_get
    subroutine MPI_Attr_put(comm, keyval, attribute_val, ierror)
      integer :: comm, keyval, attribute_val, ierror
    end subroutine MPI_Attr_put
    function MPI_Aint_add(base, disp)
      import
      integer(kind=MPI_ADDRESS_KIND) :: MPI_Aint_add, base, disp
    end function MPI_Aint_add
    function MPI_Aint_diff(addr1, addr2)
      import
      integer(kind=MPI_ADDRESS_KIND) :: MPI_Aint_diff, addr1, addr2
    end function MPI_Aint_diff
    subroutine MPI_Pcontrol(level)
      integer :: level
    end subroutine MPI_Pcontrol
    subroutine MPI_F_sync_reg(buf)
      !GCC$ ATTRIBUTES NO_ARG_CHECK :: buf
      type(*), dimension(*) :: buf
    end subroutine MPI_F_sync_reg
    subroutine MPI_Op_create(user_fn, commute, op, ierror)
      external :: user_fn
      logical :: commute
      integer :: op, ierror
    end subroutine MPI_Op_create
    subroutine MPI_Op_free(op, ierror)
      integer :: op, ierror
    end subroutine MPI_Op_free
    subroutine MPI_Comm_create_keyval(comm_copy_attr_fn, comm_delete_attr_fn, comm_keyval, &
        extra_state, ierror)
      import
      external :: comm_copy_attr_fn, comm_delete_attr_fn
      integer :: comm_keyval, ierror
      integer(kind=MPI_ADDRESS_KIND) :: extra_state
    end subroutine MPI_Comm_create_keyval
    subroutine MPI_Type_create_keyval(type_copy_attr_fn, type_delete_attr_fn, type_keyval, &
        extra_state, ierror)
      import
      external :: type_copy_attr_fn, type_delete_attr_fn
      integer :: type_keyval, ierror
      integer(kind=MPI_ADDRESS_KIND) :: extra_state
    end subroutine MPI_Type_create_keyval
    subroutine MPI_Win_create_keyval(win_copy_attr_fn, win_delete_attr_fn, win_keyval, &
        extra_state, ierror)
      import
      external :: win_copy_attr_fn, win_delete_attr_fn
      integer :: win_keyval, ierror
      integer(kind=MPI_ADDRESS_KIND) :: extra_state
    end subroutine MPI_Win_create_keyval
    subroutine MPI_Comm_create_errhandler(comm_errhandler_fn, errhandler, ierror)
      external :: comm_errhandler_fn
      integer :: errhandler, ierror
    end subroutine MPI_Comm_create_errhandler
    subroutine MPI_Win_create_errhandler(win_errhandler_fn, errhandler, ierror)
      external :: win_errhandler_fn
      integer :: errhandler, ierror
    end subroutine MPI_Win_create_errhandler
    subroutine MPI_File_create_errhandler(file_errhandler_fn, errhandler, ierror)
      external :: file_errhandler_fn
      integer :: errhandler, ierror
    end subroutine MPI_File_create_errhandler
    subroutine MPI_Session_create_errhandler(session_errhandler_fn, errhandler, ierror)
      external :: session_errhandler_fn
      integer :: errhandler, ierror
    end subroutine MPI_Session_create_errhandler
    subroutine MPI_Keyval_create(copy_fn, delete_fn, keyval, extra_state, ierror)
      external :: copy_fn, delete_fn
      integer :: keyval, extra_state, ierror
    end subroutine MPI_Keyval_create
    subroutine MPI_Info_create_env(info, ierror)
      integer :: info, ierror
    end subroutine MPI_Info_create_env
    subroutine MPI_Grequest_start(query_fn, free_fn, cancel_fn, extra_state, request, ierror)
      import
      external :: query_fn, free_fn, cancel_fn
      integer(kind=MPI_ADDRESS_KIND) :: extra_state
      integer :: request, ierror
    end subroutine MPI_Grequest_start
