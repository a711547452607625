# profiler/: libmorph_hw (hwloc topology and CPU binding, also linked by the launcher) and
# morph-profile (topo always; bandwidth over MPI, with CUDA and NCCL when configured).
if HAVE_HWLOC
noinst_LTLIBRARIES += profiler/libmorph_hw.la
profiler_libmorph_hw_la_SOURCES = \
	%reldir%/pcie_link.h %reldir%/pcie_link.cc \
	%reldir%/topology.h %reldir%/topology.cc
profiler_libmorph_hw_la_CPPFLAGS = $(AM_CPPFLAGS) $(HWLOC_CFLAGS)
profiler_libmorph_hw_la_LIBADD = libmorph/libmorph.la $(HWLOC_LIBS) $(FMT_LIBS)

if HAVE_MPI
bin_PROGRAMS += profiler/morph-profile
profiler_morph_profile_SOURCES = \
	%reldir%/main.cc %reldir%/commands.h \
	%reldir%/topology_report.h %reldir%/topology_report.cc \
	%reldir%/topo_command.cc \
	%reldir%/size_sweep.h %reldir%/size_sweep.cc \
	%reldir%/bus_bandwidth.h %reldir%/bus_bandwidth.cc \
	%reldir%/node_layout.h %reldir%/node_layout.cc \
	%reldir%/mpi_bandwidth.h %reldir%/mpi_bandwidth.cc \
	%reldir%/gpu_bandwidth.h \
	%reldir%/conf_fragment.h %reldir%/conf_fragment.cc \
	%reldir%/bandwidth_command.cc \
	%reldir%/job_run.h %reldir%/job_run.cc \
	%reldir%/profile_folder.h %reldir%/profile_folder.cc \
	%reldir%/job_command.cc
profiler_morph_profile_CPPFLAGS = $(AM_CPPFLAGS) $(HWLOC_CFLAGS) $(MPI_CFLAGS) -DOMPI_SKIP_MPICXX=1
profiler_morph_profile_LDADD = tools/libmorph_command_line.la profiler/libmorph_hw.la libmorph/libmorph.la $(MPI_LIBS) $(FMT_LIBS)
if HAVE_CUDA
profiler_morph_profile_SOURCES += %reldir%/cuda_timer.h %reldir%/cuda_bandwidth.cc
profiler_morph_profile_CPPFLAGS += $(CUDA_CPPFLAGS)
profiler_morph_profile_LDADD += $(CUDA_LIBS)
else
profiler_morph_profile_SOURCES += %reldir%/cuda_bandwidth_none.cc
endif
if HAVE_NCCL
profiler_morph_profile_SOURCES += %reldir%/nccl_bandwidth.cc
profiler_morph_profile_CPPFLAGS += $(NCCL_CPPFLAGS)
profiler_morph_profile_LDADD += $(NCCL_LIBS) $(CUDA_LIBS)
else
profiler_morph_profile_SOURCES += %reldir%/nccl_bandwidth_none.cc
endif
endif
endif
EXTRA_DIST += %reldir%/cuda_timer.h %reldir%/cuda_bandwidth.cc %reldir%/cuda_bandwidth_none.cc \
	%reldir%/nccl_bandwidth.cc %reldir%/nccl_bandwidth_none.cc
