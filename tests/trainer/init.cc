#include "tests/trainer/init.h"

#include <cmath>
#include <string>

#include <fmt/format.h>

#include "libmorph/state/shard_map.h"
#include "libmorph/util/error.h"

namespace morph::trainer {
namespace {

std::uint64_t mix64(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::uint64_t fnv1a(const std::string& text) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char ch : text) h = (h ^ ch) * 0x100000001b3ULL;
  return h;
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

double init_value(std::uint64_t seed, const state::ParamSpec& p, std::uint64_t index) {
  const std::uint64_t h = mix64(mix64(mix64(seed) ^ fnv1a(p.name)) + index);
  const double u = static_cast<double>(h >> 11) * 0x1.0p-52 - 1.0;  // [-1, 1)
  const double cols = p.shape.size() > 1 ? static_cast<double>(p.shape[1]) : 1.0;
  if (ends_with(p.name, "norm.weight")) return 1.0 + 0.1 * u;
  if (ends_with(p.name, ".bias")) return 0.02 * u;
  if (ends_with(p.name, "dense_h_to_4h.weight")) return std::sqrt(3.0 / cols) * u;
  if (ends_with(p.name, "dense_4h_to_h.weight")) return 0.5 * std::sqrt(3.0 / cols) * u;
  return 0.5 * u;  // embeddings, head
}

void initialise(LocalState& st, const state::StateSpec& spec, std::uint64_t seed) {
  std::fill(st.params.begin(), st.params.end(), 0.0);
  for (const Slot& s : st.slots()) {
    const state::ParamSpec& p = spec.params[static_cast<std::size_t>(s.param)];
    for (std::uint64_t k = 0; k < s.elements(); ++k) {
      const std::int64_t g = LocalState::global_index(s, k);
      st.params[s.offset + k] = g < 0 ? 0.0 : init_value(seed, p, static_cast<std::uint64_t>(g));
    }
  }
  for (auto& o : st.optim) std::fill(o.begin(), o.end(), 0.0);
}

void check_against_shard_map(const LocalState& st, const state::StateSpec& spec, const state::Layout& layout,
                             int rank) {
  // The per-parameter shards are the tensors of the same rank under ZeRO 0.
  state::Layout plain = layout;
  plain.zero = 0;
  const std::vector<state::LocalTensor> tensors = state::rank_tensors(spec, plain, rank);
  const auto& slots = st.slots();
  if (tensors.size() < slots.size()) throw Error("shard check: the library lists fewer tensors than the trainer holds");
  for (std::size_t i = 0; i < slots.size(); ++i) {
    const Slot& s = slots[i];
    const state::LocalTensor& t = tensors[i];
    const std::string& name = spec.params[static_cast<std::size_t>(s.param)].name;
    if (t.decl.name != name || t.decl.shape != s.shape)
      throw Error(fmt::format("shard check: rank {} tensor {}: library has {} {}, trainer {} {}", rank, i,
                              t.decl.name, fmt::join(t.decl.shape, "x"), name, fmt::join(s.shape, "x")));
    std::uint64_t k = 0;
    for (const state::Segment& seg : t.segments) {
      for (std::uint64_t e = 0; e < seg.count; ++e, ++k) {
        const std::int64_t expected = seg.global < 0 ? -1 : static_cast<std::int64_t>(seg.start + e);
        if (LocalState::global_index(s, k) != expected)
          throw Error(fmt::format("shard check: rank {} {} local element {}: library global {}, trainer {}", rank,
                                  name, k, expected, LocalState::global_index(s, k)));
      }
    }
    if (k != s.elements()) throw Error(fmt::format("shard check: {}: element counts differ", name));
  }
  if (layout.zero > 0) {
    for (const state::LocalTensor& t : state::rank_tensors(spec, layout, rank))
      if (t.decl.name.rfind("optim.", 0) == 0 || t.decl.name == "params.flat")
        if (t.decl.shape.size() != 1 || static_cast<std::uint64_t>(t.decl.shape[0]) != st.chunk())
          throw Error(fmt::format("shard check: {} has {} elements, the trainer's chunk {}", t.decl.name,
                                  fmt::join(t.decl.shape, "x"), st.chunk()));
  }
}

}  // namespace morph::trainer
