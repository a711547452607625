#include "plugins/job_submit/submit_handler.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <utility>

#include <fmt/format.h>

#include "libmorph/memory/memory_model.h"
#include "libmorph/request/limits.h"
#include "libmorph/request/gpu_tres.h"
#include "libmorph/util/error.h"
#include "libmorph/util/hostlist.h"
#include "libmorph/util/parse.h"

namespace morph::plugin {
namespace {

constexpr std::size_t kMaxCachedDecisions = 1024;
constexpr std::size_t kMaxCachedKeyBytes = std::size_t{16} << 20;  // the cache's keys together
// The bytes of one of the user's strings (a host list, GRES, a constraint). slurmctld takes
// messages up to 1 GiB and holds its locks while this plugin runs: a security review's
// 16 MiB -x per submission kept 16 MiB each in the decision cache, and 65,536 -w names
// against 65,536 -x names stalled slurmctld for seconds.
constexpr std::size_t kMaxUserText = 64 * 1024;

void check_text_sizes(const JobResources& u) {
  for (const auto& [what, text] :
       {std::pair{"--gres (TresPerNode)", &u.tres_per_node}, {"--gpus (TresPerJob)", &u.tres_per_job},
        {"--gpus-per-task (TresPerTask)", &u.tres_per_task}, {"--gpus-per-socket (TresPerSocket)", &u.tres_per_socket},
        {"--cpus-per-gpu (CpusPerTres)", &u.cpus_per_tres}, {"--mem-per-gpu (MemPerTres)", &u.mem_per_tres},
        {"-w/--nodelist", &u.required_nodes}, {"-x/--exclude", &u.excluded_nodes},
        {"--constraint (Features)", &u.features}, {"-p/--partition", &u.partition}})
    if (text->size() > kMaxUserText)
      throw Error(fmt::format("{}: {} bytes, more than {}", what, text->size(), kMaxUserText));
}

// A user's value in a message slurmctld logs: as it is when short and printable, else
// quote()'s (no forged log lines from a newline in TresPerNode=).
std::string shown(const std::string& text) {
  const bool plain = text.size() <= 40 && std::all_of(text.begin(), text.end(), [](char c) {
                       return std::isprint(static_cast<unsigned char>(c));
                     });
  return plain ? text : quote(text);
}
constexpr std::uint32_t kMaxField16 = 0xfffd;  // below Slurm's NO_VAL16 and INFINITE16
constexpr std::uint32_t kMaxField32 = 0xfffffffd;

std::string cache_key(const MorphRequest& r, const JobResources& u) {
  std::string key;
  for (const auto& [name, value] : to_job_env(r)) key += name + "=" + value + "\n";
  auto number = [](const auto& v) { return v ? std::to_string(*v) : std::string("-"); };
  key += fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", u.partition, u.tres_per_node,
                     u.tres_per_job, u.tres_per_task, u.tres_per_socket, number(u.min_nodes), number(u.max_nodes),
                     number(u.tasks), number(u.tasks_per_node), number(u.tasks_per_gpu), number(u.cpus_per_task),
                     number(u.min_cpus_per_node), u.cpus_per_tres, u.mem_per_tres, u.required_nodes, u.excluded_nodes,
                     u.features, number(u.memory_mb_per_node), u.memory_per_cpu);
  return key;
}

// The user's own GPUs: --gres/--gpus-per-node (per node) or --gpus (per job, spread
// evenly over the nodes), the SLA baseline.
std::optional<UserGpuRequest> user_gpus(const JobResources& u) {
  std::optional<GpuTres> per_node = parse_gpu_tres(u.tres_per_node, "--gres");
  std::optional<GpuTres> per_job = per_node ? std::nullopt : parse_gpu_tres(u.tres_per_job, "--gpus");
  if (!per_node && !per_job) return std::nullopt;
  if (u.min_nodes && *u.min_nodes > MORPH_MAX_NODES)
    throw Error(fmt::format("-N {}: more than the {} nodes Morph sizes a job for", *u.min_nodes, MORPH_MAX_NODES));
  const int nodes = u.min_nodes ? static_cast<int>(*u.min_nodes) : 1;
  if (per_node) return UserGpuRequest{*per_node, nodes};
  if (per_job->count % nodes != 0)
    throw Error(fmt::format("--gpus: {} GPUs do not spread evenly over {} nodes", per_job->count, nodes));
  per_job->count /= nodes;
  return UserGpuRequest{*per_job, nodes};
}

// CPUs per GPU from -c and --cpus-per-gpu (one task per GPU), 0 when neither is given.
int user_cpus_per_gpu(const JobResources& u) {
  int from_tres = 0;
  if (!u.cpus_per_tres.empty()) {
    const std::optional<GpuTres> g = parse_gpu_tres(u.cpus_per_tres, "--cpus-per-gpu");
    if (!g || !without_gpus(u.cpus_per_tres).empty())
      throw Error(fmt::format("--cpus-per-gpu: Morph honours CPUs per GPU only, not {}", quote(u.cpus_per_tres)));
    from_tres = g->count;
  }
  const int per_task = u.cpus_per_task ? static_cast<int>(*u.cpus_per_task) : 0;
  if (per_task > 0 && from_tres > 0 && per_task != from_tres)
    throw Error(fmt::format("-c {} and --cpus-per-gpu={} disagree; Morph runs one task per GPU", per_task, from_tres));
  return std::max(per_task, from_tres);
}

// --mem=0 (Slurm: all of each node's memory) would hold whole nodes' memory while Morph
// places other jobs' plans beside the job's, and moves it between node types.
std::string all_memory_refused(std::string_view option) {
  return fmt::format("{}=0 (all of each node's memory): Morph sizes a job's host memory per node for its plan and "
                     "shares nodes with other jobs; give {}=SIZE as a floor, or leave it out",
                     option, option);
}

// The user's options besides --morph-*: each is honoured by sizing (a constraint) or
// refused, so that the request written back is one Slurm can satisfy.
SubmitConstraints user_constraints(const JobResources& u, bool baseline) {
  if (u.tasks) throw Error("-n/--ntasks: Morph starts one task per GPU; leave it out");
  if (u.tasks_per_node) throw Error("--ntasks-per-node: Morph starts one task per GPU; leave it out");
  if (u.tasks_per_gpu) throw Error("--ntasks-per-gpu: Morph starts one task per GPU; leave it out");
  if (parse_gpu_tres(u.tres_per_task, "--gpus-per-task"))
    throw Error("--gpus-per-task: Morph gives each task one GPU; for an SLA baseline use --gres or --gpus");
  if (parse_gpu_tres(u.tres_per_socket, "--gpus-per-socket"))
    throw Error("--gpus-per-socket: Morph places GPUs itself; for an SLA baseline use --gres or --gpus");
  if (u.memory_per_cpu) throw Error("--mem-per-cpu: Morph sizes host memory per node; use --mem");
  if (names_gpus(u.mem_per_tres)) throw Error("--mem-per-gpu: Morph sizes host memory per node; use --mem");
  if (u.memory_mb_per_node == 0u) throw Error(all_memory_refused("--mem"));
  SubmitConstraints c;
  if (!u.required_nodes.empty()) c.required_nodes = sorted_hosts(expand_hostlist(u.required_nodes, "-w/--nodelist"));
  if (!u.excluded_nodes.empty()) c.excluded_nodes = sorted_hosts(expand_hostlist(u.excluded_nodes, "-x/--exclude"));
  c.features = u.features;
  if (!baseline) {  // with --gres/--gpus, -N describes the baseline
    c.min_nodes = u.min_nodes ? static_cast<int>(std::min<std::uint32_t>(*u.min_nodes, MORPH_MAX_NODES)) : 0;
    c.max_nodes = u.max_nodes ? static_cast<int>(std::min<std::uint32_t>(*u.max_nodes, MORPH_MAX_NODES)) : 0;
  }
  c.cpus_per_gpu = user_cpus_per_gpu(u);
  if (c.cpus_per_gpu > MORPH_MAX_CPUS_PER_GPU)
    throw Error(fmt::format("-c/--cpus-per-gpu: {} CPUs per GPU is above {}", c.cpus_per_gpu, MORPH_MAX_CPUS_PER_GPU));
  c.min_cpus_per_node = u.min_cpus_per_node ? static_cast<int>(std::min<std::uint32_t>(*u.min_cpus_per_node, kMaxField16)) : 0;
  if (u.memory_mb_per_node) {  // per node: --mem-per-cpu is refused above
    if (*u.memory_mb_per_node > static_cast<std::uint64_t>(MORPH_MAX_MEMORY_MB))
      throw Error(fmt::format("--mem: {} MB per node is above {}", *u.memory_mb_per_node, MORPH_MAX_MEMORY_MB));
    c.min_memory_mb_per_node = static_cast<std::int64_t>(*u.memory_mb_per_node);
  }
  return c;
}

// "gres:gpu:<type>:<n>" followed by the other GRES, as one tres_per_node.
std::string tres_with_gpus(const std::string& gpus, const std::string& others) {
  return others.empty() ? gpus : gpus + "," + others;
}

// Two placements' groups ask Slurm for the same nodes (GA and workers may differ).
bool same_nodes(const GpuGroups& a, const GpuGroups& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](const GpuGroup& x, const GpuGroup& y) { return x.gpu_type == y.gpu_type && x.nodes == y.nodes; });
}

// The host memory a job of record `r` asks for per node: what its plan needs
// (`host_bytes`), at least the user's --mem (kept in the record).
std::uint64_t memory_mb_per_node(const JobRecord& r, double host_bytes) {
  return std::max<std::uint64_t>(static_cast<std::uint64_t>(std::ceil(host_bytes / (1024.0 * 1024.0))),
                                 static_cast<std::uint64_t>(r.memory_mb_per_node));
}

long cpus_per_node(const Placement& p) { return long{p.cpus_per_gpu} * p.gpus_per_node; }

// The node types with nodes in morph.conf that hold `gpus_per_node` GPUs of type `gpu`
// and `cpus` CPUs.
std::vector<const NodeType*> listed_node_types_holding(const Cluster& cluster, std::string_view gpu,
                                                       int gpus_per_node, long cpus) {
  std::vector<const NodeType*> out = cluster.node_types_holding(gpu, gpus_per_node, cpus);
  std::erase_if(out, [&](const NodeType* n) { return cluster.nodes_of(*n) == 0; });
  return out;
}

std::string planned(const Placement& p) { return fmt::format("{}, {} CPUs each", describe(p), p.cpus_per_gpu); }

// A field of an update that does not match the record's placement: "NumNodes=2".
struct Mismatch {
  Refusal kind = Refusal::other;
  std::string field;
};

// The first resource field of an update that does not match the record's placement.
std::optional<Mismatch> update_mismatch(const JobResources& u, const Placement& p) {
  // The plan's type by its name, as the job's tasks check it (spank_morph): Slurm's GRES
  // type is morph.conf's name, so an alias there asks for GPUs no node has.
  auto same_type = [&](const std::string& type) { return type.empty() || to_lower(type) == to_lower(p.gpu_type); };
  const auto gpus = [](std::string field) { return Mismatch{Refusal::gpus, std::move(field)}; };
  if (u.clears_tres_per_node) return gpus("TresPerNode= (no GPUs)");
  if (!u.tres_per_node.empty()) {
    const std::optional<GpuTres> g = parse_gpu_tres(u.tres_per_node, "TresPerNode");
    if (!g || g->count != p.gpus_per_node || !same_type(g->type)) return gpus(fmt::format("TresPerNode={}", shown(u.tres_per_node)));
  }
  if (const std::optional<GpuTres> g = parse_gpu_tres(u.tres_per_job, "TresPerJob");
      g && (g->count != p.gpus() || !same_type(g->type)))
    return gpus(fmt::format("TresPerJob={}", shown(u.tres_per_job)));
  if (parse_gpu_tres(u.tres_per_task, "TresPerTask")) return gpus(fmt::format("TresPerTask={}", shown(u.tres_per_task)));
  if (parse_gpu_tres(u.tres_per_socket, "TresPerSocket")) return gpus(fmt::format("TresPerSocket={}", shown(u.tres_per_socket)));
  if (u.min_nodes && static_cast<int>(*u.min_nodes) != p.nodes)
    return Mismatch{Refusal::nodes, fmt::format("NumNodes={}", *u.min_nodes)};
  if (u.max_nodes && static_cast<int>(*u.max_nodes) != p.nodes)
    return Mismatch{Refusal::nodes, fmt::format("MaxNodes={}", *u.max_nodes)};
  if (u.tasks && static_cast<int>(*u.tasks) != p.gpus())
    return Mismatch{Refusal::tasks, fmt::format("NumTasks={}", *u.tasks)};
  if (u.tasks_per_node && static_cast<int>(*u.tasks_per_node) != p.gpus_per_node)
    return Mismatch{Refusal::tasks, fmt::format("NTasksPerNode={}", *u.tasks_per_node)};
  if (u.cpus_per_task && static_cast<int>(*u.cpus_per_task) != p.cpus_per_gpu)
    return Mismatch{Refusal::cpus, fmt::format("CPUsPerTask={}", *u.cpus_per_task)};
  if (u.min_cpus_per_node && static_cast<int>(*u.min_cpus_per_node) < p.cpus_per_gpu * p.gpus_per_node)
    return Mismatch{Refusal::cpus, fmt::format("MinCPUsNode={}", *u.min_cpus_per_node)};
  if (!u.cpus_per_tres.empty()) return Mismatch{Refusal::cpus, fmt::format("CpusPerTres={}", shown(u.cpus_per_tres))};
  return std::nullopt;
}

// Why the partitions `to` of an update cannot take a Morph job, or empty. morphd keeps
// the job within its record's GPU types and max_nodes=, as sizing left them for the
// partitions it was submitted to: the new ones must offer each of those types (some
// node of it, as at submission) and allow as many nodes.
std::string partition_mismatch(const std::string& to, const JobRecord& r, const MorphConfig& config,
                               const std::vector<SlurmPartition>& partitions) {
  const std::optional<PartitionBounds> b = partition_bounds(partitions, to);
  if (!b) return {};  // a partition slurm.conf did not have: Slurm checks that it exists
  const std::vector<std::string> listed = gpu_types_on(config.cluster), offered = gpu_types_on(config.cluster, &*b);
  for (const std::string& named : r.request.gpu_types.empty() ? listed : r.request.gpu_types) {
    const GpuType* gpu = config.cluster.find_gpu_type(named);  // older records kept the user's spelling
    const std::string& type = gpu != nullptr ? gpu->name : named;
    if (std::find(listed.begin(), listed.end(), type) != listed.end() &&
        std::find(offered.begin(), offered.end(), type) == offered.end())
      return fmt::format("partition {} has no {} node, a GPU type the job's plans may use", b->names, type);
  }
  if (b->max_nodes > 0 && (r.max_nodes == 0 || r.max_nodes > b->max_nodes))
    return fmt::format("partition {} allows {} node{} per job, the job's plans up to {}", b->names, b->max_nodes,
                       b->max_nodes == 1 ? "" : "s", r.max_nodes == 0 ? std::string("any number") : std::to_string(r.max_nodes));
  return {};
}

// `field` as the job_desc integer it goes to, or morph::Error.
void check_field(const char* field, long long value, std::uint32_t max) {
  if (value < 1 || static_cast<unsigned long long>(value) > max)
    throw Error(fmt::format("{}={} does not fit Slurm's job description (1 to {})", field, value, max));
}

}  // namespace

void SlurmRequest::validate() const {
  check_field("nodes", nodes, kMaxField32);
  check_field("tasks", tasks, kMaxField32);
  check_field("tasks_per_node", tasks_per_node, kMaxField16);
  check_field("cpus_per_task", cpus_per_task, kMaxField16);
  check_field("min_cpus_per_node", min_cpus_per_node, kMaxField16);
  if (static_cast<long long>(tasks) * cpus_per_task > kMaxField32)
    throw Error(fmt::format("{} tasks x {} CPUs do not fit Slurm's job description", tasks, cpus_per_task));
}

std::uint32_t SlurmRequest::min_cpus() const {
  return static_cast<std::uint32_t>(static_cast<std::uint64_t>(tasks) * static_cast<std::uint64_t>(cpus_per_task));
}

void SubmitHandler::load(const std::string& conf_path, const std::string& default_catalog,
                         const std::string& slurm_conf_path) {
  partitions_.clear();
  partitions_error_.clear();
  try {
    if (!slurm_conf_path.empty()) partitions_ = read_slurm_partitions(slurm_conf_path);
  } catch (const std::exception& e) {
    partitions_error_ = e.what();
  }
  try {
    config_ = load_morph_conf(conf_path);
    catalog_ = Catalog::load_file(config_->model_catalog.empty() ? default_catalog : config_->model_catalog);
    perf_ = PerfStore::load_dir(config_->perf_model_dir);
    if (config_->cluster.nodes().empty())
      throw Error(fmt::format("{}: no NodeName records: Morph cannot size jobs without the cluster's nodes", conf_path));
    load_error_.clear();
  } catch (const std::exception& e) {
    config_.reset();
    catalog_.reset();
    load_error_ = e.what();
  }
  decisions_.clear();
  decision_key_bytes_ = 0;
}

double SubmitHandler::host_bytes_per_node(const JobRecord& r) const {
  const ModelSpec model = catalog_->resolve(r.request.model, "model");
  const MemoryEstimate e = estimate_memory(model, r.request.seq_len > 0 ? r.request.seq_len : model.seq_len,
                                           r.current.plan, config_->memory);
  return e.host_bytes_per_gpu * r.current.gpus_per_node;
}

// The job_desc fields of `r`; the record is written only when it reads back as itself
// (the limits of request/limits.h hold on both sides), so no task is ever handed a
// record it cannot parse.
SlurmRequest SubmitHandler::slurm_request(const JobRecord& r, double host_bytes, const JobResources& user,
                                          bool update) const {
  SlurmRequest s;
  const GpuRequest gpus = gpu_request(r);
  s.tres_per_node = tres_with_gpus(gpus.tres, r.other_gres);
  s.features = gpus.features;
  if (!update) {
    s.tres_per_job = without_gpus(user.tres_per_job);
    s.tres_per_task = without_gpus(user.tres_per_task);
    s.tres_per_socket = without_gpus(user.tres_per_socket);
  }
  s.nodes = r.current.nodes;
  s.tasks_per_node = r.current.gpus_per_node;  // one task per GPU
  s.tasks = r.current.gpus();
  s.cpus_per_task = r.current.cpus_per_gpu;
  // The user's --mincpus and --mem are floors, kept in the record for every later plan.
  s.min_cpus_per_node = std::max(r.min_cpus_per_node, s.tasks_per_node * s.cpus_per_task);
  s.memory_mb_per_node = memory_mb_per_node(r, host_bytes);
  s.admin_comment = to_admin_comment(r);
  try {
    if (to_admin_comment(parse_admin_comment(s.admin_comment)) != s.admin_comment)
      throw Error("it reads back as another record");
  } catch (const Error& e) {
    throw Error(fmt::format("the plan's record cannot be read back by the job's tasks ({}); refused rather than "
                            "lost: {}",
                            e.what(), quote(s.admin_comment)));
  }
  s.validate();
  return s;
}

// How the job asks Slurm for its GPUs (morph.conf GpuTypeBy): a typed GRES and the
// user's constraint left as it is, or an untyped GRES and the type as a node feature,
// ANDed with the user's constraint (kept in the record); a heterogeneous placement is a
// count constraint per type, which only the feature form can reach.
SubmitHandler::GpuRequest SubmitHandler::gpu_request(const JobRecord& r) const {
  const Placement& p = r.current;
  if (!config_ || !config_->gpu_type_by_feature) {
    if (p.heterogeneous())
      throw Error(fmt::format("a heterogeneous placement ({}) needs GpuTypeBy=feature in morph.conf: Slurm 22.05 "
                              "does not turn a typed GPU request into an untyped one",
                              describe(p)));
    return {gpu_tres(p.gpu_type, p.gpus_per_node), std::nullopt};
  }
  GpuRequest g{gpu_tres("", p.gpus_per_node), {}};
  if (p.heterogeneous()) {
    if (!r.constraint.empty())
      throw Error(fmt::format("a heterogeneous placement's node counts per type cannot be combined with the job's "
                              "--constraint {}",
                              quote(r.constraint)));
    g.features = group_constraint(p.groups, config_->cluster, p.gpus_per_node, cpus_per_node(p));
    return g;
  }
  // Any node type that holds the placement's GPUs and CPUs per node: "a8" or "a8|a16".
  std::vector<std::string> features;
  const Cluster& cluster = config_->cluster;
  for (const NodeType* node : listed_node_types_holding(cluster, p.gpu_type, p.gpus_per_node, cpus_per_node(p)))
    if (std::find(features.begin(), features.end(), node->features.front()) == features.end())
      features.push_back(node->features.front());  // every node type has one (checked at load)
  if (features.empty())
    throw Error(fmt::format("no node type of morph.conf with nodes holds {} {} GPUs and {} CPUs per node",
                            p.gpus_per_node, p.gpu_type, cpus_per_node(p)));
  std::string any = features.front();
  for (std::size_t i = 1; i < features.size(); ++i) any += "|" + features[i];
  if (r.constraint.empty()) g.features = any;
  else if (features.size() == 1) g.features = fmt::format("({})&{}", r.constraint, any);
  else g.features = fmt::format("({})&({})", r.constraint, any);
  return g;
}

// The record of an update, with its GPU type in canonical form and its counts checked
// against morph.conf.
JobRecord SubmitHandler::checked_record(const std::string& admin_comment) const {
  JobRecord r = parse_admin_comment(admin_comment);
  if (!config_) return r;
  const Cluster& cluster = config_->cluster;
  // `nodes` nodes of `gpus_per_node` GPUs of `type` each, made canonical: nodes of the
  // node types that hold them and their CPUs (any of them, as the planner plans on each).
  auto check_type = [&](std::string& type, int nodes, const Placement& p, const std::string& prefix) {
    const GpuType* gpu = cluster.find_gpu_type(type);
    if (gpu == nullptr) throw Error(fmt::format("AdminComment: {}type={} is not a GpuType of morph.conf", prefix, type));
    type = gpu->name;
    const std::vector<const NodeType*> with_gpus = listed_node_types_holding(cluster, gpu->name, p.gpus_per_node, 0);
    if (with_gpus.empty())
      throw Error(
          fmt::format("AdminComment: no node of morph.conf holds {} GPUs of type {}", p.gpus_per_node, gpu->name));
    const NodeType* most_cpus = *std::max_element(
        with_gpus.begin(), with_gpus.end(), [](const NodeType* a, const NodeType* b) { return a->cpus < b->cpus; });
    if (cpus_per_node(p) > most_cpus->cpus)
      throw Error(fmt::format("AdminComment: {}cpus_per_gpu={} x {} GPUs is more than the {} CPUs of a {} node", prefix,
                              p.cpus_per_gpu, p.gpus_per_node, most_cpus->cpus, most_cpus->name));
    // A group's count constraint names one node type (group_constraint): its nodes are
    // of one; a job of one GPU type may take nodes of any that hold them.
    int listed = 0;
    for (const NodeType* node : with_gpus)
      if (node->cpus >= cpus_per_node(p))
        listed = p.heterogeneous() ? std::max(listed, cluster.nodes_of(*node)) : listed + cluster.nodes_of(*node);
    if (nodes > listed)
      throw Error(fmt::format("AdminComment: {}nodes={} but morph.conf lists {} nodes with {} GPUs of type {} and {} "
                              "CPUs",
                              prefix, nodes, listed, p.gpus_per_node, gpu->name, cpus_per_node(p)));
  };
  auto canonical = [&](Placement& p, const char* prefix) {
    if (!p.heterogeneous()) return check_type(p.gpu_type, p.nodes, p, prefix);
    for (GpuGroup& g : p.groups) check_type(g.gpu_type, g.nodes, p, fmt::format("{}groups {} ", prefix, g.gpu_type));
    for (std::size_t i = 0; i < p.groups.size(); ++i)
      for (std::size_t j = 0; j < i; ++j)
        if (p.groups[i].gpu_type == p.groups[j].gpu_type)
          throw Error(fmt::format("AdminComment: {}groups: GPU type {} in two groups", prefix, p.groups[i].gpu_type));
  };
  canonical(r.current, "");
  if (r.baseline) canonical(*r.baseline, "base_");
  return r;
}

SubmitOutput SubmitHandler::submit(const SubmitInput& in) {
  SubmitOutput out;
  MorphRequest request;
  try {
    if (!from_job_env(in.spank_env, request)) return out;  // not a Morph job: untouched
  } catch (const Error& e) {
    out.verdict = Verdict::reject;
    out.message = fmt::format("morph: {}", e.what());
    return out;
  }
  out.verdict = Verdict::reject;
  if (in.het_job_component) {  // slurmctld sizes each component apart: each would be sized as a whole job
    out.message = "morph: Morph sizes whole jobs: a heterogeneous job (sbatch ... : ...) cannot carry --morph-* "
                  "options; submit it as one job";
    return out;
  }
  if (!config_) {
    out.message = fmt::format("morph: Morph is not configured on this cluster ({}); ask your administrator", load_error_);
    return out;
  }
  try {
    check_text_sizes(in.user);
    const std::optional<UserGpuRequest> user = user_gpus(in.user);
    if (!request.baseline_plan.empty() && !user)  // the plan of the user's own GPUs, the SLA baseline
      throw Error(fmt::format("--morph-plan={} needs --gres or --gpus: it is the plan of the job's own GPU request "
                              "(its SLA baseline), not a plan for Morph to choose",
                              request.baseline_plan));
    SubmitConstraints constraints = user_constraints(in.user, user.has_value());
    if (!partitions_.empty()) constraints.partitions = partition_bounds(partitions_, in.user.partition);
    MorphRequest for_plan = request;
    for_plan.iterations = 0;  // a declared length does not change the plan: one cache entry
    const std::string key = cache_key(for_plan, in.user);
    auto it = decisions_.find(key);
    if (it == decisions_.end()) {
      if (decisions_.size() >= kMaxCachedDecisions || decision_key_bytes_ + key.size() > kMaxCachedKeyBytes) {
        decisions_.clear();
        decision_key_bytes_ = 0;
      }
      decision_key_bytes_ += key.size();
      SubmitDecision d = decide_submission(SubmitContext{*config_, *catalog_, perf_}, for_plan, user, constraints);
      d.record.other_gres = without_gpus(in.user.tres_per_node);
      if (config_->gpu_type_by_feature) d.record.constraint = in.user.features;
      it = decisions_.emplace(key, std::move(d)).first;
    }
    const SubmitDecision& d = it->second;
    if (!d.accepted) {
      out.message = fmt::format("morph: {}: {}", describe(request), d.reason);
      return out;
    }
    JobRecord record = d.record;
    record.request.iterations = request.iterations;
    record.min_cpus_per_node = static_cast<int>(in.user.min_cpus_per_node.value_or(0));  // bounded by sizing
    record.min_nodes = constraints.node_floor();  // -N without a GPU request, and the partitions'
    record.max_nodes = constraints.node_limit();  // MinNodes and MaxNodes: morphd keeps every plan within
    record.memory_mb_per_node = constraints.min_memory_mb_per_node;  // bounded by sizing
    out.request = slurm_request(record, d.host_memory_bytes_per_node, in.user, false);
    out.verdict = Verdict::accept;
    out.message = fmt::format("morph: {}", d.message);
  } catch (const std::exception& e) {  // morph::Error names what is wrong; anything else still reaches the user
    out.message = fmt::format("morph: {}", e.what());
  }
  return out;
}

ModifyOutput SubmitHandler::modify(const ModifyInput& in) const {
  ModifyOutput out;
  const bool has_record = in.current_admin_comment && is_job_record(*in.current_admin_comment);
  const bool sets_record = in.admin_comment && is_job_record(*in.admin_comment);
  if (in.admin_comment && !sets_record && has_record) {
    out.verdict = Verdict::reject;
    out.message = "morph: the job's AdminComment holds its Morph plan; a comment that is not a morph:v1 record would "
                  "lose it (use Comment= for notes)";
    return out;
  }
  if (!sets_record && !has_record) return out;  // not a Morph job
  out.verdict = Verdict::reject;
  try {
    check_text_sizes(in.update);
    JobRecord r;
    if (sets_record) {
      r = checked_record(*in.admin_comment);
    } else {
      try {
        r = parse_admin_comment(*in.current_admin_comment);
      } catch (const Error&) {
        out.verdict = Verdict::pass_through;  // its tasks refuse the record and say why
        return out;
      }
    }
    std::optional<Mismatch> mismatch = update_mismatch(in.update, r.current);
    // Under GpuTypeBy=feature the GPU type is a node feature: Features names the plan's.
    if (!mismatch && !sets_record && (!in.update.features.empty() || in.update.clears_features) && config_ &&
        config_->gpu_type_by_feature && gpu_request(r).features != in.update.features)
      mismatch = Mismatch{Refusal::features, fmt::format("Features={}", shown(in.update.features))};
    if (mismatch) {
      out.refusal = mismatch->kind;
      throw Error(fmt::format("{} does not match the job's plan ({}); a Morph job's GPUs, nodes, tasks, CPUs and "
                              "GPU type follow its plan, which root or SlurmUser change with AdminComment",
                              mismatch->field, planned(r.current)));
    }
    if (!in.update.partition.empty() && config_)
      if (const std::string why = partition_mismatch(in.update.partition, r, *config_, partitions_); !why.empty()) {
        out.refusal = Refusal::partition;
        throw Error(fmt::format("Partition={}: {}; submit the job again with -p {}", in.update.partition, why,
                                in.update.partition));
      }
    if (!sets_record) {
      // Host memory follows the plan: below what it needs per node (ZeRO-Offload's
      // states), the job would be OOM-killed under cgroup limits when it starts.
      out.refusal = Refusal::memory;
      if (in.update.memory_per_cpu || names_gpus(in.update.mem_per_tres))
        throw Error(fmt::format("{}: Morph sizes a job's host memory per node; use MinMemoryNode",
                                in.update.memory_per_cpu ? "MinMemoryCPU" : "MinMemoryGPU"));
      if (in.update.memory_mb_per_node == 0u) throw Error(all_memory_refused("MinMemoryNode"));
      if (in.update.memory_mb_per_node && config_ && catalog_)
        if (const std::uint64_t need = memory_mb_per_node(JobRecord{}, host_bytes_per_node(r));
            *in.update.memory_mb_per_node < need)
          throw Error(fmt::format("MinMemoryNode={}M is below the {}M per node the job's plan ({}) needs",
                                  *in.update.memory_mb_per_node, need, planned(r.current)));
      out.refusal = Refusal::other;
      out.verdict = Verdict::pass_through;
      return out;
    }
    out.request = slurm_request(r, config_ && catalog_ ? host_bytes_per_node(r) : 0, JobResources{}, true);
    std::optional<JobRecord> old;
    if (has_record) {
      try {
        old = parse_admin_comment(*in.current_admin_comment);
      } catch (const Error&) {
        // The current record is unreadable: the new one sets the resources.
      }
    }
    if (old) {
      const Placement& was = old->current;
      const Placement& now = r.current;
      // An update that names the node count (morphd's, for a pending job) sets every
      // resource: a pending job's allocation is still to be made from its record.
      const bool names_nodes = in.update.min_nodes || in.update.max_nodes;
      out.record_only = !names_nodes && now.gpu_type == was.gpu_type && same_nodes(now.groups, was.groups) &&
                        now.gpus_per_node == was.gpus_per_node && now.cpus_per_gpu == was.cpus_per_gpu &&
                        now.nodes <= was.nodes && r.other_gres == old->other_gres && r.constraint == old->constraint &&
                        r.memory_mb_per_node == old->memory_mb_per_node &&
                        r.min_cpus_per_node == old->min_cpus_per_node;
      // A plan that needs more host memory per node than the job holds (ZeRO-Offload
      // on the same GPUs, or fewer replicas sharing the offloaded states) would be
      // killed under cgroup limits: the memory follows, which Slurm refuses for a
      // running job (it has to be requeued) and applies to a held one. What the job
      // holds is unknown when its record's model has left the catalog: it follows too.
      if (out.record_only && config_ && catalog_) {
        std::optional<std::uint64_t> held_mb;
        try {
          held_mb = memory_mb_per_node(*old, host_bytes_per_node(*old));
        } catch (const Error&) {  // its model, or the memory model, refuses it now
        }
        out.record_only = held_mb && out.request->memory_mb_per_node <= *held_mb;
      }
    }
    out.verdict = Verdict::accept;
  } catch (const std::exception& e) {
    out.message = fmt::format("morph: {}", e.what());
  }
  return out;
}

bool reload_due(std::time_t last_update, std::time_t loaded_with, std::time_t loaded_at, std::time_t now) {
  return last_update != loaded_with || (loaded_at == loaded_with && now > loaded_at);
}

bool takes_over(const SubmitHandler& fresh, const SubmitHandler& in_use, std::string* why_not) {
  if (!in_use.load_error().empty()) return true;
  const std::string& failed = !fresh.load_error().empty() ? fresh.load_error()
                              : in_use.partitions_error().empty() ? fresh.partitions_error()
                                                                  : std::string();
  if (failed.empty()) return true;
  *why_not = failed;
  return false;
}

}  // namespace morph::plugin
