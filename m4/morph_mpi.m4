# MORPH_CHECK_MPI
# Open MPI (through pkg-config's ompi-cxx) for morphrun and morph-profile.
AC_DEFUN([MORPH_CHECK_MPI], [
  AC_ARG_WITH([mpi],
    [AS_HELP_STRING([--without-mpi], [build the MPI components out])],
    [], [with_mpi=check])
  morph_mpi_summary=no
  AS_IF([test "x$with_mpi" != xno], [
    PKG_CHECK_MODULES([MPI], [ompi-cxx],
      [morph_mpi_summary="yes (Open MPI $($PKG_CONFIG --modversion ompi-cxx))"],
      [AS_IF([test "x$with_mpi" = xyes],
             [AC_MSG_ERROR([--with-mpi was given but Open MPI was not found (Debian: libopenmpi-dev)])])])
  ])
  AM_CONDITIONAL([HAVE_MPI], [test "x$morph_mpi_summary" != xno])
])

# MORPH_CHECK_HWLOC
# hwloc for topology discovery and CPU binding.
AC_DEFUN([MORPH_CHECK_HWLOC], [
  AC_ARG_WITH([hwloc],
    [AS_HELP_STRING([--without-hwloc], [build the hwloc components out])],
    [], [with_hwloc=check])
  morph_hwloc_summary=no
  AS_IF([test "x$with_hwloc" != xno], [
    PKG_CHECK_MODULES([HWLOC], [hwloc >= 2.0],
      [morph_hwloc_summary="yes ($($PKG_CONFIG --modversion hwloc))"],
      [AS_IF([test "x$with_hwloc" = xyes],
             [AC_MSG_ERROR([--with-hwloc was given but hwloc 2 was not found (Debian: libhwloc-dev)])])])
  ])
  AM_CONDITIONAL([HAVE_HWLOC], [test "x$morph_hwloc_summary" != xno])
])
