# The options of every Morph program, on CLI11 (compiled here once).
noinst_LTLIBRARIES += tools/libmorph_command_line.la
tools_libmorph_command_line_la_SOURCES = %reldir%/command_line/command_line.h %reldir%/command_line/command_line.cc

# morph: the command-line tool.
bin_PROGRAMS += tools/morph/morph
tools_morph_morph_LDADD = tools/libmorph_command_line.la libmorph/libmorph.la $(FMT_LIBS)
tools_morph_morph_SOURCES = \
	%reldir%/morph/main.cc \
	%reldir%/morph/commands.h %reldir%/morph/request_check.h \
	%reldir%/morph/context.h %reldir%/morph/context.cc \
	%reldir%/morph/table.h %reldir%/morph/table.cc \
	%reldir%/morph/progress_line.h %reldir%/morph/progress_line.cc \
	%reldir%/morph/plan_json.h %reldir%/morph/plan_json.cc \
	%reldir%/morph/perf_source.h %reldir%/morph/perf_source.cc \
	%reldir%/morph/plan_command.cc \
	%reldir%/morph/fit_command.cc \
	%reldir%/morph/validate_command.cc \
	%reldir%/morph/curve_command.cc \
	%reldir%/morph/simulate_command.cc \
	%reldir%/morph/reshard_command.cc \
	%reldir%/morph/hetero_command.cc
if HAVE_SQLITE
tools_morph_morph_SOURCES += %reldir%/morph/state_file.h %reldir%/morph/state_file.cc \
	%reldir%/morph/state_commands.cc %reldir%/morph/models_command.cc %reldir%/morph/forget_command.cc
tools_morph_morph_LDADD += daemon/libmorph_store.la daemon/libmorph_daemon.la $(SQLITE_LIBS)
endif
