# MORPH_CHECK_CERES
# Ceres Solver ships no pkg-config file on Debian: look for the header and the
# library (which pulls glog in through its own link dependencies).
AC_DEFUN([MORPH_CHECK_CERES], [
  AC_REQUIRE([MORPH_CXX_STD])
  AC_ARG_WITH([ceres],
    [AS_HELP_STRING([--with-ceres=DIR], [Ceres Solver installation prefix])],
    [], [with_ceres=])
  CERES_CPPFLAGS=
  CERES_LDFLAGS=
  AS_IF([test -n "$with_ceres" && test "x$with_ceres" != xyes], [
    CERES_CPPFLAGS="-I$with_ceres/include"
    CERES_LDFLAGS="-L$with_ceres/lib"
  ])
  morph_save_CPPFLAGS=$CPPFLAGS
  morph_save_CXXFLAGS=$CXXFLAGS
  morph_save_LIBS=$LIBS
  morph_save_LDFLAGS=$LDFLAGS
  CPPFLAGS="$CPPFLAGS $CERES_CPPFLAGS $EIGEN_CFLAGS"
  CXXFLAGS="$CXXFLAGS $MORPH_CXX_STD_FLAG"
  LDFLAGS="$LDFLAGS $CERES_LDFLAGS"
  LIBS="-lceres -lglog $LIBS"
  AC_MSG_CHECKING([for Ceres Solver])
  AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <ceres/ceres.h>]],
                                  [[ceres::Problem problem; ceres::Solver::Options options;
                                    return options.max_num_iterations > 0 ? 0 : 1;]])],
    [AC_MSG_RESULT([yes])],
    [AC_MSG_RESULT([no])
     AC_MSG_ERROR([Ceres Solver is required (Debian: libceres-dev)])])
  CPPFLAGS=$morph_save_CPPFLAGS
  CXXFLAGS=$morph_save_CXXFLAGS
  LIBS=$morph_save_LIBS
  LDFLAGS=$morph_save_LDFLAGS
  CERES_LIBS="$CERES_LDFLAGS -lceres -lglog"
  AC_SUBST([CERES_CPPFLAGS])
  AC_SUBST([CERES_LIBS])
])

# MORPH_CHECK_CLI11
# CLI11 is header-only.
AC_DEFUN([MORPH_CHECK_CLI11], [
  morph_save_CXXFLAGS=$CXXFLAGS
  CXXFLAGS="$CXXFLAGS $MORPH_CXX_STD_FLAG"
  AC_CHECK_HEADER([CLI/CLI.hpp], [],
    [AC_MSG_ERROR([CLI11 is required (Debian: libcli11-dev)])])
  CXXFLAGS=$morph_save_CXXFLAGS
])
