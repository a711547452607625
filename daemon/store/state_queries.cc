// StateStore: what morph status and morph explain read.
#include <fmt/format.h>

#include <limits>
#include <map>

#include "daemon/store/state_store.h"
#include "libmorph/util/error.h"
#include "libmorph/util/median.h"

namespace morph::store {
namespace {

FittedParams read_fit(const Statement& row) {
  return {row.column_text(0), row.column_text(1), row.column_text(2), row.column_int(3), row.column_real(4)};
}

std::vector<Observation> observation_rows(Statement& rows) {
  std::vector<Observation> out;
  while (rows.step())
    out.push_back({static_cast<JobId>(rows.column_int(0)), rows.column_int(1), rows.column_int(2),
                   rows.column_real(3), rows.column_int(4), rows.column_text(5), rows.column_int(6)});
  return out;
}

JobRow read_job(const Statement& row, const std::string& path) {
  JobRow job;
  job.job_id = static_cast<JobId>(row.column_int(0));
  job.model = row.column_text(1);
  job.global_batch = row.column_int(2);
  const std::string sla = row.column_text(3);
  if (sla != "guaranteed" && sla != "best-effort")
    throw Error(fmt::format("{}: job {}: \"{}\" is not an SLA", path, job.job_id, sla));
  job.sla = sla == "guaranteed" ? Sla::guaranteed : Sla::best_effort;
  job.user_uid = static_cast<std::uint32_t>(row.column_int(4));
  job.submitted_at = row.column_int(5);
  job.finished_at = row.column_optional_int(6);
  return job;
}

PlanPeriod read_plan(const Statement& row) {
  PlanPeriod plan;
  plan.job_id = static_cast<JobId>(row.column_int(0));
  plan.from_time = row.column_int(1);
  plan.record = row.column_text(2);
  plan.gpu_type = row.column_text(3);
  plan.nodes = static_cast<int>(row.column_int(4));
  plan.gpus_per_node = static_cast<int>(row.column_int(5));
  plan.predicted_samples_per_s = row.column_real(6);
  return plan;
}

Decision read_decision(const Statement& row) {
  return {row.column_int(0),  row.column_int(1),  static_cast<JobId>(row.column_int(2)),
          row.column_text(3), row.column_text(4), row.column_text(5)};
}

// Each plan lasts until the next one begins; the last one until the job ended.
void fill_until(std::vector<PlanPeriod>& plans, std::optional<std::int64_t> finished_at) {
  for (std::size_t i = 0; i < plans.size(); ++i)
    plans[i].until_time = i + 1 < plans.size() ? std::optional(plans[i + 1].from_time) : finished_at;
}

constexpr const char* kFitColumns = "SELECT model, params_json, source, fitted_at, rmsle FROM fitted_params";
constexpr const char* kJobColumns =
    "SELECT job_id, model, global_batch, sla, user_uid, submitted_at, finished_at FROM jobs";
constexpr const char* kPlanColumns =
    "SELECT job_id, from_time, record, gpu_type, nodes, gpus_per_node, predicted_samples_per_s FROM job_plans";
constexpr const char* kDecisionColumns = "SELECT id, time, job_id, action, reason, alternatives_json FROM decisions";
// The columns observation_rows() reads, in its order.
constexpr const char* kObservationColumns = "SELECT job_id, time, step, seconds, samples, layout, id FROM observations";

}  // namespace

std::optional<FittedParams> StateStore::latest_params(const std::string& model) const {
  Statement row = db_.prepare(fmt::format("{} WHERE model = ?1 ORDER BY fitted_at DESC, id DESC LIMIT 1", kFitColumns),
                              fmt::format("read the fitted parameters of {}", model));
  if (!row.bind_text(1, model).step()) return std::nullopt;
  return read_fit(row);
}

std::vector<FittedParams> StateStore::params_history(const std::string& model) const {
  Statement rows = db_.prepare(fmt::format("{} WHERE model = ?1 ORDER BY fitted_at, id", kFitColumns),
                               fmt::format("read the fitted parameters of {}", model));
  rows.bind_text(1, model);
  std::vector<FittedParams> fits;
  while (rows.step()) fits.push_back(read_fit(rows));
  return fits;
}

std::optional<JobRow> StateStore::job(JobId job_id) const {
  Statement row = db_.prepare(fmt::format("{} WHERE job_id = ?1", kJobColumns), fmt::format("read job {}", job_id));
  if (!row.bind_int(1, job_id).step()) return std::nullopt;
  return read_job(row, path());
}

std::vector<JobId> StateStore::unfinished_jobs() const {
  Statement rows = db_.prepare("SELECT job_id FROM jobs WHERE finished_at IS NULL ORDER BY job_id",
                               "read the jobs without an end");
  std::vector<JobId> jobs;
  while (rows.step()) jobs.push_back(static_cast<JobId>(rows.column_int(0)));
  return jobs;
}

std::optional<JobWait> StateStore::job_wait(JobId job_id) const {
  Statement row = db_.prepare("SELECT job_id, waited_s, observed_at, pending FROM job_waits WHERE job_id = ?1",
                              fmt::format("read the waiting time of job {}", job_id));
  if (!row.bind_int(1, job_id).step()) return std::nullopt;
  return JobWait{static_cast<JobId>(row.column_int(0)), row.column_real(1), row.column_real(2), row.column_int(3) != 0};
}

std::vector<SizeCapRow> StateStore::size_caps() const {
  Statement select =
      db_.prepare("SELECT job_id, max_gpus, max_nodes, at_least FROM size_caps ORDER BY job_id", "read the size caps");
  std::vector<SizeCapRow> caps;
  while (select.step())
    caps.push_back({static_cast<JobId>(select.column_int(0)), static_cast<int>(select.column_int(1)),
                    static_cast<int>(select.column_int(2)), select.column_int(3) != 0});
  return caps;
}

std::vector<PlanPeriod> StateStore::job_timeline(JobId job_id) const {
  const std::string operation = fmt::format("read the timeline of job {}", job_id);
  Transaction transaction(db_, Transaction::Kind::read, operation);
  const std::optional<JobRow> row = job(job_id);
  if (!row) return {};
  Statement rows = db_.prepare(fmt::format("{} WHERE job_id = ?1 ORDER BY from_time, id", kPlanColumns), operation);
  rows.bind_int(1, job_id);
  std::vector<PlanPeriod> plans;
  while (rows.step()) plans.push_back(read_plan(rows));
  fill_until(plans, row->finished_at);
  return plans;
}

std::vector<JobTimeline> StateStore::all_timelines() const {
  const std::string operation = "read the timelines of all jobs";
  Transaction transaction(db_, Transaction::Kind::read, operation);
  std::vector<JobTimeline> timelines;
  std::map<JobId, std::size_t> index;
  Statement jobs = db_.prepare(fmt::format("{} ORDER BY job_id", kJobColumns), operation);
  while (jobs.step()) {
    timelines.push_back({read_job(jobs, path()), {}});
    index[timelines.back().job.job_id] = timelines.size() - 1;
  }
  Statement plans = db_.prepare(fmt::format("{} ORDER BY job_id, from_time, id", kPlanColumns), operation);
  while (plans.step()) {
    PlanPeriod plan = read_plan(plans);
    timelines[index.at(plan.job_id)].plans.push_back(std::move(plan));
  }
  for (JobTimeline& t : timelines) fill_until(t.plans, t.job.finished_at);
  return timelines;
}

std::optional<Decision> StateStore::latest_decision(JobId job_id) const {
  Statement row = db_.prepare(fmt::format("{} WHERE job_id = ?1 ORDER BY time DESC, id DESC LIMIT 1", kDecisionColumns),
                              fmt::format("read the latest decision on job {}", job_id));
  if (!row.bind_int(1, job_id).step()) return std::nullopt;
  return read_decision(row);
}

std::vector<Decision> StateStore::decisions(JobId job_id) const {
  Statement rows = db_.prepare(fmt::format("{} WHERE job_id = ?1 ORDER BY time, id", kDecisionColumns),
                               fmt::format("read the decisions on job {}", job_id));
  rows.bind_int(1, job_id);
  std::vector<Decision> all;
  while (rows.step()) all.push_back(read_decision(rows));
  return all;
}

std::vector<Observation> StateStore::observations(JobId job_id, std::int64_t from_time,
                                                  std::optional<std::int64_t> until_time, int last) const {
  const std::string operation = fmt::format("read the observations of job {}", job_id);
  if (last < 1) throw Error(fmt::format("{}: {}: ask for at least 1 observation", path(), operation));
  Statement rows = db_.prepare(fmt::format("{} WHERE job_id = ?1 AND time >= ?2 AND (?3 IS NULL OR time < ?3) "
                                           "ORDER BY time DESC, id DESC LIMIT ?4",
                                           kObservationColumns),
                               operation);
  rows.bind_int(1, job_id).bind_int(2, from_time).bind_optional_int(3, until_time).bind_int(4, last);
  const std::vector<Observation> newest_first = observation_rows(rows);
  return {newest_first.rbegin(), newest_first.rend()};
}

std::vector<Observation> StateStore::observations_after(JobId job_id, const Observation& after, int first) const {
  const std::string operation = fmt::format("read the new observations of job {}", job_id);
  if (first < 1) throw Error(fmt::format("{}: {}: ask for at least 1 observation", path(), operation));
  // In the order of the index observations_by_job (job_id, time, and the row id last).
  Statement rows = db_.prepare(fmt::format("{} WHERE job_id = ?1 AND (time > ?2 OR (time = ?2 AND id > ?3)) "
                                           "ORDER BY time, id LIMIT ?4",
                                           kObservationColumns),
                               operation);
  rows.bind_int(1, job_id).bind_int(2, after.id > 0 ? after.time : std::numeric_limits<std::int64_t>::min())
      .bind_int(3, after.id)
      .bind_int(4, first);
  return observation_rows(rows);
}

std::vector<RefitPointRow> StateStore::refit_points() const {
  Statement rows = db_.prepare("SELECT model, app, configuration, job, global_batch, seq_len, plan, allocation, "
                               "iteration_s, recorded_at FROM refit_points ORDER BY recorded_at, rowid",
                               "read the points of the online refit");
  std::vector<RefitPointRow> points;
  while (rows.step())
    points.push_back({rows.column_text(0), rows.column_text(1), rows.column_text(2), rows.column_text(3),
                      rows.column_int(4), rows.column_int(5), rows.column_text(6), rows.column_text(7),
                      rows.column_real(8), rows.column_real(9)});
  return points;
}

std::optional<JobThroughput> StateStore::job_throughput(JobId job_id, int last_observations) const {
  const std::string operation = fmt::format("read the throughput of job {}", job_id);
  if (last_observations < 1)
    throw Error(fmt::format("{}: {}: the window must hold at least 1 observation", path(), operation));
  Transaction transaction(db_, Transaction::Kind::read, operation);
  Statement current =
      db_.prepare(fmt::format("{} WHERE job_id = ?1 ORDER BY from_time DESC, id DESC LIMIT 1", kPlanColumns), operation);
  if (!current.bind_int(1, job_id).step()) return std::nullopt;
  const PlanPeriod plan = read_plan(current);
  Statement rows = db_.prepare("SELECT samples, seconds FROM observations WHERE job_id = ?1 AND time >= ?2 "
                               "ORDER BY time DESC, id DESC LIMIT ?3",
                               operation);
  rows.bind_int(1, job_id).bind_int(2, plan.from_time).bind_int(3, last_observations);
  std::vector<double> samples_per_s;
  while (rows.step()) samples_per_s.push_back(static_cast<double>(rows.column_int(0)) / rows.column_real(1));
  JobThroughput throughput{plan.predicted_samples_per_s, std::nullopt, static_cast<int>(samples_per_s.size())};
  if (!samples_per_s.empty()) throughput.observed_samples_per_s = median(samples_per_s);
  return throughput;
}

}  // namespace morph::store
