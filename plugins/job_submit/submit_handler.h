// The logic of job_submit_morph without Slurm's types, so that it can be unit-tested:
// what the plugin reads from a job_desc, what it writes back, and the decision between
// passing a job through, sizing it, or refusing it with a message.
#pragma once

#include <cstdint>
#include <ctime>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "libmorph/cluster/slurm_partitions.h"
#include "libmorph/config/morph_conf.h"
#include "libmorph/model/catalog.h"
#include "libmorph/perf/perf_store.h"
#include "libmorph/planner/submit_plan.h"

namespace morph::plugin {

// The resources of a job as a job_desc carries them, in the user's request (submission),
// in an update (job_modify), and as job_submit_morph writes them back. nullopt and ""
// mean "not given".
struct JobResources {
  std::string tres_per_node, tres_per_job, tres_per_task, tres_per_socket;  // GRES, GPUs among them
  std::optional<std::uint32_t> min_nodes, max_nodes;  // -N
  std::optional<std::uint32_t> tasks;                 // -n
  std::optional<std::uint32_t> tasks_per_node;        // --ntasks-per-node
  std::optional<std::uint32_t> tasks_per_gpu;         // --ntasks-per-gpu
  std::optional<std::uint32_t> cpus_per_task;         // -c
  std::optional<std::uint32_t> min_cpus_per_node;     // --mincpus (MinCPUsNode)
  std::string cpus_per_tres;                          // --cpus-per-gpu: "gres:gpu:N"
  std::optional<std::uint64_t> memory_mb_per_node;    // --mem
  bool memory_per_cpu = false;                        // --mem-per-cpu (then memory_mb_per_node is per CPU)
  std::string mem_per_tres;                           // --mem-per-gpu
  std::string required_nodes, excluded_nodes;         // -w, -x (Slurm host lists)
  std::string features;                               // --constraint
  std::string partition;                              // -p; Partition= (an update); "" the default or none
  // An update that sets TresPerNode= or Features= to nothing (scontrol update
  // TresPerNode=): Slurm clears the job's, which "" above cannot say.
  bool clears_tres_per_node = false, clears_features = false;
};

// What job_submit_morph writes into a job_desc. Every count fits the job_desc field it
// goes to (validate()); strings replace the job's, empty ones clear them.
struct SlurmRequest {
  std::string tres_per_node;  // "gres:gpu:<type>:<n>" and the user's other GRES
  // The user's GRES that are not GPUs; nullopt: leave the job's as they are (an update).
  std::optional<std::string> tres_per_job, tres_per_task, tres_per_socket;
  int nodes = 0;
  int tasks = 0;
  int tasks_per_node = 0;
  int cpus_per_task = 0;
  int min_cpus_per_node = 0;
  std::uint64_t memory_mb_per_node = 0;  // 0: leave as it is
  // --constraint under GpuTypeBy=feature: the GPU type's node feature ANDed with the
  // user's constraint, or a heterogeneous placement's node counts per type
  // ("[a100-80g*1&v100-32g*1]"); nullopt (GpuTypeBy=gres) leaves the job's as it is.
  std::optional<std::string> features;
  std::string admin_comment;

  // Throws morph::Error when a count does not fit its job_desc field (16 or 32 bits,
  // without Slurm's NO_VAL markers) or is not positive.
  void validate() const;
  // The job's minimum CPU count (min_cpus), tasks x CPUs per task: past INT_MAX as an
  // int product, within 32 bits once validate() has passed.
  std::uint32_t min_cpus() const;
};

enum class Verdict { pass_through, accept, reject };

struct SubmitInput {
  std::vector<std::string_view> spank_env;  // job_desc->spank_job_env
  JobResources user;                        // what the user asked for besides --morph-*
  bool het_job_component = false;           // one component of `sbatch ... : ...` (het_job_offset)
};

struct SubmitOutput {
  Verdict verdict = Verdict::pass_through;
  std::string message;  // to the user: what was chosen, or why the job is refused
  SlurmRequest request;
};

struct ModifyInput {
  std::optional<std::string> admin_comment;  // the update's, if it sets one
  std::optional<std::string> current_admin_comment;  // the job's, if it could be read
  JobResources update;                        // the update's resource fields
};

// What a refused update asked for, which job_submit_morph returns as Slurm's error code
// (job_modify has no message for the user in Slurm 22.05: the code is what scontrol prints).
enum class Refusal { other, gpus, nodes, tasks, cpus, features, partition, memory };

struct ModifyOutput {
  Verdict verdict = Verdict::pass_through;
  std::string message;                  // why refused
  Refusal refusal = Refusal::other;     // what, when refused
  std::optional<SlurmRequest> request;  // resources that follow a new record
  // The new record changes no resource the job holds (a new plan on the same GPUs), or
  // only gives nodes back, and needs no more host memory per node: only AdminComment is
  // set, so that the update also applies to a running job (Slurm refuses resource
  // changes there). The nodes are given back by whoever holds them: morphrun --driver
  // after its checkpoint, or an update NumNodes= (which makes the resources follow, as
  // a held job's update must: docs/slurm.md).
  bool record_only = false;
};

class SubmitHandler {
 public:
  // Loads morph.conf, the catalog (morph.conf ModelCatalog, else `default_catalog`) and
  // the fitted models. Never throws: a failure is kept and every Morph job is refused
  // with it, while other jobs pass through. The partitions of slurm.conf at
  // `slurm_conf_path` ("": none) bound where a job of -p may run; when they cannot be
  // read, jobs are sized over every node of morph.conf and partitions_error() says why.
  void load(const std::string& conf_path, const std::string& default_catalog, const std::string& slurm_conf_path = "");
  const std::string& load_error() const { return load_error_; }
  const std::string& partitions_error() const { return partitions_error_; }
  std::size_t partitions() const { return partitions_.size(); }

  SubmitOutput submit(const SubmitInput& input);
  ModifyOutput modify(const ModifyInput& input) const;

 private:
  // `user`: the resources the user asked for (submission); `update`: for job_modify,
  // which leaves the job's other GRES alone.
  SlurmRequest slurm_request(const JobRecord& record, double host_bytes_per_node, const JobResources& user,
                             bool update) const;
  double host_bytes_per_node(const JobRecord& record) const;
  struct GpuRequest {
    std::string tres;                     // "gres:gpu:<type>:<n>" or "gres:gpu:<n>"
    std::optional<std::string> features;  // SlurmRequest::features
  };
  GpuRequest gpu_request(const JobRecord& record) const;
  JobRecord checked_record(const std::string& admin_comment) const;

  std::optional<MorphConfig> config_;
  std::optional<Catalog> catalog_;
  std::vector<SlurmPartition> partitions_;
  std::string partitions_error_;
  PerfStore perf_;
  std::string load_error_ = "not loaded";
  std::map<std::string, SubmitDecision> decisions_;  // by request; bounded
  std::size_t decision_key_bytes_ = 0;               // of decisions_' keys
};

// Whether job_submit_morph reads its files again. slurmctld stamps its configuration
// (slurm_conf.last_update, in seconds) when it reads slurm.conf, at start, after the
// plugin's init, and at each `scontrol reconfigure` (and at `scontrol setdebug` and the
// like, which cost one needless load): a stamp other than the one of the last load, or
// the same second as that load, seen from a later second, since a reconfigure later in
// that second leaves the stamp as it was. A clock set back reloads nothing more.
bool reload_due(std::time_t last_update, std::time_t loaded_with, std::time_t loaded_at, std::time_t now);

// Whether `fresh`, loaded again, replaces `in_use`: not where it fails (morph.conf, the
// catalog, the fitted models, or slurm.conf's partitions) and `in_use` did not, so that
// a file being edited does not turn Morph jobs away; `why_not` then says what failed.
bool takes_over(const SubmitHandler& fresh, const SubmitHandler& in_use, std::string* why_not);

}  // namespace morph::plugin
