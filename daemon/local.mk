# daemon/: morphd, the policy daemon. Its core is pure (what Slurm says -> the policy's
# view -> reconfigurations); the Slurm and SQLite sides build on it.
noinst_LTLIBRARIES += daemon/libmorph_daemon.la
daemon_libmorph_daemon_la_SOURCES = \
	%reldir%/cluster_snapshot.h \
	%reldir%/view_builder.h %reldir%/view_builder.cc \
	%reldir%/reconfiguration.h %reldir%/reconfiguration.cc \
	%reldir%/slurm_ops.h \
	%reldir%/journal.h %reldir%/journal.cc \
	%reldir%/reconfigurer.h %reldir%/reconfigurer.cc
daemon_libmorph_daemon_la_LIBADD = libmorph/libmorph.la $(FMT_LIBS)
