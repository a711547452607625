// What Morph decided for a job, kept in the job's AdminComment (only root and SlurmUser
// may set it): the request, the resources and the plan. One flat, versioned line:
//
//   morph:v1 model=llama2-7b batch=512 seq=4096 sla=best-effort sla_given=0
//     framework=megatron plans=all gpus=1-0 gpu_types=- base_plan=- type=a100-80g
//     nodes=2 gpus_per_node=8 cpus_per_gpu=4 dp=4 tp=4 pp=1 zero=1 offload=0 gc=0 ga=4
//     mb=1 mbs=32 iter_ms=812.250 [base_type=... base_iter_ms=...] [other_gres=...]
//     [iterations=N] [constraint=EXPR] [mem_mb=N] [min_cpus=N] [min_nodes=N] [max_nodes=N]
//     [groups=a100-80g:nodes=1:workers=1:ga=3,v100-32g:nodes=1:workers=1:ga=1]
// ("-" stands for an empty list; gpus=MIN-MAX with 0 for no MAX; other_gres= keeps the
// user's per-node GRES that are not GPUs, e.g. gres:shard:2, across replans;
// iterations= is the job's declared length, --morph-iterations, for morphd's policy;
// constraint= the user's --constraint, which GpuTypeBy=feature ANDs with the GPU type's;
// mem_mb= and min_cpus= the user's --mem and --mincpus per node, floors of every plan's
// request; min_nodes= and max_nodes= the user's -N MIN[-MAX] when no GPU request came
// with it (which makes -N the SLA baseline's), max_nodes= also the partitions' MaxNodes
// (the fewer), bounds on every plan's nodes;
// groups= makes the placement heterogeneous (record/gpu_groups.h): then type=-, the plan
// is dp = every GPU with tp=pp=ga=mb=1 and mbs the local batch, and the groups' samples
// add up to the batch. Records without groups= are read as before; adaptive_batch=MIN:MAX
// lets the plan process any batch within the bounds: the one morphd planned the job for).
//
// The spank plugin exports the plan to the job's tasks from it, morphd rewrites it when
// it replans, and job_submit_morph checks every update of it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "libmorph/plan/plan.h"
#include "libmorph/record/gpu_groups.h"
#include "libmorph/request/morph_request.h"

namespace morph {

inline constexpr std::string_view kRecordPrefix = "morph:";
inline constexpr std::string_view kRecordVersion = "morph:v1";

struct Placement {
  std::string gpu_type;
  int nodes = 0;
  int gpus_per_node = 0;
  int cpus_per_gpu = 0;
  ExecutionPlan plan;
  double iter_ms = 0;  // predicted at decision time
  GpuGroups groups = {};  // empty: homogeneous (gpu_type); else one group per GPU type

  int gpus() const { return nodes * gpus_per_node; }
  bool heterogeneous() const { return !groups.empty(); }
  friend bool operator==(const Placement&, const Placement&) = default;
};

// "2 nodes x 8 a100-80g GPUs" ("a100-80g+v100-32g" when heterogeneous), for messages.
std::string describe(const Placement& placement);

struct JobRecord {
  MorphRequest request;
  Placement current;
  std::optional<Placement> baseline;  // the user's own request (--gres + --morph-plan)
  std::string other_gres;             // per-node TRES other than GPUs, kept as given
  std::string constraint;             // the user's --constraint, kept under GpuTypeBy=feature
  std::int64_t memory_mb_per_node = 0;  // the user's --mem: every plan asks at least this
  int min_cpus_per_node = 0;            // the user's --mincpus: likewise
  int min_nodes = 0;                    // the user's -N MIN[-MAX]: every plan's nodes within; 0: none
  int max_nodes = 0;

  friend bool operator==(const JobRecord&, const JobRecord&) = default;
};

// A placement on `nodes` nodes keeps the user's -N; "1-4", "2", "2-" (no MAX), for messages.
bool within_node_bounds(const JobRecord& record, int nodes);
std::string node_bounds(const JobRecord& record);

std::string to_admin_comment(const JobRecord& record);

// Strict: unknown version or key, missing key, bad value, a plan that does not use the
// placement's GPUs or does not process the batch: morph::Error naming the key.
JobRecord parse_admin_comment(std::string_view text);

// True when `text` claims to be a Morph record (starts with "morph:").
bool is_job_record(std::string_view text);

}  // namespace morph
