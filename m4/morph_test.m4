# MORPH_CHECK_GTEST
# GoogleTest and GoogleMock build the unit tests; without them `make check`
# runs only the command-line tests.
AC_DEFUN([MORPH_CHECK_GTEST], [
  PKG_CHECK_MODULES([GTEST], [gtest_main gmock],
    [morph_have_gtest=yes], [morph_have_gtest="no (unit tests are not built; Debian: libgtest-dev libgmock-dev)"])
  AM_CONDITIONAL([HAVE_GTEST], [test "x$morph_have_gtest" = xyes])
])

# MORPH_CHECK_BENCHMARK
# Google Benchmark builds the benchmarks behind `make bench`.
AC_DEFUN([MORPH_CHECK_BENCHMARK], [
  PKG_CHECK_MODULES([BENCHMARK], [benchmark],
    [morph_have_benchmark=yes], [morph_have_benchmark="no (make bench is unavailable; Debian: libbenchmark-dev)"])
  AM_CONDITIONAL([HAVE_BENCHMARK], [test "x$morph_have_benchmark" = xyes])
])

# MORPH_CHECK_FUZZER
# clang++ with libFuzzer for `make fuzz` (optional; FUZZ_CXX overrides the compiler).
AC_DEFUN([MORPH_CHECK_FUZZER], [
  AC_ARG_VAR([FUZZ_CXX], [C++ compiler with -fsanitize=fuzzer (default: clang++)])
  AC_CHECK_PROGS([FUZZ_CXX], [clang++ clang++-14], [])
  morph_have_fuzzer=no
  AS_IF([test -n "$FUZZ_CXX"], [
    AC_MSG_CHECKING([whether $FUZZ_CXX links libFuzzer targets])
    morph_save_CXX=$CXX; morph_save_CXXFLAGS=$CXXFLAGS; morph_save_LDFLAGS=$LDFLAGS
    CXX=$FUZZ_CXX; CXXFLAGS="-std=c++20 -fsanitize=fuzzer,address,undefined"; LDFLAGS=
    AC_LINK_IFELSE([AC_LANG_SOURCE([[#include <cstddef>
#include <cstdint>
extern "C" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }]])], [morph_have_fuzzer=yes])
    CXX=$morph_save_CXX; CXXFLAGS=$morph_save_CXXFLAGS; LDFLAGS=$morph_save_LDFLAGS
    AC_MSG_RESULT([$morph_have_fuzzer])
  ])
  AM_CONDITIONAL([HAVE_FUZZER], [test "x$morph_have_fuzzer" = xyes])
])
