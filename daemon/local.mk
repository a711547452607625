# daemon/: morphd's state in SQLite (libmorph_store); morphd itself will link it.
if HAVE_SQLITE
noinst_LTLIBRARIES += daemon/libmorph_store.la
daemon_libmorph_store_la_SOURCES = \
	%reldir%/store/sqlite_handle.h %reldir%/store/sqlite_handle.cc \
	%reldir%/store/schema.h %reldir%/store/schema.cc \
	%reldir%/store/journal_state.h %reldir%/store/journal_state.cc \
	%reldir%/store/records.h \
	%reldir%/store/state_store.h %reldir%/store/state_store.cc \
	%reldir%/store/state_journal.cc \
	%reldir%/store/state_queries.cc
daemon_libmorph_store_la_CPPFLAGS = $(AM_CPPFLAGS) $(SQLITE_CFLAGS)
daemon_libmorph_store_la_LIBADD = libmorph/libmorph.la $(SQLITE_LIBS) $(FMT_LIBS)
endif
