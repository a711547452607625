// morph.conf: Slurm-style "Key=Value" lines describing GPU types, node types and nodes,
// and the knobs of the models and the policy. See morph.conf(5).
#pragma once

#include <string>
#include <string_view>

#include "libmorph/cluster/cluster.h"
#include "libmorph/launch/port_range.h"
#include "libmorph/memory/memory_model.h"
#include "libmorph/policy/restart_cost.h"

namespace morph {

struct PolicyKnobs {
  double restart_penalty_s = 260;    // cost of a checkpoint-restart (Morphling artifact: 260 s)
  policy::RestartCosts restart_costs;  // per path; each defaults to restart_penalty_s
  double scheduling_interval_s = 60; // re-optimisation round
  double min_reconfigure_gain = 0.05;// relative throughput gain a reconfiguration must bring
  bool guaranteed_by_default = false;// DefaultSla=guaranteed|best-effort
  double starvation_limit_s = 8 * 3600;  // StarvationLimitSeconds=: without GPUs this long, a job is overdue (0: never)
  double unknown_length_prior_s = 900;   // UnknownLengthPriorSeconds=: expected run of a job of unknown length
  // RefitErrorThreshold=: morphd refits a model when it mispredicts its jobs' measured
  // iteration times by more than this mean relative error (0: never).
  double refit_error_threshold = 0.10;
  // RefitPointMaxAgeDays=: the refit forgets a job's measurement this much later, in
  // seconds here (0: never; newer jobs of the same configuration still push it out).
  double refit_point_max_age_s = 0;
  // HeterogeneousJobs=yes|no: morphd may give a best-effort job idle GPUs of a second type
  // as one data-parallel job (JABAS; policy::ClusterView::heterogeneous_jobs). Needs
  // GpuTypeBy=feature.
  bool heterogeneous_jobs = false;
  // RestartBackoff=yes|no: a job restarted n times gives up GPUs to another's growth only
  // after n restart penalties of running (policy::ClusterView::restart_backoff).
  bool restart_backoff = true;
  // AdaptiveEpochSteps=: morphd plans a job of --morph-adaptive-batch for the mean batch
  // its forecaster predicts over the next this many adaptation steps, decided anew after
  // each such epoch (libmorph/adaptive/epoch_batch.h); 0: for its starting batch.
  int adaptive_epoch_steps = 10;
};

struct MorphConfig {
  Cluster cluster;
  MemoryOptions memory;
  double compute_efficiency = 0.4;  // fraction of PeakTflops for forward estimates without a profile
  int max_micro_batch_size = 0;     // 0: no cap
  int max_gpus_per_job = 64;        // largest allocation job_submit_morph considers
  std::string allowed_plans = "all";
  std::string model_catalog;        // ModelCatalog=: the catalog the plugins use ("" : installed)
  std::string perf_model_dir;       // PerfModelDir=: fitted models (morph fit --save)
  std::string state_database = "/var/lib/morph/morph.db";  // StateDatabase=: morphd's SQLite state
  double purge_jobs_after_s = 0;    // PurgeJobsAfterDays=: morphd drops an ended job's rows this much later (0: never)
  int checkpoint_signal = 12;       // CheckpointSignal=: SIGUSR2; SIGUSR1 is refused
  double checkpoint_timeout_s = 300;  // CheckpointTimeoutSeconds=: how long morphrun waits for a save
  double driver_poll_s = 10;          // DriverPollSeconds=: how often morphrun --driver reads the job's record
  launch::PortRange master_ports;     // MasterPorts=LOW-HIGH: the steps' MASTER_PORT
  std::string morphd_address;         // MorphdAddress=HOST:PORT: where morphrun reports iterations ("": nowhere)
  // GpuTypeBy=gres|feature: how job_submit_morph asks Slurm for a GPU type, a typed GRES
  // (gres:gpu:a100-80g:8) or an untyped one with the node type's first Features= as a
  // constraint. Slurm 22.05 never turns a typed GPU request into an untyped one by an
  // update, so only "feature" lets a job go heterogeneous (record/gpu_groups.h).
  bool gpu_type_by_feature = false;
  PolicyKnobs policy;
};

// Strict: an unknown key, a missing required key, a bad value or a duplicate is an error
// "SOURCE:LINE: ..." naming the key.
MorphConfig parse_morph_conf(std::string_view text, const std::string& source);
MorphConfig load_morph_conf(const std::string& path);
// The morph.conf a program reads: `given` (its --config) when not empty, else $MORPH_CONF
// when set and not empty, else the installed one.
inline constexpr const char* kInstalledMorphConf = MORPH_SYSCONFDIR "/morph.conf";
std::string morph_conf_path(const std::string& given);

// A checkpoint signal's number from its name ("SIGUSR2" or "USR2", any case): SIGUSR2,
// SIGTERM, SIGINT, SIGHUP or SIGURG. SIGUSR1 is refused: NCCL and several frameworks catch
// it themselves. Throws morph::Error naming `where`.
int parse_checkpoint_signal(const std::string& text, const std::string& where);

}  // namespace morph
