// Limits on one job's size that morphd cannot read (its QOS's or association's
// MaxTRESPerJob and -PerNode live in slurmdbd): a pending Morph job that Slurm keeps
// waiting on one (pending_reason.h, SizeLimit) runs no plan of its size or larger. morphd
// remembers, per job, the fewest GPUs or nodes Slurm refused and keeps every later plan
// of the job below them while Slurm lists the job, also once it runs, so that it never
// grows back into the limit. Each refusal lowers the cap again, never below the job's
// least size (--morph-gpus MIN, -N MIN). morphd keeps them in its state database, so that
// a restart does not plan a job back into its limit.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "daemon/store/records.h"
#include "daemon/view_builder.h"

namespace morph::daemon {

struct SizeCap {
  int max_gpus = 0;   // 0: none
  int max_nodes = 0;  // 0: none
  bool at_least = false;  // refused at its least size: said so
};

class SizeCaps {
 public:
  // Learns from the view's pending jobs that wait on a size limit (but `busy` ones, which
  // morphd is changing), at their records' sizes, and forgets the jobs the snapshot no
  // longer lists. One line per cap learnt.
  std::vector<std::string> learn(const ClusterSnapshot& snapshot, const BuiltView& built,
                                 const std::set<std::uint32_t>& busy);
  // Gives each capped job of `built` an application of its own, its bounds within the cap.
  void apply(BuiltView& built) const;

  // What morphd keeps in its state database across restarts, and takes back at start.
  std::vector<store::SizeCapRow> rows() const;
  void restore(std::span<const store::SizeCapRow> rows);

 private:
  std::map<std::uint32_t, SizeCap> caps_;  // by Slurm job id
};

}  // namespace morph::daemon
