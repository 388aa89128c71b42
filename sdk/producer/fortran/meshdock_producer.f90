! meshdock_producer: libmeshdock_producer (meshdock/producer.h) for Fortran 2008 solvers. A solver
! streams its fields into meshdockd, where PyTorch, CuPy, NumPy or C consumers take each frame:
!
!   use meshdock_producer
!   type(md_producer) :: p
!   integer :: frame
!   if (md_open(p) /= MESHDOCK_OK) stop 1                   ! $MESHDOCK_ADDR or the system socket
!   do step = 1, nsteps
!     call solve(T)                                             ! T(npoints), real64
!     if (md_publish(p, "bracket", "point_data/T", T, frame) /= MESHDOCK_OK) print *, md_last_error()
!   end do
!   call md_close(p)
!
! Arrays are published as they lie in memory: a Fortran array a(ncomp, npoints) (column-major, a
! point's components next to each other) is the C-order array (npoints, ncomp) consumers see, so
! a vector field v(3, npoints) arrives as (npoints, 3). md_publish takes contiguous real64, real32,
! int32 and int64 arrays of 1 or 2 dimensions; `block` (optional, 0) picks a cell block for
! cell_data. md_publish_tensor publishes into a slot of its own (made on `device`, "cpu",
! "cuda:0", ... by its first publish). Every function returns MESHDOCK_OK (0) or a status of
! meshdock.h; md_last_error() and md_status_name(status) say what went wrong.
!
! Compile this file with your program and link -lmeshdock_producer -lmeshdock (pkg-config
! meshdock-producer): a .mod file belongs to the compiler that made it, so the module ships as
! source (installed beside meshdock/producer.h).
module meshdock_producer
  use, intrinsic :: iso_c_binding
  implicit none
  private

  public :: md_producer, md_open, md_close, md_set_timeout, md_publish, md_publish_tensor
  public :: md_last_error, md_status_name
  integer, parameter, public :: MESHDOCK_OK = 0

  ! The handle: opened by md_open, closed by md_close.
  type :: md_producer
    type(c_ptr), private :: p = c_null_ptr
  end type md_producer

  ! DLPack's DLTensor (dlpack.h), as producer.h takes it.
  type, bind(C) :: dl_device
    integer(c_int32_t) :: device_type = 1  ! kDLCPU
    integer(c_int32_t) :: device_id = 0
  end type dl_device
  type, bind(C) :: dl_data_type
    integer(c_int8_t) :: code = 2          ! kDLInt 0, kDLFloat 2
    integer(c_int8_t) :: bits = 64
    integer(c_int16_t) :: lanes = 1
  end type dl_data_type
  type, bind(C) :: dl_tensor
    type(c_ptr) :: data = c_null_ptr
    type(dl_device) :: device
    integer(c_int32_t) :: ndim = 0
    type(dl_data_type) :: dtype
    type(c_ptr) :: shape = c_null_ptr
    type(c_ptr) :: strides = c_null_ptr    ! NULL: C order
    integer(c_int64_t) :: byte_offset = 0
  end type dl_tensor

  interface
    function c_open(target, token, out) bind(C, name="meshdock_producer_open") result(rc)
      import :: c_ptr, c_int
      type(c_ptr), value :: target, token
      type(c_ptr), intent(out) :: out
      integer(c_int) :: rc
    end function c_open
    subroutine c_close(p) bind(C, name="meshdock_producer_close")
      import :: c_ptr
      type(c_ptr), value :: p
    end subroutine c_close
    function c_set_timeout(p, seconds) bind(C, name="meshdock_producer_set_timeout") result(rc)
      import :: c_ptr, c_double, c_int
      type(c_ptr), value :: p
      real(c_double), value :: seconds
      integer(c_int) :: rc
    end function c_set_timeout
    function c_publish(p, name, field, block, array, frame) &
        bind(C, name="meshdock_producer_publish") result(rc)
      import :: c_ptr, c_char, c_int32_t, c_int, dl_tensor
      type(c_ptr), value :: p
      character(kind=c_char), dimension(*), intent(in) :: name, field
      integer(c_int32_t), value :: block
      type(dl_tensor), intent(in) :: array
      integer(c_int32_t), intent(out) :: frame
      integer(c_int) :: rc
    end function c_publish
    function c_publish_tensor(p, name, array, device, num_slots, frame) &
        bind(C, name="meshdock_producer_publish_tensor") result(rc)
      import :: c_ptr, c_char, c_int32_t, c_int, dl_tensor
      type(c_ptr), value :: p
      character(kind=c_char), dimension(*), intent(in) :: name
      type(dl_tensor), intent(in) :: array
      type(c_ptr), value :: device
      integer(c_int32_t), value :: num_slots
      integer(c_int32_t), intent(out) :: frame
      integer(c_int) :: rc
    end function c_publish_tensor
    function c_last_error() bind(C, name="meshdock_last_error") result(message)
      import :: c_ptr
      type(c_ptr) :: message
    end function c_last_error
    function c_status_name(status) bind(C, name="meshdock_status_name") result(name)
      import :: c_ptr, c_int
      integer(c_int), value :: status
      type(c_ptr) :: name
    end function c_status_name
    function c_strlen(s) bind(C, name="strlen") result(n)
      import :: c_ptr, c_size_t
      type(c_ptr), value :: s
      integer(c_size_t) :: n
    end function c_strlen
  end interface

  ! md_publish(producer, name, field, array, frame [, block]): one specific per type and rank.
  interface md_publish
    module procedure publish_r8_1, publish_r8_2, publish_r4_1, publish_r4_2
    module procedure publish_i4_1, publish_i4_2, publish_i8_1, publish_i8_2
  end interface md_publish

  ! md_publish_tensor(producer, name, array, frame [, device]): a real64 or real32 array of 1 or
  ! 2 dimensions in a slot of its own.
  interface md_publish_tensor
    module procedure tensor_r8_1, tensor_r8_2, tensor_r4_1, tensor_r4_2
  end interface md_publish_tensor

contains

  ! Opens a producer for meshdockd at `target` ("unix:PATH" or "HOST:PORT"; absent:
  ! $MESHDOCK_ADDR, else the system socket), with $MESHDOCK_TOKEN as its token when set.
  function md_open(producer, target) result(rc)
    type(md_producer), intent(out) :: producer
    character(*), intent(in), optional :: target
    integer :: rc
    character(kind=c_char, len=:), allocatable, target :: t
    if (present(target)) then
      t = trim(target)//c_null_char
      rc = c_open(c_loc(t), c_null_ptr, producer%p)
    else
      rc = c_open(c_null_ptr, c_null_ptr, producer%p)
    end if
  end function md_open

  ! Closes it and unlinks its shared-memory objects.
  subroutine md_close(producer)
    type(md_producer), intent(inout) :: producer
    call c_close(producer%p)
    producer%p = c_null_ptr
  end subroutine md_close

  ! Seconds each call may take (0: no limit).
  function md_set_timeout(producer, seconds) result(rc)
    type(md_producer), intent(in) :: producer
    real(c_double), intent(in) :: seconds
    integer :: rc
    rc = c_set_timeout(producer%p, seconds)
  end function md_set_timeout

  ! What the last failure on this thread said (names the slot and field).
  function md_last_error() result(message)
    character(:), allocatable :: message
    message = from_c(c_last_error())
  end function md_last_error

  ! "MESHDOCK_OK", "MESHDOCK_ERR_NOT_FOUND", ...
  function md_status_name(status) result(name)
    integer, intent(in) :: status
    character(:), allocatable :: name
    name = from_c(c_status_name(int(status, c_int)))
  end function md_status_name

  function from_c(s) result(text)
    type(c_ptr), intent(in) :: s
    character(:), allocatable :: text
    character(kind=c_char), pointer :: chars(:)
    integer :: i, n
    n = int(c_strlen(s))
    call c_f_pointer(s, chars, [n])
    allocate (character(n) :: text)
    do i = 1, n
      text(i:i) = chars(i)
    end do
  end function from_c

  ! The DLTensor of `n_dims` dimensions of Fortran extent `extent` (reversed: C order).
  function tensor_of(data, code, bits, n_dims, extent, shape) result(t)
    type(c_ptr), intent(in) :: data
    integer, intent(in) :: code, bits, n_dims
    integer, intent(in) :: extent(:)
    integer(c_int64_t), intent(inout), target :: shape(2)
    type(dl_tensor) :: t
    integer :: d
    do d = 1, n_dims
      shape(d) = int(extent(n_dims + 1 - d), c_int64_t)
    end do
    t%data = data
    t%ndim = int(n_dims, c_int32_t)
    t%dtype%code = int(code, c_int8_t)
    t%dtype%bits = int(bits, c_int8_t)
    t%shape = c_loc(shape)
  end function tensor_of

  function publish_raw(producer, name, field, data, code, bits, n_dims, extent, frame, block) &
      result(rc)
    type(md_producer), intent(in) :: producer
    character(*), intent(in) :: name, field
    type(c_ptr), intent(in) :: data
    integer, intent(in) :: code, bits, n_dims
    integer, intent(in) :: extent(:)
    integer, intent(out) :: frame
    integer, intent(in), optional :: block
    integer :: rc
    integer(c_int64_t), target :: shape(2)
    integer(c_int32_t) :: f, b
    type(dl_tensor) :: t
    b = 0
    if (present(block)) b = int(block, c_int32_t)
    t = tensor_of(data, code, bits, n_dims, extent, shape)
    f = 0
    rc = c_publish(producer%p, trim(name)//c_null_char, trim(field)//c_null_char, b, t, f)
    frame = int(f)
  end function publish_raw

  function tensor_raw(producer, name, data, code, bits, n_dims, extent, frame, device) result(rc)
    type(md_producer), intent(in) :: producer
    character(*), intent(in) :: name
    type(c_ptr), intent(in) :: data
    integer, intent(in) :: code, bits, n_dims
    integer, intent(in) :: extent(:)
    integer, intent(out) :: frame
    character(*), intent(in), optional :: device
    integer :: rc
    integer(c_int64_t), target :: shape(2)
    integer(c_int32_t) :: f
    character(kind=c_char, len=:), allocatable, target :: dev
    type(dl_tensor) :: t
    t = tensor_of(data, code, bits, n_dims, extent, shape)
    f = 0
    if (present(device)) then
      dev = trim(device)//c_null_char
      rc = c_publish_tensor(producer%p, trim(name)//c_null_char, t, c_loc(dev), 0_c_int32_t, f)
    else
      rc = c_publish_tensor(producer%p, trim(name)//c_null_char, t, c_null_ptr, 0_c_int32_t, f)
    end if
    frame = int(f)
  end function tensor_raw

  function publish_r8_1(producer, name, field, a, frame, block) result(rc)
    type(md_producer), intent(in) :: producer
    character(*), intent(in) :: name, field
    real(c_double), intent(in), contiguous, target :: a(:)
    integer, intent(out) :: frame
    integer, intent(in), optional :: block
    integer :: rc
    rc = publish_raw(producer, name, field, c_loc(a), 2, 64, 1, shape(a), frame, block)
  end function publish_r8_1

  function publish_r8_2(producer, name, field, a, frame, block) result(rc)
    type(md_producer), intent(in) :: producer
    character(*), intent(in) :: name, field
    real(c_double), intent(in), contiguous, target :: a(:, :)
    integer, intent(out) :: frame
    integer, intent(in), optional :: block
    integer :: rc
    rc = publish_raw(producer, name, field, c_loc(a), 2, 64, 2, shape(a), frame, block)
  end function publish_r8_2

  function publish_r4_1(producer, name, field, a, frame, block) result(rc)
    type(md_producer), intent(in) :: producer
    character(*), intent(in) :: name, field
    real(c_float), intent(in), contiguous, target :: a(:)
    integer, intent(out) :: frame
    integer, intent(in), optional :: block
    integer :: rc
    rc = publish_raw(producer, name, field, c_loc(a), 2, 32, 1, shape(a), frame, block)
  end function publish_r4_1

  function publish_r4_2(producer, name, field, a, frame, block) result(rc)
    type(md_producer), intent(in) :: producer
    character(*), intent(in) :: name, field
    real(c_float), intent(in), contiguous, target :: a(:, :)
    integer, intent(out) :: frame
    integer, intent(in), optional :: block
    integer :: rc
    rc = publish_raw(producer, name, field, c_loc(a), 2, 32, 2, shape(a), frame, block)
  end function publish_r4_2

  function publish_i4_1(producer, name, field, a, frame, block) result(rc)
    type(md_producer), intent(in) :: producer
    character(*), intent(in) :: name, field
    integer(c_int32_t), intent(in), contiguous, target :: a(:)
    integer, intent(out) :: frame
    integer, intent(in), optional :: block
    integer :: rc
    rc = publish_raw(producer, name, field, c_loc(a), 0, 32, 1, shape(a), frame, block)
  end function publish_i4_1

  function publish_i4_2(producer, name, field, a, frame, block) result(rc)
    type(md_producer), intent(in) :: producer
    character(*), intent(in) :: name, field
    integer(c_int32_t), intent(in), contiguous, target :: a(:, :)
    integer, intent(out) :: frame
    integer, intent(in), optional :: block
    integer :: rc
    rc = publish_raw(producer, name, field, c_loc(a), 0, 32, 2, shape(a), frame, block)
  end function publish_i4_2

  function publish_i8_1(producer, name, field, a, frame, block) result(rc)
    type(md_producer), intent(in) :: producer
    character(*), intent(in) :: name, field
    integer(c_int64_t), intent(in), contiguous, target :: a(:)
    integer, intent(out) :: frame
    integer, intent(in), optional :: block
    integer :: rc
    rc = publish_raw(producer, name, field, c_loc(a), 0, 64, 1, shape(a), frame, block)
  end function publish_i8_1

  function publish_i8_2(producer, name, field, a, frame, block) result(rc)
    type(md_producer), intent(in) :: producer
    character(*), intent(in) :: name, field
    integer(c_int64_t), intent(in), contiguous, target :: a(:, :)
    integer, intent(out) :: frame
    integer, intent(in), optional :: block
    integer :: rc
    rc = publish_raw(producer, name, field, c_loc(a), 0, 64, 2, shape(a), frame, block)
  end function publish_i8_2

  function tensor_r8_1(producer, name, a, frame, device) result(rc)
    type(md_producer), intent(in) :: producer
    character(*), intent(in) :: name
    real(c_double), intent(in), contiguous, target :: a(:)
    integer, intent(out) :: frame
    character(*), intent(in), optional :: device
    integer :: rc
    rc = tensor_raw(producer, name, c_loc(a), 2, 64, 1, shape(a), frame, device)
  end function tensor_r8_1

  function tensor_r8_2(producer, name, a, frame, device) result(rc)
    type(md_producer), intent(in) :: producer
    character(*), intent(in) :: name
    real(c_double), intent(in), contiguous, target :: a(:, :)
    integer, intent(out) :: frame
    character(*), intent(in), optional :: device
    integer :: rc
    rc = tensor_raw(producer, name, c_loc(a), 2, 64, 2, shape(a), frame, device)
  end function tensor_r8_2

  function tensor_r4_1(producer, name, a, frame, device) result(rc)
    type(md_producer), intent(in) :: producer
    character(*), intent(in) :: name
    real(c_float), intent(in), contiguous, target :: a(:)
    integer, intent(out) :: frame
    character(*), intent(in), optional :: device
    integer :: rc
    rc = tensor_raw(producer, name, c_loc(a), 2, 32, 1, shape(a), frame, device)
  end function tensor_r4_1

  function tensor_r4_2(producer, name, a, frame, device) result(rc)
    type(md_producer), intent(in) :: producer
    character(*), intent(in) :: name
    real(c_float), intent(in), contiguous, target :: a(:, :)
    integer, intent(out) :: frame
    character(*), intent(in), optional :: device
    integer :: rc
    rc = tensor_raw(producer, name, c_loc(a), 2, 32, 2, shape(a), frame, device)
  end function tensor_r4_2

end module meshdock_producer
