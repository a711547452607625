#include "libmorph/config/morph_conf.h"

#include <csignal>
#include <cstdlib>
#include <map>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "libmorph/plan/plan_features.h"
#include "libmorph/util/error.h"
#include "libmorph/util/host_port.h"
#include "libmorph/util/hostlist.h"
#include "libmorph/util/parse.h"
#include "libmorph/util/text_file.h"

namespace morph {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kGBps = 1e9;

// The Key=Value tokens of one record, consumed key by key; leftovers are unknown keys.
class Record {
 public:
  Record(std::string where, std::vector<std::pair<std::string, std::string>> tokens)
      : where_(std::move(where)) {
    for (auto& [key, value] : tokens) {
      const std::string k = to_lower(key);
      if (values_.count(k)) throw Error(fmt::format("{}: key {} given twice", where_, key));
      values_[k] = {key, value};
    }
  }

  std::optional<std::string> take(std::string_view key) {
    auto it = values_.find(to_lower(key));
    if (it == values_.end()) return std::nullopt;
    std::string value = it->second.second;
    values_.erase(it);
    if (value.empty()) throw Error(fmt::format("{}: {}= has an empty value", where_, key));
    return value;
  }
  std::string require(std::string_view key) {
    if (auto v = take(key)) return *v;
    throw Error(fmt::format("{}: missing {}=", where_, key));
  }
  double number(std::string_view key, double min, double max, std::optional<double> fallback = std::nullopt) {
    std::optional<std::string> v = take(key);
    if (!v) {
      if (fallback) return *fallback;
      throw Error(fmt::format("{}: missing {}=", where_, key));
    }
    return parse_double(*v, fmt::format("{}: {}", where_, key), min, max);
  }
  int integer(std::string_view key, int min, int max, std::optional<int> fallback = std::nullopt) {
    std::optional<std::string> v = take(key);
    if (!v) {
      if (fallback) return *fallback;
      throw Error(fmt::format("{}: missing {}=", where_, key));
    }
    return static_cast<int>(parse_int(*v, fmt::format("{}: {}", where_, key), min, max));
  }
  void finish(std::string_view expected) const {
    if (!values_.empty())
      throw Error(fmt::format("{}: unknown key {} (expected {})", where_, quote(values_.begin()->second.first),
                              expected));
  }
  const std::string& where() const { return where_; }

 private:
  std::string where_;
  std::map<std::string, std::pair<std::string, std::string>> values_;
};

GpuType parse_gpu_type(Record r, const std::string& name) {
  GpuType g;
  g.name = name;
  if (auto aliases = r.take("Aliases"))
    for (std::string_view a : split(*aliases, ',')) g.aliases.emplace_back(trim(a));
  g.memory_bytes = r.number("MemoryGiB", 1, 1e6) * kGiB;
  g.speed = r.number("Speed", 1e-3, 1e3);
  g.peak_tflops = r.number("PeakTflops", 1e-3, 1e6);
  const std::string link = to_lower(r.require("Link"));
  if (link == "nvlink") g.link = IntraLink::nvlink;
  else if (link == "pcie") g.link = IntraLink::pcie;
  else throw Error(fmt::format("{}: Link: {} is not nvlink or pcie", r.where(), quote(link)));
  g.link_bandwidth_Bps = r.number("LinkBandwidthGBps", 1e-3, 1e5) * kGBps;
  g.pcie_bandwidth_Bps = r.number("PcieBandwidthGBps", 1e-3, 1e5) * kGBps;
  if (auto bf16 = r.take("Bf16")) g.bf16 = parse_bool(*bf16, fmt::format("{}: Bf16", r.where()));
  r.finish("Aliases, MemoryGiB, Speed, PeakTflops, Link, LinkBandwidthGBps, PcieBandwidthGBps, Bf16");
  return g;
}

NodeType parse_node_type(Record r, const std::string& name, const Cluster& cluster) {
  NodeType n;
  n.name = name;
  n.gpu = r.require("Gpu");
  const GpuType* gpu = cluster.find_gpu_type(n.gpu);
  if (gpu == nullptr) throw Error(fmt::format("{}: Gpu={} is not a GpuType defined above", r.where(), quote(n.gpu)));
  n.gpus = r.integer("Gpus", 1, 1024);
  n.cpus = r.integer("Cpus", 1, 1 << 20);
  n.host_memory_bytes = r.number("MemoryGiB", 1, 1e9) * kGiB;
  n.network_bandwidth_Bps = r.number("NetworkBandwidthGBps", 1e-3, 1e6) * kGBps;
  n.nics = r.integer("Nics", 1, 1024, 1);
  n.host_bandwidth_Bps =
      r.number("HostBandwidthGBps", 1e-3, 1e6, n.gpus * gpu->pcie_bandwidth_Bps / kGBps) * kGBps;
  if (auto features = r.take("Features"))
    for (std::string_view f : split(*features, ',')) {
      if (!is_slurm_name(f))
        throw Error(fmt::format("{}: Features: {} in {} is not a Slurm feature name (letters, digits, '-', '_' or '.')",
                                r.where(), quote(f), quote(*features)));
      n.features.emplace_back(f);
    }
  r.finish("Gpu, Gpus, Cpus, MemoryGiB, NetworkBandwidthGBps, Nics, HostBandwidthGBps, Features");
  return n;
}

// MasterPorts=LOW-HIGH: room for one job's 8 concurrent steps at least.
launch::PortRange parse_port_range(const std::string& text, const std::string& what) {
  const std::size_t dash = text.find('-');
  if (dash == std::string::npos) throw Error(fmt::format("{}: {} is not LOW-HIGH", what, quote(text)));
  launch::PortRange range;
  range.low = static_cast<int>(parse_int(std::string_view(text).substr(0, dash), what, 1024, 65535));
  range.high = static_cast<int>(parse_int(std::string_view(text).substr(dash + 1), what, 1024, 65535));
  if (range.high < range.low) throw Error(fmt::format("{}: {}: HIGH is below LOW", what, quote(text)));
  if (range.high - range.low + 1 < 8)
    throw Error(fmt::format("{}: {} holds fewer than 8 ports, one per concurrent step of a job", what, quote(text)));
  return range;
}

void parse_globals(Record r, MorphConfig& c) {
  auto set_number = [&](std::string_view key, double& target, double min, double max, double scale = 1) {
    if (auto v = r.take(key)) target = parse_double(*v, fmt::format("{}: {}", r.where(), key), min, max) * scale;
  };
  set_number("GpuOverheadMiB", c.memory.gpu_overhead_bytes, 0, 1e7, 1024.0 * 1024.0);
  set_number("HostOverheadGiBPerGpu", c.memory.host_overhead_bytes_per_gpu, 0, 1e6, kGiB);
  set_number("ComputeEfficiency", c.compute_efficiency, 1e-3, 1);
  set_number("RestartPenaltySeconds", c.policy.restart_penalty_s, 0, 1e6);
  set_number("StartPenaltySeconds", c.policy.restart_costs.start_s, 0, 1e6);
  set_number("InPlacePenaltySeconds", c.policy.restart_costs.inplace_s, 0, 1e6);
  set_number("ShrinkPenaltySeconds", c.policy.restart_costs.shrink_s, 0, 1e6);
  set_number("RequeuePenaltySeconds", c.policy.restart_costs.requeue_s, 0, 1e6);
  set_number("SchedulingIntervalSeconds", c.policy.scheduling_interval_s, 1, 1e6);
  set_number("MinReconfigureGain", c.policy.min_reconfigure_gain, 0, 10);
  set_number("StarvationLimitSeconds", c.policy.starvation_limit_s, 0, 1e9);
  set_number("UnknownLengthPriorSeconds", c.policy.unknown_length_prior_s, 1, 1e9);
  set_number("RefitErrorThreshold", c.policy.refit_error_threshold, 0, 10);
  set_number("RefitPointMaxAgeDays", c.policy.refit_point_max_age_s, 0, 3650, 86400);
  set_number("PurgeJobsAfterDays", c.purge_jobs_after_s, 0, 36500, 86400);
  set_number("CheckpointTimeoutSeconds", c.checkpoint_timeout_s, 1, 1e6);
  set_number("DriverPollSeconds", c.driver_poll_s, 0.1, 3600);
  if (auto v = r.take("MaxGpusPerJob"))
    c.max_gpus_per_job = static_cast<int>(parse_int(*v, fmt::format("{}: MaxGpusPerJob", r.where()), 1, 1 << 16));
  if (auto v = r.take("AdaptiveEpochSteps"))
    c.policy.adaptive_epoch_steps =
        static_cast<int>(parse_int(*v, fmt::format("{}: AdaptiveEpochSteps", r.where()), 0, 1 << 16));
  if (auto v = r.take("ModelCatalog")) c.model_catalog = *v;
  if (auto v = r.take("PerfModelDir")) c.perf_model_dir = *v;
  if (auto v = r.take("StateDatabase")) c.state_database = *v;
  if (auto v = r.take("MorphdAddress")) {
    parse_host_port(*v, fmt::format("{}: MorphdAddress", r.where()));
    c.morphd_address = *v;
  }
  if (auto v = r.take("MasterPorts")) c.master_ports = parse_port_range(*v, fmt::format("{}: MasterPorts", r.where()));
  if (auto v = r.take("CheckpointSignal")) c.checkpoint_signal = parse_checkpoint_signal(*v, r.where());
  if (auto v = r.take("MaxMicroBatchSize"))
    c.max_micro_batch_size = static_cast<int>(parse_int(*v, fmt::format("{}: MaxMicroBatchSize", r.where()), 0, 1 << 20));
  if (auto v = r.take("AllowedPlans")) {
    parse_plan_features(*v, fmt::format("{}: AllowedPlans", r.where()));
    c.allowed_plans = *v;
  }
  if (auto v = r.take("DefaultSla")) {
    const std::string sla = to_lower(*v);
    if (sla != "guaranteed" && sla != "best-effort")
      throw Error(fmt::format("{}: DefaultSla: {} is not guaranteed or best-effort", r.where(), quote(*v)));
    c.policy.guaranteed_by_default = sla == "guaranteed";
  }
  if (auto v = r.take("GpuTypeBy")) {
    const std::string by = to_lower(*v);
    if (by != "gres" && by != "feature")
      throw Error(fmt::format("{}: GpuTypeBy: {} is not gres or feature", r.where(), quote(*v)));
    c.gpu_type_by_feature = by == "feature";
  }
  if (auto v = r.take("HeterogeneousJobs"))
    c.policy.heterogeneous_jobs = parse_bool(*v, fmt::format("{}: HeterogeneousJobs", r.where()));
  if (auto v = r.take("RestartBackoff"))
    c.policy.restart_backoff = parse_bool(*v, fmt::format("{}: RestartBackoff", r.where()));
  r.finish("GpuType, NodeType, NodeName or a parameter of morph.conf(5)");
}

}  // namespace

int parse_checkpoint_signal(const std::string& text, const std::string& where) {
  static const std::pair<const char*, int> kSignals[] = {{"SIGUSR2", SIGUSR2}, {"SIGTERM", SIGTERM}, {"SIGINT", SIGINT},
                                                         {"SIGHUP", SIGHUP},   {"SIGURG", SIGURG},   {"SIGUSR1", SIGUSR1}};
  std::string name = to_upper(text);
  if (name.rfind("SIG", 0) != 0) name = "SIG" + name;
  for (const auto& [signal_name, number] : kSignals) {
    if (name != signal_name) continue;
    if (number == SIGUSR1)
      throw Error(fmt::format("{}: CheckpointSignal: SIGUSR1 is caught by NCCL and some frameworks; use SIGUSR2", where));
    return number;
  }
  throw Error(fmt::format("{}: CheckpointSignal: {} is not one of SIGUSR2, SIGTERM, SIGINT, SIGHUP, SIGURG", where,
                          quote(text)));
}

MorphConfig parse_morph_conf(std::string_view text, const std::string& source) {
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);  // a UTF-8 byte-order mark, as editors write it
  MorphConfig config;
  std::map<std::string, std::size_t> global_lines;  // a parameter may be set once
  std::map<std::string, std::size_t> node_type_lines;
  std::size_t line_number = 0;
  for (std::string_view line : split(text, '\n')) {
    ++line_number;
    if (const std::size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    line = trim(line);
    if (line.empty()) continue;
    const std::string where = fmt::format("{}:{}", source, line_number);
    std::vector<std::pair<std::string, std::string>> tokens;
    std::istringstream words{std::string(line)};
    for (std::string word; words >> word;) {
      const std::size_t eq = word.find('=');
      if (eq == std::string::npos || eq == 0)
        throw Error(fmt::format("{}: {} is not Key=Value", where, quote(word)));
      tokens.emplace_back(word.substr(0, eq), word.substr(eq + 1));
    }
    const std::string kind = to_lower(tokens.front().first);
    const std::string name = tokens.front().second;
    if (kind == "gputype" || kind == "nodetype" || kind == "nodename") {
      if (name.empty()) throw Error(fmt::format("{}: {}= needs a name", where, tokens.front().first));
      tokens.erase(tokens.begin());
      Record record(fmt::format("{}: {} {}", where, kind == "gputype" ? "GpuType" : kind == "nodetype" ? "NodeType" : "NodeName", name),
                    std::move(tokens));
      try {
        if (kind == "gputype") {
          config.cluster.add_gpu_type(parse_gpu_type(std::move(record), name));
        } else if (kind == "nodetype") {
          config.cluster.add_node_type(parse_node_type(std::move(record), name, config.cluster));
          node_type_lines[name] = line_number;
        } else {
          const std::string type = record.require("NodeType");
          record.finish("NodeType");
          for (std::string& host : expand_hostlist(name, where)) config.cluster.add_node({std::move(host), type});
        }
      } catch (const Error& e) {
        const std::string message = e.what();
        if (message.rfind(source, 0) == 0) throw;
        throw Error(fmt::format("{}: {}", where, message));
      }
    } else {
      for (const auto& [key, value] : tokens) {
        const auto [it, fresh] = global_lines.emplace(to_lower(key), line_number);
        if (!fresh && it->second != line_number)
          throw Error(fmt::format("{}: {} is already set on line {}", where, key, it->second));
      }
      parse_globals(Record(where, std::move(tokens)), config);
    }
  }
  // Each path's cost that no line sets is RestartPenaltySeconds, wherever that line is.
  policy::RestartCosts& costs = config.policy.restart_costs;
  for (const auto& [key, cost] : {std::pair{"startpenaltyseconds", &costs.start_s},
                                  {"inplacepenaltyseconds", &costs.inplace_s},
                                  {"shrinkpenaltyseconds", &costs.shrink_s},
                                  {"requeuepenaltyseconds", &costs.requeue_s}})
    if (!global_lines.count(key)) *cost = config.policy.restart_penalty_s;
  if (config.policy.heterogeneous_jobs && !config.gpu_type_by_feature)
    throw Error(fmt::format("{}:{}: HeterogeneousJobs=yes needs GpuTypeBy=feature: Slurm 22.05 cannot give a job with "
                            "a typed GPU request nodes of another type",
                            source, global_lines.at("heterogeneousjobs")));
  if (config.gpu_type_by_feature)
    for (const NodeType& node : config.cluster.node_types())
      if (node.features.empty())
        throw Error(fmt::format("{}:{}: NodeType {} has no Features= (the Slurm feature of its nodes that names their "
                                "GPU type), which GpuTypeBy=feature on line {} needs",
                                source, node_type_lines.at(node.name), node.name, global_lines.at("gputypeby")));
  return config;
}

MorphConfig load_morph_conf(const std::string& path) {
  return parse_morph_conf(read_text_file(path, "configuration"), path);
}

std::string morph_conf_path(const std::string& given) {
  if (!given.empty()) return given;
  if (const char* env = std::getenv("MORPH_CONF"); env != nullptr && *env != '\0') return env;
  return kInstalledMorphConf;
}

}  // namespace morph
