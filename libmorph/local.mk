# libmorph: the one library every Morph program links, in layers so that a component
# links only what it needs:
#  - base: parsing, model catalog, hardware, plans, morph.conf, --morph-* requests and
#    the AdminComment record (no numeric dependencies; the SPANK plugin links only this);
#  - perf: memory and iteration-time models, Ceres fitting and online refits, plan
#    search, sensitivity curves, submission sizing, the artifact validation and JABAS's
#    heterogeneous data-parallel model and configuration solver (hetero/) and its
#    adaptive batching, batch forecaster and auto-scaling (adaptive/);
#  - policy: the scheduling policies (Morphling's Algorithm 1 and the baselines) and the
#    trace-driven cluster simulator that replays them;
#  - state: training state on disk (safetensors, checkpoints), its layouts under
#    parallel plans, resharding between them, and the dataset order;
#  - launch: what morphrun hands a trainer under a plan: where its ranks sit, their
#    environment and CPUs, the framework's arguments (share/frameworks), the checkpoint
#    to resume from and the metrics line protocol.
noinst_LTLIBRARIES += libmorph/libmorph_base.la libmorph/libmorph_perf.la libmorph/libmorph_policy.la \
	libmorph/libmorph_state.la libmorph/libmorph_launch.la
lib_LTLIBRARIES += libmorph/libmorph.la

libmorph_libmorph_base_la_SOURCES = \
	%reldir%/util/error.h \
	%reldir%/util/random_order.h \
	%reldir%/util/parse.h %reldir%/util/parse.cc \
	%reldir%/util/csv.h %reldir%/util/csv.cc \
	%reldir%/util/hostlist.h %reldir%/util/hostlist.cc \
	%reldir%/util/host_port.h %reldir%/util/host_port.cc \
	%reldir%/util/text_file.h %reldir%/util/text_file.cc \
	%reldir%/util/json_depth.h \
	%reldir%/util/divisors.h %reldir%/util/divisors.cc \
	%reldir%/util/median.h %reldir%/util/median.cc \
	%reldir%/model/model_spec.h %reldir%/model/model_spec.cc \
	%reldir%/model/catalog.h %reldir%/model/catalog.cc \
	%reldir%/cluster/gpu_type.h %reldir%/cluster/node_type.h \
	%reldir%/cluster/cluster.h %reldir%/cluster/cluster.cc \
	%reldir%/cluster/allocation.h %reldir%/cluster/allocation.cc \
	%reldir%/cluster/slurm_partitions.h %reldir%/cluster/slurm_partitions.cc \
	%reldir%/plan/plan.h %reldir%/plan/plan.cc \
	%reldir%/plan/plan_features.h %reldir%/plan/plan_features.cc \
	%reldir%/plan/zero_buckets.h \
	%reldir%/plan/state_bytes.h \
	%reldir%/config/morph_conf.h %reldir%/config/morph_conf.cc \
	%reldir%/request/limits.h \
	%reldir%/request/option_check.h %reldir%/request/option_check.c \
	%reldir%/request/morph_request.h %reldir%/request/morph_request.cc \
	%reldir%/request/gpu_tres.h %reldir%/request/gpu_tres.cc \
	%reldir%/record/gpu_groups.h %reldir%/record/gpu_groups.cc \
	%reldir%/record/job_record.h %reldir%/record/job_record.cc \
	%reldir%/record/task_variables.h \
	%reldir%/record/plan_env.h %reldir%/record/plan_env.cc
libmorph_libmorph_base_la_LIBADD = $(FMT_LIBS)

libmorph_libmorph_perf_la_SOURCES = \
	%reldir%/memory/memory_model.h %reldir%/memory/memory_model.cc \
	%reldir%/perf/perf_params.h %reldir%/perf/perf_params.cc \
	%reldir%/perf/overlap.h \
	%reldir%/perf/bandwidth.h %reldir%/perf/bandwidth.cc \
	%reldir%/perf/forward_model.h %reldir%/perf/forward_model.cc \
	%reldir%/perf/iteration_time.h %reldir%/perf/iteration_time.cc \
	%reldir%/perf/perf_model.h \
	%reldir%/perf/fit_evidence.h %reldir%/perf/fit_evidence.cc \
	%reldir%/perf/perf_store.h %reldir%/perf/perf_store.cc \
	%reldir%/perf/fit.h %reldir%/perf/fit.cc \
	%reldir%/perf/informative_points.h %reldir%/perf/informative_points.cc \
	%reldir%/perf/profile_sampling.h %reldir%/perf/profile_sampling.cc \
	%reldir%/hetero/jabas_profile.h %reldir%/hetero/jabas_profile.cc \
	%reldir%/hetero/allreduce_model.h %reldir%/hetero/allreduce_model.cc \
	%reldir%/hetero/iteration_model.h %reldir%/hetero/iteration_model.cc \
	%reldir%/hetero/config_solver.h %reldir%/hetero/config_solver.cc \
	%reldir%/hetero/hetero_search.h %reldir%/hetero/hetero_search.cc \
	%reldir%/adaptive/batch_controller.h %reldir%/adaptive/batch_controller.cc \
	%reldir%/adaptive/gaussian_process.h %reldir%/adaptive/gaussian_process.cc \
	%reldir%/adaptive/exponential_smoothing.h %reldir%/adaptive/exponential_smoothing.cc \
	%reldir%/adaptive/batch_forecaster.h %reldir%/adaptive/batch_forecaster.cc \
	%reldir%/adaptive/auto_scaler.h %reldir%/adaptive/auto_scaler.cc \
	%reldir%/adaptive/batch_trajectory.h %reldir%/adaptive/batch_trajectory.cc \
	%reldir%/adaptive/epoch_batch.h %reldir%/adaptive/epoch_batch.cc \
	%reldir%/refit/observed_iterations.h %reldir%/refit/observed_iterations.cc \
	%reldir%/refit/refit.h %reldir%/refit/refit.cc \
	%reldir%/planner/framework_planning.h %reldir%/planner/framework_planning.cc \
	%reldir%/planner/hetero_plan.h %reldir%/planner/hetero_plan.cc \
	%reldir%/planner/plan_search.h %reldir%/planner/plan_search.cc \
	%reldir%/planner/sensitivity.h %reldir%/planner/sensitivity.cc \
	%reldir%/planner/step_split.h %reldir%/planner/step_split.cc \
	%reldir%/planner/submit_constraints.h %reldir%/planner/submit_constraints.cc \
	%reldir%/planner/submit_plan.h %reldir%/planner/submit_plan.cc \
	%reldir%/artifact/artifact_spec.h %reldir%/artifact/artifact_spec.cc \
	%reldir%/artifact/artifact_rows.h %reldir%/artifact/artifact_rows.cc \
	%reldir%/artifact/validation.h %reldir%/artifact/validation.cc \
	%reldir%/artifact/online_refit.h %reldir%/artifact/online_refit.cc
libmorph_libmorph_perf_la_LIBADD = libmorph/libmorph_base.la $(CERES_LIBS) $(FMT_LIBS)

libmorph_libmorph_policy_la_SOURCES = \
	%reldir%/policy/cluster_view.h %reldir%/policy/cluster_view.cc \
	%reldir%/policy/job_length.h %reldir%/policy/job_length.cc \
	%reldir%/policy/plan_oracle.h %reldir%/policy/plan_oracle.cc \
	%reldir%/policy/model_refit.h %reldir%/policy/model_refit.cc \
	%reldir%/policy/restart_cost.h %reldir%/policy/restart_cost.cc \
	%reldir%/policy/placement.h %reldir%/policy/placement.cc \
	%reldir%/policy/free_cells.h %reldir%/policy/free_cells.cc \
	%reldir%/policy/partition_nodes.h %reldir%/policy/partition_nodes.cc \
	%reldir%/policy/assignment.h %reldir%/policy/assignment.cc \
	%reldir%/policy/elastic.h %reldir%/policy/elastic.cc \
	%reldir%/policy/rigid.h %reldir%/policy/rigid.cc \
	%reldir%/policy/alternatives.h %reldir%/policy/alternatives.cc \
	%reldir%/policy/policy.h %reldir%/policy/policy.cc %reldir%/policy/policies.h \
	%reldir%/policy/morphling.cc %reldir%/policy/sia.cc %reldir%/policy/synergy.cc \
	%reldir%/policy/antman.cc %reldir%/policy/fifo.cc \
	%reldir%/sim/workload.h %reldir%/sim/workload.cc \
	%reldir%/sim/apps.h %reldir%/sim/apps.cc \
	%reldir%/sim/partitions.h %reldir%/sim/partitions.cc \
	%reldir%/sim/truth.h %reldir%/sim/truth.cc \
	%reldir%/sim/known_length.h %reldir%/sim/known_length.cc \
	%reldir%/sim/simulator.h %reldir%/sim/simulator.cc \
	%reldir%/sim/metrics.h %reldir%/sim/metrics.cc
libmorph_libmorph_policy_la_LIBADD = libmorph/libmorph_perf.la $(CERES_LIBS) $(FMT_LIBS)

libmorph_libmorph_la_SOURCES =
nodist_EXTRA_libmorph_libmorph_la_SOURCES = force-cxx-link.cc
libmorph_libmorph_state_la_SOURCES = \
	%reldir%/state/dtype.h %reldir%/state/dtype.cc \
	%reldir%/state/safetensors.h %reldir%/state/safetensors.cc \
	%reldir%/state/checksum.h %reldir%/state/checksum.cc \
	%reldir%/state/parallel.h %reldir%/state/parallel.cc \
	%reldir%/state/state_spec.h %reldir%/state/state_spec.cc \
	%reldir%/state/layout.h %reldir%/state/layout.cc \
	%reldir%/state/shard_map.h %reldir%/state/shard_map.cc \
	%reldir%/state/reshard_plan.h %reldir%/state/reshard_plan.cc \
	%reldir%/state/checkpoint.h %reldir%/state/checkpoint.cc \
	%reldir%/state/rank_file.h %reldir%/state/rank_file.cc \
	%reldir%/state/reshard_exec.h %reldir%/state/reshard_exec.cc \
	%reldir%/state/dataset_order.h %reldir%/state/dataset_order.cc
libmorph_libmorph_state_la_LIBADD = $(XXHASH_LIBS) $(FMT_LIBS) -lpthread

libmorph_libmorph_launch_la_SOURCES = \
	%reldir%/launch/step_layout.h %reldir%/launch/step_layout.cc \
	%reldir%/launch/plan_source.h %reldir%/launch/plan_source.cc \
	%reldir%/launch/port_range.h \
	%reldir%/launch/rank_env.h %reldir%/launch/rank_env.cc \
	%reldir%/launch/cpu_binding.h %reldir%/launch/cpu_binding.cc \
	%reldir%/launch/checkpoint_choice.h %reldir%/launch/checkpoint_choice.cc \
	%reldir%/launch/metrics_line.h %reldir%/launch/metrics_line.cc \
	%reldir%/launch/render_context.h \
	%reldir%/launch/placeholders.h %reldir%/launch/placeholders.cc \
	%reldir%/launch/precision.h %reldir%/launch/precision.cc \
	%reldir%/launch/driver_contract.h %reldir%/launch/driver_contract.cc \
	%reldir%/launch/predicate.h %reldir%/launch/predicate.cc \
	%reldir%/launch/template.h %reldir%/launch/template.cc \
	%reldir%/launch/framework.h %reldir%/launch/framework.cc
libmorph_libmorph_launch_la_LIBADD = $(FMT_LIBS)

libmorph_libmorph_la_LIBADD = libmorph/libmorph_launch.la libmorph/libmorph_state.la libmorph/libmorph_policy.la $(CERES_LIBS) $(FMT_LIBS)
libmorph_libmorph_la_LDFLAGS = $(AM_LDFLAGS) -version-info 0:0:0
