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
  interface MPI_Info_create_env
    module procedure MPI_Info_create_env_f08
  end interface MPI_Info_create_env
  interface MPI_Status_f2f08
    module procedure MPI_Status_f2f08_f08
  end interface MPI_Status_f2f08
  interface MPI_Status_f082f
    module procedure MPI_Status_f082f_f08
  end interface MPI_Status_f082f
  private :: weft_f_init, weft_f_init_thread, weft_f_op_create, weft_f_op_free
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
