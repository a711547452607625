#include "plugins/job_submit/submit_handler.h"

#include <cmath>

#include <fmt/format.h>

#include "libmorph/memory/memory_model.h"
#include "libmorph/request/gpu_tres.h"
#include "libmorph/util/error.h"

namespace morph::plugin {
namespace {

constexpr std::size_t kMaxCachedDecisions = 1024;

std::string cache_key(const MorphRequest& r, const std::optional<UserGpuRequest>& user) {
  std::string key;
  for (const auto& [name, value] : to_job_env(r)) key += name + "=" + value + "\n";
  if (user) key += fmt::format("user={}:{}x{}", user->per_node.type, user->nodes, user->per_node.count);
  return key;
}

// The user's own GPUs: --gres/--gpus-per-node (per node) or --gpus (per job, spread
// evenly over the nodes).
std::optional<UserGpuRequest> user_gpus(const SubmitInput& in) {
  const int nodes = in.min_nodes > 0 ? static_cast<int>(in.min_nodes) : 1;
  if (auto per_node = parse_gpu_tres(in.tres_per_node, "--gres")) return UserGpuRequest{*per_node, nodes};
  if (auto per_job = parse_gpu_tres(in.tres_per_job, "--gpus")) {
    if (per_job->count % nodes != 0)
      throw Error(fmt::format("--gpus: {} GPUs do not spread evenly over {} nodes", per_job->count, nodes));
    per_job->count /= nodes;
    return UserGpuRequest{*per_job, nodes};
  }
  return std::nullopt;
}

}  // namespace

void SubmitHandler::load(const std::string& conf_path, const std::string& default_catalog) {
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
}

double SubmitHandler::host_bytes_per_node(const JobRecord& r) const {
  const ModelSpec model = catalog_->resolve(r.request.model, "model");
  const MemoryEstimate e = estimate_memory(model, r.request.seq_len > 0 ? r.request.seq_len : model.seq_len,
                                           r.current.plan, config_->memory);
  return e.host_bytes_per_gpu * r.current.gpus_per_node;
}

SlurmRequest SubmitHandler::slurm_request(const JobRecord& r, double host_bytes) const {
  SlurmRequest s;
  s.tres_per_node = gpu_tres(r.current.gpu_type, r.current.gpus_per_node);
  s.nodes = r.current.nodes;
  s.tasks_per_node = r.current.gpus_per_node;  // one task per GPU
  s.tasks = r.current.gpus();
  s.cpus_per_task = r.current.cpus_per_gpu;
  s.memory_mb_per_node = static_cast<std::uint64_t>(std::ceil(host_bytes / (1024.0 * 1024.0)));
  s.admin_comment = to_admin_comment(r);
  return s;
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
  if (!config_) {
    out.message = fmt::format("morph: Morph is not configured on this cluster ({}); ask your administrator", load_error_);
    return out;
  }
  try {
    const std::optional<UserGpuRequest> user = user_gpus(in);
    const std::string key = cache_key(request, user);
    auto it = decisions_.find(key);
    if (it == decisions_.end()) {
      if (decisions_.size() >= kMaxCachedDecisions) decisions_.clear();
      it = decisions_.emplace(key, decide_submission(SubmitContext{*config_, *catalog_, perf_}, request, user)).first;
    }
    const SubmitDecision& d = it->second;
    if (!d.accepted) {
      out.message = fmt::format("morph: {}: {}", describe(request), d.reason);
      return out;
    }
    out.verdict = Verdict::accept;
    out.message = fmt::format("morph: {}", d.message);
    out.request = slurm_request(d.record, d.host_memory_bytes_per_node);
  } catch (const Error& e) {
    out.message = fmt::format("morph: {}", e.what());
  }
  return out;
}

ModifyOutput SubmitHandler::modify(const ModifyInput& in) const {
  ModifyOutput out;
  if (!in.admin_comment || !is_job_record(*in.admin_comment)) return out;
  out.verdict = Verdict::reject;
  try {
    const JobRecord r = parse_admin_comment(*in.admin_comment);
    if (config_) {
      const GpuType* gpu = config_->cluster.find_gpu_type(r.current.gpu_type);
      if (gpu == nullptr) throw Error(fmt::format("AdminComment: type={} is not a GpuType of morph.conf", r.current.gpu_type));
      const NodeType* node = config_->cluster.node_type_for_gpu(gpu->name);
      if (node == nullptr || r.current.gpus_per_node > node->gpus)
        throw Error(fmt::format("AdminComment: no node type holds {} GPUs of type {}", r.current.gpus_per_node, gpu->name));
    }
    if (auto asked = parse_gpu_tres(in.tres_per_node, "TresPerNode")) {
      if (asked->count != r.current.gpus_per_node ||
          (!asked->type.empty() && asked->type != r.current.gpu_type))
        throw Error(fmt::format("the update asks for {} but the AdminComment plan runs on {} x {} {} GPUs",
                                in.tres_per_node, r.current.nodes, r.current.gpus_per_node, r.current.gpu_type));
    }
    if (in.min_nodes > 0 && static_cast<int>(in.min_nodes) != r.current.nodes)
      throw Error(fmt::format("the update asks for {} nodes but the AdminComment plan runs on {}", in.min_nodes,
                              r.current.nodes));
    out.verdict = Verdict::accept;
    out.request = slurm_request(r, config_ && catalog_ ? host_bytes_per_node(r) : 0);
  } catch (const Error& e) {
    out.message = fmt::format("morph: {}", e.what());
  }
  return out;
}

}  // namespace morph::plugin
