#include "libmorph/artifact/artifact_rows.h"

#include <algorithm>
#include <cctype>
#include <cstdint>

#include <fmt/format.h>

#include "libmorph/util/csv.h"
#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"

namespace morph {
namespace {

const NodeType& artifact_node(const ArtifactSpec& spec, const Cluster& cluster) {
  const NodeType* node = cluster.find_node_type(spec.node_type);
  if (node == nullptr)
    throw Error(fmt::format("the configuration has no NodeType {} for the artifact's servers", quote(spec.node_type)));
  return *node;
}

Allocation placement_allocation(const std::string& placement, const NodeType& node, const Cluster& cluster,
                                int cpus_per_gpu, const std::string& where) {
  if (placement.empty() || placement.size() > 64)
    throw Error(fmt::format("{}: placement {} is not a list of per-node GPU counts", where, quote(placement)));
  Allocation a;
  for (char c : placement) {
    if (!std::isdigit(static_cast<unsigned char>(c)) || c == '0' || c - '0' > node.gpus)
      throw Error(fmt::format("{}: placement {}: each digit is a node's GPU count 1-{}", where, quote(placement),
                              node.gpus));
    a.nodes.push_back(uniform_allocation(cluster, node, 1, c - '0', cpus_per_gpu).nodes.front());
  }
  return a;
}

}  // namespace

ExecutionPlan artifact_plan(const std::string& exec_plan, int gpus, std::int64_t global_batch,
                            const ArtifactWorkload& w, const std::string& where) {
  ExecutionPlan p;
  p.dp = gpus;
  if (const std::size_t t = exec_plan.find('t'), d = exec_plan.find('d');
      exec_plan.starts_with('p') && t != std::string::npos && d != std::string::npos && t < d) {
    // "p<PP>t<TP>d<DP>": each size at most the placement's GPUs, so their product cannot
    // overflow before it is compared with them.
    auto size = [&](std::size_t from, std::size_t to, const char* name) {
      return static_cast<int>(parse_int(std::string_view(exec_plan).substr(from, to - from),
                                        fmt::format("{}: exec_plan {}: {}", where, exec_plan, name), 1,
                                        std::max(gpus, 1)));
    };
    p.pp = size(1, t, "PP");
    p.tp = size(t + 1, d, "TP");
    p.dp = size(d + 1, exec_plan.size(), "DP");
    if (std::int64_t{p.pp} * p.tp * p.dp != gpus)
      throw Error(fmt::format("{}: exec_plan {} does not use the placement's {} GPUs", where, exec_plan, gpus));
  } else if (exec_plan.size() == 3 && std::isdigit(static_cast<unsigned char>(exec_plan[0])) &&
      std::isdigit(static_cast<unsigned char>(exec_plan[1])) && std::isdigit(static_cast<unsigned char>(exec_plan[2]))) {
    p.pp = exec_plan[0] - '0';
    p.tp = exec_plan[1] - '0';
    p.dp = exec_plan[2] - '0';
    if (p.pp < 1 || p.tp < 1 || p.dp < 1 || p.gpus() != gpus)
      throw Error(fmt::format("{}: exec_plan {} (PP{} TP{} DP{}) does not use the placement's {} GPUs", where,
                              exec_plan, p.pp, p.tp, p.dp, gpus));
  } else {
    for (std::string_view part : split(exec_plan, '+')) {
      if (part == "ga") {
      } else if (part == "gc") {
        p.checkpointing = true;
      } else if (part == "zero-dp") {
        p.zero_stage = 2;
      } else if (part == "zero-offload") {
        p.zero_stage = 2;
        p.offload = true;
      } else {
        throw Error(fmt::format("{}: unknown exec_plan {}", where, quote(exec_plan)));
      }
    }
  }
  // Samples per replica and iteration, cut into micro-batches of the workload's size.
  if (global_batch % p.dp != 0) return p;  // plan_violation() reports the indivisible batch
  const std::int64_t per_replica = global_batch / p.dp;
  const std::int64_t mbs = std::min<std::int64_t>(w.micro_batch, per_replica);
  if (per_replica % mbs != 0)
    throw Error(fmt::format("{}: {} samples per replica do not split into micro-batches of {}", where,
                            per_replica, mbs));
  p.micro_batch_size = static_cast<int>(mbs);
  const int steps = static_cast<int>(per_replica / mbs);
  const bool pipelined = p.pp > 1 && w.pipeline == PipelineSchedule::one_f_one_b;
  p.micro_batches = pipelined ? steps : 1;
  p.ga_steps = pipelined ? 1 : steps;
  return p;
}

namespace {

// A part of the iteration that a profile may leave out (absent column or empty cell): 0.
double optional_part(const CsvTable& data, std::size_t row, std::string_view column) {
  if (!data.has_column(column) || data.text(row, column).empty()) return 0;
  return data.number(row, column, 0, 1e9);
}

}  // namespace

std::string artifact_exec_plan(const ExecutionPlan& plan) {
  const std::string gc = plan.checkpointing ? "+gc" : "";
  if (plan.tp > 1 || plan.pp > 1) {
    if (plan.pp <= 9 && plan.tp <= 9 && plan.dp <= 9) return fmt::format("{}{}{}", plan.pp, plan.tp, plan.dp);
    return fmt::format("p{}t{}d{}", plan.pp, plan.tp, plan.dp);
  }
  if (plan.offload) return "zero-offload" + gc;
  return (plan.zero_stage > 0 ? "zero-dp" : "ga") + gc;
}

std::vector<ArtifactRow> read_profile(const std::string& dir, const ArtifactWorkload& w, const ArtifactSpec& spec,
                                      const Cluster& cluster) {
  const CsvTable config = CsvTable::read_file(dir + "/config.csv");
  const CsvTable data = CsvTable::read_file(dir + "/data.csv");
  if (config.rows() != data.rows())
    throw Error(fmt::format("{}: {} rows, but {} has {} (the two files match line by line)", config.source(),
                            config.rows(), data.source(), data.rows()));
  if (config.rows() == 0) throw Error(fmt::format("{}: no profiled runs", config.source()));
  std::vector<ArtifactRow> rows;
  for (std::size_t i = 0; i < config.rows(); ++i) {
    ArtifactRow r;
    r.source = config.where(i);
    r.node_type = config.has_column("node_type") ? std::string(config.text(i, "node_type")) : spec.node_type;
    const NodeType* found = cluster.find_node_type(r.node_type);
    if (found == nullptr)
      throw Error(fmt::format("{}: the configuration has no NodeType {}", r.source, quote(r.node_type)));
    const NodeType& node = *found;
    // Up to what morph-profile job profiles (--nodes 4096), on nodes of any GPU count.
    const int nodes = static_cast<int>(config.integer(i, "nodes", 1, kMaxProfileNodes));
    const int gpus = static_cast<int>(config.integer(i, "gpus", 1, std::int64_t{kMaxProfileNodes} * node.gpus));
    if (gpus % nodes != 0 || gpus / nodes > node.gpus)
      throw Error(fmt::format("{}: {} GPUs do not spread evenly over {} nodes of {}", r.source, gpus, nodes, node.gpus));
    const std::int64_t zero_type = config.integer(i, "zero_type", 0, 2);
    const bool model_parallel = config.integer(i, "is_tp", 0, 1) != 0 || config.integer(i, "is_pp", 0, 1) != 0;
    if (config.has_column("exec_plan") && !config.text(i, "exec_plan").empty()) {
      r.exec_plan = std::string(config.text(i, "exec_plan"));
    } else if (model_parallel) {
      throw Error(fmt::format("{}: a TP/PP profile run needs its sizes in an exec_plan column (PP,TP,DP digits)",
                              r.source));
    } else {
      r.exec_plan = zero_type == 0 ? "ga" : zero_type == 1 ? "zero-offload" : "zero-dp";
    }
    // The traces' digit per node where it fits (how the rows are named), else NODESxGPUS.
    const int per_node = gpus / nodes;
    r.placement = per_node <= 9 && nodes <= 64 ? std::string(static_cast<std::size_t>(nodes), static_cast<char>('0' + per_node))
                                               : fmt::format("{}x{}", nodes, per_node);
    const int cpus = static_cast<int>(config.integer(i, "num_cpu_threads", 1, 1024));
    r.allocation = uniform_allocation(cluster, node, nodes, per_node, cpus);
    r.plan = artifact_plan(r.exec_plan, gpus, w.profile_global_batch, w, r.source);
    r.profile_params = config.number(i, "parameter_size", 1e-3, 1e12) * 1024 * 1024;  // millions of 2^20
    r.forward_ms = optional_part(data, i, "forward_time");
    r.backward_sync_ms = optional_part(data, i, "Tcc");
    r.optimizer_ms = optional_part(data, i, "Topt");
    r.iter_ms = data.number(i, "iter_time", 1e-6, 1e9);
    rows.push_back(std::move(r));
  }
  return rows;
}

std::vector<ArtifactRow> read_trace(const std::string& file, const ArtifactWorkload& w, const ArtifactSpec& spec,
                                    const Cluster& cluster) {
  const NodeType& node = artifact_node(spec, cluster);
  const CsvTable table = CsvTable::read_file(file);
  const bool has_cpus = table.has_column("cpu_threads");
  std::vector<ArtifactRow> rows;
  for (std::size_t i = 0; i < table.rows(); ++i) {
    ArtifactRow r;
    r.source = table.where(i);
    r.exec_plan = std::string(table.text(i, "exec_plan"));
    r.placement = std::string(table.text(i, "placement"));
    const int cpus = has_cpus ? static_cast<int>(table.integer(i, "cpu_threads", 1, 1024)) : spec.cpus_per_gpu;
    r.allocation = placement_allocation(r.placement, node, cluster, cpus, r.source);
    r.plan = artifact_plan(r.exec_plan, r.allocation.gpus(), w.global_batch, w, r.source);
    r.iter_ms = table.number(i, "iter_time", 0, 1e6) * 1e3;  // seconds in the traces
    rows.push_back(std::move(r));
  }
  return rows;
}

}  // namespace morph
