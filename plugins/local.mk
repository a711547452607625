# The Slurm plugins: thin C-ABI shells over libmorph, built when configure finds Slurm's
# headers. Each exports only its plugin symbols (a linker version script); libmorph goes
# in whole and hidden, and libslurm is not linked: its symbols come from the process
# that loads the plugin.
if HAVE_SLURM
slurmplugin_LTLIBRARIES = %reldir%/job_submit_morph.la %reldir%/spank_morph.la

morph_plugin_cxxflags = $(MORPH_CXX_STD_FLAG) $(MORPH_WARN_CXXFLAGS) $(MORPH_HARDEN_CXXFLAGS) -fvisibility=hidden
morph_plugin_ldflags = -module -avoid-version -shared $(MORPH_HARDEN_LDFLAGS)

%canon_reldir%_job_submit_morph_la_SOURCES = \
	%reldir%/common/slurm_host.h \
	%reldir%/job_submit/job_submit_morph.cc \
	%reldir%/job_submit/submit_handler.h %reldir%/job_submit/submit_handler.cc
%canon_reldir%_job_submit_morph_la_CPPFLAGS = $(AM_CPPFLAGS) $(SLURM_CPPFLAGS)
%canon_reldir%_job_submit_morph_la_CXXFLAGS = $(morph_plugin_cxxflags)
%canon_reldir%_job_submit_morph_la_LDFLAGS = $(morph_plugin_ldflags) \
	-Wl,--version-script=$(srcdir)/%reldir%/job_submit/job_submit_morph.map
%canon_reldir%_job_submit_morph_la_LIBADD = libmorph/libmorph_perf.la $(CERES_LIBS) $(FMT_LIBS)
EXTRA_%canon_reldir%_job_submit_morph_la_DEPENDENCIES = %reldir%/job_submit/job_submit_morph.map

%canon_reldir%_spank_morph_la_SOURCES = \
	%reldir%/common/slurm_host.h \
	%reldir%/spank/spank_morph.cc \
	%reldir%/spank/spank_state.h %reldir%/spank/spank_state.cc \
	%reldir%/spank/spank_options.h %reldir%/spank/spank_options.cc \
	%reldir%/spank/spank_client.h %reldir%/spank/spank_client.cc \
	%reldir%/spank/spank_remote.h %reldir%/spank/spank_remote.cc
%canon_reldir%_spank_morph_la_CPPFLAGS = $(AM_CPPFLAGS) $(SLURM_CPPFLAGS)
%canon_reldir%_spank_morph_la_CXXFLAGS = $(morph_plugin_cxxflags)
%canon_reldir%_spank_morph_la_LDFLAGS = $(morph_plugin_ldflags) \
	-Wl,--version-script=$(srcdir)/%reldir%/spank/spank_morph.map
%canon_reldir%_spank_morph_la_LIBADD = libmorph/libmorph_base.la $(FMT_LIBS)
EXTRA_%canon_reldir%_spank_morph_la_DEPENDENCIES = %reldir%/spank/spank_morph.map
endif
EXTRA_DIST += %reldir%/job_submit/job_submit_morph.map %reldir%/spank/spank_morph.map
