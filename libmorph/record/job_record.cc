#include "libmorph/record/job_record.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "libmorph/request/limits.h"
#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"

namespace morph {
namespace {

constexpr const char* kWhat = "AdminComment";

void append_placement(std::string& out, const Placement& p, std::string_view prefix) {
  const ExecutionPlan& x = p.plan;
  out += fmt::format(
      " {0}type={1} {0}nodes={2} {0}gpus_per_node={3} {0}cpus_per_gpu={4} {0}dp={5} {0}tp={6} {0}pp={7} {0}zero={8} "
      "{0}offload={9} {0}gc={10} {0}ga={11} {0}mb={12} {0}mbs={13} {0}iter_ms={14:.3f}",
      prefix, p.gpu_type.empty() ? "-" : p.gpu_type, p.nodes, p.gpus_per_node, p.cpus_per_gpu, x.dp, x.tp, x.pp,
      x.zero_stage, x.offload ? 1 : 0, x.checkpointing ? 1 : 0, x.ga_steps, x.micro_batches, x.micro_batch_size,
      p.iter_ms);
  if (p.heterogeneous()) out += fmt::format(" {}groups={}", prefix, to_string(p.groups));
}

// A value the record keeps as the user gave it (--gres, --constraint): one word, or a space
// in it would make the rest of it keys of the record that no check has seen.
const std::string& record_word(std::string_view key, const std::string& value, std::string_view what) {
  const bool word = !value.empty() && std::none_of(value.begin(), value.end(), [](char c) {
    return static_cast<unsigned char>(c) <= ' ' || c == '\x7f';
  });
  if (!word) throw Error(fmt::format("{}: {}={} is not {} (one word without spaces)", kWhat, key, quote(value), what));
  return value;
}

class Fields {
 public:
  explicit Fields(std::map<std::string, std::string> values) : values_(std::move(values)) {}
  std::string take(const std::string& key) {
    auto it = values_.find(key);
    if (it == values_.end()) throw Error(fmt::format("{}: missing {}=", kWhat, key));
    std::string v = std::move(it->second);
    values_.erase(it);
    return v;
  }
  bool has(const std::string& key) const { return values_.count(key) > 0; }
  int integer(const std::string& key, int min, int max) {
    return static_cast<int>(request_integer(fmt::format("{}: {}", kWhat, key), take(key), min, max));
  }
  void finish() const {
    if (!values_.empty()) throw Error(fmt::format("{}: unknown key {}", kWhat, quote(values_.begin()->first)));
  }

 private:
  std::map<std::string, std::string> values_;
};

// The samples per iteration a placement's plan may process: the job's batch, or for a job
// of --morph-adaptive-batch any batch within its bounds (morphd plans such a job for the
// batch it forecasts, libmorph/adaptive/epoch_batch.h).
struct BatchBounds {
  std::int64_t min = 0;
  std::int64_t max = 0;
  bool holds(std::int64_t samples) const { return samples >= min && samples <= max; }
  std::string text() const { return min == max ? fmt::format("{}", min) : fmt::format("{}:{}", min, max); }
};

// A heterogeneous placement (record/gpu_groups.h): untyped, pure data parallelism over
// every GPU, the groups' nodes and samples adding up.
void check_groups(const Placement& p, const std::string& prefix, const BatchBounds& batch) {
  const ExecutionPlan& x = p.plan;
  if (!p.gpu_type.empty())
    throw Error(fmt::format("{}: {}type={} with {}groups=: a heterogeneous placement names its types in the groups",
                            kWhat, prefix, p.gpu_type, prefix));
  if (x.tp != 1 || x.pp != 1 || x.ga_steps != 1 || x.micro_batches != 1 || x.dp != p.gpus())
    throw Error(fmt::format("{}: {}groups= needs dp={} (every GPU) and tp=pp=ga=mb=1, not {}", kWhat, prefix, p.gpus(),
                            to_string(x)));
  int nodes = 0;
  std::int64_t samples = 0;
  for (const GpuGroup& g : p.groups) {
    nodes += g.nodes;  // each at most MORPH_MAX_NODES, in at most MORPH_MAX_GPU_GROUPS groups
    // nodes x gpus_per_node x mbs x workers x ga exceeds 64 bits within the fields' limits.
    std::int64_t group_samples = 0;
    if (__builtin_mul_overflow(std::int64_t{g.nodes} * p.gpus_per_node, g.samples_per_gpu(x.micro_batch_size),
                               &group_samples) ||
        __builtin_add_overflow(samples, group_samples, &samples))
      throw Error(fmt::format("{}: {}groups= {}: nodes x {}gpus_per_node x {}mbs x workers x ga is beyond 2^63 "
                              "samples per iteration",
                              kWhat, prefix, g.gpu_type, prefix, prefix));
  }
  if (nodes != p.nodes)
    throw Error(fmt::format("{}: {}groups= hold {} nodes, the placement {}", kWhat, prefix, nodes, p.nodes));
  if (!batch.holds(samples))
    throw Error(fmt::format("{}: {}groups= process {} samples per iteration, the batch is {}", kWhat, prefix, samples,
                            batch.text()));
}

Placement take_placement(Fields& f, const std::string& prefix, const BatchBounds& batch) {
  Placement p;
  p.gpu_type = f.take(prefix + "type");
  if (p.gpu_type == "-") p.gpu_type.clear();
  p.nodes = f.integer(prefix + "nodes", 1, MORPH_MAX_NODES);
  p.gpus_per_node = f.integer(prefix + "gpus_per_node", 1, MORPH_MAX_GPUS_PER_NODE);
  p.cpus_per_gpu = f.integer(prefix + "cpus_per_gpu", 1, MORPH_MAX_CPUS_PER_GPU);
  ExecutionPlan& x = p.plan;
  x.dp = f.integer(prefix + "dp", 1, MORPH_MAX_PLAN_VALUE);
  x.tp = f.integer(prefix + "tp", 1, MORPH_MAX_PLAN_VALUE);
  x.pp = f.integer(prefix + "pp", 1, MORPH_MAX_PLAN_VALUE);
  x.zero_stage = f.integer(prefix + "zero", 0, 3);
  x.offload = f.integer(prefix + "offload", 0, 1) != 0;
  x.checkpointing = f.integer(prefix + "gc", 0, 1) != 0;
  x.ga_steps = f.integer(prefix + "ga", 1, MORPH_MAX_PLAN_VALUE);
  x.micro_batches = f.integer(prefix + "mb", 1, MORPH_MAX_PLAN_VALUE);
  x.micro_batch_size = f.integer(prefix + "mbs", 1, MORPH_MAX_PLAN_VALUE);
  p.iter_ms = parse_double(f.take(prefix + "iter_ms"), fmt::format("{}: {}iter_ms", kWhat, prefix), 0,
                           MORPH_MAX_ITER_MS);
  validate_plan_shape(x, kWhat);
  if (f.has(prefix + "groups")) {
    p.groups = parse_gpu_groups(f.take(prefix + "groups"), fmt::format("{}: {}groups", kWhat, prefix));
    check_groups(p, prefix, batch);
    return p;
  }
  if (x.gpus() != p.gpus())
    throw Error(fmt::format("{}: {}plan uses {} GPUs, the placement {} ({} nodes x {})", kWhat, prefix, x.gpus(),
                            p.gpus(), p.nodes, p.gpus_per_node));
  if (!batch.holds(x.global_batch()))  // validate_plan_shape bounded it: no overflow
    throw Error(fmt::format("{}: {}plan processes {} samples per iteration, the batch is {}", kWhat, prefix,
                            x.global_batch(), batch.text()));
  return p;
}

}  // namespace

std::string describe(const Placement& p) {
  return fmt::format("{} node{} x {} {} GPUs", p.nodes, p.nodes == 1 ? "" : "s", p.gpus_per_node,
                     p.heterogeneous() ? group_types(p.groups) : p.gpu_type);
}

bool within_node_bounds(const JobRecord& r, int nodes) {
  return nodes >= r.min_nodes && (r.max_nodes == 0 || nodes <= r.max_nodes);
}

std::string node_bounds(const JobRecord& r) {
  if (r.max_nodes == 0) return fmt::format("{}-", std::max(1, r.min_nodes));
  return r.min_nodes == r.max_nodes ? std::to_string(r.min_nodes) : fmt::format("{}-{}", std::max(1, r.min_nodes), r.max_nodes);
}

bool is_job_record(std::string_view text) { return trim(text).substr(0, kRecordPrefix.size()) == kRecordPrefix; }

std::string to_admin_comment(const JobRecord& r) {
  const MorphRequest& q = r.request;
  std::string out = fmt::format(
      "{} model={} batch={} seq={} sla={} sla_given={} framework={} plans={} gpus={}-{} gpu_types={} base_plan={}",
      kRecordVersion, q.model, q.global_batch, q.seq_len, to_string(q.sla), q.sla_given ? 1 : 0,
      to_string(q.framework), q.plans, q.gpus_min, q.gpus_max,
      q.gpu_types.empty() ? "-" : fmt::format("{}", fmt::join(q.gpu_types, ",")),
      q.baseline_plan.empty() ? "-" : q.baseline_plan);
  append_placement(out, r.current, "");
  if (r.baseline) append_placement(out, *r.baseline, "base_");
  if (!r.other_gres.empty()) out += fmt::format(" other_gres={}", record_word("other_gres", r.other_gres, "a GRES list"));
  if (q.iterations > 0) out += fmt::format(" iterations={}", q.iterations);
  if (q.adaptive_batch()) out += fmt::format(" adaptive_batch={}:{}", q.adaptive_min, q.adaptive_max);
  if (!r.constraint.empty())
    out += fmt::format(" constraint={}", record_word("constraint", r.constraint, "a feature expression"));
  if (r.memory_mb_per_node > 0) out += fmt::format(" mem_mb={}", r.memory_mb_per_node);
  if (r.min_cpus_per_node > 0) out += fmt::format(" min_cpus={}", r.min_cpus_per_node);
  if (r.min_nodes > 0) out += fmt::format(" min_nodes={}", r.min_nodes);
  if (r.max_nodes > 0) out += fmt::format(" max_nodes={}", r.max_nodes);
  return out;
}

JobRecord parse_admin_comment(std::string_view text) {
  const std::vector<std::string_view> words = split(trim(text), ' ');
  if (words.empty() || words.front() != kRecordVersion)
    throw Error(fmt::format("{}: not a {} record: {}", kWhat, kRecordVersion, quote(text)));
  std::map<std::string, std::string> values;
  for (std::size_t i = 1; i < words.size(); ++i) {
    if (words[i].empty()) continue;
    const std::size_t eq = words[i].find('=');
    if (eq == std::string_view::npos || eq == 0)
      throw Error(fmt::format("{}: {} is not key=value", kWhat, quote(words[i])));
    const std::string key(words[i].substr(0, eq));
    if (!values.emplace(key, std::string(words[i].substr(eq + 1))).second)
      throw Error(fmt::format("{}: {} given twice", kWhat, key));
  }
  Fields f(std::move(values));
  JobRecord r;
  MorphRequest& q = r.request;
  set_morph_option(q, "model", f.take("model"));
  set_morph_option(q, "batch", f.take("batch"));
  q.seq_len = request_integer(fmt::format("{}: seq", kWhat), f.take("seq"), 0, MORPH_MAX_SEQ);
  set_morph_option(q, "sla", f.take("sla"));
  q.sla_given = f.integer("sla_given", 0, 1) != 0;
  set_morph_option(q, "framework", f.take("framework"));
  set_morph_option(q, "plans", f.take("plans"));
  {
    const std::string gpus = f.take("gpus");
    const std::size_t dash = gpus.find('-');
    if (dash == std::string::npos) throw Error(fmt::format("{}: gpus={} is not MIN-MAX", kWhat, quote(gpus)));
    const std::string what = fmt::format("{}: gpus", kWhat);
    q.gpus_min = static_cast<int>(request_integer(what, gpus.substr(0, dash), 1, MORPH_MAX_GPUS));
    q.gpus_max = static_cast<int>(request_integer(what, gpus.substr(dash + 1), 0, MORPH_MAX_GPUS));
  }
  if (const std::string types = f.take("gpu_types"); types != "-") set_morph_option(q, "gpu-type", types);
  if (const std::string plan = f.take("base_plan"); plan != "-") set_morph_option(q, "plan", plan);
  if (f.has("adaptive_batch")) set_morph_option(q, "adaptive-batch", f.take("adaptive_batch"));
  validate_request(q);
  const BatchBounds batch{q.global_batch, q.global_batch};
  r.current = take_placement(f, "", q.adaptive_batch() ? BatchBounds{q.adaptive_min, q.adaptive_max} : batch);
  if (f.has("base_type")) r.baseline = take_placement(f, "base_", batch);  // the user's own plan
  if (f.has("other_gres")) r.other_gres = record_word("other_gres", f.take("other_gres"), "a GRES list");
  if (f.has("iterations")) set_morph_option(q, "iterations", f.take("iterations"));
  if (f.has("constraint")) r.constraint = record_word("constraint", f.take("constraint"), "a feature expression");
  if (f.has("mem_mb"))
    r.memory_mb_per_node = request_integer(fmt::format("{}: mem_mb", kWhat), f.take("mem_mb"), 1, MORPH_MAX_MEMORY_MB);
  if (f.has("min_cpus")) r.min_cpus_per_node = f.integer("min_cpus", 1, MORPH_MAX_MIN_CPUS);
  if (f.has("min_nodes")) r.min_nodes = f.integer("min_nodes", 1, MORPH_MAX_NODES);
  if (f.has("max_nodes")) r.max_nodes = f.integer("max_nodes", 1, MORPH_MAX_NODES);
  if (r.max_nodes > 0 && r.min_nodes > r.max_nodes)
    throw Error(fmt::format("{}: min_nodes={} is above max_nodes={}", kWhat, r.min_nodes, r.max_nodes));
  if (!within_node_bounds(r, r.current.nodes))
    throw Error(fmt::format("{}: nodes={} is outside the job's node bounds {} (-N, its partitions' MinNodes and MaxNodes)",
                            kWhat, r.current.nodes, node_bounds(r)));
  f.finish();
  return r;
}

}  // namespace morph
