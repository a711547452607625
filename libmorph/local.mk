# libmorph: the one library every Morph program links.
lib_LTLIBRARIES += libmorph/libmorph.la
libmorph_libmorph_la_LIBADD = $(CERES_LIBS) $(FMT_LIBS)
libmorph_libmorph_la_LDFLAGS = $(AM_LDFLAGS) -version-info 0:0:0
libmorph_libmorph_la_SOURCES = \
	%reldir%/util/error.h \
	%reldir%/util/parse.h %reldir%/util/parse.cc \
	%reldir%/util/csv.h %reldir%/util/csv.cc \
	%reldir%/util/hostlist.h %reldir%/util/hostlist.cc \
	%reldir%/util/text_file.h %reldir%/util/text_file.cc \
	%reldir%/model/model_spec.h %reldir%/model/model_spec.cc \
	%reldir%/model/catalog.h %reldir%/model/catalog.cc \
	%reldir%/cluster/gpu_type.h %reldir%/cluster/node_type.h \
	%reldir%/cluster/cluster.h %reldir%/cluster/cluster.cc \
	%reldir%/cluster/allocation.h %reldir%/cluster/allocation.cc \
	%reldir%/plan/plan.h %reldir%/plan/plan.cc \
	%reldir%/memory/memory_model.h %reldir%/memory/memory_model.cc \
	%reldir%/perf/perf_params.h %reldir%/perf/perf_params.cc \
	%reldir%/perf/overlap.h \
	%reldir%/perf/bandwidth.h %reldir%/perf/bandwidth.cc \
	%reldir%/perf/forward_model.h %reldir%/perf/forward_model.cc \
	%reldir%/perf/iteration_time.h %reldir%/perf/iteration_time.cc \
	%reldir%/perf/perf_model.h \
	%reldir%/perf/fit.h %reldir%/perf/fit.cc \
	%reldir%/planner/plan_search.h %reldir%/planner/plan_search.cc \
	%reldir%/planner/sensitivity.h %reldir%/planner/sensitivity.cc \
	%reldir%/config/morph_conf.h %reldir%/config/morph_conf.cc \
	%reldir%/artifact/artifact_spec.h %reldir%/artifact/artifact_spec.cc \
	%reldir%/artifact/artifact_rows.h %reldir%/artifact/artifact_rows.cc \
	%reldir%/artifact/validation.h %reldir%/artifact/validation.cc
