// What a policy asks the performance model, memoised: the best plan of a job on a set of
// GPUs (Morphling §5 GetBestPlan), its resource-sensitivity curve over GPU counts
// (Fig. 6) and its minimum demand. One oracle lives as long as the scheduler, so that
// every (application, shape) is searched once.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "libmorph/memory/memory_model.h"
#include "libmorph/perf/perf_model.h"
#include "libmorph/plan/plan_features.h"
#include "libmorph/policy/cluster_view.h"

namespace morph::policy {

// What the scheduler knows about an application: the workload it trains and its fitted
// performance model. Jobs name their application (JobState::app).
struct AppProfile {
  Workload workload;
  PerfModel perf;
  unsigned features = kAllFeatures;  // plan families the application may use
  StateLayout states = StateLayout::deepspeed;  // how its framework keeps training state
  // The user's bounds (--morph-gpus, -N, --morph-gpu-types): no policy places a job of the
  // application outside them. max_gpus, max_nodes 0: none; gpu_types empty: any, else
  // canonical names.
  int min_gpus = 1;
  int max_gpus = 0;
  int min_nodes = 1;
  int max_nodes = 0;
  std::vector<std::string> gpu_types = {};
  // The most nodes of a GPU type the job may have, where its Slurm partitions hold only
  // some of the type's nodes; a type absent here: all of them.
  std::map<std::string, int> nodes_of_type = {};
  // --morph-adaptive-batch: the trainer changes its batch; a heterogeneous plan's per-rank
  // shares hold for one batch only, so such jobs keep one GPU type.
  bool adaptive_batch = false;
  // Its jobs keep one GPU type for another reason: a --constraint of its user, which a
  // heterogeneous placement's count constraint per type cannot carry (docs/slurm.md), or
  // several partitions, of which Slurm starts a job in one.
  bool one_gpu_type = false;
};

// Why `gpus` GPUs on `nodes` nodes are outside the application's bounds; empty when within.
std::string outside_bounds(const AppProfile& app, int gpus, int nodes);
// Why `nodes` nodes of `gpu_type` are more than the application's partitions hold; empty when not.
std::string beyond_partitions(const AppProfile& app, const std::string& gpu_type, int nodes);

// How far a policy may move a job away from its request.
enum class PlanFreedom {
  any,       // any plan (Morphling, Morphling-E)
  scale_dp,  // the requested plan with its data-parallel size scaled (Sia, Morphling-R)
  exact,     // the requested plan only (rigid schedulers, Morphling-N)
};

// GPUs per node of an allocation, largest first, on one node type: what the model's
// prediction depends on (with the CPUs each GPU gets).
struct Shape {
  int node = 0;  // a node of the type (index into ClusterView::nodes), for its hardware
  int cpus_per_gpu = 0;
  std::vector<int> gpus;

  int total() const;
  friend auto operator<=>(const Shape&, const Shape&) = default;
};

// Shape of `slices`; all on nodes of one node type (NodeState::node_type()).
Shape shape_of(const std::vector<NodeState>& nodes, const std::vector<Slice>& slices);
// `gpus` GPUs packed into the fewest nodes like `node`, full nodes first: of its GPUs
// (NodeState::type; a share of a node where others hold the rest), as placement has them.
Shape packed_shape(const std::vector<NodeState>& nodes, int node, int gpus);
// `gpus` GPUs as Slurm places a request of whole nodes: packed into whole nodes of
// `node`'s node type (NodeState::node_type()), where a guaranteed job's promise holds.
Shape request_shape(const std::vector<NodeState>& nodes, int node, int gpus);

struct PlanChoice {
  bool feasible = false;
  ExecutionPlan plan;
  GpuGroups groups = {};  // a heterogeneous plan's accumulation steps per GPU type
  double iteration_s = 0;
  double host_bytes_per_gpu = 0;  // AllocMem: host memory the plan needs for each GPU's process
  std::string reason;              // why not, when infeasible

  double rate() const { return feasible ? 1.0 / iteration_s : 0.0; }  // iterations per second
};

// Best rate over GPU counts 0..max on one node type, packed placements.
struct JobCurve {
  std::vector<double> rate;  // rate[g]: iterations/s of the best plan on exactly g GPUs, 0: none
  std::vector<int> useful;   // counts whose rate exceeds every smaller count's, ascending

  // The smallest useful count above `gpus` (0: none), the largest below (0: none).
  int next(int gpus) const;
  int previous(int gpus) const;
  double at(int gpus) const { return gpus > 0 && gpus < static_cast<int>(rate.size()) ? rate[gpus] : 0.0; }
};

struct OracleStats {
  long searches = 0;  // plan searches run (cache misses)
  long lookups = 0;   // GetBestPlan calls
};

// A job measured this many times slower or faster than the model in use predicts is
// believed neither by the refit (which moves the model of every job of that model, its
// other users' included) nor by the policy (PlanOracle::current_s). No fitted model of
// docs/validation.md errs by more than about 2x; a job's own reports, written by the
// user's trainer, can.
inline constexpr double kImplausibleRatio = 10;

class PlanOracle {
 public:
  // Curves go up to max(max_gpus_per_job, the job's request) GPUs (morph.conf MaxGpusPerJob).
  explicit PlanOracle(std::map<std::string, AppProfile> apps, MemoryOptions memory = {}, int max_gpus_per_job = 64);

  // Throws morph::Error naming the application when it is unknown.
  const AppProfile& app(const std::string& name) const;
  bool has_app(const std::string& name) const { return apps_.count(name) > 0; }

  // GetBestPlan: the fastest plan of `job` allowed by `freedom` on `shape`.
  const PlanChoice& best(const JobState& job, PlanFreedom freedom, const std::vector<NodeState>& nodes,
                         const Shape& shape);
  // The fastest plan that needs at most `host_bytes_per_gpu` of host memory for each GPU
  // (AllocMem, when the best plan does not fit next to the node's other jobs).
  PlanChoice best_within(const JobState& job, PlanFreedom freedom, const std::vector<NodeState>& nodes,
                         const Shape& shape, double host_bytes_per_gpu);
  // Iteration time of exactly `plan` on `slices` (0 when it cannot run there), with the
  // accumulation steps of `groups` when the slices span GPU types.
  double predict_s(const JobState& job, const ExecutionPlan& plan, const std::vector<NodeState>& nodes,
                   const std::vector<Slice>& slices, const GpuGroups& groups = {}) const;
  // Iteration time of the job's current allocation: as measured, unless that is
  // more than kImplausibleRatio off predict_s() (a job reporting 1e-9 s would be worth more
  // than any other use of its GPUs, and about to end), else as predicted.
  double current_s(const JobState& job, const std::vector<NodeState>& nodes) const;
  // Host memory `plan` needs for each GPU's process of `job` (offloaded states, overhead).
  double host_bytes_per_gpu(const JobState& job, const ExecutionPlan& plan) const;
  // JABAS: the best heterogeneous data-parallel plan of `job` on `first` and `second`,
  // shapes of two GPU types with the same GPUs on every node (best_hetero_plan).
  const PlanChoice& best_hetero(const JobState& job, const std::vector<NodeState>& nodes, const Shape& first,
                                const Shape& second);

  // The sensitivity curve of `job` on the type of `node`, up to every GPU of that type on
  // the nodes it may run on (JobState::nodes_allowed, the same for every job of its
  // application); `resize` false keeps the requested GPU count (the only useful count).
  const JobCurve& curve(const JobState& job, PlanFreedom freedom, bool resize, const std::vector<NodeState>& nodes,
                        int node);
  // Morphling §5 minimum demand of a guaranteed job: the fewest GPUs whose best plan is
  // at least as fast as its promise (the measured speed of its request, else the
  // requested plan on the requested GPUs as predicted), never more than requested. When
  // none is, the largest count of the curve within the request (a job grows only along
  // its curve: a minimum off it was never reached, and the job waited on an idle
  // cluster); the requested count when the curve has none.
  int min_gpus(const JobState& job, PlanFreedom freedom, bool resize, const std::vector<NodeState>& nodes, int node);
  // Rate of the requested plan on the requested GPUs on whole nodes of `node`'s type (request_shape()).
  double requested_rate(const JobState& job, const std::vector<NodeState>& nodes, int node);

  // Plans a policy may move a job to (the user's own plan on its own GPU count always
  // qualifies); the simulator's --measured-only keeps policies to measured configurations.
  using Admissible = std::function<bool(const std::string& app, const std::string& gpu_type, const ExecutionPlan& plan,
                                        const std::vector<int>& gpus_per_node)>;
  void restrict_to(Admissible admissible);
  // Only shapes with the same GPU count on every node (a Slurm job's --gpus-per-node, as
  // a Morph record holds it); morphd sets this, the simulator need not.
  void require_uniform_nodes();
  bool uniform_nodes() const { return uniform_nodes_; }

  // An online refit of `model` (model_refit.h) in every application of it from now on;
  // what was memoised is searched again.
  void use_refit(const std::string& model, const PerfModel& refit);
  const std::map<std::string, AppProfile>& apps() const { return apps_; }

  const OracleStats& stats() const { return stats_; }

 private:
  using PlanKey = std::tuple<std::string, PlanFreedom, std::string>;  // app, freedom, requested plan
  PlanKey plan_key(const JobState& job, PlanFreedom freedom) const;
  std::string type_key(const std::vector<NodeState>& nodes, int node) const;
  int capacity(const JobState& job, const std::vector<NodeState>& nodes, int node) const;
  // Why `shape` runs no plan of `job` under `freedom`, decided without building an
  // allocation or searching (the job's bounds, uniform nodes, its GPU types and
  // partitions, GPU counts no plan splits), or empty: a curve weighs every count up to
  // MaxGpusPerJob, and on a large cluster most of them are refused here.
  std::string refusal(const JobState& job, PlanFreedom freedom, const std::vector<NodeState>& nodes,
                      const Shape& shape) const;
  PlanChoice search(const JobState& job, PlanFreedom freedom, const std::vector<NodeState>& nodes,
                    const Shape& shape, double host_bytes_per_gpu_limit);
  MemoryOptions memory(const AppProfile& a) const;
  void forget();  // every memoised answer

  std::map<std::string, AppProfile> apps_;
  MemoryOptions memory_;  // the site's; an application's is memory(app)
  int max_gpus_per_job_;
  Admissible admissible_;
  bool uniform_nodes_ = false;
  std::map<std::tuple<PlanKey, std::string, Shape>, PlanChoice> best_;
  // + type, resize, requested GPUs, capacity()
  std::map<std::tuple<PlanKey, std::string, bool, int, int>, JobCurve> curves_;
  std::map<std::tuple<std::string, std::string, std::string, int, double, int>, int> demand_;  // + promise, capacity()
  std::map<std::tuple<std::string, std::string, Shape, std::string, Shape>, PlanChoice> hetero_;  // app, types, shapes
  OracleStats stats_;
};

}  // namespace morph::policy
