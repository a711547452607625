# MORPH_CHECK_MUNGE
# MUNGE (munge.h, -lmunge) authenticates the iteration reports morphrun sends to morphd.
# Without it the report library is built out and morphrun reports nothing.
AC_DEFUN([MORPH_CHECK_MUNGE], [
  AC_ARG_WITH([munge],
    [AS_HELP_STRING([--without-munge], [build reporting to morphd out])],
    [], [with_munge=check])
  morph_munge_summary="no (morphrun does not report to morphd)"
  MUNGE_LIBS=
  AS_IF([test "x$with_munge" != xno], [
    morph_have_munge=no
    AC_CHECK_HEADER([munge.h],
      [AC_CHECK_LIB([munge], [munge_encode], [morph_have_munge=yes])])
    AS_IF([test "x$morph_have_munge" = xyes],
      [MUNGE_LIBS=-lmunge
       AC_DEFINE([HAVE_MUNGE], [1], [Define to 1 when MUNGE is available.])
       morph_munge_summary="yes (morphrun reports to morphd)"],
      [AS_IF([test "x$with_munge" = xyes],
             [AC_MSG_ERROR([--with-munge was given but munge.h or -lmunge was not found (Debian: libmunge-dev)])])])
  ])
  AC_SUBST([MUNGE_LIBS])
  AM_CONDITIONAL([HAVE_MUNGE], [test "x$MUNGE_LIBS" != x])
])
