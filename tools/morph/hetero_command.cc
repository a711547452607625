// morph hetero: JABAS's heterogeneous data-parallel configuration (seed 004) of a global
// batch on every allocation of GPU pairs of a JABAS profile folder's servers, and the
// allocation its auto-scaling picks for the next epoch's forecast batches (§6.3).
#include <algorithm>
#include <iostream>
#include <map>
#include <memory>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "libmorph/adaptive/auto_scaler.h"
#include "libmorph/hetero/hetero_search.h"
#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"
#include "tools/morph/commands.h"
#include "tools/morph/request_check.h"
#include "tools/morph/table.h"

namespace morph::cli {
namespace {

struct HeteroArgs {
  std::string profile_dir;
  std::int64_t batch = 0;
  std::vector<std::int64_t> forecast;  // empty: --batch throughout, §6.3's first epoch
  AutoScaleOptions scaling;
};

// An epoch's adaptation steps; each distinct batch is a search of its own, and all of them
// together are held to kMaxHeteroWork, as one batch's is.
constexpr std::size_t kMaxForecastSteps = 4096;

// §6.3 over the forecast steps' configurations; those of --batch are `configs`.
AllocationChoice auto_scale(const JabasProfile& profile, const HeteroArgs& args,
                            const std::vector<HeteroConfig>& configs) {
  if (args.forecast.size() > kMaxForecastSteps)
    throw Error(fmt::format("--forecast: {} steps, more than {}", args.forecast.size(), kMaxForecastSteps));
  const std::vector<std::int64_t> batches =
      args.forecast.empty() ? std::vector<std::int64_t>{args.batch} : args.forecast;
  std::map<std::int64_t, std::vector<HeteroConfig>> by_batch{{args.batch, configs}};
  std::int64_t work = 0;
  for (std::int64_t b : std::set<std::int64_t>(batches.begin(), batches.end())) {
    if (b == args.batch) continue;  // searched already
    const std::int64_t w = hetero_search_work(profile, b);
    if (w > kMaxHeteroWork - work)
      throw Error(fmt::format("--forecast: its distinct batches would take the search more than {} steps; give fewer "
                              "or smaller batches",
                              kMaxHeteroWork));
    work += w;
  }
  std::vector<const std::vector<HeteroConfig>*> steps;
  for (std::int64_t b : batches) {
    auto [it, fresh] = by_batch.try_emplace(b);
    if (fresh) it->second = hetero_configs(profile, b);
    steps.push_back(&it->second);
  }
  try {
    return choose_allocation(steps, args.scaling);
  } catch (const Error& e) {
    throw Error(fmt::format("--forecast: {}", e.what()));
  }
}

nlohmann::json to_json(const HeteroConfig& c) {
  nlohmann::json j{{"servers", c.servers}, {"server_gpus", c.server_gpus}, {"gpus", c.gpus},
                   {"global_batch", c.global_batch}, {"feasible", c.feasible()}};
  if (!c.feasible()) return j;
  j["local_batch"] = c.local_batch;
  j["group_workers"] = c.group_workers;
  j["iteration_ms"] = c.iter_ms;
  j["throughput_samples_per_s"] = c.throughput_samples_per_s;
  j["weight_sync"] = to_string(c.weight_sync);
  nlohmann::json groups = nlohmann::json::array();
  for (const HeteroGpuGroup& g : c.groups)
    groups.push_back({{"server", g.server}, {"gpu", g.gpu}, {"gpus", g.gpus}, {"workers", g.workers},
                      {"ga_steps", g.ga_steps}, {"iteration_ms", g.iter_ms}});
  j["gpu_groups"] = groups;
  return j;
}

std::string steps_text(const HeteroArgs& args) {
  if (args.forecast.empty()) return fmt::format("batch {} throughout", args.batch);
  return fmt::format("forecast {}", fmt::join(args.forecast, ","));
}

void run_hetero(const Context& context, const HeteroArgs& args) {
  const JabasProfile profile = load_jabas_profile(args.profile_dir);
  const std::vector<HeteroConfig> configs = hetero_configs(profile, args.batch);
  if (std::none_of(configs.begin(), configs.end(), [](const HeteroConfig& c) { return c.feasible(); })) {
    std::set<int> profiled;
    for (const JabasServer& s : profile.servers)
      for (const auto& [lbs, batch] : s.by_local_batch) profiled.insert(lbs);
    std::string batches;
    for (int lbs : profiled) batches += (batches.empty() ? "" : ", ") + std::to_string(lbs);
    throw Error(fmt::format("--batch: {} is out of reach on every allocation of the servers of {}: it must be "
                            "2 * local batch * M with a local batch all the allocation's servers profiled ({}) and "
                            "M at least its GPU pairs",
                            args.batch, args.profile_dir, batches));
  }
  const AllocationChoice chosen = auto_scale(profile, args, configs);
  const std::size_t steps = args.forecast.empty() ? 1 : args.forecast.size();
  if (context.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const HeteroConfig& c : configs) out.push_back(to_json(c));
    out[chosen.index]["auto_scaling"] = {{"epoch_s", chosen.epoch_s},
                                         {"fastest_epoch_s", chosen.fastest_epoch_s},
                                         {"forecast_steps", steps},
                                         {"interval_iterations", args.scaling.interval_iterations},
                                         {"cost_slack", args.scaling.cost_slack}};
    std::cout << out.dump(2) << '\n';
    return;
  }
  std::cout << fmt::format("global batch {} on the servers of {} (weight sync: {})\n", args.batch, args.profile_dir,
                           to_string(configs.front().weight_sync));
  Table table({"allocation", "gpus", "local batch", "iteration", "samples/s", "server", "gpu", "gpus", "workers",
               "ga steps", "gpu iteration"});
  for (const HeteroConfig& c : configs) {
    if (!c.feasible()) {
      table.add({allocation_name(c), std::to_string(c.gpus), "-", "-", "-", "out of reach", "", "", "", "", ""});
      continue;
    }
    bool first = true;
    for (const HeteroGpuGroup& g : c.groups) {
      table.add({first ? allocation_name(c) : "", first ? std::to_string(c.gpus) : "",
                 first ? std::to_string(c.local_batch) : "", first ? millis(c.iter_ms) : "",
                 first ? fmt::format("{:.1f}", c.throughput_samples_per_s) : "", g.server, g.gpu,
                 std::to_string(g.gpus), std::to_string(g.workers), std::to_string(g.ga_steps), millis(g.iter_ms)});
      first = false;
    }
  }
  table.print(std::cout);
  // §6.3: the epoch is p iterations at each forecast step's batch.
  std::cout << fmt::format("auto-scaling (seed 004 §6.3): {} ({} GPUs), epoch {:.1f} s over {} step{} of {} iterations "
                           "({})",
                           allocation_name(configs[chosen.index]), chosen.gpus, chosen.epoch_s, steps,
                           steps == 1 ? "" : "s", args.scaling.interval_iterations, steps_text(args));
  if (chosen.epoch_s > chosen.fastest_epoch_s)
    std::cout << fmt::format("; the fastest allocation takes {:.1f} s (cost slack {})", chosen.fastest_epoch_s,
                             args.scaling.cost_slack);
  std::cout << '\n';
}

}  // namespace

void add_hetero_command(command_line::Command& app, Context& context) {
  auto args = std::make_shared<HeteroArgs>();
  command_line::Command cmd =
      app.subcommand("hetero", "JABAS heterogeneous data-parallel configurations from a profile folder");
  cmd.option("--profile", args->profile_dir, "JABAS profile folder (cluster_info.json, *_profile_data/)").required();
  cmd.option("--batch", args->batch, "global batch size").required().check(request_check("batch"));
  cmd.option("--forecast", args->forecast,
             "the next epoch's global batch at each forecast step, B1,B2,... (default: --batch throughout), for "
             "JABAS's auto-scaling (seed 004 §6.3)")
      .delimiter(',')
      .check(request_check("batch"));
  cmd.option("--interval", args->scaling.interval_iterations, "iterations per forecast step (p)")
      .range(1, 1 << 30)
      .show_default();
  cmd.option("--cost-slack", args->scaling.cost_slack,
             "auto-scaling picks the allocation of fewest GPUs within (1 + slack) of the least epoch time")
      .range(0.0, 1e6)
      .show_default();
  cmd.on_run([&context, args] { run_hetero(context, *args); });
}

}  // namespace morph::cli
