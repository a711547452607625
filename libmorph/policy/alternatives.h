// Why a job has its allocation (`morph explain`): the configurations it could have had,
// per GPU type and GPU count, with the oracle's prediction for each and why it lost to
// the one the policy chose. Pure: a function of the view, the decisions and the oracle.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "libmorph/policy/cluster_view.h"
#include "libmorph/policy/plan_oracle.h"

namespace morph::policy {

// Alternatives listed beside the chosen configuration, at most.
constexpr int kMaxAlternatives = 5;

// Why an alternative lost, most fundamental first: the first that applies is given.
enum class Loss {
  none,             // the chosen configuration
  infeasible,       // no plan runs there (memory, structure, the user's bounds)
  no_room,          // more GPUs of its type than the other jobs' targets leave free
  below_promise,    // a guaranteed job would run slower than its promise
  unmeasured,       // a guaranteed job runs its request until its speed there is measured
  held_to_request,  // a guaranteed job that measured slower elsewhere runs its request
  slower,           // no faster than the chosen
  small_gain,       // a running job kept: the gain is under MinReconfigureGain
  outvalued,        // faster and room for it, but the policy valued the GPUs more elsewhere
};
const char* to_string(Loss loss);
Loss parse_loss(std::string_view text, std::string_view what);

struct Alternative {
  std::string gpu_type;  // GpuType name
  int gpus = 0;
  std::string plan;          // empty where no plan runs
  double iteration_s = 0;    // predicted; 0 where no plan runs
  double samples_per_s = 0;  // global batch / iteration_s
  Loss loss = Loss::none;
  std::string why;  // the loss in words, with its numbers; empty for the chosen
  friend bool operator==(const Alternative&, const Alternative&) = default;
};

// GPUs of each GPU type that no decision's target holds.
using FreeGpus = std::map<std::string, int>;
FreeGpus free_gpus(const ClusterView& view, const std::vector<Decision>& decisions);

// The chosen configuration of view.jobs[job] (its `target`; absent when empty) first, then
// at most kMaxAlternatives others: the best of each GPU type, then the fastest of the
// rest, in order of predicted samples/s (ties: GPU type, then GPU count). Candidates are
// the useful GPU counts of the job's curve on each GPU type and its requested count,
// each with its best plan (any plan within the user's bounds). `free` is free_gpus() of
// the round's decisions.
std::vector<Alternative> alternatives(const ClusterView& view, std::size_t job, const JobAllocation& target,
                                      const FreeGpus& free, PlanOracle& oracle);

// One line for a job left waiting, from its alternatives: the loss of its best
// configuration without numbers, so that it changes only when the reason does.
std::string wait_reason(const std::vector<Alternative>& alternatives);

// The JSON array the state database keeps (docs/state.md, `decisions.alternatives_json`).
std::string alternatives_to_json(const std::vector<Alternative>& alternatives);
// Throws morph::Error naming `what` for anything else.
std::vector<Alternative> alternatives_from_json(std::string_view json, std::string_view what);

}  // namespace morph::policy
