#!/usr/bin/env bash
# The morph Python module's unit tests (python3 -m unittest), against the package built in
# this tree (make check sets MORPH_SRCDIR, MORPH_BUILDDIR and PYTHON). In a sanitized
# build the module carries AddressSanitizer and UBSan, whose runtimes the interpreter must
# load first; Python's own allocations are not leak-checked.
set -euo pipefail
: "${MORPH_SRCDIR:?}" "${MORPH_BUILDDIR:?}"
PYTHON=${PYTHON:-/usr/bin/python3}
export PYTHONPATH="$MORPH_BUILDDIR/python${PYTHONPATH:+:$PYTHONPATH}" MORPH_RULES_DIR="$MORPH_SRCDIR/share/rules"
export PYTHONDONTWRITEBYTECODE=1
if [ -n "${MORPH_SANITIZERS:-}" ]; then
  LD_PRELOAD="$(${CXX:-g++} -print-file-name=libasan.so):$(${CXX:-g++} -print-file-name=libubsan.so)"
  export LD_PRELOAD ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
fi
exec "$PYTHON" -m unittest discover -s "$MORPH_SRCDIR/python/tests" -p 'test_*.py' -v
