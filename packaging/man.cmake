# Manual pages: meshdockd(1), meshdockctl(1), meshdock(1), made by help2man from each program's
# --help and --version plus packaging/man/PROGRAM.h2m (name, files, environment, see also), and
# gzipped (Debian wants them compressed). Installed under ${mandir}/man1. Without help2man there
# are none: configure says so (scripts/setup installs it; the .deb check wants them).
find_program(MESHDOCK_HELP2MAN help2man)
find_program(MESHDOCK_GZIP gzip)
if(NOT MESHDOCK_HELP2MAN OR NOT MESHDOCK_GZIP)
  message(STATUS "meshdock: help2man or gzip not found: no manual pages are built or installed")
  return()
endif()

# The pages' date: the newest changelog entry's (reproducible, and the release's).
file(STRINGS ${CMAKE_CURRENT_SOURCE_DIR}/deb/changelog.in _signoff REGEX "^ -- " LIMIT_COUNT 1)
string(REGEX REPLACE "^ -- .*  " "" _released "${_signoff}")
execute_process(COMMAND date -u -d "${_released}" +%s OUTPUT_VARIABLE _epoch
                OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "packaging/deb/changelog.in: cannot read the date of its first entry: "
                      "'${_released}'")
endif()
set(_man ${CMAKE_CURRENT_BINARY_DIR}/man)
file(MAKE_DIRECTORY ${_man})
set(_pages)
# meshdock_man(PROGRAM COMMAND... [ENV VAR=VALUE...] DEPENDS targets/files...)
function(meshdock_man program)
  cmake_parse_arguments(M "" "" "COMMAND;ENV;DEPENDS" ${ARGN})
  set(include ${CMAKE_CURRENT_SOURCE_DIR}/man/${program}.h2m)
  set(page ${_man}/${program}.1)
  # --no-discard-stderr: CLI11 and argparse print to stdout, but a failing program's message must
  # show. --version-string: the footer's source is "PROGRAM VERSION"; meshdockd's own --version
  # line (with its protocol) is too long for it and ran into the date at 100 columns.
  add_custom_command(
    OUTPUT ${page}.gz
    COMMAND ${CMAKE_COMMAND} -E env SOURCE_DATE_EPOCH=${_epoch} ${M_ENV} ${MESHDOCK_HELP2MAN}
            --no-info --no-discard-stderr --section 1 --include ${include}
            --version-string ${PROJECT_VERSION}
            --output ${page} ${M_COMMAND}
    COMMAND ${MESHDOCK_GZIP} -9nf ${page}
    DEPENDS ${include} ${M_DEPENDS}
    COMMENT "help2man ${program}.1"
    VERBATIM)
  set(_pages ${_pages} ${page}.gz PARENT_SCOPE)
endfunction()

meshdock_man(meshdockd COMMAND $<TARGET_FILE:meshdockd> DEPENDS meshdockd)
meshdock_man(meshdockctl COMMAND $<TARGET_FILE:meshdockctl> DEPENDS meshdockctl)
if(MESHDOCK_PYTHON)
  meshdock_man(meshdock COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/meshdock-cli
               ENV PYTHONPATH=${MESHDOCK_PYTHON_DIR}
               DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/meshdock-cli
                       ${PROJECT_SOURCE_DIR}/sdk/python/meshdock/cli.py meshdock_py)
endif()
add_custom_target(meshdock_man ALL DEPENDS ${_pages})
install(FILES ${_pages} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
