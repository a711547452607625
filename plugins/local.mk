# The Slurm plugins: thin C-ABI shells over libmorph, built when configure finds Slurm's
# headers. Each exports only its plugin symbols (a linker version script); libmorph goes
# in whole and hidden, and libslurm is not linked: its symbols come from the process
# that loads the plugin.
if HAVE_SLURM
slurmplugin_LTLIBRARIES = %reldir%/job_submit_morph.la %reldir%/spank_morph.la %reldir%/spank_morph_helper.la

morph_plugin_cxxflags = $(MORPH_CXX_STD_FLAG) $(MORPH_WARN_CXXFLAGS) $(MORPH_HARDEN_CXXFLAGS) -fvisibility=hidden
morph_plugin_ldflags = -module -avoid-version -shared $(MORPH_HARDEN_LDFLAGS)

%canon_reldir%_job_submit_morph_la_SOURCES = \
	%reldir%/common/slurm_host.h \
	%reldir%/job_submit/job_submit_morph.cc \
	%reldir%/job_submit/job_record_head.h \
	%reldir%/job_submit/submit_handler.h %reldir%/job_submit/submit_handler.cc
%canon_reldir%_job_submit_morph_la_CPPFLAGS = $(AM_CPPFLAGS) $(SLURM_CPPFLAGS)
%canon_reldir%_job_submit_morph_la_CXXFLAGS = $(morph_plugin_cxxflags)
%canon_reldir%_job_submit_morph_la_LDFLAGS = $(morph_plugin_ldflags) \
	-Wl,--version-script=$(srcdir)/%reldir%/job_submit/job_submit_morph.map
%canon_reldir%_job_submit_morph_la_LIBADD = libmorph/libmorph_perf.la $(CERES_LIBS) $(FMT_LIBS)
EXTRA_%canon_reldir%_job_submit_morph_la_DEPENDENCIES = %reldir%/job_submit/job_submit_morph.map

# spank_morph.so is C: it goes into every sbatch, srun and slurmstepd, and must not bring
# the C++ runtime (a millisecond per submission). Its option checks are libmorph's
# option_check.c; the C++ half, spank_morph_helper.so, is loaded only for Morph jobs.
%canon_reldir%_spank_morph_la_SOURCES = \
	%reldir%/spank/spank_morph.h %reldir%/spank/spank_morph.c \
	%reldir%/spank/spank_args.c %reldir%/spank/spank_options.c \
	%reldir%/spank/spank_client.c %reldir%/spank/spank_srun.c %reldir%/spank/spank_remote.c \
	%reldir%/spank/spank_helper.c \
	libmorph/request/option_check.h libmorph/request/option_check.c
%canon_reldir%_spank_morph_la_CPPFLAGS = -I$(top_srcdir) $(SLURM_CPPFLAGS)
%canon_reldir%_spank_morph_la_CFLAGS = $(MORPH_C_STD_FLAG) $(MORPH_WARN_CFLAGS) $(MORPH_HARDEN_CXXFLAGS)
%canon_reldir%_spank_morph_la_LDFLAGS = $(morph_plugin_ldflags) \
	-Wl,--version-script=$(srcdir)/%reldir%/spank/spank_morph.map
%canon_reldir%_spank_morph_la_LIBADD = -ldl
EXTRA_%canon_reldir%_spank_morph_la_DEPENDENCIES = %reldir%/spank/spank_morph.map

%canon_reldir%_spank_morph_helper_la_SOURCES = \
	%reldir%/common/slurm_host.h \
	%reldir%/spank/helper/spank_morph_helper.cc \
	%reldir%/spank/helper/step_plan.h %reldir%/spank/helper/step_plan.cc
%canon_reldir%_spank_morph_helper_la_CPPFLAGS = $(AM_CPPFLAGS) $(SLURM_CPPFLAGS)
%canon_reldir%_spank_morph_helper_la_CXXFLAGS = $(morph_plugin_cxxflags)
%canon_reldir%_spank_morph_helper_la_LDFLAGS = $(morph_plugin_ldflags) \
	-Wl,--version-script=$(srcdir)/%reldir%/spank/helper/spank_morph_helper.map
%canon_reldir%_spank_morph_helper_la_LIBADD = libmorph/libmorph_base.la $(FMT_LIBS)
EXTRA_%canon_reldir%_spank_morph_helper_la_DEPENDENCIES = %reldir%/spank/helper/spank_morph_helper.map
endif
EXTRA_DIST += %reldir%/job_submit/job_submit_morph.map %reldir%/spank/spank_morph.map \
	%reldir%/spank/helper/spank_morph_helper.map
