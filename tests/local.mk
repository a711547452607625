# Tests: GoogleTest unit tests, bats command-line tests, Google Benchmark benchmarks.
# In a sanitized build hwloc's pci, opencl and gl components are left out (none sees a
# CPU): libpciaccess leaks 1 KB at exit that LeakSanitizer cannot attribute (hwloc has
# unloaded the plugin by then); with the opencl one, gcc 12's LeakSanitizer crashed at
# morphrun's exit on a stale dynamic-TLS block ("Tracer caught signal 11", "DTLS 11 at
# 0x50f-...", Debian's ocl-icd installed; morphrun.bats, morphd_report.bats).
AM_TESTS_ENVIRONMENT = \
	MORPH_CONF='$(abs_top_srcdir)/etc/morph.conf'; export MORPH_CONF; \
	MORPH_CATALOG='$(abs_top_srcdir)/share/models.json'; export MORPH_CATALOG; \
	MORPH_ARTIFACT_SPEC='$(abs_top_srcdir)/share/morphling-artifact.json'; export MORPH_ARTIFACT_SPEC; \
	MORPH_SRCDIR='$(abs_top_srcdir)'; export MORPH_SRCDIR; \
	MORPH_BUILDDIR='$(abs_top_builddir)'; export MORPH_BUILDDIR; \
	MORPH_SANITIZERS='$(MORPH_SANITIZER_FLAGS)'; export MORPH_SANITIZERS; \
	TRAINER='$(abs_top_builddir)/tests/trainer/morph-trainer'; export TRAINER; \
	MORPH='$(abs_top_builddir)/tools/morph/morph'; export MORPH; \
	if test -n "$$MORPH_SANITIZERS"; then HWLOC_COMPONENTS=-pci,-opencl,-gl; export HWLOC_COMPONENTS; fi;

if HAVE_GTEST
check_PROGRAMS += tests/unit/unit_tests
TESTS += tests/unit/unit_tests
tests_unit_unit_tests_CPPFLAGS = $(AM_CPPFLAGS) $(GTEST_CFLAGS) -DMORPH_TEST_SRCDIR='"$(abs_top_srcdir)"'
tests_unit_unit_tests_LDADD = daemon/libmorph_daemon.la libmorph/libmorph.la $(GTEST_LIBS) $(FMT_LIBS) $(XXHASH_LIBS)
tests_unit_unit_tests_SOURCES = \
	%reldir%/unit/test_support.h \
	%reldir%/unit/parse_test.cc \
	%reldir%/unit/text_file_test.cc \
	%reldir%/unit/step_layout_test.cc \
	%reldir%/unit/view_builder_test.cc \
	%reldir%/unit/reservations_test.cc \
	%reldir%/unit/daemon_support.h \
	%reldir%/unit/job_measurements_test.cc \
	%reldir%/unit/model_refit_test.cc \
	%reldir%/unit/reconfigurer_test.cc \
	%reldir%/unit/job_owners_test.cc \
	%reldir%/unit/restart_cost_test.cc \
	%reldir%/unit/scheduler_test.cc \
	%reldir%/unit/checkpoint_choice_test.cc \
	%reldir%/unit/rank_file_test.cc \
	%reldir%/unit/model_spec_test.cc \
	%reldir%/unit/allocation_test.cc \
	%reldir%/unit/plan_test.cc \
	%reldir%/unit/divisors_test.cc \
	%reldir%/unit/memory_model_test.cc \
	%reldir%/unit/bandwidth_test.cc \
	%reldir%/unit/iteration_time_test.cc \
	%reldir%/unit/perf_params_test.cc \
	%reldir%/unit/fit_test.cc \
	%reldir%/unit/fit_evidence_test.cc \
	%reldir%/unit/informative_points_test.cc \
	%reldir%/unit/profile_sampling_test.cc \
	%reldir%/unit/observed_iterations_test.cc \
	%reldir%/unit/refit_test.cc \
	%reldir%/unit/plan_search_test.cc \
	%reldir%/unit/morph_conf_test.cc \
	%reldir%/unit/artifact_test.cc \
	%reldir%/unit/online_refit_test.cc \
	%reldir%/unit/option_check_test.cc \
	%reldir%/unit/morph_request_test.cc \
	%reldir%/unit/gpu_groups_test.cc \
	%reldir%/unit/hetero_plan_test.cc \
	%reldir%/unit/step_split_test.cc \
	%reldir%/unit/job_record_test.cc \
	%reldir%/unit/submit_test.cc \
	%reldir%/unit/slurm_partitions_test.cc \
	%reldir%/unit/policy_support.h \
	%reldir%/unit/placement_test.cc \
	%reldir%/unit/free_cells_test.cc \
	%reldir%/unit/hetero_policy_test.cc \
	%reldir%/unit/policy_test.cc \
	%reldir%/unit/alternatives_test.cc \
	%reldir%/unit/simulator_test.cc \
	%reldir%/unit/sim_partitions_test.cc \
	%reldir%/unit/job_length_test.cc \
	%reldir%/unit/starvation_test.cc \
	%reldir%/state_fixture.h \
	%reldir%/forgetful_slurm.h \
	%reldir%/unit/safetensors_test.cc \
	%reldir%/unit/dataset_order_test.cc \
	%reldir%/unit/reshard_test.cc \
	%reldir%/unit/checkpoint_test.cc \
	%reldir%/unit/state_spec_test.cc \
	%reldir%/unit/step_plan_test.cc \
	%reldir%/unit/framework_test.cc \
	%reldir%/unit/precision_test.cc \
	%reldir%/unit/driver_contract_test.cc \
	%reldir%/unit/cpu_binding_test.cc \
	%reldir%/unit/hetero_support.h %reldir%/unit/jabas_reference_solver.h \
	%reldir%/unit/jabas_profile_test.cc \
	%reldir%/unit/hetero_iteration_model_test.cc \
	%reldir%/unit/config_solver_test.cc \
	%reldir%/unit/hetero_search_test.cc \
	%reldir%/unit/batch_controller_test.cc \
	%reldir%/unit/epoch_batch_test.cc \
	%reldir%/unit/batch_forecaster_test.cc \
	%reldir%/unit/auto_scaler_test.cc \
	plugins/job_submit/submit_handler.h plugins/job_submit/submit_handler.cc \
	plugins/spank/helper/step_plan.h plugins/spank/helper/step_plan.cc \
	%reldir%/unit/profile_conf_test.cc \
	%reldir%/unit/pmi_env_test.cc launcher/pmi_env.h launcher/pmi_env.cc \
	%reldir%/unit/save_request_test.cc launcher/save_request.h launcher/save_request.cc \
	launcher/marker_files.h launcher/marker_files.cc \
	%reldir%/unit/step_choice_test.cc launcher/step_choice.h launcher/step_choice.cc \
	profiler/size_sweep.h profiler/size_sweep.cc \
	profiler/bus_bandwidth.h profiler/bus_bandwidth.cc \
	profiler/conf_fragment.h profiler/conf_fragment.cc
if HAVE_HWLOC
tests_unit_unit_tests_SOURCES += %reldir%/unit/topology_test.cc
tests_unit_unit_tests_LDADD += profiler/libmorph_hw.la
endif
if HAVE_SQLITE
tests_unit_unit_tests_SOURCES += %reldir%/unit/state_store_test.cc %reldir%/unit/sqlite_journal_test.cc \
	%reldir%/unit/job_histories_test.cc %reldir%/unit/online_params_test.cc
tests_unit_unit_tests_CPPFLAGS += $(SQLITE_CFLAGS)
tests_unit_unit_tests_LDADD += daemon/libmorph_store.la daemon/libmorph_daemon.la $(SQLITE_LIBS)
endif
# morphd's reading of Slurm's pending reasons and node states: slurm.h only, no libslurm.
if HAVE_SLURM
tests_unit_unit_tests_SOURCES += %reldir%/unit/pending_reason_test.cc daemon/pending_reason.cc \
	%reldir%/unit/node_state_test.cc daemon/node_state.cc
tests_unit_unit_tests_CPPFLAGS += $(SLURM_CPPFLAGS)
endif
endif
# Reporting to morphd (daemon/report): unit tests, the server and client over TCP with the
# real munged (report_tests; as root also as a second local user, through report_send),
# and morphrun reporting to a stand-in server (report_sink, morphd_report.bats).
if HAVE_MUNGE
if HAVE_GTEST
tests_unit_unit_tests_SOURCES += %reldir%/unit/munge_support.h %reldir%/unit/report_message_test.cc \
	%reldir%/unit/munge_credential_test.cc daemon/observations.h daemon/observations.cc
tests_unit_unit_tests_LDADD += daemon/libmorph_report.la
check_PROGRAMS += tests/report/report_tests
TESTS += tests/report/report_tests
tests_report_report_tests_SOURCES = %reldir%/report/report_server_test.cc %reldir%/unit/munge_support.h
tests_report_report_tests_CPPFLAGS = $(AM_CPPFLAGS) $(GTEST_CFLAGS) \
	-DMORPH_REPORT_SEND='"$(abs_top_builddir)/tests/report/report_send"'
tests_report_report_tests_LDADD = daemon/libmorph_report.la libmorph/libmorph.la $(GTEST_LIBS) $(FMT_LIBS)
endif
# -no-install: real executables (no libtool wrapper) that a second user can run.
check_PROGRAMS += tests/report/report_send tests/report/report_sink
tests_report_report_send_SOURCES = %reldir%/report/report_send.cc
tests_report_report_send_LDADD = daemon/libmorph_report.la libmorph/libmorph.la $(FMT_LIBS)
tests_report_report_send_LDFLAGS = $(AM_LDFLAGS) -no-install
tests_report_report_sink_SOURCES = %reldir%/report/report_sink.cc
tests_report_report_sink_LDADD = daemon/libmorph_report.la libmorph/libmorph.la $(FMT_LIBS)
tests_report_report_sink_LDFLAGS = $(AM_LDFLAGS) -no-install
endif
TESTS += %reldir%/cli/morphd_report.bats
EXTRA_DIST += %reldir%/cli/morphd_report.bats %reldir%/unit/munge_support.h %reldir%/unit/report_message_test.cc \
	%reldir%/unit/munge_credential_test.cc %reldir%/report/report_server_test.cc %reldir%/report/report_send.cc \
	%reldir%/report/report_sink.cc
EXTRA_DIST += %reldir%/unit/job_histories_test.cc %reldir%/unit/online_params_test.cc
EXTRA_DIST += %reldir%/unit/topology_test.cc %reldir%/unit/state_store_test.cc %reldir%/unit/sqlite_journal_test.cc %reldir%/profiler/dgx-a100.xml %reldir%/profiler/pcie-node.xml \
	%reldir%/profiler/make_topologies.py

# Command-line tests (bats); jq checks the --json output.
TEST_EXTENSIONS = .bats
BATS_LOG_COMPILER = bats
TESTS += %reldir%/cli/morph_cli.bats %reldir%/cli/morph_simulate.bats %reldir%/cli/morph_reshard.bats \
	%reldir%/cli/morph_refit.bats %reldir%/cli/morph_profile.bats %reldir%/cli/morphrun.bats \
	%reldir%/cli/morph_hetero.bats %reldir%/cli/morph_workloads.bats %reldir%/cli/gpu_check.bats
EXTRA_DIST += %reldir%/cli/morph_hetero.bats %reldir%/cli/morph_workloads.bats %reldir%/cli/morphrun.bats %reldir%/cli/morph_cli.bats %reldir%/cli/morph_simulate.bats %reldir%/cli/morph_reshard.bats \
	%reldir%/cli/morph_refit.bats %reldir%/cli/morph_profile.bats %reldir%/cli/gpu_check.bats \
	%reldir%/cli/common.bash
# Synthetic checkpoints for morph_reshard.bats.
check_PROGRAMS += tests/cli/make_checkpoint
tests_cli_make_checkpoint_SOURCES = %reldir%/cli/make_checkpoint.cc %reldir%/state_fixture.h
tests_cli_make_checkpoint_LDADD = libmorph/libmorph.la $(FMT_LIBS)
# morph status and explain on a state database written by make_state_db.
if HAVE_SQLITE
TESTS += %reldir%/cli/morph_state.bats
check_PROGRAMS += tests/cli/make_state_db
tests_cli_make_state_db_SOURCES = %reldir%/cli/make_state_db.cc
tests_cli_make_state_db_CPPFLAGS = $(AM_CPPFLAGS) $(SQLITE_CFLAGS)
# The store's journal reads its states with daemon/store/journal_state.cc (libmorph_daemon).
tests_cli_make_state_db_LDADD = daemon/libmorph_store.la daemon/libmorph_daemon.la libmorph/libmorph.la $(SQLITE_LIBS) \
	$(FMT_LIBS)
endif
EXTRA_DIST += %reldir%/cli/morph_state.bats %reldir%/cli/make_state_db.cc

# Benchmarks (Google Benchmark): make bench-model, make bench-policy, make bench-hetero, make bench. They are
# EXTRA_PROGRAMS: built by their make target, not by make all.
CLEANFILES += $(EXTRA_PROGRAMS)
if HAVE_BENCHMARK
EXTRA_PROGRAMS += tests/bench/bench_model
tests_bench_bench_model_CPPFLAGS = $(AM_CPPFLAGS) $(BENCHMARK_CFLAGS) -DMORPH_BENCH_SRCDIR='"$(abs_top_srcdir)"'
tests_bench_bench_model_LDADD = libmorph/libmorph.la $(BENCHMARK_LIBS) $(FMT_LIBS)
tests_bench_bench_model_SOURCES = %reldir%/bench/bench_model.cc %reldir%/bench/median_reporter.h

bench-model: tests/bench/bench_model
	./tests/bench/bench_model --benchmark_color=false

EXTRA_PROGRAMS += tests/bench/bench_policy
tests_bench_bench_policy_CPPFLAGS = $(AM_CPPFLAGS) $(BENCHMARK_CFLAGS) -DMORPH_BENCH_SRCDIR='"$(abs_top_srcdir)"'
tests_bench_bench_policy_LDADD = libmorph/libmorph.la $(BENCHMARK_LIBS) $(FMT_LIBS)
tests_bench_bench_policy_SOURCES = %reldir%/bench/bench_policy.cc %reldir%/bench/median_reporter.h

bench-policy: tests/bench/bench_policy
	./tests/bench/bench_policy --benchmark_color=false

# One morphd round on 500 synthetic nodes and 5000 jobs (bench_morphd), then on a local
# Slurm cluster holding 5000 held Morph jobs, reading from slurmctld included
# (morphd_load.sh: needs root and Slurm, else it says why it skips).
EXTRA_PROGRAMS += tests/bench/bench_morphd
tests_bench_bench_morphd_CPPFLAGS = $(AM_CPPFLAGS) $(BENCHMARK_CFLAGS) -DMORPH_BENCH_SRCDIR='"$(abs_top_srcdir)"'
tests_bench_bench_morphd_LDADD = daemon/libmorph_daemon.la libmorph/libmorph.la $(BENCHMARK_LIBS) $(FMT_LIBS)
tests_bench_bench_morphd_SOURCES = %reldir%/bench/bench_morphd.cc %reldir%/bench/median_reporter.h %reldir%/forgetful_slurm.h

# JABAS's configuration solver at M = 162 .. 10368 workers per group (make bench-hetero).
EXTRA_PROGRAMS += tests/bench/bench_hetero
tests_bench_bench_hetero_CPPFLAGS = $(AM_CPPFLAGS) $(BENCHMARK_CFLAGS)
tests_bench_bench_hetero_LDADD = libmorph/libmorph.la $(BENCHMARK_LIBS) $(FMT_LIBS)
tests_bench_bench_hetero_SOURCES = %reldir%/bench/bench_hetero.cc %reldir%/bench/median_reporter.h

bench-hetero: tests/bench/bench_hetero
	./tests/bench/bench_hetero --benchmark_color=false

bench-morphd: tests/bench/bench_morphd all
	./tests/bench/bench_morphd --benchmark_color=false
	MORPH_BUILDDIR='$(abs_top_builddir)' $(SHELL) $(srcdir)/%reldir%/bench/morphd_load.sh
bench: bench-model bench-policy bench-hetero bench-reshard
else
bench bench-model bench-policy bench-morphd bench-hetero:
	@echo "make $@: configure did not find Google Benchmark (Debian: libbenchmark-dev)"; exit 1
endif

# Resharding a ~2 GB state against cp and central against distributed (make bench-reshard).
EXTRA_PROGRAMS += tests/bench/bench_reshard
tests_bench_bench_reshard_LDADD = libmorph/libmorph.la $(FMT_LIBS)
tests_bench_bench_reshard_SOURCES = %reldir%/bench/bench_reshard.cc %reldir%/state_fixture.h
bench-reshard: tests/bench/bench_reshard $(bin_PROGRAMS)
	MORPH_BUILDDIR='$(abs_top_builddir)' ./tests/bench/bench_reshard
.PHONY: bench-reshard

# Submission overhead of the plugin chain on two local clusters (needs root and Slurm).
# The RPCs a Morph job start costs slurmctld, over 100 step starts (needs root and Slurm).
if HAVE_SLURM
bench-submit: all
	MORPH_BUILDDIR='$(abs_top_builddir)' $(SHELL) $(srcdir)/%reldir%/bench/bench_submit.sh
bench-plan-reads: all
	MORPH_BUILDDIR='$(abs_top_builddir)' $(SHELL) $(srcdir)/%reldir%/bench/bench_plan_reads.sh
else
bench-submit bench-plan-reads:
	@echo "make $@: configure did not find Slurm"; exit 1
endif
EXTRA_DIST += %reldir%/bench/bench_submit.sh %reldir%/bench/bench_plan_reads.sh %reldir%/bench/morphd_load.sh
.PHONY: bench bench-model bench-policy bench-morphd bench-hetero bench-submit bench-plan-reads

# The local Slurm cluster (tests/cluster/testcluster, configured with this build's paths)
# and the integration tests that run on it (they skip without root or Slurm).
EXTRA_DIST += %reldir%/cluster/testcluster.in %reldir%/cluster/cluster.bash %reldir%/cluster/mpi_init_retry %reldir%/cluster/slurm_integration.bats \
	%reldir%/cluster/profiler.bats %reldir%/cluster/profile_job.bats %reldir%/cluster/launcher.bats \
	%reldir%/cluster/morphd.bats %reldir%/cluster/morphd.bash %reldir%/cluster/job_control.bash %reldir%/cluster/morphd_hetero.bats %reldir%/cluster/node_types.bats %reldir%/cluster/overhead.py %reldir%/cluster/fidelity.sh \
	%reldir%/launcher/check_launcher.sh
TESTS += %reldir%/cluster/mpi_init_retry.bats
EXTRA_DIST += %reldir%/cluster/mpi_init_retry.bats
TESTS += %reldir%/cluster/slurm_integration.bats %reldir%/cluster/profiler.bats %reldir%/cluster/profile_job.bats \
	%reldir%/cluster/launcher.bats %reldir%/cluster/node_types.bats

# The tests a sanitized build skips, whole or in part: the local Slurm cluster's (slurmctld
# does not load sanitized plugins), PyTorch's (it does not load beside ASan's runtime) and
# the checks of results on whole workloads (tests/cli/morph_workloads.bats), and
# scripts/gpu-check's (tests/cli/gpu_check.bats: the build tree's Python module beside one
# built without ASan).
# scripts/run-tests.sh runs make check under the sanitizers, then make check-unsanitized
# in its plain build: these tests and the programs they run, not the unit tests and the
# other command-line tests again. The three longest start first (in a run of run-tests.sh
# here, two at a time: slurm_integration 340 s, PyTorch's 210 s, launcher 180 s; the others
# took 50 s at most), so that two tests run at once until the end.
unsanitized_first = %reldir%/cluster/slurm_integration.bats %reldir%/cluster/launcher.bats \
	%reldir%/torch/continuity_local.sh
unsanitized_check_programs = tests/cli/make_checkpoint$(EXEEXT)
check-unsanitized: all
	@first=; rest=; for t in $(TESTS); do \
	  case " $(unsanitized_first) " in *" $$t "*) first="$$first $$t"; continue;; esac; \
	  case $$t in %reldir%/cluster/*|%reldir%/torch/*|python/*|%reldir%/cli/morph_workloads.bats|%reldir%/cli/gpu_check.bats) \
	    rest="$$rest $$t";; esac; \
	done; $(MAKE) $(AM_MAKEFLAGS) check-TESTS TESTS="$$first $$rest" \
	  check_PROGRAMS='$(unsanitized_check_programs)' check_LTLIBRARIES=
.PHONY: check-unsanitized

# morphd end to end on clusters of its own (make check-morphd): the scenario and fault
# tests (morphd.bats; each reconfiguration's overhead and parts), a job spanning two GPU
# types and back (morphd_hetero.bats), then the simulator's
# fidelity on a 20-job trace (fidelity.sh). Not in make check: beside the other cluster
# tests on 2 cores, busy MPI ranks starved an emulated node's slurmd into a NODE FAILURE;
# scripts/run-tests.sh runs morphd.bats's scenario beside morphd_hetero.bats after it.
check-morphd: all tests/trainer/morph-trainer
	MORPH_SRCDIR='$(abs_top_srcdir)' MORPH_BUILDDIR='$(abs_top_builddir)' bats '$(abs_top_srcdir)/tests/cluster/morphd.bats'
	MORPH_SRCDIR='$(abs_top_srcdir)' MORPH_BUILDDIR='$(abs_top_builddir)' bats '$(abs_top_srcdir)/tests/cluster/morphd_hetero.bats'
	MORPH_SRCDIR='$(abs_top_srcdir)' MORPH_BUILDDIR='$(abs_top_builddir)' $(SHELL) '$(abs_top_srcdir)/tests/cluster/fidelity.sh'
.PHONY: check-morphd

# The reference trainer under morphrun --driver changing its plan three ways on a local
# cluster of its own (make check-launcher; launcher.bats runs it in make check).
check-launcher: all tests/trainer/morph-trainer
	MORPH_BUILDDIR='$(abs_top_builddir)' MORPH_FRAMEWORKS='$(abs_top_srcdir)/share/frameworks' \
	  $(SHELL) '$(abs_top_srcdir)/tests/launcher/check_launcher.sh'
.PHONY: check-launcher

# The PyTorch example (examples/torch/train.py) under morphrun --driver changing its plan
# six ways on a local cluster of its own (docs/python.md); scripts/run-tests.sh runs it
# after make check, which runs the example's continuity without Slurm (continuity_local.sh).
check-torch: all tests/trainer/morph-trainer
	MORPH_SRCDIR='$(abs_top_srcdir)' MORPH_BUILDDIR='$(abs_top_builddir)' PYTHON='$(PYTHON)' \
	  $(SHELL) '$(abs_top_srcdir)/tests/torch/check_torch.sh'
EXTRA_DIST += %reldir%/torch/check_torch.sh %reldir%/torch/continuity_local.sh %reldir%/torch/agreement_local.py \
	%reldir%/torch/compare_losses.py
if HAVE_TORCH
TESTS += %reldir%/torch/continuity_local.sh
endif
.PHONY: check-torch
if HAVE_SLURM
# A SPANK plugin that lets the tests send job_submit_morph what a hostile client could.
check_LTLIBRARIES = %reldir%/cluster/spank_inject.la
unsanitized_check_programs += %reldir%/cluster/spank_inject.la
%canon_reldir%_cluster_spank_inject_la_SOURCES = %reldir%/cluster/spank_inject.c
%canon_reldir%_cluster_spank_inject_la_CPPFLAGS = $(SLURM_CPPFLAGS)
%canon_reldir%_cluster_spank_inject_la_LDFLAGS = -module -avoid-version -shared -rpath $(abs_builddir)
# What morphrun --driver asks of libslurm, answered from files (morphrun_driver.bats).
# Unsanitized: Python and mpirun, under the stand-in srun, inherit it in LD_PRELOAD.
check_LTLIBRARIES += %reldir%/cli/driver/fake_slurm.la
%canon_reldir%_cli_driver_fake_slurm_la_SOURCES = %reldir%/cli/driver/fake_slurm.c
%canon_reldir%_cli_driver_fake_slurm_la_CPPFLAGS = $(SLURM_CPPFLAGS)
%canon_reldir%_cli_driver_fake_slurm_la_CFLAGS = $(MORPH_C_STD_FLAG) $(MORPH_WARN_CFLAGS)
%canon_reldir%_cli_driver_fake_slurm_la_LDFLAGS = -module -avoid-version -shared -rpath $(abs_builddir)
endif
TESTS += %reldir%/cli/morphrun_driver.bats
EXTRA_DIST += %reldir%/cli/morphrun_driver.bats %reldir%/cli/driver/srun %reldir%/cli/driver/trainer.sh
if HAVE_MPI
check_PROGRAMS += %reldir%/cluster/mpi_hello
unsanitized_check_programs += %reldir%/cluster/mpi_hello$(EXEEXT)
%canon_reldir%_cluster_mpi_hello_SOURCES = %reldir%/cluster/mpi_hello.cc %reldir%/trainer/mpi_session.h \
	%reldir%/trainer/mpi_session.cc
%canon_reldir%_cluster_mpi_hello_CPPFLAGS = $(AM_CPPFLAGS) $(MPI_CFLAGS)
%canon_reldir%_cluster_mpi_hello_CXXFLAGS = $(MORPH_CXX_STD_FLAG)
%canon_reldir%_cluster_mpi_hello_LDADD = $(MPI_LIBS)
endif

# The reference trainer: a resharded checkpoint must continue training as if nothing
# happened (tests/trainer/continuity.sh; make check-continuity).
if HAVE_MPI
check_PROGRAMS += tests/trainer/morph-trainer
unsanitized_check_programs += tests/trainer/morph-trainer$(EXEEXT)
tests_trainer_morph_trainer_SOURCES = \
	%reldir%/trainer/main.cc \
	%reldir%/trainer/options.h %reldir%/trainer/options.cc \
	%reldir%/trainer/model_spec.h %reldir%/trainer/model_spec.cc \
	%reldir%/trainer/groups.h %reldir%/trainer/groups.cc \
	%reldir%/trainer/collective.h %reldir%/trainer/collective.cc \
	%reldir%/trainer/local_state.h %reldir%/trainer/local_state.cc \
	%reldir%/trainer/init.h %reldir%/trainer/init.cc \
	%reldir%/trainer/batch_split.h %reldir%/trainer/batch_split.cc \
	%reldir%/trainer/dataset.h %reldir%/trainer/dataset.cc \
	%reldir%/trainer/model.h %reldir%/trainer/model.cc \
	%reldir%/trainer/optimizer.h %reldir%/trainer/optimizer.cc \
	%reldir%/trainer/similarity.h %reldir%/trainer/similarity.cc \
	%reldir%/trainer/checkpoint_io.h %reldir%/trainer/checkpoint_io.cc \
	%reldir%/trainer/checkpoint_signal.h %reldir%/trainer/checkpoint_signal.cc \
	%reldir%/trainer/trainer.h %reldir%/trainer/trainer.cc \
	%reldir%/trainer/mpi_session.h %reldir%/trainer/mpi_session.cc
tests_trainer_morph_trainer_CPPFLAGS = $(AM_CPPFLAGS) $(MPI_CFLAGS) $(EIGEN_CFLAGS) -DOMPI_SKIP_MPICXX=1
tests_trainer_morph_trainer_LDADD = tools/libmorph_command_line.la libmorph/libmorph.la $(MPI_LIBS) $(FMT_LIBS)
TESTS += %reldir%/trainer/continuity.sh
check-continuity: tests/trainer/morph-trainer tools/morph/morph
	TRAINER='$(abs_top_builddir)/tests/trainer/morph-trainer' MORPH='$(abs_top_builddir)/tools/morph/morph' \
	  '$(abs_top_srcdir)/tests/trainer/continuity.sh'
else
check-continuity:
	@echo "make $@: configure did not find Open MPI"; exit 1
endif
EXTRA_DIST += %reldir%/trainer/continuity.sh
.PHONY: check-continuity

# How closely the model follows the Morphling artifact (make check-fidelity; not part of
# make check): per profile the largest in-sample error, morph validate and the online
# refit. MORPH_ARTIFACT_DIR=DIR overrides the folder (as for the tests); where it is absent the target skips.
check-fidelity: tools/morph/morph
	$(AM_TESTS_ENVIRONMENT) $(SHELL) '$(abs_top_srcdir)/tests/fidelity/check_fidelity.sh' \
	  '$(abs_top_srcdir)/../shared/data/morphling-artifact'
EXTRA_DIST += %reldir%/fidelity/check_fidelity.sh
.PHONY: check-fidelity

# Fuzzing the safetensors parser with libFuzzer: make fuzz [FUZZ_SECONDS=60].
FUZZ_SECONDS = 60
FUZZ_CXXFLAGS = -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
safetensors_fuzz_sources = $(srcdir)/%reldir%/fuzz/safetensors_fuzz.cc $(srcdir)/libmorph/state/safetensors.cc \
	$(srcdir)/libmorph/state/dtype.cc $(srcdir)/libmorph/util/parse.cc
EXTRA_DIST += %reldir%/fuzz/safetensors_fuzz.cc %reldir%/fuzz/safetensors.dict %reldir%/fuzz/corpus
CLEANFILES += %reldir%/fuzz/safetensors_fuzz
if HAVE_FUZZER
%reldir%/fuzz/safetensors_fuzz: $(safetensors_fuzz_sources) $(srcdir)/libmorph/state/safetensors.h \
		$(srcdir)/libmorph/state/dtype.h $(srcdir)/libmorph/util/json_depth.h
	@$(MKDIR_P) %reldir%/fuzz
	$(FUZZ_CXX) $(FUZZ_CXXFLAGS) -I$(top_srcdir) -I$(top_builddir) $(JSON_CFLAGS) $(FMT_CFLAGS) \
		$(safetensors_fuzz_sources) $(FMT_LIBS) -o $@
fuzz: %reldir%/fuzz/safetensors_fuzz
	rm -rf fuzz-corpus && $(MKDIR_P) fuzz-corpus && cp $(srcdir)/%reldir%/fuzz/corpus/safetensors/* fuzz-corpus/
	./%reldir%/fuzz/safetensors_fuzz -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
		-dict=$(srcdir)/%reldir%/fuzz/safetensors.dict fuzz-corpus
	rm -rf fuzz-corpus
else
fuzz:
	@echo "make $@: configure found no clang++ with -fsanitize=fuzzer (Debian: clang)"; exit 1
endif
.PHONY: fuzz
