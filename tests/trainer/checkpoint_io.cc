#include "tests/trainer/checkpoint_io.h"

#include <chrono>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <thread>

#include <fmt/format.h>

#include "libmorph/state/rank_file.h"
#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"
#include "tests/trainer/collective.h"

namespace morph::trainer {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Where file tensor `decl` lives in this rank's state (LocalState or const LocalState):
// a run of the flat parameters or of an optimizer state.
template <typename State>
auto tensor_view(const state::TensorDecl& decl, const state::StateSpec& spec, State& st) {
  using Span = decltype(std::span(st.params));
  auto name_of = [&](const Slot& s) -> const std::string& { return spec.params[static_cast<std::size_t>(s.param)].name; };
  std::optional<Span> v;
  if (decl.name == "params.flat") v = Span(st.params).subspan(st.chunk_begin(), st.chunk());
  for (std::size_t k = 0; k < spec.optimizer.size() && !v; ++k) {
    const std::string prefix = "optim." + spec.optimizer[k];
    if (decl.name == prefix) v = Span(st.optim[k]);  // ZeRO 1-3: this rank's chunk
    for (const Slot& s : st.slots())
      if (!v && decl.name == prefix + "." + name_of(s)) v = Span(st.optim[k]).subspan(s.offset, s.elements());
  }
  for (const Slot& s : st.slots())
    if (!v && decl.name == name_of(s)) v = Span(st.params).subspan(s.offset, s.elements());
  std::uint64_t elements = 1;
  for (std::int64_t d : decl.shape) elements *= static_cast<std::uint64_t>(d);
  if (!v || v->size() != elements || decl.dtype != state::Dtype::f64)
    throw Error(fmt::format("tensor {} ({} elements, {}) has no counterpart of that size in the trainer",
                            quote(decl.name), elements, state::dtype_name(decl.dtype)));
  return *v;
}

// The trainer's memory of each file tensor, for libmorph's rank-file I/O.
state::BufferOf buffers_of(const state::StateSpec& spec, LocalState& st) {
  return [&spec, &st](const state::TensorDecl& decl) { return std::as_writable_bytes(tensor_view(decl, spec, st)); };
}
state::ConstBufferOf buffers_of(const state::StateSpec& spec, const LocalState& st) {
  return [&spec, &st](const state::TensorDecl& decl) { return std::as_bytes(tensor_view(decl, spec, st)); };
}

void check_same(const json& info, const char* key, const json& mine, const std::string& dir, const char* flag) {
  if (info.contains(key) && info.at(key) != mine)
    throw Error(fmt::format("{}: the checkpoint was trained with {} {}, this run has {}: the data order would differ",
                            dir, flag, info.at(key).dump(), mine.dump()));
}

}  // namespace

json trainer_info(const Options& o, const Adam& adam, const std::optional<AdaptiveState>& adaptive) {
  json info = {{"program", "morph-trainer"},
          {"seed", o.seed},
          {"samples", o.samples},
          {"global_batch", o.global_batch},
          {"micro_batches", o.micro_batches},
          {"vocab", o.vocab},
          {"hidden", o.hidden},
          {"layers", o.layers},
          {"vocab_multiple", o.vocab_multiple},
          {"adam", {{"lr", adam.lr}, {"beta1", adam.beta1}, {"beta2", adam.beta2}, {"eps", adam.eps}}},
          {"data", "sample i: token (i * 7919 + seed) mod vocab, target (token * 31 + 17) mod vocab"}};
  if (!o.model_name.empty()) info["morph_model"] = o.model_name;  // morphrun refuses another model's checkpoint
  if (adaptive)
    info["adaptive"] = {{"min_batch", o.adaptive_min},
                        {"max_batch", o.adaptive_max},
                        {"global_batch", adaptive->global_batch},
                        {"iteration", adaptive->iteration}};
  return info;
}

void save_checkpoint(const std::string& dir, const Options& o, const Adam& adam, const state::StateSpec& spec,
                     const Groups& g, const LocalState& st, state::Progress progress,
                     const std::optional<AdaptiveState>& adaptive) {
  const state::Layout& layout = g.layout();
  const int rank = g.rank();
  std::unique_ptr<state::CheckpointStage> stage;  // rank 0 owns the stage
  collectively([&] {
    if (rank == 0) stage = std::make_unique<state::CheckpointStage>(dir);
  });

  state::CheckpointFile mine;
  collectively([&] {
    mine = state::write_rank_file(state::stage_folder(dir), spec, layout, rank, buffers_of(spec, st));
  });

  // A large model's save takes a while; until the commit below, the previous checkpoint stands.
  if (o.save_seconds > 0) std::this_thread::sleep_for(std::chrono::duration<double>(o.save_seconds));
  std::uint64_t entry[2] = {mine.bytes, mine.checksum};
  std::vector<std::uint64_t> all(rank == 0 ? 2 * static_cast<std::size_t>(layout.ranks()) : 0);
  MPI_Gather(entry, 2, MPI_UINT64_T, all.data(), 2, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  collectively([&] {
    if (rank != 0) return;
    state::CheckpointIndex index;
    index.layout = layout;
    index.spec = spec;
    index.progress = progress;
    index.trainer = trainer_info(o, adam, adaptive);
    for (int r = 0; r < layout.ranks(); ++r)
      index.files.push_back({r, state::rank_file_name(r), all[2 * static_cast<std::size_t>(r)],
                             all[2 * static_cast<std::size_t>(r) + 1]});
    stage->commit(index);
  });
}

state::Progress load_checkpoint(const std::string& dir, const Options& o, const state::StateSpec& spec,
                                const Groups& g, LocalState& st, std::optional<AdaptiveState>* adaptive) {
  const state::Layout& layout = g.layout();
  const int rank = g.rank();
  state::CheckpointIndex index;
  collectively([&] {
    index = state::index_for_resume(dir, spec, layout);
    check_same(index.trainer, "seed", o.seed, dir, "--seed");
    check_same(index.trainer, "samples", o.samples, dir, "--samples");
    check_same(index.trainer, "global_batch", o.global_batch, dir, "--global-batch");
    if (index.trainer.contains("adaptive")) {  // its batch varied: its progress is any number of samples
      const json& a = index.trainer.at("adaptive");
      const json bounds = {{"min_batch", o.adaptive_min}, {"max_batch", o.adaptive_max}};
      if (o.adaptive_max == 0 || a.value("min_batch", json()) != bounds["min_batch"] ||
          a.value("max_batch", json()) != bounds["max_batch"])
        throw Error(fmt::format("{}: the checkpoint adapted its batch within {}:{}, this run {}", dir,
                                a.value("min_batch", json()).dump(), a.value("max_batch", json()).dump(),
                                o.adaptive_max ? fmt::format("within {}:{}", o.adaptive_min, o.adaptive_max)
                                               : std::string("keeps --global-batch (--adaptive-batch)")));
      if (adaptive)
        *adaptive = AdaptiveState{a.at("global_batch").get<std::int64_t>(), a.at("iteration").get<std::int64_t>()};
    } else if (index.progress.samples != index.progress.step * o.global_batch) {
      throw Error(fmt::format("{}: progress of {} samples at step {} does not match --global-batch {}", dir,
                              index.progress.samples, index.progress.step, o.global_batch));
    }
    state::read_rank_file(dir, index, rank, buffers_of(spec, st));
  });
  // ZeRO 3 stores only this rank's chunk of the flattened parameters: gather the rest.
  if (layout.zero == 3 && layout.dp > 1)
    MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, st.params.data(), static_cast<int>(st.chunk()), MPI_DOUBLE,
                  g.dp());
  // Vocabulary padding must be zero: the forward pass never reads it, so a non-zero value
  // would go unnoticed until a reshard moved it into real rows.
  collectively([&] {
    for (const Slot& s : st.slots())
      for (std::uint64_t k = 0; k < s.elements(); ++k)
        if (LocalState::global_index(s, k) < 0 && st.params[s.offset + k] != 0.0)
          throw Error(fmt::format("{}: {}: vocabulary padding of {} is not zero", dir, state::rank_file_name(rank),
                                  quote(spec.params[static_cast<std::size_t>(s.param)].name)));
  });
  std::fill(st.grads.begin(), st.grads.end(), 0.0);
  return index.progress;
}

}  // namespace morph::trainer
