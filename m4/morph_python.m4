# MORPH_CHECK_PYTHON
# The `morph` Python module (python/): pybind11 over libmorph, for training scripts. Needs
# Debian's python3 (/usr/bin/python3 by default; PYTHON= picks another), its headers,
# pybind11 and NumPy. Without them the module is built out. It installs into
# $(prefix)/lib/python3.X/dist-packages, which Debian's python3 imports for /usr/local
# (--with-python-dir= puts it elsewhere). PyTorch (python3-torch) is needed only by the
# example trainer and `make check-torch`.
AC_DEFUN([MORPH_CHECK_PYTHON], [
  AC_ARG_WITH([python],
    [AS_HELP_STRING([--without-python], [build the morph Python module out])],
    [], [with_python=check])
  AC_ARG_WITH([python-dir],
    [AS_HELP_STRING([--with-python-dir=DIR], [install the morph Python package into DIR])],
    [morph_python_dir=$withval], [morph_python_dir=])
  AC_ARG_VAR([PYTHON], [the Python 3 interpreter the module is built for (default /usr/bin/python3)])
  morph_python_summary="no (the morph Python module is built out)"
  morph_have_python=no
  morph_have_torch=no
  PYBIND11_CFLAGS=
  AS_IF([test "x$with_python" != xno], [
    AS_IF([test -z "$PYTHON"], [AS_IF([test -x /usr/bin/python3], [PYTHON=/usr/bin/python3], [AC_PATH_PROG([PYTHON], [python3])])])
    AS_IF([test -n "$PYTHON" && "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 9))' 2>/dev/null], [
      morph_python_version=`"$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[[:2]])'`
      morph_python_include=`"$PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()[["include"]])'`
      morph_pybind11_include=`"$PYTHON" -c 'import pybind11; print(pybind11.get_include())' 2>/dev/null`
      AS_IF([test -z "$morph_pybind11_include" && test -d /usr/include/pybind11], [morph_pybind11_include=/usr/include])
      AC_MSG_CHECKING([for pybind11 and Python.h ($PYTHON $morph_python_version)])
      morph_save_CPPFLAGS=$CPPFLAGS
      CPPFLAGS="$CPPFLAGS -I$morph_pybind11_include -I$morph_python_include"
      AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <pybind11/pybind11.h>]], [[]])],
        [AC_MSG_RESULT([yes])
         AC_MSG_CHECKING([for NumPy])
         AS_IF(["$PYTHON" -c 'import numpy' 2>/dev/null],
           [AC_MSG_RESULT([yes]); morph_have_python=yes], [AC_MSG_RESULT([no])])],
        [AC_MSG_RESULT([no])])
      CPPFLAGS=$morph_save_CPPFLAGS
    ])
    AS_IF([test "x$morph_have_python" = xyes], [
      PYBIND11_CFLAGS="-I$morph_pybind11_include -I$morph_python_include"
      AS_IF([test -z "$morph_python_dir"], [morph_python_dir='${prefix}/lib/python'$morph_python_version'/dist-packages'])
      AS_IF(["$PYTHON" -c 'import torch, torch.distributed' 2>/dev/null], [morph_have_torch=yes])
      morph_python_summary="yes ($PYTHON $morph_python_version; PyTorch: $morph_have_torch)"
    ], [AS_IF([test "x$with_python" = xyes],
         [AC_MSG_ERROR([--with-python was given but pybind11, Python.h or NumPy was not found (Debian: pybind11-dev python3-dev python3-numpy)])])])
  ])
  AC_SUBST([PYTHON])
  AC_SUBST([PYBIND11_CFLAGS])
  AC_SUBST([morphpythondir], [$morph_python_dir])
  AM_CONDITIONAL([HAVE_PYTHON], [test "x$morph_have_python" = xyes])
  AM_CONDITIONAL([HAVE_TORCH], [test "x$morph_have_torch" = xyes])
])
