# Iteration reports from morphrun to morphd over TCP, authenticated with MUNGE
# (docs/launcher.md, "Reporting to morphd"). Built only when configure found MUNGE.
if HAVE_MUNGE
noinst_LTLIBRARIES += daemon/libmorph_report.la
daemon_libmorph_report_la_SOURCES = \
	%reldir%/report/report_message.h %reldir%/report/report_message.cc \
	%reldir%/report/munge_credential.h %reldir%/report/munge_credential.cc \
	%reldir%/report/tcp_socket.h %reldir%/report/tcp_socket.cc \
	%reldir%/report/report_client.h %reldir%/report/report_client.cc \
	%reldir%/report/report_server.h %reldir%/report/report_server.cc
daemon_libmorph_report_la_LIBADD = $(MUNGE_LIBS) $(FMT_LIBS)
endif
