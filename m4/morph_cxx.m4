# MORPH_CXX_STD(VERSION)
# Require a compiler that accepts -std=c++VERSION and use it everywhere.
AC_DEFUN([MORPH_CXX_STD], [
  MORPH_CXX_STD_FLAG="-std=c++$1"
  AC_MSG_CHECKING([whether $CXX accepts $MORPH_CXX_STD_FLAG])
  morph_save_CXXFLAGS=$CXXFLAGS
  CXXFLAGS="$CXXFLAGS $MORPH_CXX_STD_FLAG"
  AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <span>
#include <concepts>
template <std::integral T> constexpr T twice(T v) { return 2 * v; }]],
                                     [[static_assert(twice(2) == 4);]])],
    [AC_MSG_RESULT([yes])],
    [AC_MSG_RESULT([no])
     AC_MSG_ERROR([a C++$1 compiler is required (g++ 12 or newer)])])
  CXXFLAGS=$morph_save_CXXFLAGS
  AC_SUBST([MORPH_CXX_STD_FLAG])
])

# MORPH_HARDENING
# Warnings and hardening flags for everything Morph compiles.
AC_DEFUN([MORPH_HARDENING], [
  MORPH_WARN_CXXFLAGS="-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wconversion -Wno-sign-conversion"
  MORPH_WARN_CFLAGS="-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion -Wstrict-prototypes"
  MORPH_C_STD_FLAG="-std=gnu11"
  MORPH_HARDEN_CXXFLAGS="-fstack-protector-strong -D_FORTIFY_SOURCE=2 -fno-strict-overflow"
  MORPH_HARDEN_LDFLAGS="-Wl,-z,relro -Wl,-z,now"
  AC_ARG_ENABLE([werror],
    [AS_HELP_STRING([--enable-werror], [treat compiler warnings as errors])],
    [AS_IF([test "x$enableval" = xyes],
           [MORPH_WARN_CXXFLAGS="$MORPH_WARN_CXXFLAGS -Werror"
            MORPH_WARN_CFLAGS="$MORPH_WARN_CFLAGS -Werror"])])
  AC_SUBST([MORPH_WARN_CXXFLAGS])
  AC_SUBST([MORPH_WARN_CFLAGS])
  AC_SUBST([MORPH_C_STD_FLAG])
  AC_SUBST([MORPH_HARDEN_CXXFLAGS])
  AC_SUBST([MORPH_HARDEN_LDFLAGS])
])

# MORPH_SANITIZERS
# --enable-sanitizers builds everything with AddressSanitizer and UBSan.
AC_DEFUN([MORPH_SANITIZERS], [
  AC_ARG_ENABLE([sanitizers],
    [AS_HELP_STRING([--enable-sanitizers],
      [build with -fsanitize=address,undefined (for tests)])],
    [morph_sanitizers=$enableval], [morph_sanitizers=no])
  MORPH_SANITIZER_FLAGS=
  AS_IF([test "x$morph_sanitizers" = xyes], [
    MORPH_SANITIZER_FLAGS="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
    # ASan checks the plain calls; _FORTIFY_SOURCE's __*_chk variants bypass some of it.
    MORPH_HARDEN_CXXFLAGS=$(echo "$MORPH_HARDEN_CXXFLAGS" | sed 's/ *-D_FORTIFY_SOURCE=2//')
    AC_MSG_CHECKING([whether $CXX links with $MORPH_SANITIZER_FLAGS])
    morph_save_LDFLAGS=$LDFLAGS
    LDFLAGS="$LDFLAGS $MORPH_SANITIZER_FLAGS"
    AC_LINK_IFELSE([AC_LANG_PROGRAM([], [])], [AC_MSG_RESULT([yes])],
      [AC_MSG_RESULT([no]); AC_MSG_ERROR([the sanitizer runtimes are missing])])
    LDFLAGS=$morph_save_LDFLAGS
  ])
  AC_SUBST([MORPH_SANITIZER_FLAGS])
])
