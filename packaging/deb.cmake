# The Debian package meshdock_<version>_<arch>.deb (cpack -G DEB in a /usr build; scripts/package).
# One package holds the daemon, the CLI, libmeshdock with its headers and CMake / pkg-config
# files, and the Python package. Depends: what dpkg-shlibdeps finds the binaries need (dpkg-dev),
# plus python3 and python3-numpy for the Python package; its gRPC Client needs python3-grpcio and
# python3-protobuf (Recommends). The maintainer scripts (packaging/deb/) create the user and the
# directories and enable the unit, doing nothing that needs a running systemd unless one runs.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME meshdock)
set(CPACK_PACKAGE_VENDOR meshdock)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "${MESHDOCK_DEB_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "resident daemon publishing simulation meshes in GPU / shared memory")
# Lines under 80 columns (cpack indents each by one space).
set(CPACK_PACKAGE_DESCRIPTION
    "meshdockd reads meshes (Gmsh, VTK XML and legacy, STL, OBJ, PLY, OFF,
Medit, Abaqus, AVS UCD, Nastran, SU2, Exodus II, TetGen, Tecplot, UGRID,
FLAC3D, Netgen, ANSYS Fluent, Kratos mdpa, DOLFIN XML, PERMAS,
Neuroglancer) once, keeps them in GPU or host memory and
publishes them in shared-memory slots; consumers (libmeshdock in C++, the
meshdock Python package) adopt every array as a DLPack tensor in place.
gRPC control plane (meshdockctl).")
# lintian (check_deb.py) refuses a description line over 80 columns: say so at configure time.
string(REPLACE ";" "," _md_desc "${CPACK_PACKAGE_DESCRIPTION}")
string(REPLACE "\n" ";" _md_desc "${_md_desc}")
foreach(_md_line IN LISTS _md_desc)
  string(LENGTH "${_md_line}" _md_len)
  if(_md_len GREATER 78)
    message(FATAL_ERROR "packaging/deb.cmake: CPACK_PACKAGE_DESCRIPTION line of ${_md_len} "
                        "characters (at most 78): '${_md_line}'")
  endif()
endforeach()
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_PACKAGE_FILE_NAME meshdock_${PROJECT_VERSION})  # replaced by DEB-DEFAULT below
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)                    # meshdock_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_SECTION misc)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# Absolute install destinations (/etc/meshdock) land in the staging tree, never in the host's /etc.
set(CPACK_SET_DESTDIR ON)
set(CPACK_STRIP_FILES ON)

set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# meshdockctl needs libmeshdock.so.1, which this package ships: dpkg-shlibdeps looks there.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${CMAKE_INSTALL_FULL_LIBDIR})
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
# procps: the unit's ExecReload runs /bin/kill (minbase lacks it; systemd-analyze verify fails there)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "python3, python3-numpy, procps")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "python3-grpcio, python3-protobuf")

set(_deb ${CMAKE_CURRENT_BINARY_DIR}/deb)
file(MAKE_DIRECTORY ${_deb})
configure_file(${CMAKE_CURRENT_SOURCE_DIR}/deb/conffiles.in ${_deb}/conffiles @ONLY)
foreach(_script postinst prerm postrm)
  configure_file(${CMAKE_CURRENT_SOURCE_DIR}/deb/${_script}.in ${_deb}/${_script} @ONLY
                 FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE
                                  WORLD_READ WORLD_EXECUTE)
endforeach()
# libmeshdock.so.1 in the multiarch directory: dpkg runs ldconfig after the package is unpacked
# (so ctypes.util.find_library and ldconfig -p see it at once).
file(WRITE ${_deb}/triggers "activate-noawait ldconfig\n")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${_deb}/conffiles ${_deb}/postinst ${_deb}/prerm
                                       ${_deb}/postrm ${_deb}/triggers)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)

include(CPack)
