# MORPH_CHECK_SLURM
# Slurm's public headers (slurm/slurm.h, slurm/spank.h) and libslurm, for the
# plugins, morphrun and morphd. --with-slurm=DIR names the installation prefix;
# --without-slurm builds those components out.
AC_DEFUN([MORPH_CHECK_SLURM], [
  AC_ARG_WITH([slurm],
    [AS_HELP_STRING([--with-slurm@<:@=DIR@:>@],
      [Slurm installation prefix (default: check /usr)])],
    [], [with_slurm=check])
  morph_slurm_summary=no
  SLURM_CPPFLAGS=
  SLURM_LIBS=
  AS_IF([test "x$with_slurm" != xno], [
    morph_slurm_prefix=/usr
    AS_IF([test "x$with_slurm" != xyes && test "x$with_slurm" != xcheck],
          [morph_slurm_prefix=$with_slurm])
    AS_IF([test "x$morph_slurm_prefix" != x/usr],
          [SLURM_CPPFLAGS="-I$morph_slurm_prefix/include"
           SLURM_LIBS="-L$morph_slurm_prefix/lib"])
    morph_save_CPPFLAGS=$CPPFLAGS
    CPPFLAGS="$CPPFLAGS $SLURM_CPPFLAGS"
    AC_CHECK_HEADERS([slurm/slurm.h slurm/spank.h], [morph_slurm_headers=yes],
                     [morph_slurm_headers=no; break])
    AS_IF([test "x$morph_slurm_headers" = xyes], [
      AC_MSG_CHECKING([for the Slurm version])
      AC_COMPUTE_INT([morph_slurm_version], [SLURM_VERSION_NUMBER],
                     [[#include <slurm/slurm_version.h>]], [morph_slurm_version=0])
      morph_slurm_version_string="$((morph_slurm_version >> 16)).$(((morph_slurm_version >> 8) & 255)).$((morph_slurm_version & 255))"
      AC_MSG_RESULT([$morph_slurm_version_string])
      morph_save_LIBS=$LIBS
      LIBS="$SLURM_LIBS $LIBS"
      AC_CHECK_LIB([slurm], [slurm_api_version],
        [SLURM_LIBS="$SLURM_LIBS -lslurm"
         morph_slurm_summary="yes ($morph_slurm_version_string, $morph_slurm_prefix)"],
        [AC_MSG_ERROR([Slurm's headers are under $morph_slurm_prefix but libslurm is not, which morphrun and morphd link: install libslurm-dev, or configure --without-slurm])])
      LIBS=$morph_save_LIBS
    ])
    CPPFLAGS=$morph_save_CPPFLAGS
    AS_IF([test "x$with_slurm" != xcheck && test "x$morph_slurm_summary" = xno],
          [AC_MSG_ERROR([--with-slurm was given but slurm/slurm.h and slurm/spank.h were not found under $morph_slurm_prefix])])
  ])
  AM_CONDITIONAL([HAVE_SLURM], [test "x$morph_slurm_summary" != xno])
  dnl Where make install puts the plugins, and where Slurm keeps its own (the test
  dnl cluster's PluginDir lists the build tree first, then Slurm's).
  AC_ARG_WITH([slurm-plugindir],
    [AS_HELP_STRING([--with-slurm-plugindir=DIR],
      [install the Slurm plugins in DIR (default: LIBDIR/slurm)])],
    [SLURM_PLUGIN_INSTALL_DIR=$withval], [SLURM_PLUGIN_INSTALL_DIR='${libdir}/slurm'])
  AC_SUBST([SLURM_PLUGIN_INSTALL_DIR])
  SLURM_SYSTEM_PLUGIN_DIR=
  for morph_dir in /usr/lib/x86_64-linux-gnu/slurm-wlm /usr/lib64/slurm /usr/lib/slurm "$morph_slurm_prefix/lib/slurm"; do
    AS_IF([test -z "$SLURM_SYSTEM_PLUGIN_DIR" && test -f "$morph_dir/select_cons_tres.so"],
          [SLURM_SYSTEM_PLUGIN_DIR=$morph_dir])
  done
  AC_SUBST([SLURM_SYSTEM_PLUGIN_DIR])
  dnl slurmctld's slurm.conf, whose partitions job_submit_morph reads when slurmctld
  dnl loads it (SLURM_CONF in slurmctld's environment comes first).
  AC_ARG_WITH([slurm-conf],
    [AS_HELP_STRING([--with-slurm-conf=FILE],
      [slurm.conf that job_submit_morph reads partitions from (default: /etc/slurm/slurm.conf)])],
    [morph_slurm_conf=$withval], [morph_slurm_conf=/etc/slurm/slurm.conf])
  AC_DEFINE_UNQUOTED([MORPH_SLURM_CONF], ["$morph_slurm_conf"], [slurm.conf job_submit_morph reads partitions from])
  AC_SUBST([SLURM_CPPFLAGS])
  AC_SUBST([SLURM_LIBS])
])
