! A Fortran 2018 producer (sdk/producer/fortran/meshdock_producer.f90 over libmeshdock_producer):
! streams FRAMES frames of a real64 field into meshdockd, as a Fortran solver would each step.
!
!   f_producer [--frames N] NAME FIELD ROWS [COLS]
!
! FIELD is "point_data/NAME" or "cell_data/NAME" of the loaded mesh NAME (ROWS: its points or
! cells), or "tensor" (a slot of its own, on the host). With COLS the array is a(COLS, ROWS) in
! Fortran, (ROWS, COLS) to consumers: a point's components lie next to each other. Frame k holds
! k * 1000 + row + col / 4 at (row, col), 0-based, as clients/examples/c_producer.c writes.
! Prints "frame F" per publish; on failure the status and the daemon's words, exit status 1.
! meshdockd's address: $MESHDOCK_ADDR, else the system socket.
program f_producer
  use, intrinsic :: iso_fortran_env, only: real64, error_unit
  use meshdock_producer
  implicit none
  type(md_producer) :: p
  character(len=256) :: arg, pos(4)
  integer :: npos, frames, rows, cols, i, j, k, rc, frame
  real(real64), allocatable :: a(:, :)

  npos = 0
  frames = 1
  i = 1
  do while (i <= command_argument_count())
    call get_command_argument(i, arg)
    if (arg == "--frames") then
      i = i + 1
      call get_command_argument(i, arg)
      read (arg, *) frames
    else if (npos < 4 .and. arg(1:1) /= "-") then
      npos = npos + 1
      pos(npos) = arg
    else
      call usage()
    end if
    i = i + 1
  end do
  if (npos < 3 .or. frames < 1) call usage()
  read (pos(3), *) rows
  cols = 1
  if (npos == 4) read (pos(4), *) cols

  rc = md_open(p)
  if (rc /= MESHDOCK_OK) call fail("open", rc)
  allocate (a(cols, rows))
  do k = 0, frames - 1
    do i = 1, rows
      do j = 1, cols
        a(j, i) = k*1000.0_real64 + (i - 1) + (j - 1)/4.0_real64
      end do
    end do
    if (trim(pos(2)) == "tensor") then
      if (npos == 4) then
        rc = md_publish_tensor(p, trim(pos(1)), a, frame, device="cpu")
      else
        rc = md_publish_tensor(p, trim(pos(1)), a(1, :), frame, device="cpu")
      end if
    else if (npos == 4) then
      rc = md_publish(p, trim(pos(1)), trim(pos(2)), a, frame)
    else
      rc = md_publish(p, trim(pos(1)), trim(pos(2)), a(1, :), frame)
    end if
    if (rc /= MESHDOCK_OK) call fail("publish", rc)
    print '(a,i0)', "frame ", frame
  end do
  call md_close(p)

contains

  subroutine usage()
    write (error_unit, '(a)') "usage: f_producer [--frames N] NAME FIELD ROWS [COLS]"
    stop 2, quiet=.true.
  end subroutine usage

  subroutine fail(what, status)
    character(*), intent(in) :: what
    integer, intent(in) :: status
    write (error_unit, '(a)') "f_producer: "//what//": "//md_status_name(status)//": "// &
      md_last_error()
    call md_close(p)
    stop 1, quiet=.true.
  end subroutine fail

end program f_producer
