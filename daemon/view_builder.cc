#include "daemon/view_builder.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "daemon/reservations.h"
#include "libmorph/memory/memory_model.h"
#include "libmorph/planner/framework_planning.h"
#include "libmorph/planner/submit_constraints.h"
#include "libmorph/policy/partition_nodes.h"
#include "libmorph/util/error.h"

namespace morph::daemon {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

bool guaranteed(const MorphRequest& r, const MorphConfig& config) {
  return r.sla_given ? r.sla == Sla::guaranteed : config.policy.guaranteed_by_default;
}

// The GPU every FLOP estimate is made for: the first node type's (a fitted model from
// PerfModelDir does not depend on it); other types scale by their Speed.
const GpuType* reference_gpu(const MorphConfig& config) {
  if (config.cluster.node_types().empty()) return nullptr;
  return &config.cluster.gpu_of(config.cluster.node_types().front());
}

// The request's bounds go with its application: the policy never places a job outside
// the GPU counts, node counts, GPU types and plan families its user allowed (as at
// submission). `r` is the record's request, `record` the record, with the bounds the
// view gives them.
policy::AppProfile app_profile(const MorphRequest& r, const JobRecord& record, const Workload& workload, PerfModel perf,
                               const MorphConfig& config) {
  policy::AppProfile a{workload, std::move(perf), allowed_plan_features(r, config.allowed_plans),
                       framework_memory(config.memory, r.framework).states};
  a.min_gpus = std::max(1, r.gpus_min);
  a.adaptive_batch = r.adaptive_batch();
  a.one_gpu_type = !record.constraint.empty();
  a.max_gpus = r.gpus_max;
  a.min_nodes = std::max(1, record.min_nodes);
  a.max_nodes = record.max_nodes;
  for (const std::string& name : r.gpu_types) {
    const GpuType* gpu = config.cluster.find_gpu_type(name);
    if (gpu == nullptr) throw Error(fmt::format("--morph-gpu-types: {} is not a GpuType of morph.conf", name));
    a.gpu_types.push_back(gpu->name);
  }
  return a;
}

// The GPU types whose nodes hold what every plan of the record asks of a node, as
// job_submit_morph's sizing honoured it (submit_constraints.h): its user's --constraint
// (kept under GpuTypeBy=feature), --mincpus and --mem. A job updated onto another type
// would stay pending for ever. Canonical names, in morph.conf's order.
std::vector<std::string> gpu_types_within_floors(const JobRecord& r, const Cluster& cluster) {
  std::vector<std::string> types;
  for (const NodeType& type : cluster.node_types()) {
    bool holds = type.cpus >= r.min_cpus_per_node &&
                 type.host_memory_bytes >= static_cast<double>(r.memory_mb_per_node) * kMiB;
    try {
      holds = holds && satisfies(type.features, r.constraint);
    } catch (const Error&) {
      holds = false;  // a constraint Morph cannot evaluate (submission refuses it)
    }
    const std::string& gpu = cluster.gpu_of(type).name;
    if (holds && std::find(types.begin(), types.end(), gpu) == types.end()) types.push_back(gpu);
  }
  return types;
}

// The GPU types the policy may give a job: those its user allowed (--morph-gpu-types;
// none: any) within its floors; the type it has when none is (or under GpuTypeBy=gres,
// where Slurm 22.05 leaves a pending job whose typed GPU request an update changed never
// runnable: "Requested node configuration is not available"). Empty: any. Throws
// morph::Error on a type morph.conf does not define.
std::vector<std::string> gpu_types_allowed(const JobRecord& r, const MorphConfig& config) {
  const Cluster& cluster = config.cluster;
  if (!config.gpu_type_by_feature && !r.current.heterogeneous()) return {r.current.gpu_type};
  const std::vector<std::string> within = gpu_types_within_floors(r, cluster);
  if (r.request.gpu_types.empty() && within.size() == cluster.gpu_types().size()) return {};
  std::vector<std::string> allowed;
  for (const std::string& name : r.request.gpu_types.empty() ? within : r.request.gpu_types) {
    const GpuType* gpu = cluster.find_gpu_type(name);
    if (gpu == nullptr) throw Error(fmt::format("--morph-gpu-types: {} is not a GpuType of morph.conf", name));
    if (std::find(within.begin(), within.end(), gpu->name) != within.end())
      allowed.push_back(gpu->name);
  }
  if (allowed.empty() && !r.current.gpu_type.empty()) allowed.push_back(r.current.gpu_type);
  return allowed;
}

// The batch a job is planned for (JobState::workload): its own, but for a best-effort
// torch job of --morph-adaptive-batch, whose trainer changes it (the only trainer Morph
// drives that does), the mean batch its forecaster predicts for the next epoch, decided
// at whole epochs (libmorph/adaptive/epoch_batch.h: JABAS's auto-scaling, seed 004 §6.3).
// A running job's plan then processes that batch under its layout (with_global_batch),
// the batch rounded to a multiple of its micro-batch slots, dp · micro_batches.
std::optional<EpochBatch> forecast_batch(const JobRecord& r, bool guaranteed, const JobHistory* history,
                                         const MorphConfig& config) {
  const MorphRequest& q = r.request;
  if (!q.trainer_adapts_batch() || guaranteed || history == nullptr ||
      config.policy.adaptive_epoch_steps <= 0 || r.current.heterogeneous())
    return std::nullopt;
  const AdaptiveBatchRange range{q.adaptive_min, q.adaptive_max};
  EpochBatchOptions options;
  options.epoch_steps = config.policy.adaptive_epoch_steps;
  EpochBatch e = epoch_batch(batch_trajectory(history->step_batches), q.global_batch, range, options);
  if (!e.forecast) return std::nullopt;
  const ExecutionPlan& layout = r.current.plan;
  if (!with_global_batch(layout, e.batch)) {
    const std::int64_t step = std::int64_t{layout.dp} * layout.micro_batches;
    const std::int64_t fits = std::max<std::int64_t>(1, (e.batch + step / 2) / step) * step;
    if (fits >= range.min_batch && fits <= range.max_batch) e.batch = fits;
  }
  return e;
}

// An adaptive job's iterations ran at several batches: each counts at the planned batch
// in proportion to its samples.
JobHistory at_batch(JobHistory history, std::int64_t batch) {
  for (store::Observation& o : history.observations)
    if (o.samples > 0) o.seconds *= static_cast<double>(batch) / static_cast<double>(o.samples);
  return history;
}

}  // namespace

NodeType usable_capacity(const NodeType& type, int usable) {
  if (usable >= type.gpus) return type;
  NodeType capacity = type;
  capacity.name = fmt::format("{}~{}", type.name, usable);
  capacity.cpus = type.cpus * usable / type.gpus;
  capacity.host_memory_bytes = type.host_memory_bytes * usable / type.gpus;
  capacity.gpus = usable;
  return capacity;
}

const NodeType* usable_capacity_of(std::string_view name, const Cluster& cluster, NodeType* capacity) {
  const std::size_t tilde = name.find('~');
  const NodeType* type = cluster.find_node_type(name.substr(0, tilde));
  if (type == nullptr) return nullptr;
  int usable = type->gpus;
  if (tilde != std::string_view::npos) {
    const std::string_view count = name.substr(tilde + 1);
    const auto [end, ec] = std::from_chars(count.data(), count.data() + count.size(), usable);
    if (ec != std::errc() || end != count.data() + count.size() || usable < 1 || usable >= type->gpus)
      return nullptr;
  }
  *capacity = usable_capacity(*type, usable);
  return type;
}

PerfModel model_in_use(const ModelSpec& model, std::int64_t seq_len, const ViewContext& c) {
  const GpuType* reference = reference_gpu(c.config);
  if (reference == nullptr) throw Error("morph.conf defines no node type");
  PerfModel perf = c.perf.model_for(model, seq_len, *reference, c.config.compute_efficiency);
  if (c.refitted != nullptr && c.refitted->count(model.name)) {
    const PerfModel& refit = c.refitted->at(model.name);
    perf.params = refit.params;
    perf.prior = refit.prior;
  }
  return perf;
}

std::string app_key(const MorphRequest& r) {
  std::string key = fmt::format("{}:b{}:s{}", r.model, r.global_batch, r.seq_len);
  // Jobs whose users bound their GPUs or plans differently are different applications.
  if (r.gpus_min != 1 || r.gpus_max != 0) key += fmt::format(":g{}-{}", r.gpus_min, r.gpus_max);
  if (!r.gpu_types.empty()) key += fmt::format(":t{}", fmt::join(r.gpu_types, ","));
  if (r.plans != "all") key += ":p" + r.plans;
  // Megatron-LM runs fewer plans and keeps its state otherwise.
  if (r.framework == Framework::megatron) key += fmt::format(":f{}", to_string(r.framework));
  if (r.adaptive_batch()) key += fmt::format(":a{}-{}", r.adaptive_min, r.adaptive_max);
  return key;
}

namespace {

// The CPUs a running job holds come from its record (cpus_per_gpu), and may be more than
// the view gives its node: a share of a node that other jobs use has its GPUs' part of
// the CPUs, and morph.conf's Cpus= may be below what Slurm gave. Its host memory, from its
// plan and --mem, may be more than the share too. The policies cannot hold more than a
// node has (NodePool refuses, and the round failed for every job): the running jobs' CPUs
// and memory there are scaled down to fit. A job kept where it runs keeps its record; one
// the policy moves gets CPUs and memory it places.
void fit_to_nodes(policy::ClusterView& v, std::vector<std::string>& skipped) {
  std::vector<long> cpus(v.nodes.size(), 0);
  std::vector<double> memory(v.nodes.size(), 0);
  for (const policy::JobState& j : v.jobs)
    for (const policy::Slice& s : j.current.slices) {
      cpus[static_cast<std::size_t>(s.node)] += s.cpus;
      memory[static_cast<std::size_t>(s.node)] += s.memory_bytes;
    }
  for (std::size_t n = 0; n < v.nodes.size(); ++n) {
    const long cpu_capacity = v.nodes[n].type.cpus;
    const double memory_capacity = v.nodes[n].type.host_memory_bytes;
    if (cpus[n] > cpu_capacity)
      skipped.push_back(fmt::format("node {}: its Morph jobs' records hold {} CPUs, the view {}: scaled down to fit",
                                    v.nodes[n].name, cpus[n], cpu_capacity));
    if (memory[n] > memory_capacity)
      skipped.push_back(fmt::format("node {}: its Morph jobs hold {:.0f} MiB of host memory, the view {:.0f} MiB: "
                                    "scaled down to fit",
                                    v.nodes[n].name, memory[n] / kMiB, memory_capacity / kMiB));
    for (policy::JobState& j : v.jobs)
      for (policy::Slice& s : j.current.slices) {
        if (static_cast<std::size_t>(s.node) != n) continue;
        if (cpus[n] > cpu_capacity) s.cpus = static_cast<int>(s.cpus * cpu_capacity / cpus[n]);
        if (memory[n] > memory_capacity) s.memory_bytes *= memory_capacity / memory[n];
      }
  }
}

// One pass of build_view. The GPUs of the running jobs in `taken` are other jobs' (they
// are left out of the view); `left_out` gets the running jobs this pass counted as
// Morph's on their nodes yet left out of the view.
BuiltView build_view_pass(const ClusterSnapshot& snapshot, const ViewContext& c, const JobHistories& histories,
                          const std::set<std::uint32_t>& taken, std::set<std::uint32_t>* left_out) {
  BuiltView out;
  policy::ClusterView& v = out.view;
  v.now_s = snapshot.now_s;
  v.restart = c.config.policy.restart_costs;
  v.payback_s = c.config.policy.restart_penalty_s;
  v.restart_backoff = c.config.policy.restart_backoff;
  v.min_reconfigure_gain = c.config.policy.min_reconfigure_gain;
  v.starvation_limit_s = c.config.policy.starvation_limit_s;
  v.unknown_length_prior_s = c.config.policy.unknown_length_prior_s;
  v.heterogeneous_jobs = c.config.policy.heterogeneous_jobs;

  // What each node's Morph jobs hold, from their records (running and completing jobs).
  // A completing job (its epilog runs) keeps its nodes from new jobs, but slurmctld gave
  // its GPUs back when it ended (deallocate_nodes, select_g_job_fini): gres_used no
  // longer counts them, so they are not subtracted from it.
  std::map<std::string, int> morph_gpus;
  std::map<std::string, int> completing_gpus;  // of morph_gpus, those gres_used leaves out
  std::map<std::string, int> completing_taken; // completing jobs in `taken`: held, not in gres_used
  std::set<std::uint32_t> counted;  // running jobs whose GPUs morph_gpus holds
  for (const SlurmJob& j : snapshot.jobs) {
    if ((j.phase != JobPhase::running && j.phase != JobPhase::finishing) || !is_job_record(j.admin_comment)) continue;
    try {
      const JobRecord r = parse_admin_comment(j.admin_comment);
      const bool completing = j.phase == JobPhase::finishing;
      for (const std::string& name : j.nodes) {
        if (taken.count(j.id)) {
          if (completing) completing_taken[name] += r.current.gpus_per_node;
          continue;
        }
        morph_gpus[name] += r.current.gpus_per_node;
        if (completing) completing_gpus[name] += r.current.gpus_per_node;
      }
      if (!taken.count(j.id)) counted.insert(j.id);
    } catch (const Error&) {
      // Said below, with the job.
    }
  }

  // Nodes: those morph.conf names, in Slurm's order. GPUs that other jobs use, and those
  // of an unusable node, are not the policy's: such a node gets a type of its own with
  // what is left (and that share of CPUs and memory), since nodes of one type are alike,
  // and keeps its node type (NodeState::whole) for its hardware and a request's whole nodes.
  std::map<std::string, int> node_index;
  std::vector<bool> startable;  // by view node: Slurm may start a job there (SlurmNode::usable)
  // The nodes with all their GPUs, others' included, usable or not: a guaranteed job's
  // request is measured on the fewest nodes that hold it (policy::on_requested_nodes),
  // whatever other jobs hold of them this round.
  std::vector<policy::NodeState> whole_nodes;
  for (const SlurmNode& n : snapshot.nodes) {
    const auto named = std::find_if(c.config.cluster.nodes().begin(), c.config.cluster.nodes().end(),
                                    [&](const NodeRecord& r) { return r.name == n.name; });
    if (named == c.config.cluster.nodes().end()) {
      out.skipped.push_back(fmt::format("node {}: not a NodeName of morph.conf", n.name));
      continue;
    }
    const NodeType* type = c.config.cluster.find_node_type(named->node_type);
    if (type == nullptr) continue;  // morph.conf checks this when it loads
    whole_nodes.push_back(policy::NodeState{n.name, *type, c.config.cluster.gpu_of(*type)});
    auto on_node = [&](const std::map<std::string, int>& gpus) {
      const auto it = gpus.find(n.name);
      return it == gpus.end() ? 0 : it->second;
    };
    const int mine = on_node(morph_gpus);
    const int others = std::max(0, n.gpus_in_use - (mine - on_node(completing_gpus))) + on_node(completing_taken);
    const int usable = n.usable ? std::max(mine, type->gpus - others) : mine;
    if (usable <= 0) {
      out.skipped.push_back(fmt::format("node {}: no GPU left for Morph ({} used by other jobs{})", n.name, others,
                                        n.usable ? "" : ", not usable"));
      continue;
    }
    node_index[n.name] = static_cast<int>(v.nodes.size());
    startable.push_back(n.usable);
    v.nodes.push_back(
        policy::NodeState{n.name, usable_capacity(*type, usable), c.config.cluster.gpu_of(*type), *type});
  }

  const bool all_startable = std::all_of(startable.begin(), startable.end(), [](bool b) { return b; });

  struct JobPartitions {
    std::optional<PartitionBounds> bounds;
    std::map<std::string, int> most;  // most_nodes_by_gpu_type
    std::vector<bool> nodes;          // partition_nodes
  };
  std::map<std::string, JobPartitions> partitions;  // by the jobs' -p, once each
  for (const SlurmJob& j : snapshot.jobs) {
    if (j.phase == JobPhase::done || !is_job_record(j.admin_comment)) continue;
    const std::string id = std::to_string(j.id);
    TrackedJob tracked{j.id, j.user_id, {}, j.admin_comment, j.phase, j.held, j.blocked, j.size_limit};
    try {
      tracked.record = parse_admin_comment(j.admin_comment);
    } catch (const Error& e) {
      out.skipped.push_back(fmt::format("job {}: its record cannot be read: {}", id, e.what()));
      continue;
    }
    const JobRecord& r = tracked.record;
    // Only morphrun --driver catches the checkpoint signal and follows a new record: a
    // batch script that has not exec'd it yet, or runs its trainer otherwise, would die of
    // the signal (its default action). Its GPUs stay taken where it runs.
    if ((j.phase == JobPhase::running || j.phase == JobPhase::finishing) && !j.driver) {
      out.skipped.push_back(fmt::format("job {}: shows no step of morphrun --driver (yet): left where it runs", id));
      continue;
    }
    policy::JobState s;
    s.id = id;
    MorphRequest bounds = r.request;
    JobRecord limits = r;  // the record with the node bounds the view gives it
    try {
      bounds.gpu_types = gpu_types_allowed(r, c.config);
    } catch (const Error& e) {
      out.skipped.push_back(fmt::format("job {}: {}", id, e.what()));
      continue;
    }
    const PartitionBounds* part = nullptr;
    const std::vector<bool>* inside = nullptr;  // partition_nodes, unless all nodes
    std::map<std::string, int> nodes_of_type;  // AppProfile::nodes_of_type
    std::string nodes_key;                     // its application's, where nodes_allowed bounds it
    if (!snapshot.partitions.empty()) {
      auto [known, fresh] = partitions.try_emplace(j.partition);
      if (fresh) {
        known->second.bounds = partition_bounds(snapshot.partitions, j.partition);
        known->second.most = most_nodes_by_gpu_type(c.config.cluster, snapshot.partitions, j.partition);
        if (known->second.bounds && !known->second.bounds->all_nodes)
          known->second.nodes = policy::partition_nodes(*known->second.bounds, v.nodes, c.config.cluster);
      }
      if (known->second.bounds) part = &*known->second.bounds;
      nodes_of_type = known->second.most;
      inside = &known->second.nodes;
    }
    // job_submit_morph bounded the record by slurm.conf's partitions; a partition made or
    // changed since, or a record written before, is bounded here.
    if (part != nullptr) {
      std::vector<std::string> types = bounds.gpu_types;
      int min_nodes = limits.min_nodes, max_nodes = limits.max_nodes;
      const bool offered = within_partitions(*part, c.config.cluster, &types, &min_nodes, &max_nodes);
      if (!offered && j.phase == JobPhase::pending) {
        out.skipped.push_back(fmt::format("job {}: partition {} holds none of the GPU types it may use", id, part->names));
        continue;
      }
      if (j.phase != JobPhase::pending) {  // a partition changed since it started: it may stay as it runs
        std::vector<std::string> running_on = {r.current.gpu_type};
        for (const GpuGroup& g : r.current.groups) running_on.push_back(g.gpu_type);
        if (!offered) types = bounds.gpu_types;
        else if (!types.empty())
          for (const std::string& type : running_on)
            if (!type.empty() && std::find(types.begin(), types.end(), type) == types.end()) types.push_back(type);
        if (max_nodes > 0) max_nodes = std::max(max_nodes, r.current.nodes);
        if (r.current.groups.empty())
          if (auto most = nodes_of_type.find(r.current.gpu_type); most != nodes_of_type.end())
            most->second = std::max(most->second, r.current.nodes);
        for (const GpuGroup& g : r.current.groups)
          if (auto most = nodes_of_type.find(g.gpu_type); most != nodes_of_type.end())
            most->second = std::max(most->second, g.nodes);
        min_nodes = std::min(min_nodes, std::max(limits.min_nodes, r.current.nodes));
      }
      if (max_nodes > 0 && min_nodes > max_nodes) min_nodes = max_nodes;  // MinNodes above MaxNodes: Slurm runs none
      if (!types.empty())  // only the types it may use bound it (and name its application)
        std::erase_if(nodes_of_type, [&](const auto& most) {
          return std::find(types.begin(), types.end(), most.first) == types.end();
        });
      bounds.gpu_types = std::move(types);
      limits.min_nodes = min_nodes;
      limits.max_nodes = max_nodes;
    }
    // Where Slurm may start it: the usable nodes of its partitions (partition_nodes) that
    // its reservations leave it (reservations.h), and those it runs on, where it may only
    // stay (JobState::nodes_kept: a requeue there would wait for ever). An unusable node
    // is in the view only with the GPUs of the Morph jobs on it, for them alone.
    const bool by_partition = part != nullptr && !part->all_nodes;
    const ReservationBound reserved = reservation_bound(snapshot.reservations, j, snapshot.now_s, node_index,
                                                        v.nodes.size());
    if (by_partition || !reserved.allowed.empty() || !all_startable) {
      s.nodes_allowed.resize(v.nodes.size());
      s.nodes_kept.resize(v.nodes.size());
      for (std::size_t n = 0; n < v.nodes.size(); ++n) {
        const bool may_start = startable[n] && (!by_partition || (*inside)[n]) &&
                               (reserved.allowed.empty() || reserved.allowed[n]);
        const bool runs_there = std::find(j.nodes.begin(), j.nodes.end(), v.nodes[n].name) != j.nodes.end();
        s.nodes_allowed[n] = may_start || runs_there;
        s.nodes_kept[n] = runs_there && !may_start;
      }
      const bool outside = std::find(s.nodes_kept.begin(), s.nodes_kept.end(), true) != s.nodes_kept.end();
      if (!outside) s.nodes_kept.clear();
      const bool every = std::all_of(s.nodes_allowed.begin(), s.nodes_allowed.end(), [](bool b) { return b; });
      if (every) s.nodes_allowed.clear();
      // The oracle's curves are per application: one per set of nodes. No key: the
      // usable nodes, every node or not; a job on an unusable node has its own (":j").
      if (!every || !all_startable)
        nodes_key = (by_partition ? ":p" + j.partition : "") + reserved.key + (outside ? ":j" + id : "");
    }
    s.sla = guaranteed(r.request, c.config) ? Sla::guaranteed : Sla::best_effort;
    const auto h = histories.find(j.id);
    const JobHistory* history = h == histories.end() ? nullptr : &h->second;
    try {
      if (const std::optional<EpochBatch> e = forecast_batch(r, s.sla == Sla::guaranteed, history, c.config)) {
        bounds.global_batch = e->batch;
        out.forecasts[id] = *e;
      }
    } catch (const Error& e) {
      out.skipped.push_back(fmt::format("job {}: planned for its starting batch: {}", id, e.what()));
    }
    // A --constraint keeps the job on one GPU type, and so do several partitions (Slurm
    // starts it in one; a heterogeneous placement could take its types from two); -N and
    // partitions bound its nodes: jobs with any of these are an application of their own.
    const bool several_partitions = part != nullptr && !part->each.empty();
    s.app = app_key(bounds) + (r.constraint.empty() ? "" : ":c" + r.constraint) +
            (several_partitions ? ":p*" : "") +
            (limits.min_nodes == 0 && limits.max_nodes == 0 ? "" : ":n" + node_bounds(limits));
    for (const auto& [type, most] : nodes_of_type) s.app += fmt::format(":{}<={}", type, most);
    s.app += nodes_key;
    try {
      const ModelSpec model = c.catalog.resolve(r.request.model, fmt::format("job {}", id));
      const std::int64_t seq = r.request.seq_len > 0 ? r.request.seq_len : model.seq_len;
      s.workload = Workload{model, bounds.global_batch, seq};
      if (!out.apps.count(s.app)) {
        out.apps[s.app] = app_profile(bounds, limits, s.workload, model_in_use(model, seq, c), c.config);
        out.apps[s.app].nodes_of_type = nodes_of_type;
        out.apps[s.app].one_gpu_type = out.apps[s.app].one_gpu_type || several_partitions;
      }
    } catch (const Error& e) {
      out.skipped.push_back(fmt::format("job {}: {}", id, e.what()));
      continue;
    }
    // The request: the user's own plan when one came with the job, else the plan Morph
    // gave it at submission.
    s.requested_plan = r.baseline ? r.baseline->plan : r.current.plan;
    s.requested_nodes = r.baseline ? r.baseline->nodes : 0;
    const auto planned = [&](const ExecutionPlan& plan) {
      return r.request.adaptive_batch() ? with_global_batch(plan, bounds.global_batch).value_or(plan) : plan;
    };
    s.requested_plan = planned(s.requested_plan);
    s.requested_cpus = s.requested_plan.gpus() * std::max(1, r.current.cpus_per_gpu);
    s.min_host_bytes_per_node = static_cast<double>(r.memory_mb_per_node) * kMiB;
    s.submit_time_s = j.submit_time_s;
    s.declared_iterations = static_cast<double>(r.request.iterations);
    s.time_limit_s = j.time_limit_s;
    s.restarts = static_cast<int>(j.restarts);
    if (j.phase == JobPhase::running || j.phase == JobPhase::finishing) {
      bool placed = static_cast<int>(j.nodes.size()) == r.current.nodes;
      for (const std::string& name : j.nodes) placed = placed && node_index.count(name);
      // A heterogeneous job: each group's nodes of its type, the first group's first.
      std::vector<std::string> nodes = j.nodes;
      if (placed && r.current.heterogeneous()) {
        auto group_of = [&](const std::string& name) {
          const std::string& gpu = v.nodes[static_cast<std::size_t>(node_index.at(name))].gpu.name;
          for (std::size_t g = 0; g < r.current.groups.size(); ++g)
            if (r.current.groups[g].gpu_type == gpu) return static_cast<int>(g);
          return -1;
        };
        std::stable_sort(nodes.begin(), nodes.end(),
                         [&](const std::string& a, const std::string& b) { return group_of(a) < group_of(b); });
        for (const GpuGroup& g : r.current.groups)
          placed = placed && std::count_if(nodes.begin(), nodes.end(), [&](const std::string& name) {
                               return v.nodes[static_cast<std::size_t>(node_index.at(name))].gpu.name == g.gpu_type;
                             }) == g.nodes;
      }
      if (!placed) {
        out.skipped.push_back(fmt::format("job {}: runs on {} nodes that do not all match its record ({})", id,
                                          j.nodes.size(), describe(r.current)));
        continue;
      }
      s.current.plan = planned(r.current.plan);
      // The memory Slurm holds for it on each node (job_submit_morph's pn_min_memory: its
      // plan's host memory, the user's --mem a floor), which no job placed beside it gets.
      const double memory_per_node = std::max(
          s.min_host_bytes_per_node,
          estimate_memory(s.workload.model, s.workload.seq_len, s.current.plan,
                          framework_memory(c.config.memory, r.request.framework))
                  .host_bytes_per_gpu *
              r.current.gpus_per_node);
      for (const std::string& name : nodes)
        s.current.slices.push_back(policy::Slice{node_index.at(name), r.current.gpus_per_node,
                                                 r.current.gpus_per_node * r.current.cpus_per_gpu, memory_per_node});
      s.current.groups = r.current.groups;
      s.planned_iteration_s = r.current.iter_ms / 1e3;
      s.ready_s = j.start_time_s;
      s.record_locked = j.record_locked;
    }
    // Anti-starvation: the time without GPUs JobTracker counted, running or not; a job it
    // has not counted yet has waited since its submission while it is pending.
    if (history != nullptr && history->waited_s) s.waited_s = *history->waited_s;
    else if (j.phase == JobPhase::pending) s.waited_s = std::max(0.0, snapshot.now_s - j.submit_time_s);
    if (history != nullptr) {
      out.measured[id] = measure_job(s, r.request.adaptive_batch() ? at_batch(*history, bounds.global_batch) : *history,
                                     whole_nodes);
      apply_measurement(s, out.measured[id]);
    }
    out.jobs[id] = tracked;
    v.jobs.push_back(std::move(s));
    counted.erase(j.id);
  }
  fit_to_nodes(v, out.skipped);
  *left_out = std::move(counted);
  return out;
}

}  // namespace

BuiltView build_view(const ClusterSnapshot& snapshot, const ViewContext& c, const JobHistories& histories) {
  std::set<std::uint32_t> left_out;
  BuiltView first = build_view_pass(snapshot, c, histories, {}, &left_out);
  if (left_out.empty()) return first;
  // A running job left out of the view (its nodes do not match its record while morphrun
  // resizes it, its model left the catalog) still holds its GPUs: they are taken, as
  // another user's are, not free for the policy.
  std::set<std::uint32_t> again;
  BuiltView out = build_view_pass(snapshot, c, histories, left_out, &again);
  for (const std::uint32_t id : left_out)
    out.skipped.push_back(fmt::format("job {}: its GPUs count as taken while it is left out", id));
  return out;
}

}  // namespace morph::daemon
