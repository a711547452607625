# The MPI side of Morph: morphrun (the launcher under srun) and morph-reshard-mpi.
if HAVE_MPI
launcher_mpi_reshard = %reldir%/mpi_reshard.h %reldir%/mpi_reshard.cc
bin_PROGRAMS += launcher/morph-reshard-mpi
launcher_morph_reshard_mpi_SOURCES = %reldir%/reshard_mpi.cc $(launcher_mpi_reshard)
launcher_morph_reshard_mpi_CPPFLAGS = $(AM_CPPFLAGS) $(MPI_CFLAGS) -DOMPI_SKIP_MPICXX=1
launcher_morph_reshard_mpi_LDADD = libmorph/libmorph.la $(MPI_LIBS) $(FMT_LIBS)

if HAVE_SLURM
if HAVE_HWLOC
bin_PROGRAMS += launcher/morphrun
launcher_morphrun_SOURCES = \
	%reldir%/main.cc \
	%reldir%/options.h %reldir%/options.cc \
	%reldir%/morph_config.h %reldir%/morph_config.cc \
	%reldir%/supervisor.h %reldir%/supervisor.cc \
	%reldir%/marker_files.h %reldir%/marker_files.cc \
	%reldir%/save_request.h %reldir%/save_request.cc \
	%reldir%/step_choice.h %reldir%/step_choice.cc \
	%reldir%/binding.h %reldir%/binding.cc \
	%reldir%/master_addr.h %reldir%/master_addr.cc \
	%reldir%/checkpoint_prepare.h %reldir%/checkpoint_prepare.cc \
	%reldir%/pmi_env.h %reldir%/pmi_env.cc \
	%reldir%/slurm_job.h %reldir%/slurm_job.cc \
	%reldir%/task.h %reldir%/task.cc \
	%reldir%/driver.h %reldir%/driver.cc \
	%reldir%/morphd_report.h %reldir%/morphd_report.cc \
	$(launcher_mpi_reshard)
launcher_morphrun_CPPFLAGS = $(AM_CPPFLAGS) $(MPI_CFLAGS) $(SLURM_CPPFLAGS) $(HWLOC_CFLAGS) -DOMPI_SKIP_MPICXX=1
# Reporting rank 0's iterations to morphd (launcher/morphd_report.cc; built out without MUNGE).
if HAVE_MUNGE
launcher_morphrun_report = daemon/libmorph_report.la
endif
launcher_morphrun_LDADD = tools/libmorph_command_line.la $(launcher_morphrun_report) profiler/libmorph_hw.la libmorph/libmorph.la $(MPI_LIBS) $(SLURM_LIBS) $(HWLOC_LIBS) $(FMT_LIBS)
endif
endif
endif
