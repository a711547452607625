#include "tests/trainer/options.h"

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>

#include "libmorph/adaptive/batch_controller.h"
#include "libmorph/record/job_record.h"
#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"
#include "tools/command_line/command_line.h"

namespace morph::trainer {

int parse_signal(const std::string& text) {
  std::string name = to_upper(text);
  if (name.rfind("SIG", 0) == 0) name = name.substr(3);
  constexpr std::pair<const char*, int> kSignals[] = {
      {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"TERM", SIGTERM}, {"INT", SIGINT}, {"HUP", SIGHUP}, {"CONT", SIGCONT}};
  for (const auto& [n, number] : kSignals)
    if (name == n) return number;
  if (!name.empty() && name.find_first_not_of("0123456789") == std::string::npos)
    return static_cast<int>(parse_int(name, "--checkpoint-signal", 1, 64));
  throw Error(fmt::format("--checkpoint-signal: {} is not SIGUSR1, SIGUSR2, SIGTERM, SIGINT, SIGHUP or SIGCONT",
                          quote(text)));
}

namespace {

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

// Under morphrun: the plan's layout from MORPH_DP, MORPH_TP, MORPH_PP and MORPH_ZERO.
std::string layout_from_env() {
  if (env("MORPH_DP").empty()) return {};
  return fmt::format("dp={},tp={},pp={},zero={}", env("MORPH_DP"), env("MORPH_TP"), env("MORPH_PP"), env("MORPH_ZERO"));
}

// --emulate-speed: the iteration time Morph's model predicted for the job's current plan
// on its GPU type, as the record keeps it (iter_ms; job_submit_morph and morphd write it
// with every plan), scaled by `factor`.
double emulated_step_seconds(double factor) {
  const std::string record = env("MORPH_RECORD");
  if (record.empty())
    throw Error("--emulate-speed needs the job's record (MORPH_RECORD): run under morphrun in a Morph job");
  const double iter_ms = parse_admin_comment(record).current.iter_ms;
  if (!(iter_ms > 0)) throw Error("--emulate-speed: the job's record predicts no iteration time (iter_ms=0)");
  return iter_ms / 1e3 * factor;
}

// --rank-batch: this rank's share from morphrun's per-rank MORPH_LOCAL_BATCH,
// MORPH_WORKERS and MORPH_GA.
void read_rank_batch(Options& o) {
  std::int64_t v[3];
  const char* names[] = {"MORPH_LOCAL_BATCH", "MORPH_WORKERS", "MORPH_GA"};
  for (int i = 0; i < 3; ++i) {
    if (env(names[i]).empty())
      throw Error(fmt::format("--rank-batch needs {} (morphrun sets it for every rank)", names[i]));
    v[i] = parse_int(env(names[i]), names[i], 1, 1 << 20);
  }
  if (v[1] * v[2] > (1 << 16))
    throw Error(fmt::format("--rank-batch: MORPH_WORKERS x MORPH_GA = {} micro-batches, above 65536", v[1] * v[2]));
  o.rank_micro_batches = static_cast<int>(v[1] * v[2]);
  o.rank_samples = static_cast<std::uint64_t>(v[0] * v[1] * v[2]);
}

}  // namespace

std::optional<Options> parse_options(int argc, char** argv, bool print) {
  Options o;
  // Under morphrun(1) the plan, the checkpoint folder, the checkpoint to resume from, the
  // checkpoint signal and the metrics FIFO come from its MORPH_* variables; options win.
  std::string layout = layout_from_env();
  o.checkpoint_dir = env("MORPH_CHECKPOINT_DIR");
  o.resume = env("MORPH_CHECKPOINT");
  o.metrics = env("MORPH_METRICS");
  o.model_name = env("MORPH_MODEL");
  std::string signal = env("MORPH_CHECKPOINT_SIGNAL");
  std::uint64_t save_at = 0;
  command_line::Program app("morph-trainer",
                            "morph-trainer: a tiny tensor/pipeline/data-parallel MLP language model with ZeRO, "
                            "checkpointing in Morph's sharded format");
  app.option("--layout", layout, "dp=D,tp=T,pp=P,zero=Z (MPI world size must be D*T*P; default: MORPH_DP..)");
  app.option("--layers", o.layers, "residual MLP blocks").range(1, 4096);
  app.option("--hidden", o.hidden, "hidden size h (the MLP is 4h wide)").range(1, 1 << 16);
  app.option("--vocab", o.vocab, "vocabulary size V").range(2, 1 << 24);
  app.option("--vocab-multiple", o.vocab_multiple, "pad the vocabulary to a multiple of this times tp")
      .range(1, 1 << 16);
  app.option("--samples", o.samples, "dataset size").range(std::uint64_t{1}, std::uint64_t{1} << 40);
  app.option("--global-batch", o.global_batch, "samples per optimizer step")
      .range(std::uint64_t{1}, std::uint64_t{1} << 30);
  app.option("--micro-batches", o.micro_batches, "micro-batches per DP rank and step").range(1, 1 << 16);
  app.option("--steps", o.steps, "train until this many steps are done")
      .range(std::uint64_t{1}, std::uint64_t{1} << 40);
  app.option("--lr", o.lr, "Adam learning rate").range(0.0, 10.0);
  app.option("--seed", o.seed, "initialisation and data-order seed");
  app.option("--checkpoint-dir", o.checkpoint_dir, "checkpoints are written to DIR/step_<N>");
  command_line::Option save =
      app.option("--save-at", save_at, "save after step K and exit 0").range(std::uint64_t{1}, std::uint64_t{1} << 40);
  app.option("--save-every", o.save_every, "also save after every N steps and go on training")
      .range(std::uint64_t{1}, std::uint64_t{1} << 40);
  app.option("--save-seconds", o.save_seconds,
             "make every save last at least this long before it commits (a large model's save, to kill "
             "the trainer in the middle of one)")
      .range(0.0, 3600.0);
  app.option("--resume", o.resume, "continue from this checkpoint (its layout must be --layout)");
  app.option("--loss-log", o.loss_log, "rank 0 writes one \"step loss\" line per step");
  app.option("--checkpoint-signal", signal,
             "on this signal, finish the step, save to --checkpoint-dir/step_<N> and exit 0");
  app.option("--min-step-seconds", o.min_step_seconds, "make every step last at least this long").range(0.0, 3600.0);
  app.option("--emulate-speed", o.emulate_speed,
             "make every step last FACTOR times the iteration time Morph predicted for the job's plan and "
             "GPU type (iter_ms of MORPH_RECORD): the emulated cluster runs at the speed of the one it emulates")
      .range(0.0, 1000.0);
  // A job submitted with --morph-adaptive-batch (morphrun's MORPH_ADAPTIVE_BATCH).
  std::string adaptive = env("MORPH_ADAPTIVE_BATCH");
  app.option("--adaptive-batch", adaptive,
             "MIN:MAX: after every --similarity-every P steps, grow the global batch by --adaptive-rate when "
             "the gradient similarity is below --similarity-target, shrink it when above, within MIN..MAX, "
             "and scale the learning rate by sqrt(B / B_ref) (JABAS, SimiGrad)");
  app.option("--similarity-target", o.similarity_target, "gamma of --adaptive-batch").range(-1.0, 1.0);
  app.option("--adaptive-rate", o.adaptive_rate, "alpha of --adaptive-batch").range(0.0, 1.0);
  app.flag("--rank-batch", o.rank_batch,
           "process MORPH_LOCAL_BATCH x MORPH_WORKERS x MORPH_GA samples on this rank, as morphrun sets them "
           "per rank (JABAS's heterogeneous data parallelism; implied when MORPH_GPU_GROUPS is set)");
  app.option("--similarity-every", o.similarity_every,
             "every P steps, the cosine between the gradients of the batch's two halves (JABAS's adaptive "
             "batching signal), in the metrics line and the step's output")
      .range(std::uint64_t{1}, std::uint64_t{1} << 40);
  app.flag("--quiet", o.quiet, "no per-step output");
  if (!app.parse_or_throw(argc, argv, print)) return std::nullopt;
  if (layout.empty()) throw Error("--layout is required (or run under morphrun, which sets MORPH_DP, MORPH_TP, ...)");
  if (!adaptive.empty()) {
    const AdaptiveBatchRange range = parse_adaptive_batch(adaptive);
    o.adaptive_min = range.min_batch;
    o.adaptive_max = range.max_batch;
    if (o.similarity_every == 0 && !app.find("--adaptive-batch").given())
      o.similarity_every = Options::kJobSimilarityEvery;  // MORPH_ADAPTIVE_BATCH without a period of its own
    if (o.similarity_every == 0) throw Error("--adaptive-batch needs --similarity-every P, its period");
    if (static_cast<std::int64_t>(o.global_batch) < o.adaptive_min ||
        static_cast<std::int64_t>(o.global_batch) > o.adaptive_max)
      throw Error(fmt::format("--global-batch {} is outside --adaptive-batch {}", o.global_batch, adaptive));
  }
  if (!env("MORPH_GPU_GROUPS").empty()) o.rank_batch = true;
  if (o.rank_batch && o.adaptive_max > 0)
    throw Error("--adaptive-batch and --rank-batch: per-rank shares are fixed for one global batch");
  if (o.rank_batch) {
    if (app.find("--micro-batches").given())
      throw Error("--micro-batches and --rank-batch: the rank's micro-batches are MORPH_WORKERS x MORPH_GA");
    read_rank_batch(o);
  }
  if (o.emulate_speed > 0) o.min_step_seconds = std::max(o.min_step_seconds, emulated_step_seconds(o.emulate_speed));
  o.layout = state::parse_layout(layout, "--layout");
  if (save.given()) o.save_at = save_at;
  // morphrun names its checkpoint signal to every trainer (MORPH_CHECKPOINT_SIGNAL); with
  // no checkpoint folder there is nothing to save, and only --checkpoint-signal insists.
  const bool signal_option = app.find("--checkpoint-signal").given();
  if (!signal.empty() && (signal_option || !o.checkpoint_dir.empty())) {
    o.checkpoint_signal = parse_signal(signal);
    o.checkpoint_signal_name = signal;
  }
  if ((o.save_at || o.checkpoint_signal || o.save_every) && o.checkpoint_dir.empty())
    throw Error("--save-at, --save-every and --checkpoint-signal need --checkpoint-dir");
  if (o.save_at && *o.save_at > o.steps)
    throw Error(fmt::format("--save-at {} is after --steps {}", *o.save_at, o.steps));
  return o;
}

}  // namespace morph::trainer
