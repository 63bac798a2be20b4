  ! Module mpi_f08: the procedures written by hand over src/special.c. Above `! contains`:
  ! declarations (spliced before the module's `contains`); below: procedures.
  abstract interface
    subroutine MPI_User_function(invec, inoutvec, len, datatype)
      import :: c_ptr, MPI_Datatype
      type(c_ptr), value :: invec, inoutvec
      integer :: len
      type(MPI_Datatype) :: datatype
    end subroutine MPI_User_function
  end interface
  interface
    subroutine weft_f_init(ierror)
      integer :: ierror
    end subroutine weft_f_init
    subroutine weft_f_init_thread(required, provided, ierror)
      integer :: required, provided, ierror
    end subroutine weft_f_init_thread
    subroutine weft_f_op_create(user_fn, commute, op, ierror)
      import :: MPI_User_function
      procedure(MPI_User_function) :: user_fn
      logical :: commute
      integer :: op, ierror
    end subroutine weft_f_op_create
    subroutine weft_f_op_free(op, ierror)
      integer :: op, ierror
    end subroutine weft_f_op_free
    subroutine weft_f_comm_get_attr(comm, keyval, val, flag, ierror)
      import :: MPI_ADDRESS_KIND
      integer :: comm, keyval, ierror
      integer(kind=MPI_ADDRESS_KIND) :: val
      logical :: flag
    end subroutine weft_f_comm_get_attr
    subroutine weft_f_win_get_attr(win, keyval, val, flag, ierror)
      import :: MPI_ADDRESS_KIND
      integer :: win, keyval, ierror
      integer(kind=MPI_ADDRESS_KIND) :: val
      logical :: flag
    end subroutine weft_f_win_get_attr
    subroutine weft_f_comm_set_attr(comm, keyval, val, ierror)
      import :: MPI_ADDRESS_KIND
      integer :: comm, keyval, ierror
      integer(kind=MPI_ADDRESS_KIND) :: val
    end subroutine weft_f_comm_set_attr
    subroutine weft_f_win_set_attr(win, keyval, val, ierror)
      import :: MPI_ADDRESS_KIND
      integer :: win, keyval, ierror
      integer(kind=MPI_ADDRESS_KIND) :: val
    end subroutine weft_f_win_set_attr
    subroutine weft_f_type_set_attr(datatype, keyval, val, ierror)
      import :: MPI_ADDRESS_KIND
      integer :: datatype, keyval, ierror
      integer(kind=MPI_ADDRESS_KIND) :: val
    end subroutine weft_f_type_set_attr
    subroutine weft_f_type_get_attr(datatype, keyval, val, flag, ierror)
      import :: MPI_ADDRESS_KIND
      integer :: datatype, keyval, ierror
      integer(kind=MPI_ADDRESS_KIND) :: val
      logical :: flag
    end subroutine weft_f_type_get_attr
    subroutine weft_f_info_create_env(info, ierror) bind(C, name="mpi_info_create_env_")
      integer :: info, ierror
    end subroutine weft_f_info_create_env
    subroutine MPI_Pcontrol(level) bind(C, name="mpi_pcontrol_")
      integer :: level
    end subroutine MPI_Pcontrol
    subroutine MPI_F_sync_reg(buf) bind(C, name="mpi_f_sync_reg_")
      type(*), dimension(*) :: buf
    end subroutine MPI_F_sync_reg
    function MPI_Wtime() bind(C, name="mpi_wtime_")
      import :: c_double
      real(c_double) :: MPI_Wtime
    end function MPI_Wtime
    function MPI_Wtick() bind(C, name="mpi_wtick_")
      import :: c_double
      real(c_double) :: MPI_Wtick
    end function MPI_Wtick
    function MPI_Aint_add(base, disp) bind(C, name="mpi_aint_add_")
      import :: MPI_ADDRESS_KIND
      integer(kind=MPI_ADDRESS_KIND) :: MPI_Aint_add, base, disp
    end function MPI_Aint_add
    function MPI_Aint_diff(addr1, addr2) bind(C, name="mpi_aint_diff_")
      import :: MPI_ADDRESS_KIND
      integer(kind=MPI_ADDRESS_KIND) :: MPI_Aint_diff, addr1, addr2
    end function MPI_Aint_diff
  end interface
  interface MPI_Init
    module procedure MPI_Init_f08
  end interface MPI_Init
  interface MPI_Init_thread
    module procedure MPI_Init_thread_f08
  end interface MPI_Init_thread
  interface MPI_Op_create
    module procedure MPI_Op_create_f08
  end interface MPI_Op_create
  interface MPI_Op_free
    module procedure MPI_Op_free_f08
  end interface MPI_Op_free
  interface MPI_Comm_get_attr
    module procedure MPI_Comm_get_attr_f08
  end interface MPI_Comm_get_attr
  interface MPI_Win_get_attr
    module procedure MPI_Win_get_attr_f08
  end interface MPI_Win_get_attr
  interface MPI_Comm_set_attr
    module procedure MPI_Comm_set_attr_f08
  end interface MPI_Comm_set_attr
  interface MPI_Win_set_attr
    module procedure MPI_Win_set_attr_f08
  end interface MPI_Win_set_attr
  interface MPI_Type_set_attr
    module procedure MPI_Type_set_attr_f08
  end interface MPI_Type_set_attr
  interface MPI_Type_get_attr
    module procedure MPI_Type_get_attr_f08
  end interface MPI_Type_get_attr
  interface MPI_Info_create_env
    module procedure MPI_Info_create_env_f08
  end interface MPI_Info_create_env
  interface MPI_Status_f2f08
    module procedure MPI_Status_f2f08_f08
  end interface MPI_Status_f2f08
  interface MPI_Status_f082f
    module procedure MPI_Status_f082f_f08
  end interface MPI_Status_f082f
  interface operator(==)
    module procedure weft_comm_eq, weft_type_eq, weft_group_eq, weft_request_eq, weft_op_eq, &
      weft_info_eq, weft_errhandler_eq, weft_message_eq, weft_session_eq, weft_file_eq, weft_win_eq
  end interface
  interface operator(/=)
    module procedure weft_comm_ne, weft_type_ne, weft_group_ne, weft_request_ne, weft_op_ne, &
      weft_info_ne, weft_errhandler_ne, weft_message_ne, weft_session_ne, weft_file_ne, weft_win_ne
  end interface
  private :: weft_f_init, weft_f_init_thread, weft_f_op_create, weft_f_op_free
  private :: weft_f_comm_get_attr, weft_f_win_get_attr, weft_f_comm_set_attr
  private :: weft_f_win_set_attr, weft_f_type_set_attr, weft_f_type_get_attr
  private :: weft_f_info_create_env
! contains
  subroutine MPI_Init_f08(ierror)
    integer, optional, intent(out) :: ierror
    integer :: e
    call weft_f_init(e)
    if (present(ierror)) ierror = e
  end subroutine MPI_Init_f08

  subroutine MPI_Init_thread_f08(required, provided, ierror)
    integer, intent(in) :: required
    integer, intent(out) :: provided
    integer, optional, intent(out) :: ierror
    integer :: e
    call weft_f_init_thread(required, provided, e)
    if (present(ierror)) ierror = e
  end subroutine MPI_Init_thread_f08

  subroutine MPI_Op_create_f08(user_fn, commute, op, ierror)
    procedure(MPI_User_function) :: user_fn
    logical, intent(in) :: commute
    type(MPI_Op), intent(out) :: op
    integer, optional, intent(out) :: ierror
    integer :: e
    call weft_f_op_create(user_fn, commute, op%MPI_VAL, e)
    if (present(ierror)) ierror = e
  end subroutine MPI_Op_create_f08

  subroutine MPI_Op_free_f08(op, ierror)
    type(MPI_Op), intent(inout) :: op
    integer, optional, intent(out) :: ierror
    integer :: e
    call weft_f_op_free(op%MPI_VAL, e)
    if (present(ierror)) ierror = e
  end subroutine MPI_Op_free_f08

  subroutine MPI_Comm_get_attr_f08(comm, comm_keyval, attribute_val, flag, ierror)
    type(MPI_Comm), intent(in) :: comm
    integer, intent(in) :: comm_keyval
    integer(kind=MPI_ADDRESS_KIND), intent(out) :: attribute_val
    logical, intent(out) :: flag
    integer, optional, intent(out) :: ierror
    integer :: e
    call weft_f_comm_get_attr(comm%MPI_VAL, comm_keyval, attribute_val, flag, e)
    if (present(ierror)) ierror = e
  end subroutine MPI_Comm_get_attr_f08

  subroutine MPI_Win_get_attr_f08(win, win_keyval, attribute_val, flag, ierror)
    type(MPI_Win), intent(in) :: win
    integer, intent(in) :: win_keyval
    integer(kind=MPI_ADDRESS_KIND), intent(out) :: attribute_val
    logical, intent(out) :: flag
    integer, optional, intent(out) :: ierror
    integer :: e
    call weft_f_win_get_attr(win%MPI_VAL, win_keyval, attribute_val, flag, e)
    if (present(ierror)) ierror = e
  end subroutine MPI_Win_get_attr_f08

  subroutine MPI_Comm_set_attr_f08(comm, comm_keyval, attribute_val, ierror)
    type(MPI_Comm), intent(in) :: comm
    integer, intent(in) :: comm_keyval
    integer(kind=MPI_ADDRESS_KIND), intent(in) :: attribute_val
    integer, optional, intent(out) :: ierror
    integer :: e
    integer(kind=MPI_ADDRESS_KIND) :: v
    v = attribute_val
    call weft_f_comm_set_attr(comm%MPI_VAL, comm_keyval, v, e)
    if (present(ierror)) ierror = e
  end subroutine MPI_Comm_set_attr_f08

  subroutine MPI_Win_set_attr_f08(win, win_keyval, attribute_val, ierror)
    type(MPI_Win), intent(in) :: win
    integer, intent(in) :: win_keyval
    integer(kind=MPI_ADDRESS_KIND), intent(in) :: attribute_val
    integer, optional, intent(out) :: ierror
    integer :: e
    integer(kind=MPI_ADDRESS_KIND) :: v
    v = attribute_val
    call weft_f_win_set_attr(win%MPI_VAL, win_keyval, v, e)
    if (present(ierror)) ierror = e
  end subroutine MPI_Win_set_attr_f08

  subroutine MPI_Type_set_attr_f08(datatype, type_keyval, attribute_val, ierror)
    type(MPI_Datatype), intent(in) :: datatype
    integer, intent(in) :: type_keyval
    integer(kind=MPI_ADDRESS_KIND), intent(in) :: attribute_val
    integer, optional, intent(out) :: ierror
    integer :: e
    integer(kind=MPI_ADDRESS_KIND) :: v
    v = attribute_val
    call weft_f_type_set_attr(datatype%MPI_VAL, type_keyval, v, e)
    if (present(ierror)) ierror = e
  end subroutine MPI_Type_set_attr_f08

  subroutine MPI_Type_get_attr_f08(datatype, type_keyval, attribute_val, flag, ierror)
    type(MPI_Datatype), intent(in) :: datatype
    integer, intent(in) :: type_keyval
    integer(kind=MPI_ADDRESS_KIND), intent(out) :: attribute_val
    logical, intent(out) :: flag
    integer, optional, intent(out) :: ierror
    integer :: e
    call weft_f_type_get_attr(datatype%MPI_VAL, type_keyval, attribute_val, flag, e)
    if (present(ierror)) ierror = e
  end subroutine MPI_Type_get_attr_f08

  subroutine MPI_Info_create_env_f08(info, ierror)
    type(MPI_Info), intent(out) :: info
    integer, optional, intent(out) :: ierror
    integer :: e
    call weft_f_info_create_env(info%MPI_VAL, e)
    if (present(ierror)) ierror = e
  end subroutine MPI_Info_create_env_f08

  subroutine MPI_Status_f2f08_f08(f_status, f08_status, ierror)
    integer, intent(in) :: f_status(MPI_STATUS_SIZE)
    type(MPI_Status), intent(out) :: f08_status
    integer, optional, intent(out) :: ierror
    f08_status = transfer(f_status, f08_status)
    if (present(ierror)) ierror = MPI_SUCCESS
  end subroutine MPI_Status_f2f08_f08

  subroutine MPI_Status_f082f_f08(f08_status, f_status, ierror)
    type(MPI_Status), intent(in) :: f08_status
    integer, intent(out) :: f_status(MPI_STATUS_SIZE)
    integer, optional, intent(out) :: ierror
    f_status = transfer(f08_status, f_status)
    if (present(ierror)) ierror = MPI_SUCCESS
  end subroutine MPI_Status_f082f_f08

  elemental logical function weft_comm_eq(a, b)
    type(MPI_Comm), intent(in) :: a, b
    weft_comm_eq = a%MPI_VAL == b%MPI_VAL
  end function weft_comm_eq

  elemental logical function weft_comm_ne(a, b)
    type(MPI_Comm), intent(in) :: a, b
    weft_comm_ne = a%MPI_VAL /= b%MPI_VAL
  end function weft_comm_ne

  elemental logical function weft_type_eq(a, b)
    type(MPI_Datatype), intent(in) :: a, b
    weft_type_eq = a%MPI_VAL == b%MPI_VAL
  end function weft_type_eq

  elemental logical function weft_type_ne(a, b)
    type(MPI_Datatype), intent(in) :: a, b
    weft_type_ne = a%MPI_VAL /= b%MPI_VAL
  end function weft_type_ne

  elemental logical function weft_group_eq(a, b)
    type(MPI_Group), intent(in) :: a, b
    weft_group_eq = a%MPI_VAL == b%MPI_VAL
  end function weft_group_eq

  elemental logical function weft_group_ne(a, b)
    type(MPI_Group), intent(in) :: a, b
    weft_group_ne = a%MPI_VAL /= b%MPI_VAL
  end function weft_group_ne

  elemental logical function weft_request_eq(a, b)
    type(MPI_Request), intent(in) :: a, b
    weft_request_eq = a%MPI_VAL == b%MPI_VAL
  end function weft_request_eq

  elemental logical function weft_request_ne(a, b)
    type(MPI_Request), intent(in) :: a, b
    weft_request_ne = a%MPI_VAL /= b%MPI_VAL
  end function weft_request_ne

  elemental logical function weft_op_eq(a, b)
    type(MPI_Op), intent(in) :: a, b
    weft_op_eq = a%MPI_VAL == b%MPI_VAL
  end function weft_op_eq

  elemental logical function weft_op_ne(a, b)
    type(MPI_Op), intent(in) :: a, b
    weft_op_ne = a%MPI_VAL /= b%MPI_VAL
  end function weft_op_ne

  elemental logical function weft_info_eq(a, b)
    type(MPI_Info), intent(in) :: a, b
    weft_info_eq = a%MPI_VAL == b%MPI_VAL
  end function weft_info_eq

  elemental logical function weft_info_ne(a, b)
    type(MPI_Info), intent(in) :: a, b
    weft_info_ne = a%MPI_VAL /= b%MPI_VAL
  end function weft_info_ne

  elemental logical function weft_errhandler_eq(a, b)
    type(MPI_Errhandler), intent(in) :: a, b
    weft_errhandler_eq = a%MPI_VAL == b%MPI_VAL
  end function weft_errhandler_eq

  elemental logical function weft_errhandler_ne(a, b)
    type(MPI_Errhandler), intent(in) :: a, b
    weft_errhandler_ne = a%MPI_VAL /= b%MPI_VAL
  end function weft_errhandler_ne

  elemental logical function weft_message_eq(a, b)
    type(MPI_Message), intent(in) :: a, b
    weft_message_eq = a%MPI_VAL == b%MPI_VAL
  end function weft_message_eq

  elemental logical function weft_message_ne(a, b)
    type(MPI_Message), intent(in) :: a, b
    weft_message_ne = a%MPI_VAL /= b%MPI_VAL
  end function weft_message_ne

  elemental logical function weft_session_eq(a, b)
    type(MPI_Session), intent(in) :: a, b
    weft_session_eq = a%MPI_VAL == b%MPI_VAL
  end function weft_session_eq

  elemental logical function weft_session_ne(a, b)
    type(MPI_Session), intent(in) :: a, b
    weft_session_ne = a%MPI_VAL /= b%MPI_VAL
  end function weft_session_ne

  elemental logical function weft_file_eq(a, b)
    type(MPI_File), intent(in) :: a, b
    weft_file_eq = a%MPI_VAL == b%MPI_VAL
  end function weft_file_eq

  elemental logical function weft_file_ne(a, b)
    type(MPI_File), intent(in) :: a, b
    weft_file_ne = a%MPI_VAL /= b%MPI_VAL
  end function weft_file_ne

  elemental logical function weft_win_eq(a, b)
    type(MPI_Win), intent(in) :: a, b
    weft_win_eq = a%MPI_VAL == b%MPI_VAL
  end function weft_win_eq

  elemental logical function weft_win_ne(a, b)
    type(MPI_Win), intent(in) :: a, b
    weft_win_ne = a%MPI_VAL /= b%MPI_VAL
  end function weft_win_ne

