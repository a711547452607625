// Sizing a plan-agnostic job at submission (job_submit_morph): which GPU type, how many
// nodes and GPUs, which plan. Frenzy's idea (seed 002): the user names the model, Morph
// finds the resources; the choice rule is the best predicted throughput per GPU among
// the plans that fit, within the job's GPU bounds.
#pragma once

#include <optional>
#include <string>

#include "libmorph/config/morph_conf.h"
#include "libmorph/model/catalog.h"
#include "libmorph/perf/perf_store.h"
#include "libmorph/planner/submit_constraints.h"
#include "libmorph/record/job_record.h"
#include "libmorph/request/gpu_tres.h"

namespace morph {

struct SubmitContext {
  const MorphConfig& config;
  const Catalog& catalog;
  const PerfStore& perf;
};

// The user's own GPU request (--gres/--gpus with -N), the SLA baseline when it comes with
// a job that also carries --morph-* options.
struct UserGpuRequest {
  GpuTres per_node;
  int nodes = 1;
};

struct SubmitDecision {
  bool accepted = false;
  std::string reason;           // why not, when refused
  JobRecord record;             // request, placement, plan, baseline
  double host_memory_bytes_per_node = 0;
  std::string message;          // one line for the user
  int gpu_counts_weighed = 0;   // plan searches, all node types
  bool counts_capped = false;   // some node type had more counts than kMaxGpuCountsWeighed
};

// The most GPU counts decide_submission searches plans for on one node type, the smallest
// first. It runs under slurmctld's job write lock: a batch of many divisors
// (735,134,400) makes nearly every node count of a large cluster a candidate, 1.2 s on
// 2,000 nodes; powers of two and their small multiples give far fewer.
inline constexpr int kMaxGpuCountsWeighed = 64;

// Considers every node type of the cluster (nodes listed in morph.conf) that the request
// allows, every GPU count on one node and every whole number of nodes, within the job's
// bounds and MaxGpusPerJob, and picks the best throughput per GPU; ties go to fewer
// nodes, then to more GPUs. Of the counts whose plan shapes are structurally possible, at
// most kMaxGpuCountsWeighed per node type are searched, in increasing order. A guaranteed job with a baseline only considers allocations
// of at most the baseline's GPUs whose plan is at least as fast as the baseline
// (Morphling §5, minimum demand), and falls back to the baseline itself. `constraints`
// (the user's -w, -x, --constraint, -N, -c, --mincpus, --mem) restrict the candidates; a
// contradiction among them throws morph::Error naming the flag.
SubmitDecision decide_submission(const SubmitContext& context, const MorphRequest& request,
                                 const std::optional<UserGpuRequest>& user_gpus,
                                 const SubmitConstraints& constraints = {});

}  // namespace morph
