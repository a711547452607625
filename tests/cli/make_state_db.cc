// make_state_db PATH: a state database as morphd leaves it, for morph_state.bats.
//   job 101  guaranteed, moved from its request (1 x 4 a100, 80 samples/s predicted) to
//            1 x 8 a100; observed at 64 samples/s: below its promise. Its start decision
//            lists the chosen configuration and two that lost.
//   job 102  best-effort, waiting for GPUs.
// And what morphd's online refit left (morph models): gpt2-1.5b refitted online (k_dp 3),
// its jobs 101 (0.25 s on 8 a100) and 103 and 104 (0.40 and 0.44 s on 4); bert-336m, not
// refitted, measured by job 105 (0.10 s, dp=8 on 8 a100), and a point of job 106 on a
// node type morph.conf lacks.
#include <cstdio>
#include <exception>

#include "daemon/store/state_store.h"
#include "libmorph/perf/perf_store.h"
#include "libmorph/policy/alternatives.h"
#include "libmorph/record/job_record.h"

namespace {

using morph::policy::Alternative;
using morph::policy::Loss;

morph::Placement on_a100(int gpus, double iter_ms) {
  morph::ExecutionPlan plan;
  plan.dp = gpus;
  plan.micro_batch_size = 16 / gpus;
  return {"a100-80g", 1, gpus, 4, plan, iter_ms};
}

// A point as daemon/online_params.cc records it, on `gpus` GPUs of one dgx-a100.
morph::store::RefitPointRow point(const std::string& model, std::int64_t batch, std::int64_t seq,
                                  const std::string& job, const std::string& plan, int gpus, double seconds,
                                  double at, const std::string& node_type = "dgx-a100") {
  const std::string allocation = R"([{"node":"a100-1","node_type":")" + node_type + R"(","gpus":)" +
                                 std::to_string(gpus) + R"(,"cpus":)" + std::to_string(16 * gpus) + "}]";
  const std::string configuration = model + " " + plan + " on " + std::to_string(gpus) + "x a100";
  return {model, model + " b" + std::to_string(batch), configuration, job, batch, seq, plan, allocation, seconds, at};
}

void write_refit(morph::store::StateStore& state) {
  morph::PerfModel refit;
  refit.forward.per_sample_ms = 1;
  refit.params.k_dp = 3;
  state.record_fitted_params({"gpt2-1.5b", morph::perf_model_to_json("gpt2-1.5b", refit), "online", 1030, 0.02});
  const std::string eight = "dp=8 tp=1 pp=1 zero=0 offload=0 gc=0 ga=1 mb=1 mbs=2";
  const std::string four = "dp=4 tp=1 pp=1 zero=0 offload=0 gc=0 ga=1 mb=1 mbs=4";
  const std::string bert = "dp=8 tp=1 pp=1 zero=0 offload=0 gc=0 ga=1 mb=1 mbs=8";
  state.record_refit_points(
      std::vector<morph::store::RefitPointRow>{point("gpt2-1.5b", 16, 1024, "101", eight, 8, 0.25, 1020),
                                               point("gpt2-1.5b", 16, 1024, "103", four, 4, 0.40, 1021),
                                               point("gpt2-1.5b", 16, 1024, "104", four, 4, 0.44, 1022),
                                               point("bert-336m", 64, 512, "105", bert, 8, 0.10, 1023),
                                               point("bert-336m", 64, 512, "106", bert, 8, 0.10, 1024, "no-such-node")},
      16);
}

void write(const std::string& path) {
  morph::store::StateStore state = morph::store::StateStore::open(path);
  morph::JobRecord r;
  r.request.model = "gpt2-1.5b";
  r.request.global_batch = 16;
  r.request.sla = morph::Sla::guaranteed;
  r.request.sla_given = true;
  r.current = on_a100(8, 100);
  r.baseline = on_a100(4, 200);
  state.record_job({101, "gpt2-1.5b", 16, morph::Sla::guaranteed, 1000, 1000, std::nullopt});
  state.record_plan({101, 1010, morph::to_admin_comment(r), "a100-80g", 1, 8, 160, std::nullopt});
  state.record_observations(std::vector<morph::store::Observation>{{101, 1020, 10, 0.25, 16, "dp=8"},
                                                                   {101, 1021, 11, 0.25, 16, "dp=8"}});
  const std::vector<Alternative> start = {
      {"a100-80g", 8, morph::to_string(r.current.plan), 0.1, 160, Loss::none, ""},
      {"a100-80g", 16, morph::to_string(on_a100(16, 60).plan), 0.06, 266.7, Loss::no_room, "needs 16 GPUs, 8 free"},
      {"v100-32g", 8, "", 0, 0, Loss::infeasible, "no plan fits"}};
  state.record_decision({0, 1010, 101, "start", "start: 1 node x 4 a100-80g GPUs -> 1 node x 8 a100-80g GPUs",
                         morph::policy::alternatives_to_json(start)});
  state.record_job({102, "gpt2-1.5b", 16, morph::Sla::best_effort, 1000, 1005, std::nullopt});
  const std::vector<Alternative> wait = {
      {"a100-80g", 4, morph::to_string(on_a100(4, 200).plan), 0.2, 80, Loss::no_room, "needs 4 GPUs, 0 free"}};
  state.record_decision({0, 1011, 102, "wait", morph::policy::wait_reason(wait),
                         morph::policy::alternatives_to_json(wait)});
  write_refit(state);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_state_db PATH\n");
    return 2;
  }
  try {
    write(argv[1]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_state_db: %s\n", e.what());
    return 1;
  }
  return 0;
}
