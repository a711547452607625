// morph curve: resource-sensitivity curves (Morphling Fig. 6) on a cluster.
#include <iostream>
#include <map>

#include <fmt/format.h>

#include "libmorph/planner/sensitivity.h"
#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"
#include "tools/morph/commands.h"
#include "tools/morph/request_check.h"
#include "tools/morph/perf_source.h"
#include "tools/morph/plan_json.h"
#include "tools/morph/table.h"

namespace morph::cli {
namespace {

constexpr int kDefaultMaxGpus = 64;  // per GPU type, when the cluster file lists no nodes

struct CurveArgs {
  std::string model;
  std::int64_t batch = 0;
  std::int64_t seq = 0;
  std::string cluster;
  std::string gpu_type;
  int max_gpus = 0;
  std::string resource = "gpu";
  int gpus = 0;
  std::string perf_file;
};

void run_curve(Context& context, const CurveArgs& args) {
  context.resolve_paths();
  const MorphConfig cluster_config = load_morph_conf(args.cluster);
  const Cluster& cluster = cluster_config.cluster;
  Workload w;
  w.model = context.catalog().resolve(args.model, "--model");
  w.global_batch = args.batch;
  w.seq_len = args.seq > 0 ? args.seq : w.model.seq_len;
  PlanSearchOptions options;
  options.features = parse_plan_features(cluster_config.allowed_plans, "AllowedPlans");
  options.max_micro_batch_size = cluster_config.max_micro_batch_size;
  options.memory = cluster_config.memory;

  // GPUs of each node type the cluster has.
  std::map<std::string, int> capacity;
  for (const NodeRecord& n : cluster.nodes()) capacity[n.node_type] += cluster.find_node_type(n.node_type)->gpus;
  const GpuType* wanted = nullptr;
  if (!args.gpu_type.empty()) {
    wanted = cluster.find_gpu_type(args.gpu_type);
    if (wanted == nullptr) throw Error(fmt::format("--gpu-type: {} is not a GpuType of {}", quote(args.gpu_type), args.cluster));
  }
  if (cluster.node_types().empty()) throw Error(fmt::format("--cluster: {} defines no NodeType", args.cluster));
  std::vector<const NodeType*> node_types;
  for (const NodeType& n : cluster.node_types()) {
    if (!cluster.nodes().empty() && capacity[n.name] == 0) continue;
    if (wanted != nullptr && wanted->name != n.gpu) continue;
    node_types.push_back(&n);
  }
  if (node_types.empty())
    throw Error(fmt::format("--cluster: {} has no nodes with GPU type {}", args.cluster, wanted->name));

  nlohmann::json out = nlohmann::json::array();
  for (const NodeType* node : node_types) {
    const GpuType& gpu = cluster.gpu_of(*node);
    int max_gpus = cluster.nodes().empty() ? kDefaultMaxGpus : capacity[node->name];
    if (args.max_gpus > 0) max_gpus = std::min(max_gpus, args.max_gpus);
    // Without --perf, the configuration's efficiency (--config), not the cluster file's, as morph(1) says.
    const double efficiency = args.perf_file.empty() ? context.config().compute_efficiency : 0;
    const ResolvedPerf perf = resolve_perf(args.perf_file, w, gpu, efficiency, context.catalog());
    std::vector<CurvePoint> curve;
    if (args.resource == "gpu") {
      curve = gpu_curve(w, cluster, *node, max_gpus, perf.perf, options);
    } else {
      const int gpus = args.gpus > 0 ? args.gpus : node->gpus;
      if (gpus > max_gpus)
        throw Error(fmt::format("{}: {} is more than the {} GPUs of type {} available{}",
                                args.gpus > 0 ? "--gpus" : "--resource cpu", gpus, max_gpus, gpu.name,
                                args.gpus > 0 ? "" : fmt::format(" (a whole {} node; give --gpus)", node->name)));
      curve = cpu_curve(w, cluster, *node, gpus, std::max(1, node->cpus / node->gpus), perf.perf, options);
    }
    if (context.json) {
      nlohmann::json points = nlohmann::json::array();
      for (const CurvePoint& p : curve) {
        nlohmann::json pj{{"gpus", p.gpus}, {"cpus", p.cpus}, {"allocation", p.allocation},
                          {"throughput_samples_per_s", p.throughput}, {"envelope_samples_per_s", p.envelope}};
        if (p.feasible) pj["best"] = to_json(p.best);
        points.push_back(pj);
      }
      out.push_back({{"node_type", node->name}, {"gpu", gpu.name}, {"resource", args.resource},
                     {"model", w.model.name}, {"global_batch", w.global_batch}, {"points", points}});
      continue;
    }
    std::cout << fmt::format("{} with global batch {} on {} nodes ({}, {} GPUs each): {} curve\n{}\n",
                             w.model.name, w.global_batch, node->name, gpu.name, node->gpus, args.resource,
                             perf.description);
    Table table({args.resource == "gpu" ? "gpus" : "cpus", "allocation", "best plan", "iteration", "samples/s", "envelope"});
    for (const CurvePoint& p : curve)
      table.add({std::to_string(args.resource == "gpu" ? p.gpus : p.cpus), p.allocation,
                 p.feasible ? to_string(p.best.plan) : "none fits", p.feasible ? millis(p.best.time.iter_ms) : "-",
                 fmt::format("{:.2f}", p.throughput), fmt::format("{:.2f}", p.envelope)});
    table.print(std::cout);
    std::cout << '\n';
  }
  if (context.json) std::cout << out.dump(2) << '\n';
}

}  // namespace

void add_curve_command(command_line::Command& app, Context& context) {
  auto args = std::make_shared<CurveArgs>();
  command_line::Command cmd = app.subcommand("curve", "print a job's resource-sensitivity curve on a cluster");
  cmd.option("--model", args->model, "catalog name or inline spec").required();
  cmd.option("--batch", args->batch, "global batch size").required().check(request_check("batch"));
  cmd.option("--cluster", args->cluster, "morph.conf describing the cluster (GpuType, NodeType, NodeName)").required();
  cmd.option("--seq", args->seq, "sequence length").check(request_check("seq"));
  cmd.option("--gpu-type", args->gpu_type, "only this GPU type");
  cmd.option("--max-gpus", args->max_gpus, "largest GPU count").range(1, 1 << 16);
  cmd.option("--resource", args->resource, "gpu (default) or cpu").one_of({"gpu", "cpu"});
  cmd.option("--gpus", args->gpus, "GPU count of the CPU curve (default: one node)").range(1, 1 << 16);
  cmd.option("--perf", args->perf_file, "performance model saved by morph fit --save");
  cmd.on_run([&context, args] { run_curve(context, *args); });
}

}  // namespace morph::cli
