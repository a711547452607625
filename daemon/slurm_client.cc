#include "daemon/slurm_client.h"

extern "C" {
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
}

#include <cstdlib>
#include <functional>
#include <map>
#include <string_view>

#include "daemon/node_state.h"
#include "daemon/pending_reason.h"
#include "libmorph/launch/driver_contract.h"
#include "libmorph/record/job_record.h"
#include "libmorph/util/error.h"
#include "libmorph/util/hostlist.h"
#include "libmorph/util/parse.h"

namespace morph::daemon {
namespace {

std::string last_error() { return slurm_strerror(slurm_get_errno()); }

std::string result(int rc) { return rc == SLURM_SUCCESS ? std::string{} : last_error(); }

// A job that exited with RequeueExit passes through a completing state before Slurm
// makes it pending again: while its epilog runs it is finishing, not done.
JobPhase phase_of(uint32_t state) {
  const uint32_t base = state & JOB_STATE_BASE;
  if (base == JOB_PENDING || (state & JOB_REQUEUE) != 0) return JobPhase::pending;
  if ((state & JOB_COMPLETING) != 0) return JobPhase::finishing;
  if (base == JOB_RUNNING || base == JOB_SUSPENDED) return JobPhase::running;
  return JobPhase::done;
}

// `without_accounting`: AccountingStorageType=accounting_storage/none. A resize then sets
// the job's db_index to NO_VAL64 for a slurmdbd that never answers, and _update_job()
// refuses the job (ESLURM_JOB_SETTING_DB_INX) until batch_requeue_fini() resets it.
SlurmJob job_of(const slurm_job_info_t& j, bool without_accounting) {
  SlurmJob out;
  out.id = j.job_id;
  out.user_id = j.user_id;
  out.phase = phase_of(j.job_state);
  out.held = held(j.priority, j.state_reason);
  out.held_by_user = held_by_user(j.priority, j.state_reason, j.state_desc);
  out.admin_comment = j.admin_comment != nullptr ? j.admin_comment : "";
  out.partition = j.partition != nullptr ? j.partition : "";
  if (j.resv_name != nullptr)
    for (const std::string_view name : split(j.resv_name, ','))
      if (!trim(name).empty()) out.reservations.emplace_back(trim(name));
  if (j.nodes != nullptr && out.phase != JobPhase::pending) {
    try {
      out.nodes = expand_hostlist(j.nodes, "the job's NodeList");
    } catch (const std::exception&) {
      out.nodes.clear();
    }
  }
  out.submit_time_s = static_cast<double>(j.submit_time);
  out.start_time_s = static_cast<double>(j.start_time);
  out.eligible_time_s = static_cast<double>(j.eligible_time);  // details->begin_time (EligibleTime)
  out.time_limit_s = j.time_limit == INFINITE || j.time_limit == NO_VAL ? 0 : 60.0 * j.time_limit;
  out.restarts = j.restart_cnt;
  if (out.phase == JobPhase::pending) {
    out.blocked = pending_block(out.held, j.state_reason);
    out.size_limit = size_limit(j.state_reason);
  }
  // Strictly after the start: a pending job's NumNodes update (morphd's own requeue path)
  // stamps resize_time too, and its release starts the job within the same second.
  out.record_locked = without_accounting && out.phase != JobPhase::pending && j.resize_time != 0 &&
                      j.resize_time > j.start_time;
  return out;
}

std::vector<SlurmPartition> partitions_of(const partition_info_msg_t& msg) {
  std::vector<SlurmPartition> out;
  for (uint32_t i = 0; i < msg.record_count; ++i) {
    const partition_info_t& p = msg.partition_array[i];
    if (p.name == nullptr) continue;
    SlurmPartition part{p.name, {}, false, 0, (p.flags & PART_FLAG_DEFAULT) != 0, 0};
    try {
      if (p.nodes != nullptr) part.nodes = expand_hostlist(p.nodes, "the partition's Nodes");
    } catch (const std::exception&) {
      part.all_nodes = true;  // a list Morph cannot expand bounds nothing
    }
    if (p.max_nodes != INFINITE && p.max_nodes != NO_VAL) part.max_nodes = static_cast<int>(p.max_nodes);
    if (p.min_nodes != NO_VAL && p.min_nodes > 1) part.min_nodes = static_cast<int>(std::min<uint32_t>(p.min_nodes, 1u << 16));
    out.push_back(std::move(part));
  }
  return out;
}

// A reservation's nodes and times, and the flags that change who may use them
// (reservations.h). Its start and end as slurmctld packs them (_pack_resv): a floating
// reservation's relative to now, a recurring one's of its current or next occurrence.
SlurmReservation reservation_of(const reserve_info_t& r) {
  SlurmReservation out;
  out.name = r.name != nullptr ? r.name : "";
  out.start_s = static_cast<double>(r.start_time);
  out.end_s = static_cast<double>(r.end_time);
  out.maint = (r.flags & RESERVE_FLAG_MAINT) != 0;
  out.overlap = (r.flags & RESERVE_FLAG_OVERLAP) != 0;
  out.flex = (r.flags & RESERVE_FLAG_FLEX) != 0;
  out.any_nodes = (r.flags & RESERVE_FLAG_ANY_NODES) != 0;
  out.whole_nodes = r.core_spec_cnt == 0;  // a CoreCnt reservation lists its cores
  if (r.node_list != nullptr && *r.node_list != '\0') {
    try {
      out.every_node = std::string_view(r.node_list) == "ALL";
      if (!out.every_node) out.nodes = expand_hostlist(r.node_list, "the reservation's Nodes");
    } catch (const std::exception&) {
      out.every_node = true;  // kept off every node rather than planned where Slurm refuses
    }
  }
  return out;
}

int update_job(uint32_t id, const std::function<void(job_desc_msg_t&)>& set) {
  job_desc_msg_t desc;
  slurm_init_job_desc_msg(&desc);
  desc.job_id = id;
  set(desc);
  return slurm_update_job(&desc);
}

}  // namespace

struct SlurmClient::Messages {
  node_info_msg_t* nodes = nullptr;
  job_info_msg_t* jobs = nullptr;
  partition_info_msg_t* partitions = nullptr;
  std::vector<SlurmPartition> partitions_read;  // of `partitions`, converted when they change
  reserve_info_msg_t* reservations = nullptr;
  std::vector<SlurmReservation> reservations_read;  // of `reservations`, converted when they change
  std::optional<bool> without_accounting;  // read once slurmctld answers
  // Running Morph jobs whose run showed the driver's step: job id -> that run's start time.
  std::map<std::uint32_t, double> drivers;
  double steps_read_s = 0;  // when the steps were last read
};

bool SlurmClient::without_accounting() {
  if (!messages_->without_accounting) {
    slurm_conf_t* conf = nullptr;
    if (slurm_load_ctl_conf(0, &conf) != SLURM_SUCCESS || conf == nullptr) return false;
    const char* type = conf->accounting_storage_type;
    messages_->without_accounting = type == nullptr || std::string_view(type) == "accounting_storage/none";
    slurm_free_ctl_conf(conf);
  }
  return *messages_->without_accounting;
}

SlurmClient::SlurmClient() : messages_(new Messages) {}

SlurmClient::~SlurmClient() {
  if (messages_->nodes) slurm_free_node_info_msg(messages_->nodes);
  if (messages_->jobs) slurm_free_job_info_msg(messages_->jobs);
  if (messages_->partitions) slurm_free_partition_info_msg(messages_->partitions);
  if (messages_->reservations) slurm_free_reservation_info_msg(messages_->reservations);
  delete messages_;
}

std::optional<ClusterSnapshot> SlurmClient::snapshot(bool* changed, std::string* error) {
  *changed = false;
  node_info_msg_t* nodes = nullptr;
  // SHOW_DETAIL: slurmctld fills gres_used (the GPUs other jobs hold) only when asked.
  int rc = slurm_load_node(messages_->nodes ? messages_->nodes->last_update : 0, &nodes, SHOW_ALL | SHOW_DETAIL);
  if (rc == SLURM_SUCCESS) {
    if (messages_->nodes) slurm_free_node_info_msg(messages_->nodes);
    messages_->nodes = nodes;
    *changed = true;
  } else if (slurm_get_errno() != SLURM_NO_CHANGE_IN_DATA) {
    *error = "slurm_load_node: " + last_error();
    return std::nullopt;
  }
  job_info_msg_t* jobs = nullptr;
  rc = slurm_load_jobs(messages_->jobs ? messages_->jobs->last_update : 0, &jobs, SHOW_ALL | SHOW_DETAIL);
  if (rc == SLURM_SUCCESS) {
    if (messages_->jobs) slurm_free_job_info_msg(messages_->jobs);
    messages_->jobs = jobs;
    *changed = true;
  } else if (slurm_get_errno() != SLURM_NO_CHANGE_IN_DATA) {
    *error = "slurm_load_jobs: " + last_error();
    return std::nullopt;
  }
  // Partitions bound where a job may run; a failed read keeps the last ones read (none:
  // nothing is bounded by them).
  partition_info_msg_t* partitions = nullptr;
  if (slurm_load_partitions(messages_->partitions ? messages_->partitions->last_update : 0, &partitions, SHOW_ALL) ==
      SLURM_SUCCESS) {
    if (messages_->partitions) slurm_free_partition_info_msg(messages_->partitions);
    messages_->partitions = partitions;
    messages_->partitions_read = partitions_of(*partitions);
    *changed = true;
  }
  // Reservations keep jobs off their nodes: a failed read fails the round, as one of the
  // nodes does, rather than plan onto nodes Slurm will not start a job on.
  reserve_info_msg_t* reservations = nullptr;
  rc = slurm_load_reservations(messages_->reservations ? messages_->reservations->last_update : 0, &reservations);
  if (rc == SLURM_SUCCESS) {
    if (messages_->reservations) slurm_free_reservation_info_msg(messages_->reservations);
    messages_->reservations = reservations;
    messages_->reservations_read.clear();
    for (uint32_t i = 0; i < reservations->record_count; ++i)
      messages_->reservations_read.push_back(reservation_of(reservations->reservation_array[i]));
    *changed = true;
  } else if (slurm_get_errno() != SLURM_NO_CHANGE_IN_DATA) {
    *error = "slurm_load_reservations: " + last_error();
    return std::nullopt;
  }
  ClusterSnapshot s;
  s.now_s = static_cast<double>(std::time(nullptr));
  s.partitions = messages_->partitions_read;
  s.reservations = messages_->reservations_read;
  for (uint32_t i = 0; i < messages_->nodes->record_count; ++i) {
    const node_info_t& n = messages_->nodes->node_array[i];
    if (n.name == nullptr) continue;
    s.nodes.push_back(SlurmNode{n.name, usable(n.node_state), gpus_in_use(n.gres_used != nullptr ? n.gres_used : "")});
  }
  const bool locking = without_accounting();
  for (uint32_t i = 0; i < messages_->jobs->record_count; ++i)
    s.jobs.push_back(job_of(messages_->jobs->job_array[i], locking));
  if (mark_drivers(s)) *changed = true;  // a job morphd may now move
  return s;
}

// A run that showed the driver's step stays under it until the job is requeued (its
// start time changes), so the steps are read (one RPC for all) only while some running
// Morph job has not shown one, and at most every kStepsReadS: until then it is not
// marked, and morphd leaves it where it runs. True when a job was marked for the first time.
bool SlurmClient::mark_drivers(ClusterSnapshot& s) {
  constexpr double kStepsReadS = 5;
  std::map<std::uint32_t, double>& seen = messages_->drivers;
  std::map<std::uint32_t, double> kept, running;  // marked before; running Morph jobs not marked yet
  for (SlurmJob& j : s.jobs) {
    j.driver = false;
    if ((j.phase != JobPhase::running && j.phase != JobPhase::finishing) || !is_job_record(j.admin_comment)) continue;
    const auto it = seen.find(j.id);
    j.driver = it != seen.end() && it->second == j.start_time_s;
    (j.driver ? kept : running)[j.id] = j.start_time_s;
  }
  seen = std::move(kept);
  if (running.empty() || s.now_s - messages_->steps_read_s < kStepsReadS) return false;
  messages_->steps_read_s = s.now_s;
  job_step_info_response_msg_t* steps = nullptr;
  if (slurm_get_job_steps(0, NO_VAL, NO_VAL, &steps, SHOW_ALL) != SLURM_SUCCESS || steps == nullptr) return false;
  for (uint32_t i = 0; i < steps->job_step_count; ++i) {
    const job_step_info_t& step = steps->job_steps[i];
    const auto job = running.find(step.step_id.job_id);
    if (job != running.end() && step.name != nullptr && launch::kDriverStepName == step.name)
      seen[job->first] = job->second;
  }
  slurm_free_job_step_info_response_msg(steps);
  bool marked = false;
  for (SlurmJob& j : s.jobs)
    if (running.count(j.id) && seen.count(j.id)) marked = j.driver = true;
  return marked;
}

std::optional<unsigned> SlurmClient::slurm_user_id() {
  slurm_conf_t* conf = nullptr;
  if (slurm_load_ctl_conf(0, &conf) != SLURM_SUCCESS || conf == nullptr) return std::nullopt;
  const unsigned uid = conf->slurm_user_id;
  slurm_free_ctl_conf(conf);
  return uid;
}

std::optional<std::string> SlurmClient::requeue_exit() {
  slurm_conf_t* conf = nullptr;
  if (slurm_load_ctl_conf(0, &conf) != SLURM_SUCCESS || conf == nullptr) return std::nullopt;
  std::string listed = conf->requeue_exit != nullptr ? conf->requeue_exit : "";
  slurm_free_ctl_conf(conf);
  return listed;
}

std::optional<SlurmJob> SlurmClient::job(std::uint32_t id, bool* gone) {
  *gone = false;
  job_info_msg_t* info = nullptr;
  if (slurm_load_job(&info, id, SHOW_DETAIL) != SLURM_SUCCESS || info == nullptr) {
    *gone = slurm_get_errno() == ESLURM_INVALID_JOB_ID;
    return std::nullopt;
  }
  std::optional<SlurmJob> out;
  for (uint32_t i = 0; i < info->record_count; ++i)
    if (info->job_array[i].job_id == id) out = job_of(info->job_array[i], without_accounting());
  slurm_free_job_info_msg(info);
  if (!out) *gone = true;
  return out;
}

std::string SlurmClient::set_record(std::uint32_t id, const std::string& admin_comment, bool pending) {
  std::uint32_t nodes = 0;
  if (pending) {
    try {
      nodes = static_cast<std::uint32_t>(parse_admin_comment(admin_comment).current.nodes);
    } catch (const Error& e) {
      return e.what();
    }
  }
  return result(update_job(id, [&](job_desc_msg_t& d) {
    d.admin_comment = const_cast<char*>(admin_comment.c_str());
    if (nodes > 0) d.min_nodes = d.max_nodes = nodes;
  }));
}

std::string SlurmClient::signal_batch(std::uint32_t id, int signal) {
  return result(slurm_kill_job(id, static_cast<uint16_t>(signal), KILL_JOB_BATCH));
}

std::string SlurmClient::requeue_hold(std::uint32_t id) { return result(slurm_requeue(id, JOB_REQUEUE_HOLD)); }

std::string SlurmClient::hold(std::uint32_t id) {
  return result(update_job(id, [](job_desc_msg_t& d) { d.priority = 0; }));
}

std::string SlurmClient::release(std::uint32_t id) {
  return result(update_job(id, [](job_desc_msg_t& d) { d.priority = INFINITE; }));
}

}  // namespace morph::daemon
