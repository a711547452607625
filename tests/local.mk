# Tests: GoogleTest unit tests, bats command-line tests, Google Benchmark benchmarks.
AM_TESTS_ENVIRONMENT = \
	MORPH_CONF='$(abs_top_srcdir)/etc/morph.conf'; export MORPH_CONF; \
	MORPH_CATALOG='$(abs_top_srcdir)/share/models.json'; export MORPH_CATALOG; \
	MORPH_ARTIFACT_SPEC='$(abs_top_srcdir)/share/morphling-artifact.json'; export MORPH_ARTIFACT_SPEC; \
	MORPH_SRCDIR='$(abs_top_srcdir)'; export MORPH_SRCDIR; \
	MORPH_BUILDDIR='$(abs_top_builddir)'; export MORPH_BUILDDIR;
