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
