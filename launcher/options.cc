#include "launcher/options.h"

namespace morph::launcher {

std::string Options::invalid() const {
  if (command.empty()) return "no command: morphrun [options] -- COMMAND [ARGS]";
  if (driver && per_node) return "--driver starts its own steps; --per-node belongs to the steps";
  if (driver && !hosts.empty()) return "--driver runs in a Slurm batch step; --hosts is for use outside Slurm";
  if (!hosts.empty() && (node_rank < 0 || node_rank >= static_cast<int>(hosts.size())))
    return "--node-rank must be an index of --hosts";
  if (threads < 0) return "--threads must be 0 (one per core) or more";
  if (seq != 0 && plan.empty()) return "--seq goes with --plan (a Morph job's record gives its sequence length)";
  return {};
}

}  // namespace morph::launcher
