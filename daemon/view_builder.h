// The ClusterView the policy sees (libmorph/policy/cluster_view.h), built from what Slurm
// says: nodes and their types from morph.conf's NodeName records, Morph jobs from their
// records. Jobs without a Morph record are capacity that is taken, never touched: their
// GPUs are subtracted from their nodes. What the jobs reported comes in as their histories.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/cluster_snapshot.h"
#include "daemon/job_measurements.h"
#include "libmorph/adaptive/epoch_batch.h"
#include "libmorph/config/morph_conf.h"
#include "libmorph/model/catalog.h"
#include "libmorph/perf/perf_store.h"
#include "libmorph/policy/cluster_view.h"
#include "libmorph/policy/plan_oracle.h"
#include "libmorph/record/job_record.h"

namespace morph::daemon {

struct ViewContext {
  const MorphConfig& config;
  const Catalog& catalog;
  const PerfStore& perf;
  // The models the online refit found (libmorph/policy/model_refit.h), by catalog model name: their
  // parameters and the prior of their fit replace PerfStore's; the forward model and the
  // evidence stay.
  const std::map<std::string, PerfModel>* refitted = nullptr;
};

// One Morph job as morphd tracks it between the policy and Slurm.
struct TrackedJob {
  std::uint32_t slurm_id = 0;
  std::uint32_t user_id = 0;
  JobRecord record;
  std::string admin_comment;  // as read, to detect concurrent rewrites
  JobPhase phase = JobPhase::pending;
  bool held = false;
  std::string blocked;  // SlurmJob::blocked
  SizeLimit size_limit = SizeLimit::none;
};

struct BuiltView {
  policy::ClusterView view;
  std::map<std::string, policy::AppProfile> apps;  // by JobState::app
  std::map<std::string, TrackedJob> jobs;          // by JobState::id
  std::map<std::string, JobMeasurement> measured;  // by JobState::id, jobs with a history
  std::vector<std::string> skipped;                // one line per node or job left out, and why
  // Jobs of --morph-adaptive-batch planned for a forecast batch (epoch_batch.h), by JobState::id.
  std::map<std::string, EpochBatch> forecasts;
};

// The application key of a request: jobs of one model, batch and sequence share curves.
std::string app_key(const MorphRequest& request);

// A node of `type` of which only `usable` GPUs are Morph's (others' jobs hold the rest,
// or it is down): a type of its own, "TYPE~USABLE", with that share of CPUs and host
// memory, since nodes of one type are alike. `type` itself when all are usable.
NodeType usable_capacity(const NodeType& type, int usable);
// The node type a view named `name` ("TYPE" or "TYPE~USABLE") into `capacity`; returns
// morph.conf's TYPE, or nullptr when it names no node type of `cluster` or a bad count.
const NodeType* usable_capacity_of(std::string_view name, const Cluster& cluster, NodeType* capacity);

// The model jobs of `model` at `seq_len` are predicted with: PerfStore's (PerfModelDir, or
// the FLOP estimate for morph.conf's first GPU type), with the online refit's parameters
// and prior where context.refitted holds one. Throws when morph.conf defines no node type.
PerfModel model_in_use(const ModelSpec& model, std::int64_t seq_len, const ViewContext& context);

// `histories`: what the state database holds about the jobs (job_measurements.h); a job
// without one is not measured.
BuiltView build_view(const ClusterSnapshot& snapshot, const ViewContext& context, const JobHistories& histories = {});

}  // namespace morph::daemon
