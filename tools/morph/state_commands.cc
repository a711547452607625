// morph status, timeline and explain: what morphd did and why, from its state database
// (morph.conf StateDatabase, or --state; docs/state.md). The database is morphd's (mode
// 0600): these commands run as root or SlurmUser.
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "daemon/store/sla_state.h"
#include "daemon/store/state_store.h"
#include "libmorph/policy/alternatives.h"
#include "libmorph/record/job_record.h"
#include "libmorph/util/error.h"
#include "tools/morph/commands.h"
#include "tools/morph/state_file.h"
#include "tools/morph/table.h"

namespace morph::cli {
namespace {

struct StateArgs {
  std::string state;        // --state: the database ("" : morph.conf StateDatabase)
  std::uint32_t job = 0;    // timeline, explain
  bool all = false;         // timeline --all, status --all (finished jobs too)
};

// "dp=4 tp=2 pp=1 zero=1 ..." of a stored record, or the record itself when it is not one.
std::string plan_of(const std::string& record) {
  try {
    return to_string(parse_admin_comment(record).current.plan);
  } catch (const Error&) {
    return record;
  }
}

std::string rate(double samples_per_s) { return fmt::format("{:.2f}", samples_per_s); }

void run_status(Context& context, const StateArgs& args) {
  store::StateStore state = open_morphd_state(context, args.state);
  nlohmann::json jobs = nlohmann::json::array();
  Table table({"job", "model", "sla", "GPUs", "plan", "predicted/s", "observed/s", "SLA state", "last decision"});
  for (const store::JobTimeline& t : state.all_timelines()) {
    if (t.job.finished_at && !args.all) continue;
    const store::PlanPeriod* plan = t.plans.empty() ? nullptr : &t.plans.back();
    const std::optional<store::JobThroughput> speed = state.job_throughput(t.job.job_id);
    const std::optional<store::Decision> decision = state.latest_decision(t.job.job_id);
    const store::SlaStatus sla = store::sla_status(t.job.sla, plan, speed);
    const int gpus = plan ? plan->nodes * plan->gpus_per_node : 0;
    const bool observed = speed && speed->observed_samples_per_s.has_value();
    const double observed_per_s = observed ? speed->observed_samples_per_s.value() : 0.0;
    jobs.push_back({{"job", t.job.job_id},
                    {"model", t.job.model},
                    {"sla", to_string(t.job.sla)},
                    {"sla_state", to_string(sla.state)},
                    {"promised_samples_per_s",
                     sla.promised_samples_per_s > 0 ? nlohmann::json(sla.promised_samples_per_s) : nlohmann::json(nullptr)},
                    {"finished", t.job.finished_at ? nlohmann::json(*t.job.finished_at) : nlohmann::json(nullptr)},
                    {"gpu_type", plan ? plan->gpu_type : ""},
                    {"gpus", gpus},
                    {"plan", plan ? plan_of(plan->record) : ""},
                    {"predicted_samples_per_s", plan ? plan->predicted_samples_per_s : 0.0},
                    {"observed_samples_per_s", observed ? nlohmann::json(observed_per_s) : nlohmann::json(nullptr)},
                    {"last_decision", decision ? nlohmann::json{{"time", decision->time}, {"action", decision->action},
                                                                {"reason", decision->reason}}
                                               : nlohmann::json(nullptr)}});
    table.add({std::to_string(t.job.job_id), t.job.model, to_string(t.job.sla),
               plan ? fmt::format("{} {}", gpus, plan->gpu_type) : "-", plan ? plan_of(plan->record) : "-",
               plan ? rate(plan->predicted_samples_per_s) : "-", observed ? rate(observed_per_s) : "-",
               to_string(sla.state),
               decision ? fmt::format("{} {}", local_time(decision->time), decision->action) : "-"});
  }
  if (context.json) {
    std::cout << nlohmann::json{{"jobs", jobs}}.dump(2) << '\n';
    return;
  }
  if (table.empty()) std::cout << "no Morph job alive in " << state.path() << '\n';
  else table.print(std::cout);
}

void run_timeline(Context& context, const StateArgs& args) {
  if (!args.all && args.job == 0) throw Error("timeline: give a job id or --all");
  store::StateStore state = open_morphd_state(context, args.state);
  std::vector<store::JobTimeline> timelines;
  if (args.all) {
    timelines = state.all_timelines();
  } else {
    const std::optional<store::JobRow> job = state.job(args.job);
    if (!job) throw Error(fmt::format("timeline: morphd has no record of job {} in {}", args.job, state.path()));
    timelines.push_back({*job, state.job_timeline(args.job)});
  }
  nlohmann::json out = nlohmann::json::array();
  Table table({"job", "from", "until", "GPUs", "plan", "predicted/s"});
  for (const store::JobTimeline& t : timelines)
    for (const store::PlanPeriod& p : t.plans) {
      out.push_back({{"job", p.job_id}, {"from", p.from_time},
                     {"until", p.until_time ? nlohmann::json(*p.until_time) : nlohmann::json(nullptr)},
                     {"gpu_type", p.gpu_type}, {"nodes", p.nodes}, {"gpus_per_node", p.gpus_per_node},
                     {"plan", plan_of(p.record)}, {"predicted_samples_per_s", p.predicted_samples_per_s}});
      table.add({std::to_string(p.job_id), local_time(p.from_time), p.until_time ? local_time(*p.until_time) : "now",
                 fmt::format("{}x{} {}", p.nodes, p.gpus_per_node, p.gpu_type), plan_of(p.record),
                 rate(p.predicted_samples_per_s)});
    }
  if (context.json) std::cout << nlohmann::json{{"plans", out}}.dump(2) << '\n';
  else table.print(std::cout);
}

// The configurations a decision weighed, indented under it: the chosen one first.
void print_alternatives(const std::vector<policy::Alternative>& alternatives) {
  if (alternatives.empty()) return;
  Table table({"GPUs", "plan", "samples/s", "s/iteration", "outcome"});
  for (const policy::Alternative& a : alternatives)
    table.add({fmt::format("{} {}", a.gpus, a.gpu_type), a.plan.empty() ? "-" : a.plan,
               a.samples_per_s > 0 ? rate(a.samples_per_s) : "-",
               a.iteration_s > 0 ? fmt::format("{:.3f}", a.iteration_s) : "-",
               a.loss == policy::Loss::none ? "chosen" : a.why});
  std::ostringstream text;
  table.print(text);
  std::istringstream lines(text.str());
  for (std::string line; std::getline(lines, line);) std::cout << "    " << line << '\n';
}

void run_explain(Context& context, const StateArgs& args) {
  store::StateStore state = open_morphd_state(context, args.state);
  const std::vector<store::Decision> decisions = state.decisions(args.job);
  if (decisions.empty())
    throw Error(fmt::format("explain: morphd has made no decision on job {} (in {})", args.job, state.path()));
  nlohmann::json out = nlohmann::json::array();
  for (const store::Decision& d : decisions) {
    const std::string what = fmt::format("{}: decision {} on job {}", state.path(), d.id, args.job);
    const std::vector<policy::Alternative> alternatives = policy::alternatives_from_json(d.alternatives_json, what);
    out.push_back({{"time", d.time}, {"action", d.action}, {"reason", d.reason},
                   {"alternatives", nlohmann::json::parse(d.alternatives_json)}});
    if (context.json) continue;
    std::cout << fmt::format("{}  {:<8} {}\n", local_time(d.time), d.action, d.reason);
    print_alternatives(alternatives);
  }
  if (context.json) std::cout << nlohmann::json{{"job", args.job}, {"decisions", out}}.dump(2) << '\n';
}

}  // namespace

void add_state_commands(command_line::Command& app, Context& context) {
  const auto add = [&](const char* name, const char* what, void (*run)(Context&, const StateArgs&)) {
    auto args = std::make_shared<StateArgs>();
    command_line::Command cmd = app.subcommand(name, what);
    cmd.option("--state", args->state, "morphd's state database (default: morph.conf StateDatabase)");
    cmd.on_run([&context, args, run] { run(context, *args); });
    return std::make_pair(cmd, args);
  };
  auto [status, status_args] =
      add("status",
          "Morph jobs with their plan, GPUs, predicted and observed throughput, SLA state and morphd's last decision",
          run_status);
  status.flag("--all", status_args->all, "finished jobs too");
  auto [timeline, timeline_args] = add("timeline", "every plan and allocation a job had, with times", run_timeline);
  timeline.option("job", timeline_args->job, "the job id");
  timeline.flag("--all", timeline_args->all, "every job morphd knows");
  auto [explain, explain_args] =
      add("explain",
          "why a job has its plan: morphd's decisions on it, their reasons and the configurations that lost",
          run_explain);
  explain.option("job", explain_args->job, "the job id").required();
}

}  // namespace morph::cli
