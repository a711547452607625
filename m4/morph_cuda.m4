# MORPH_CHECK_CUDA
# --with-cuda[=DIR]: the CUDA runtime for morph-profile's bandwidth tests.
# By default /usr/local/cuda is tried; when it is absent the CUDA parts are
# built out and the summary says so. CUDA's and NCCL's headers come in with -isystem:
# they do not compile cleanly under our warnings (-Wconversion) and -Werror.
AC_DEFUN([MORPH_CHECK_CUDA], [
  AC_ARG_WITH([cuda],
    [AS_HELP_STRING([--with-cuda@<:@=DIR@:>@],
      [CUDA toolkit prefix (default: check /usr/local/cuda)])],
    [], [with_cuda=check])
  morph_cuda_summary="no (GPU bandwidth tests are built out)"
  CUDA_CPPFLAGS=
  CUDA_LIBS=
  AS_IF([test "x$with_cuda" != xno], [
    morph_cuda_prefix=/usr/local/cuda
    AS_IF([test "x$with_cuda" != xyes && test "x$with_cuda" != xcheck],
          [morph_cuda_prefix=$with_cuda])
    morph_save_CPPFLAGS=$CPPFLAGS
    morph_save_LIBS=$LIBS
    CPPFLAGS="$CPPFLAGS -I$morph_cuda_prefix/include"
    LIBS="-L$morph_cuda_prefix/lib64 -lcudart $LIBS"
    AC_MSG_CHECKING([for the CUDA runtime in $morph_cuda_prefix])
    AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <cuda_runtime.h>]],
                                    [[int n = 0; return cudaGetDeviceCount(&n) == cudaSuccess ? 0 : 1;]])],
      [AC_MSG_RESULT([yes])
       CUDA_CPPFLAGS="-isystem $morph_cuda_prefix/include"
       CUDA_LIBS="-L$morph_cuda_prefix/lib64 -Wl,-rpath,$morph_cuda_prefix/lib64 -lcudart"
       morph_cuda_summary="yes ($morph_cuda_prefix)"],
      [AC_MSG_RESULT([no])
       AS_IF([test "x$with_cuda" != xcheck],
             [AC_MSG_ERROR([--with-cuda was given but the CUDA runtime was not found under $morph_cuda_prefix])])])
    CPPFLAGS=$morph_save_CPPFLAGS
    LIBS=$morph_save_LIBS
  ])
  AM_CONDITIONAL([HAVE_CUDA], [test -n "$CUDA_LIBS"])
  AC_SUBST([CUDA_CPPFLAGS])
  AC_SUBST([CUDA_LIBS])
])

# MORPH_CHECK_NCCL
# --with-nccl[=DIR]: NCCL for collective bandwidth tests; needs CUDA. Searched
# in DIR, then beside CUDA.
AC_DEFUN([MORPH_CHECK_NCCL], [
  AC_REQUIRE([MORPH_CHECK_CUDA])
  AC_ARG_WITH([nccl],
    [AS_HELP_STRING([--with-nccl@<:@=DIR@:>@],
      [NCCL prefix (default: check the CUDA prefix)])],
    [], [with_nccl=check])
  morph_nccl_summary="no (NCCL bandwidth tests are built out)"
  NCCL_CPPFLAGS=
  NCCL_LIBS=
  AS_IF([test "x$with_nccl" != xno && test -z "$CUDA_LIBS"], [
    morph_nccl_summary="no (needs CUDA)"
    AS_IF([test "x$with_nccl" != xcheck],
          [AC_MSG_ERROR([--with-nccl needs the CUDA runtime (--with-cuda)])])
  ])
  AS_IF([test "x$with_nccl" != xno && test -n "$CUDA_LIBS"], [
    morph_nccl_prefix=$morph_cuda_prefix
    AS_IF([test "x$with_nccl" != xyes && test "x$with_nccl" != xcheck],
          [morph_nccl_prefix=$with_nccl])
    morph_save_CPPFLAGS=$CPPFLAGS
    morph_save_LIBS=$LIBS
    CPPFLAGS="$CPPFLAGS $CUDA_CPPFLAGS -I$morph_nccl_prefix/include"
    LIBS="-L$morph_nccl_prefix/lib64 -L$morph_nccl_prefix/lib -lnccl $CUDA_LIBS $LIBS"
    AC_MSG_CHECKING([for NCCL in $morph_nccl_prefix])
    AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <nccl.h>]],
                                    [[int v = 0; return ncclGetVersion(&v) == ncclSuccess ? 0 : 1;]])],
      [AC_MSG_RESULT([yes])
       NCCL_CPPFLAGS="-isystem $morph_nccl_prefix/include"
       NCCL_LIBS="-L$morph_nccl_prefix/lib64 -L$morph_nccl_prefix/lib -lnccl"
       morph_nccl_summary="yes ($morph_nccl_prefix)"],
      [AC_MSG_RESULT([no])
       AS_IF([test "x$with_nccl" != xcheck],
             [AC_MSG_ERROR([--with-nccl was given but NCCL was not found under $morph_nccl_prefix])])])
    CPPFLAGS=$morph_save_CPPFLAGS
    LIBS=$morph_save_LIBS
  ])
  AM_CONDITIONAL([HAVE_NCCL], [test -n "$NCCL_LIBS"])
  AC_SUBST([NCCL_CPPFLAGS])
  AC_SUBST([NCCL_LIBS])
])
