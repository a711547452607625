// The logic of job_submit_morph without Slurm's types, so that it can be unit-tested:
// what the plugin reads from a job_desc, what it writes back, and the decision between
// passing a job through, sizing it, or refusing it with a message.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "libmorph/config/morph_conf.h"
#include "libmorph/model/catalog.h"
#include "libmorph/perf/perf_store.h"
#include "libmorph/planner/submit_plan.h"

namespace morph::plugin {

// The resources job_submit_morph writes into a job_desc.
struct SlurmRequest {
  std::string tres_per_node;  // "gres:gpu:<type>:<n>"
  int nodes = 0;
  int tasks = 0;
  int tasks_per_node = 0;
  int cpus_per_task = 0;
  std::uint64_t memory_mb_per_node = 0;  // 0: leave as it is
  std::string admin_comment;
};

enum class Verdict { pass_through, accept, reject };

struct SubmitInput {
  std::vector<std::string_view> spank_env;  // job_desc->spank_job_env
  std::string tres_per_node;                // the user's, if any
  std::string tres_per_job;
  std::uint32_t min_nodes = 0;              // 0: not given
};

struct SubmitOutput {
  Verdict verdict = Verdict::pass_through;
  std::string message;  // to the user: what was chosen, or why the job is refused
  SlurmRequest request;
};

struct ModifyInput {
  std::optional<std::string> admin_comment;
  std::string tres_per_node;
  std::uint32_t min_nodes = 0;
};

struct ModifyOutput {
  Verdict verdict = Verdict::pass_through;
  std::string message;              // why refused
  std::optional<SlurmRequest> request;  // resources that follow a new record
};

class SubmitHandler {
 public:
  // Loads morph.conf, the catalog (morph.conf ModelCatalog, else `default_catalog`) and
  // the fitted models. Never throws: a failure is kept and every Morph job is refused
  // with it, while other jobs pass through.
  void load(const std::string& conf_path, const std::string& default_catalog);
  const std::string& load_error() const { return load_error_; }

  SubmitOutput submit(const SubmitInput& input);
  ModifyOutput modify(const ModifyInput& input) const;

 private:
  SlurmRequest slurm_request(const JobRecord& record, double host_bytes_per_node) const;
  double host_bytes_per_node(const JobRecord& record) const;

  std::optional<MorphConfig> config_;
  std::optional<Catalog> catalog_;
  PerfStore perf_;
  std::string load_error_ = "not loaded";
  std::map<std::string, SubmitDecision> decisions_;  // by request; bounded
};

}  // namespace morph::plugin
