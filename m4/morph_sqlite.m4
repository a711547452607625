# MORPH_CHECK_SQLITE
# SQLite 3 for morphd's state (daemon/libmorph_store.la) and the commands that read it.
AC_DEFUN([MORPH_CHECK_SQLITE], [
  AC_ARG_WITH([sqlite],
    [AS_HELP_STRING([--without-sqlite], [build morphd and morph status out])],
    [], [with_sqlite=check])
  morph_have_sqlite=no
  morph_sqlite_summary="no (morphd and morph status are built out)"
  AS_IF([test "x$with_sqlite" != xno], [
    PKG_CHECK_MODULES([SQLITE], [sqlite3 >= 3.31],
      [morph_have_sqlite=yes
       morph_sqlite_summary="yes ($($PKG_CONFIG --modversion sqlite3))"
       AC_DEFINE([HAVE_SQLITE], [1], [Define to 1 when SQLite 3 is available for morphd's state.])],
      [AS_IF([test "x$with_sqlite" = xyes],
             [AC_MSG_ERROR([--with-sqlite was given but SQLite >= 3.31 was not found (Debian: libsqlite3-dev)])])])
  ])
  AM_CONDITIONAL([HAVE_SQLITE], [test "x$morph_have_sqlite" = xyes])
])
