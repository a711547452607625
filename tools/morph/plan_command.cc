// morph plan: rank every feasible execution plan of a job on a set of GPUs.
#include <iostream>

#include <fmt/format.h>

#include "libmorph/cluster/allocation.h"
#include "libmorph/planner/hetero_plan.h"
#include "libmorph/planner/framework_planning.h"
#include "libmorph/planner/plan_search.h"
#include "libmorph/request/morph_request.h"
#include "libmorph/util/error.h"
#include "tools/morph/commands.h"
#include "tools/morph/request_check.h"
#include "tools/morph/perf_source.h"
#include "tools/morph/plan_json.h"
#include "tools/morph/table.h"

namespace morph::cli {
namespace {

struct PlanArgs {
  std::string model;
  std::int64_t batch = 0;
  std::string gpus;
  std::int64_t seq = 0;
  std::string plans = "all";
  std::string framework;  // "": any plan; else only what that framework runs
  int max_micro_batch = -1;
  int cpus_per_gpu = 0;
  std::string perf_file;
  int top = 10;
  bool all = false;
};

void run_plan(Context& context, const PlanArgs& args) {
  context.resolve_paths();
  const MorphConfig& config = context.config();
  Workload w;
  w.model = context.catalog().resolve(args.model, "--model");
  w.global_batch = args.batch;
  w.seq_len = args.seq > 0 ? args.seq : w.model.seq_len;
  const Allocation allocation = parse_gpus_spec(args.gpus, config.cluster, "--gpus", args.cpus_per_gpu);

  PlanSearchOptions options;
  options.features = parse_plan_features(args.plans, "--plans") & parse_plan_features(config.allowed_plans, "AllowedPlans");
  options.max_micro_batch_size = args.max_micro_batch >= 0 ? args.max_micro_batch : config.max_micro_batch_size;
  options.memory = config.memory;
  if (!args.framework.empty()) {
    MorphRequest request;
    set_morph_option(request, "framework", args.framework);
    options.features &= framework_plan_features(request.framework);
    options.memory = framework_memory(config.memory, request.framework);
  }
  const ResolvedPerf perf = resolve_perf(args.perf_file, w, allocation.nodes.front().gpu, config.compute_efficiency, context.catalog());
  const PlanSearch search = search_plans(w, allocation, perf.perf, options);
  // Several GPU types: also JABAS's plan, each type with its own accumulation steps.
  bool mixed = false;
  for (const NodeShare& n : allocation.nodes) mixed |= n.gpu.name != allocation.nodes.front().gpu.name;
  const HeteroPlan hetero = mixed ? best_hetero_plan(w, allocation, perf.perf, options) : HeteroPlan{};

  if (context.json) {
    nlohmann::json j{{"model", w.model.name}, {"params", w.model.params}, {"seq", w.seq_len},
                     {"global_batch", w.global_batch}, {"allocation", allocation.to_string()},
                     {"gpus", allocation.gpus()}, {"performance_model", perf.description}};
    j["feasible"] = nlohmann::json::array();
    j["infeasible"] = nlohmann::json::array();
    for (const PlanOption& o : search.feasible) j["feasible"].push_back(to_json(o));
    for (const PlanOption& o : search.infeasible) j["infeasible"].push_back(to_json(o));
    if (mixed) {
      nlohmann::json h{{"feasible", hetero.feasible}};
      if (hetero.feasible) {
        h["plan"] = to_string(hetero.plan);
        h["groups"] = to_string(hetero.groups);
        h["iteration_ms"] = hetero.iter_ms;
        h["group_iteration_ms"] = hetero.group_ms;
        h["throughput"] = hetero.throughput;
      } else {
        h["reason"] = hetero.reason;
      }
      j["heterogeneous"] = h;
    }
    std::cout << j.dump(2) << '\n';
    return;
  }
  std::cout << fmt::format("{} ({:.3g} parameters, seq {}), global batch {} on {} ({} GPUs)\n", w.model.name,
                           w.model.params, w.seq_len, w.global_batch, allocation.to_string(), allocation.gpus())
            << perf.description << "\n\n";
  if (search.feasible.empty()) {
    std::cout << "no feasible plan\n";
  } else {
    Table table({"rank", "plan", "family", "mem/GPU", "iteration", "samples/s"});
    const std::size_t shown = args.all ? search.feasible.size()
                                       : std::min<std::size_t>(search.feasible.size(), static_cast<std::size_t>(args.top));
    for (std::size_t i = 0; i < shown; ++i) {
      const PlanOption& o = search.feasible[i];
      table.add({std::to_string(i + 1), to_string(o.plan), o.plan.family(), gib(o.memory.gpu_bytes()),
                 millis(o.time.iter_ms), fmt::format("{:.2f}", o.throughput)});
    }
    table.print(std::cout);
    if (shown < search.feasible.size())
      std::cout << fmt::format("({} more feasible plans; --all lists them)\n", search.feasible.size() - shown);
  }
  if (mixed && hetero.feasible) {
    std::string groups;
    for (std::size_t k = 0; k < hetero.groups.size(); ++k)
      groups += fmt::format("{}{} GA {} ({})", k ? ", " : "", hetero.groups[k].gpu_type, hetero.groups[k].ga_steps,
                            millis(hetero.group_ms[k]));
    std::cout << fmt::format("\nheterogeneous data parallelism (JABAS): local batch {}, {}: iteration {}, {:.2f} "
                             "samples/s\n  record: {} groups={}\n",
                             hetero.plan.micro_batch_size, groups, millis(hetero.iter_ms), hetero.throughput,
                             to_string(hetero.plan), to_string(hetero.groups));
  } else if (mixed) {
    std::cout << fmt::format("\nheterogeneous data parallelism (JABAS): none: {}\n", hetero.reason);
  }
  if (!search.infeasible.empty()) {
    std::cout << "\ninfeasible:\n";
    Table table({"plan", "reason"});
    for (const PlanOption& o : search.infeasible) table.add({to_string(o.plan), o.reason});
    table.print(std::cout);
  }
}

}  // namespace

void add_plan_command(command_line::Command& app, Context& context) {
  auto args = std::make_shared<PlanArgs>();
  command_line::Command cmd = app.subcommand("plan", "rank the feasible execution plans of a job on a set of GPUs");
  cmd.option("--model", args->model, "catalog name or inline spec layers=..,hidden=..,heads=..,seq=..,vocab=..")
      .required();
  cmd.option("--batch", args->batch, "global batch size (samples per iteration)")
      .required()
      .check(request_check("batch"));
  cmd.option("--gpus", args->gpus, "GPUs, e.g. 8xa800, 2x8xa100, 4xa100+4xv100").required();
  cmd.option("--seq", args->seq, "sequence length (default: the model's)").check(request_check("seq"));
  cmd.option("--plans", args->plans, "allowed plan features: dp,zero,offload,tp,pp,3d,gc,all");
  cmd.option(
         "--framework", args->framework,
         "only the plans this framework runs (megatron: ZeRO-1 at most, no offload), with its training state's memory, "
         "as sbatch --morph-framework")
      .check(request_check("framework"));
  cmd.option("--max-micro-batch", args->max_micro_batch, "largest micro-batch size to consider (0: any)")
      .range(0, 1 << 20);
  cmd.option("--cpus-per-gpu", args->cpus_per_gpu, "CPU cores per GPU (default: the node's share)").range(1, 4096);
  cmd.option("--perf", args->perf_file, "performance model saved by morph fit --save");
  cmd.option("--top", args->top, "feasible plans to show").range(1, 1 << 20);
  cmd.flag("--all", args->all, "show every feasible plan");
  cmd.on_run([&context, args] { run_plan(context, *args); });
}

}  // namespace morph::cli
