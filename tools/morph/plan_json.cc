#include "tools/morph/plan_json.h"

namespace morph::cli {

nlohmann::json to_json(const ExecutionPlan& p) {
  return {{"dp", p.dp}, {"tp", p.tp}, {"pp", p.pp}, {"zero", p.zero_stage}, {"offload", p.offload},
          {"gc", p.checkpointing}, {"ga", p.ga_steps}, {"micro_batches", p.micro_batches},
          {"micro_batch_size", p.micro_batch_size}, {"family", p.family()}, {"text", to_string(p)}};
}

nlohmann::json to_json(const PlanOption& o) {
  nlohmann::json j{{"plan", to_json(o.plan)}, {"feasible", o.feasible}};
  if (!o.feasible) j["reason"] = o.reason;
  if (o.memory.gpu_bytes() > 0)
    j["memory"] = {{"gpu_bytes", o.memory.gpu_bytes()},
                   {"weights_bytes", o.memory.weights_bytes},
                   {"gradients_bytes", o.memory.gradients_bytes},
                   {"optimizer_bytes", o.memory.optimizer_bytes},
                   {"activations_bytes", o.memory.activations_bytes},
                   {"buckets_bytes", o.memory.buckets_bytes},
                   {"overhead_bytes", o.memory.overhead_bytes},
                   {"host_bytes_per_node", o.memory_fit.host_bytes_per_node}};
  if (o.feasible) {
    j["time_ms"] = {{"forward", o.time.forward_ms}, {"backward_step", o.time.backward_ms},
                    {"cc", o.time.cc_ms}, {"opt", o.time.opt_ms}, {"oo", o.time.oo_ms},
                    {"iteration", o.time.iter_ms}};
    j["throughput_samples_per_s"] = o.throughput;
  }
  return j;
}

}  // namespace morph::cli
