# The `morph` Python package (python/morph/*.py) and its native half, morph._native
# (pybind11 over libmorph's convenience libraries, so the module is self-contained).
# Built when configure finds python3, pybind11 and NumPy (m4/morph_python.m4). In the
# build tree the package is assembled in $(builddir)/python: PYTHONPATH=<build>/python.
MORPH_PYTHON_SOURCES = %reldir%/morph/__init__.py %reldir%/morph/plan.py %reldir%/morph/dataset.py \
	%reldir%/morph/checkpoint.py %reldir%/morph/metrics.py %reldir%/morph/signals.py
EXTRA_DIST += $(MORPH_PYTHON_SOURCES) %reldir%/native.cc %reldir%/tests/run.sh %reldir%/tests/support.py %reldir%/tests/test_plan.py \
	%reldir%/tests/test_dataset.py %reldir%/tests/test_checkpoint.py %reldir%/tests/test_metrics_signals.py

if HAVE_PYTHON
morphpkgdir = $(morphpythondir)/morph
morphpkg_LTLIBRARIES = python/morph/_native.la
morphpkg_DATA = $(MORPH_PYTHON_SOURCES)
python_morph__native_la_SOURCES = %reldir%/native.cc
python_morph__native_la_CPPFLAGS = $(AM_CPPFLAGS) $(PYBIND11_CFLAGS)
# pybind11 wants its symbols hidden; the module exports only PyInit__native.
python_morph__native_la_CXXFLAGS = $(AM_CXXFLAGS) -fvisibility=hidden -Wno-shadow
python_morph__native_la_LDFLAGS = -module -avoid-version -shared
python_morph__native_la_LIBADD = libmorph/libmorph_launch.la libmorph/libmorph_state.la libmorph/libmorph_base.la \
	$(XXHASH_LIBS) $(FMT_LIBS)

# The package in the build tree: the sources beside the built module.
all-local: python-package
python-package: python/morph/_native.la
	@for f in $(MORPH_PYTHON_SOURCES); do \
	  test "$(srcdir)/$$f" -ef "$$f" || cp -p "$(srcdir)/$$f" "$$f"; \
	done
	@ln -sf .libs/_native.so python/morph/_native.so
clean-local: python-clean
python-clean:
	-test "$(srcdir)" -ef . || rm -f $(MORPH_PYTHON_SOURCES)
	-rm -f python/morph/_native.so
	-rm -rf python/morph/__pycache__

TESTS += %reldir%/tests/run.sh
AM_TESTS_ENVIRONMENT += PYTHON='$(PYTHON)'; export PYTHON;
endif
.PHONY: python-package python-clean
