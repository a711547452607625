# daemon/: morphd, the policy daemon. Its core is pure (what Slurm says -> the policy's
# view -> reconfigurations, and their journaled steps); its state lives in SQLite
# (libmorph_store); the daemon adds the libslurm side.
noinst_LTLIBRARIES += daemon/libmorph_daemon.la
daemon_libmorph_daemon_la_SOURCES = \
	%reldir%/cluster_snapshot.h %reldir%/pending_reason.h \
	%reldir%/job_measurements.h %reldir%/job_measurements.cc \
	%reldir%/view_builder.h %reldir%/view_builder.cc \
	%reldir%/reservations.h %reldir%/reservations.cc \
	%reldir%/store/journal_state.h %reldir%/store/journal_state.cc \
	%reldir%/reconfiguration.h %reldir%/reconfiguration.cc \
	%reldir%/slurm_ops.h \
	%reldir%/journal.h %reldir%/journal.cc \
	%reldir%/reconfigurer.h %reldir%/reconfigurer.cc \
	%reldir%/size_caps.h %reldir%/size_caps.cc \
	%reldir%/scheduler.h %reldir%/scheduler.cc \
	%reldir%/job_owners.h %reldir%/job_owners.cc
daemon_libmorph_daemon_la_LIBADD = libmorph/libmorph.la $(FMT_LIBS)

if HAVE_SQLITE
noinst_LTLIBRARIES += daemon/libmorph_store.la
daemon_libmorph_store_la_SOURCES = \
	%reldir%/store/sqlite_handle.h %reldir%/store/sqlite_handle.cc \
	%reldir%/store/schema.h %reldir%/store/schema.cc \
	%reldir%/store/records.h \
	%reldir%/store/state_store.h %reldir%/store/state_store.cc \
	%reldir%/store/writer_lock.h %reldir%/store/writer_lock.cc \
	%reldir%/store/state_journal.cc \
	%reldir%/store/state_queries.cc \
	%reldir%/store/sla_state.h %reldir%/store/sla_state.cc \
	%reldir%/sqlite_journal.h %reldir%/sqlite_journal.cc \
	%reldir%/job_tracker.h %reldir%/job_tracker.cc \
	%reldir%/batch_histories.h %reldir%/batch_histories.cc %reldir%/job_histories.h %reldir%/job_histories.cc \
	%reldir%/online_params.h %reldir%/online_params.cc
daemon_libmorph_store_la_CPPFLAGS = $(AM_CPPFLAGS) $(SQLITE_CFLAGS)
daemon_libmorph_store_la_LIBADD = libmorph/libmorph.la $(SQLITE_LIBS) $(FMT_LIBS)
endif

# morphd itself: the libslurm side and the daemon (its journal lives in SQLite, reports
# come authenticated with MUNGE).
if HAVE_SLURM
if HAVE_SQLITE
if HAVE_MUNGE
sbin_PROGRAMS += daemon/morphd
daemon_morphd_SOURCES = %reldir%/morphd.cc %reldir%/slurm_client.h %reldir%/slurm_client.cc \
	%reldir%/pending_reason.cc %reldir%/node_state.h %reldir%/node_state.cc \
	%reldir%/observations.h %reldir%/observations.cc
daemon_morphd_CPPFLAGS = $(AM_CPPFLAGS) $(SLURM_CPPFLAGS)
daemon_morphd_LDADD = tools/libmorph_command_line.la daemon/libmorph_store.la daemon/libmorph_daemon.la \
	daemon/libmorph_report.la libmorph/libmorph.la $(SLURM_LIBS) $(SQLITE_LIBS) $(MUNGE_LIBS) $(FMT_LIBS)
# Its systemd unit, with the installed path (made again when configure changed it).
systemdunitdir = $(prefix)/lib/systemd/system
systemdunit_DATA = daemon/morphd.service
daemon/morphd.service: $(srcdir)/etc/morphd.service.in Makefile
	$(MKDIR_P) daemon && sed 's|@sbindir[@]|$(sbindir)|g' $(srcdir)/etc/morphd.service.in > $@
CLEANFILES += daemon/morphd.service
endif
endif
endif
EXTRA_DIST += etc/morphd.service.in
