// What morphd keeps in its state database, one struct per table row (docs/state.md).
// Times are Unix seconds; job ids are Slurm's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "daemon/store/journal_state.h"
#include "libmorph/request/morph_request.h"

namespace morph::store {

using JobId = std::uint32_t;

// One fit of a model's iteration-time parameters; the latest per model is the one in use.
struct FittedParams {
  std::string model;        // catalog name (the model architecture key)
  std::string params_json;  // as perf_model_to_json writes it ("morph-perf-model/1")
  std::string source;       // e.g. "morph-profile", "online refit of job 42"
  std::int64_t fitted_at = 0;
  double rmsle = 0;
};

struct JobRow {
  JobId job_id = 0;
  std::string model;
  std::int64_t global_batch = 0;
  Sla sla = Sla::best_effort;
  std::uint32_t user_uid = 0;
  std::int64_t submitted_at = 0;
  std::optional<std::int64_t> finished_at;  // none while the job is pending or running
};

// A job's seconds without GPUs since its submission, queued or preempted, as counted up to
// `observed_at` (Unix seconds), when the job was `pending` or not.
// A job's size cap (daemon/size_caps.h); 0: none of that kind.
struct SizeCapRow {
  JobId job_id = 0;
  int max_gpus = 0;
  int max_nodes = 0;
  bool at_least = false;  // refused at its least size
  friend bool operator==(const SizeCapRow&, const SizeCapRow&) = default;
};

struct JobWait {
  JobId job_id = 0;
  double waited_s = 0;
  double observed_at = 0;
  bool pending = false;
};

// A plan and allocation the job holds from `from_time` until the next one (or its end).
struct PlanPeriod {
  JobId job_id = 0;
  std::int64_t from_time = 0;
  std::string record;  // the AdminComment record "morph:v1 ..." (or the plan string)
  std::string gpu_type;
  int nodes = 0;
  int gpus_per_node = 0;
  double predicted_samples_per_s = 0;
  std::optional<std::int64_t> until_time;  // filled by the timeline queries
};

// One metrics record of morphrun: `samples` trained in `seconds` ending at `step`.
struct Observation {
  JobId job_id = 0;
  std::int64_t time = 0;
  std::int64_t step = 0;
  double seconds = 0;
  std::int64_t samples = 0;
  std::string layout;  // the plan the step ran under
  std::int64_t id = 0;  // its row, once recorded (a reader's cursor with `time`)
};

// One job's latest iteration time on one configuration, as the online refit remembers it
// (policy::RefitPoint, daemon/online_params.h writes and reads it).
struct RefitPointRow {
  std::string model;          // catalog name
  std::string app;            // the policy's application key
  std::string configuration;  // the refitter's key: application, plan, allocation, CPUs per GPU
  std::string job;            // the policy's job id
  std::int64_t global_batch = 0;
  std::int64_t seq_len = 0;
  std::string plan;        // to_string(ExecutionPlan)
  std::string allocation;  // JSON array of {node, node_type, gpus, cpus}
  double iteration_s = 0;
  double recorded_at = 0;  // Unix seconds
};

struct Decision {
  std::int64_t id = 0;  // assigned by record_decision
  std::int64_t time = 0;
  JobId job_id = 0;
  std::string action;  // e.g. "start", "reconfigure", "keep"
  std::string reason;
  std::string alternatives_json;  // JSON array: the plans considered, predicted throughput, why they lost
};

struct JournalEntry {
  std::int64_t id = 0;
  JobId job_id = 0;
  ReconfigurationPath path = ReconfigurationPath::inplace;
  JournalState state = JournalState::planned;
  std::string from_record;
  std::string to_record;
  std::int64_t started_at = 0;
  std::int64_t updated_at = 0;
};

// A job's reconfigurations that were carried out (journal state done).
struct DoneReconfigurations {
  std::optional<std::int64_t> last_at;  // when the last was done; none if none was
  int restarts = 0;                     // those of a running job: every path but start
};

struct JobTimeline {
  JobRow job;
  std::vector<PlanPeriod> plans;  // by from_time
};

// The current plan's predicted throughput against the median of the last observations
// made since it began.
struct JobThroughput {
  double predicted_samples_per_s = 0;
  std::optional<double> observed_samples_per_s;  // none before the first observation
  int observations = 0;                           // how many the median is over
};

}  // namespace morph::store
