#include "tests/trainer/trainer.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>

#include <fmt/format.h>

#include "libmorph/adaptive/batch_controller.h"
#include "libmorph/launch/metrics_line.h"
#include "libmorph/state/dataset_order.h"
#include "libmorph/util/error.h"
#include "tests/trainer/checkpoint_io.h"
#include "tests/trainer/checkpoint_signal.h"
#include "tests/trainer/collective.h"
#include "tests/trainer/dataset.h"
#include "tests/trainer/init.h"
#include "tests/trainer/similarity.h"

namespace morph::trainer {
namespace {

constexpr int kForwardTag = 0;
constexpr int kBackwardTag = 1;

ModelSizes sizes_of(const Options& o) { return {o.vocab, o.hidden, o.layers, o.vocab_multiple}; }

// The step's metrics line (morphrun(1), METRICS) by the protocol's own formatter. A loss the
// line refuses (a diverged run's NaN or infinity; morphrun dropped the whole line) is left
// out with the similarity that needs it, a refused similarity alone; empty when even the
// step, time and samples are refused.
std::string metrics_line(launch::IterationMetrics m) {
  for (;;) {
    try {
      return launch::format_metrics_line(m);
    } catch (const Error&) {
      if (m.similarity) m.similarity.reset();
      else if (m.loss) m.loss.reset();
      else return {};
    }
  }
}

}  // namespace

Trainer::Trainer(const Options& o, const state::StateSpec& spec, const Groups& g, LocalState& st)
    : o_(o),
      spec_(spec),
      g_(g),
      st_(st),
      adam_{o.lr},
      model_(sizes_of(o), state::first_layer(spec, g.layout(), g.coords().pp),
             state::end_layer(spec, g.layout(), g.coords().pp), g.first_stage(), g.last_stage(), g.tp(), st) {}

Trainer::~Trainer() {
  if (loss_log_) std::fclose(loss_log_);
  if (metrics_) std::fclose(metrics_);
}

int Trainer::run() {
  const bool root = g_.rank() == 0;
  std::optional<AdaptiveState> resumed;  // the batch a resumed adaptive run had reached
  if (!o_.resume.empty()) {
    progress_ = load_checkpoint(o_.resume, o_, spec_, g_, st_, &resumed);
  } else {
    initialise(st_, spec_, o_.seed);
  }
  collectively([&] {
    if (o_.save_at && *o_.save_at <= progress_.step)
      throw Error(fmt::format("--save-at {}: the checkpoint is already at step {}", *o_.save_at, progress_.step));
    if (root && o_.save_at && std::filesystem::exists(checkpoint_path(*o_.save_at)))
      throw Error(fmt::format("--save-at {}: {} already exists; a checkpoint is never overwritten", *o_.save_at,
                              checkpoint_path(*o_.save_at)));
    // A resumed run continues its loss log.
    if (root && !o_.loss_log.empty() && !(loss_log_ = std::fopen(o_.loss_log.c_str(), o_.resume.empty() ? "w" : "a")))
      throw Error(fmt::format("--loss-log {}: cannot create: {}", o_.loss_log, std::strerror(errno)));
    if (root && !o_.metrics.empty() && !(metrics_ = std::fopen(o_.metrics.c_str(), "w")))
      throw Error(fmt::format("MORPH_METRICS {}: cannot open: {}", o_.metrics, std::strerror(errno)));
    if (o_.checkpoint_signal) install_checkpoint_signal(o_.checkpoint_signal);
  });
  if (o_.rank_batch) {
    collectively([&] { split_ = BatchSplit::gather(o_.rank_samples, o_.global_batch, g_.dp()); });
    if (root && !o_.quiet)
      std::printf("morph-trainer: rank batches %s (MORPH_LOCAL_BATCH x MORPH_WORKERS x MORPH_GA per DP rank)\n",
                  fmt::format("{}", fmt::join(split_.counts(), ",")).c_str());
  }
  if (o_.adaptive_max > 0)
    adaptive_.emplace(BatchControllerOptions{o_.similarity_target, o_.adaptive_rate,
                                             static_cast<int>(std::min<std::uint64_t>(o_.similarity_every, 1 << 30)),
                                             {o_.adaptive_min, o_.adaptive_max},
                                             static_cast<std::int64_t>(o_.global_batch), LrScaling::square_root});
  // A resumed adaptive run goes on at the batch and learning rate it had reached; its
  // progress is a sum of batches of several sizes (a stream of batch 1 takes any).
  state::SampleStream stream({o_.samples, o_.seed}, resumed ? 1 : o_.global_batch, progress_.samples);
  if (resumed) {
    collectively([&] { adaptive_->resume(resumed->iteration, resumed->global_batch); });
    stream.set_global_batch(static_cast<std::uint64_t>(resumed->global_batch));
    adam_.lr = o_.lr * adaptive_->lr_scale();
    if (root && !o_.quiet)
      std::printf("morph-trainer: adaptive batch resumed at %lld (learning rate x%.6g)\n",
                  static_cast<long long>(resumed->global_batch), adaptive_->lr_scale());
  }
  if (root && !o_.quiet)
    std::printf("morph-trainer: layout %s, %s step %llu, training to step %llu\n",
                state::to_string(g_.layout()).c_str(), o_.resume.empty() ? "fresh start at" : "resumed at",
                static_cast<unsigned long long>(progress_.step), static_cast<unsigned long long>(o_.steps));
  while (progress_.step < o_.steps) {
    const std::uint64_t number = progress_.step + 1;
    const auto start = std::chrono::steady_clock::now();
    const std::uint64_t samples = stream.global_batch();
    const StepResult result = step(stream.next_batch(), number);
    const double loss = result.loss;
    if (o_.min_step_seconds > 0)
      std::this_thread::sleep_until(start + std::chrono::duration<double>(o_.min_step_seconds));
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    progress_ = {number, stream.progress_samples()};
    if (root) {
      if (metrics_) {  // morphrun(1), METRICS: STEP SECONDS SAMPLES [LOSS [SIMILARITY]]
        if (const std::string line = metrics_line({number, seconds, samples, loss, result.similarity}); !line.empty())
          std::fprintf(metrics_, "%s\n", line.c_str());
        std::fflush(metrics_);
      }
      if (loss_log_) {
        std::fprintf(loss_log_, "%llu %.17g\n", static_cast<unsigned long long>(number), loss);
        std::fflush(loss_log_);
      }
      if (!o_.quiet)
        std::printf("step %llu loss %.17g%s\n", static_cast<unsigned long long>(number), loss,
                    result.similarity ? fmt::format(" similarity {:.9g}", *result.similarity).c_str() : "");
      std::fflush(stdout);
    }
    if (adaptive_ && result.similarity) {  // the same value on every rank: the same batch everywhere
      const BatchStep next = adaptive_->observe(*result.similarity);
      if (root && !o_.quiet && static_cast<std::uint64_t>(next.global_batch) != samples)
        std::printf("morph-trainer: step %llu similarity %.6g: global batch %llu -> %lld, learning rate x%.6g\n",
                    static_cast<unsigned long long>(number), *result.similarity,
                    static_cast<unsigned long long>(samples), static_cast<long long>(next.global_batch), next.lr_scale);
      stream.set_global_batch(static_cast<std::uint64_t>(next.global_batch));
      adam_.lr = o_.lr * next.lr_scale;
    }
    // One save per step at most: the one that ends the run, else a periodic one.
    const bool at = o_.save_at && number == *o_.save_at;
    const bool asked = !at && o_.checkpoint_signal && checkpoint_requested(MPI_COMM_WORLD);
    if (at || asked) {
      save(at ? "--save-at" : "signal " + o_.checkpoint_signal_name);
      return 0;
    }
    if (o_.save_every > 0 && number % o_.save_every == 0 && number < o_.steps) save("--save-every");
  }
  return 0;
}

Trainer::StepResult Trainer::step(const std::vector<std::uint64_t>& batch, std::uint64_t number) {
  const int h = o_.hidden;
  const bool similarity = o_.similarity_every > 0 && number % o_.similarity_every == 0;
  const auto block = split_.block(batch, g_.coords().dp, g_.layout().dp);
  int count = o_.rank_batch ? o_.rank_micro_batches : o_.micro_batches;
  if (similarity) count = std::max(count, 2);  // two halves (the sums do not depend on the split)
  const std::vector<MicroBatch> micro = micro_batches(block, count, o_.seed, o_.vocab);
  const std::size_t half = (micro.size() + 1) / 2;  // half A: micro-batches [0, half)
  std::vector<double> half_a;
  std::fill(st_.grads.begin(), st_.grads.end(), 0.0);
  std::vector<MicroCache> caches(micro.size());
  const double scale = 1.0 / static_cast<double>(batch.size());  // the mean over the GLOBAL batch
  double loss_sum = 0;
  // GPipe: all forwards, then all backwards; messages between two stages keep their order.
  for (std::size_t m = 0; m < micro.size(); ++m) {
    const int n = micro[m].size();
    Mat in;
    if (!g_.first_stage()) {
      in.resize(n, h);
      MPI_Recv(in.data(), n * h, MPI_DOUBLE, g_.prev_stage(), kForwardTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    const Mat out = model_.forward(micro[m], in, caches[m]);
    if (g_.last_stage()) loss_sum += model_.loss(micro[m], out, scale, caches[m]);
    else MPI_Send(out.data(), n * h, MPI_DOUBLE, g_.next_stage(), kForwardTag, MPI_COMM_WORLD);
  }
  for (std::size_t m = 0; m < micro.size(); ++m) {
    const int n = micro[m].size();
    Mat d;
    if (g_.last_stage()) {
      d = model_.loss_backward(caches[m]);
    } else {
      d.resize(n, h);
      MPI_Recv(d.data(), n * h, MPI_DOUBLE, g_.next_stage(), kBackwardTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    const Mat dx = model_.backward(micro[m], std::move(d), caches[m]);
    if (!g_.first_stage()) MPI_Send(dx.data(), n * h, MPI_DOUBLE, g_.prev_stage(), kBackwardTag, MPI_COMM_WORLD);
    caches[m] = {};
    if (similarity && m + 1 == half) half_a = st_.grads;
  }
  StepResult result;
  if (similarity) result.similarity = gradient_similarity(half_a, st_, spec_, g_);
  optimizer_step(st_, g_.dp(), adam_, number);
  // Each sample's loss is counted once: by tensor-parallel rank 0 of the last stage.
  const double mine = g_.last_stage() && g_.coords().tp == 0 ? loss_sum : 0.0;
  double total = 0;
  MPI_Reduce(&mine, &total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  result.loss = total * scale;
  return result;
}

std::string Trainer::checkpoint_path(std::uint64_t step) const {
  return (std::filesystem::path(o_.checkpoint_dir) / fmt::format("step_{}", step)).string();
}

void Trainer::save(const std::string& why) {
  const std::string dir = checkpoint_path(progress_.step);
  std::optional<AdaptiveState> adaptive;
  if (adaptive_) adaptive = AdaptiveState{adaptive_->global_batch(), adaptive_->iteration()};
  save_checkpoint(dir, o_, adam_, spec_, g_, st_, progress_, adaptive);
  if (g_.rank() == 0) {
    std::printf("morph-trainer: saved checkpoint %s at step %llu (%s)\n", dir.c_str(),
                static_cast<unsigned long long>(progress_.step), why.c_str());
    std::fflush(stdout);
  }
}

}  // namespace morph::trainer
