// morph reshard: move a checkpoint to another parallel layout (Tenplex, seed 003), or
// print the plan of that move without carrying it out.
#include <algorithm>
#include <iostream>
#include <map>
#include <memory>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "libmorph/state/reshard_exec.h"
#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"
#include "tools/morph/commands.h"
#include "tools/morph/table.h"

namespace morph::cli {
namespace {

struct ReshardArgs {
  std::string from;
  std::string to;
  std::string layout;
  bool plan_only = false;
  int threads = 0;
  bool no_verify = false;
  std::string from_nodes;  // hostlist per old rank, comma-separated
  std::string to_nodes;
};

std::vector<std::string> node_list(const std::string& text, int ranks, const char* what) {
  if (text.empty()) return {};
  std::vector<std::string> nodes;
  for (std::string_view n : split(text, ',')) nodes.emplace_back(trim(n));
  if (static_cast<int>(nodes.size()) != ranks)
    throw Error(fmt::format("{}: {} names for {} ranks", what, nodes.size(), ranks));
  return nodes;
}

std::string gb(std::uint64_t bytes) { return fmt::format("{:.3f}", static_cast<double>(bytes) / 1e9); }

nlohmann::json rank_json(const state::RankPlan& r) {
  nlohmann::json ops = nlohmann::json::array();
  for (const state::CopyOp& op : r.ops)
    ops.push_back({{"from_rank", op.source_rank}, {"from_offset", op.source_offset},
                   {"tensor", r.tensors[static_cast<std::size_t>(op.tensor)].name}, {"offset", op.offset},
                   {"bytes", op.bytes}});
  return {{"rank", r.rank}, {"tensors", r.tensors.size()}, {"ops", std::move(ops)}};
}

// Every read, printed file by file as it is planned, so that one file's reads are held at
// a time (a whole ZeRO plan of dp=64 holds 35 million, docs/resharding.md): the ranks come
// in the order of their files, one object per line, the totals after them.
void print_plan_json(const state::FilePlanner& planner) {
  std::map<std::pair<std::string, std::string>, std::uint64_t> bytes_between_nodes;
  std::uint64_t total = 0;
  std::cout << "{\n  \"from\": " << nlohmann::json(state::to_string(planner.from())).dump()
            << ",\n  \"to\": " << nlohmann::json(state::to_string(planner.to())).dump() << ",\n  \"ranks\": [";
  const char* separator = "\n    ";
  for (std::size_t f = 0; f < planner.file_count(); ++f) {
    const state::ReshardPlan plan = planner.plan(f);
    for (const state::RankPlan& r : plan.ranks) {
      std::cout << separator << rank_json(r).dump();
      separator = ",\n    ";
    }
    for (const auto& [nodes, bytes] : plan.bytes_between_nodes) bytes_between_nodes[nodes] += bytes;
    total += plan.bytes;
  }
  nlohmann::json pairs = nlohmann::json::array();
  for (const auto& [nodes, bytes] : bytes_between_nodes)
    pairs.push_back({{"from", nodes.first}, {"to", nodes.second}, {"bytes", bytes}});
  std::cout << "\n  ],\n  \"bytes\": " << total << ",\n  \"node_pairs\": " << pairs.dump() << "\n}\n";
}

// A new rank's line of the plan: tensors, reads, old ranks read, GB.
std::vector<std::string> rank_row(const state::RankPlan& r) {
  std::vector<int> sources;
  std::uint64_t bytes = 0;
  for (const state::CopyOp& op : r.ops) {
    sources.push_back(op.source_rank);
    bytes += op.bytes;
  }
  std::sort(sources.begin(), sources.end());
  sources.erase(std::unique(sources.begin(), sources.end()), sources.end());
  std::string list;
  for (int s : sources) list += fmt::format("{}{}", list.empty() ? "" : ",", s);
  return {std::to_string(r.rank), std::to_string(r.tensors.size()), std::to_string(r.ops.size()),
          list.empty() ? "-" : list, gb(bytes)};
}

// Plans file by file, keeping each new rank's line only, so that the reads of one file are
// held at a time.
void print_plan(const state::FilePlanner& planner) {
  std::vector<std::vector<std::string>> rows(static_cast<std::size_t>(planner.to().ranks()));
  std::map<std::pair<std::string, std::string>, std::uint64_t> bytes_between_nodes;
  std::uint64_t total = 0;
  for (std::size_t f = 0; f < planner.file_count(); ++f) {
    const state::ReshardPlan plan = planner.plan(f);
    for (const state::RankPlan& r : plan.ranks) rows[static_cast<std::size_t>(r.rank)] = rank_row(r);
    for (const auto& [nodes, bytes] : plan.bytes_between_nodes) bytes_between_nodes[nodes] += bytes;
    total += plan.bytes;
  }
  std::cout << fmt::format("reshard plan {} -> {}: {} GB to read, each byte once\n\n",
                           state::to_string(planner.from()), state::to_string(planner.to()), gb(total));
  Table ranks({"new rank", "tensors", "reads", "from ranks", "GB"});
  for (std::vector<std::string>& row : rows) ranks.add(std::move(row));
  ranks.print(std::cout);
  std::cout << '\n';
  Table pairs({"from node", "to node", "GB"});
  for (const auto& [nodes, bytes] : bytes_between_nodes)
    pairs.add({nodes.first.empty() ? "(local)" : nodes.first, nodes.second.empty() ? "(local)" : nodes.second, gb(bytes)});
  pairs.print(std::cout);
}

void run_reshard(Context& context, const ReshardArgs& args) {
  const state::Layout layout = state::parse_layout(args.layout, "--layout");
  const state::CheckpointIndex index = state::read_index(args.from);
  state::ReshardOptions options;
  options.threads = args.threads;
  options.verify = !args.no_verify;
  options.nodes.from = node_list(args.from_nodes, index.layout.ranks(), "--from-nodes");
  options.nodes.to = node_list(args.to_nodes, layout.ranks(), "--to-nodes");
  if (args.plan_only) {
    const std::vector<state::SafetensorsHeader> headers = state::read_headers(args.from, index, options.verify);
    const state::FilePlanner planner(index.spec, index.layout, headers, layout, options.nodes);
    if (context.json)
      print_plan_json(planner);
    else
      print_plan(planner);
    return;
  }
  if (args.to.empty()) throw Error("--to is required unless --plan-only is given");
  const state::ReshardSummary s = state::reshard_checkpoint(args.from, args.to, layout, options);
  if (context.json) {
    std::cout << nlohmann::json{{"from", state::to_string(s.from)}, {"to", state::to_string(s.to)},
                                {"bytes_read", s.bytes_read}, {"bytes_written", s.bytes_written},
                                {"seconds", s.seconds}, {"step", index.progress.step},
                                {"samples", index.progress.samples}}
                     .dump(2)
              << '\n';
    return;
  }
  std::cout << fmt::format("{} ({}) -> {} ({}): {} GB read, {} GB written in {:.3f} s ({:.2f} GB/s); step {}\n",
                           args.from, state::to_string(s.from), args.to, state::to_string(s.to),
                           gb(s.bytes_read), gb(s.bytes_written), s.seconds,
                           s.seconds > 0 ? static_cast<double>(s.bytes_read) / 1e9 / s.seconds : 0.0,
                           index.progress.step);
}

}  // namespace

void add_reshard_command(command_line::Command& app, Context& context) {
  auto args = std::make_shared<ReshardArgs>();
  command_line::Command cmd = app.subcommand("reshard", "move a checkpoint to another parallel layout");
  cmd.option("--from", args->from, "checkpoint folder (index.json and one file per rank)").required();
  cmd.option("--to", args->to, "new checkpoint folder (must not exist)");
  cmd.option("--layout", args->layout, "new layout: dp=D,tp=T,pp=P,zero=Z").required();
  cmd.flag("--plan-only", args->plan_only, "print the plan (reads per new rank, bytes per node pair) and stop");
  cmd.option("--threads", args->threads, "threads building new files (default: one per core)").range(0, 4096);
  cmd.flag("--no-verify", args->no_verify, "skip the checksums of the old files (sizes are still checked)");
  cmd.option("--from-nodes", args->from_nodes, "node of each old rank, comma-separated (for locality)");
  cmd.option("--to-nodes", args->to_nodes, "node of each new rank, comma-separated");
  cmd.on_run([&context, args] { run_reshard(context, *args); });
}

}  // namespace morph::cli
