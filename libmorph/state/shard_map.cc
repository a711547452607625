#include "libmorph/state/shard_map.h"

#include <algorithm>

#include <fmt/format.h>

#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"

namespace morph::state {
namespace {

int states(const StateSpec& spec) { return static_cast<int>(spec.optimizer.size()); }

void append(std::vector<Segment>& out, Segment s) {
  if (s.count == 0) return;
  if (!out.empty()) {
    Segment& last = out.back();
    const bool zeros = last.global < 0 && s.global < 0;
    if (zeros || (last.global == s.global && last.start + last.count == s.start)) {
      last.count += s.count;
      return;
    }
  }
  out.push_back(s);
}

// A parameter's tensor-parallel shard on rank `tp` of `t`: its local shape and the runs
// of the global tensor `global` (the parameter or one of its optimizer states) it holds.
struct Shard {
  std::vector<std::int64_t> shape;
  std::vector<Segment> segments;
};

Shard tp_shard(const StateSpec& spec, const ParamSpec& p, int global, int tp, int t) {
  Shard s;
  s.shape = p.shape;
  const std::uint64_t n = p.elements();
  switch (p.split) {
    case Split::replicated: append(s.segments, {global, 0, n}); break;
    case Split::column: {
      const auto rows = static_cast<std::uint64_t>(p.shape[0] / t);
      const std::uint64_t inner = n / static_cast<std::uint64_t>(p.shape[0]);
      s.shape[0] = static_cast<std::int64_t>(rows);
      append(s.segments, {global, static_cast<std::uint64_t>(tp) * rows * inner, rows * inner});
      break;
    }
    case Split::row: {
      const auto outer = static_cast<std::uint64_t>(p.shape[0]);
      const auto cols = static_cast<std::uint64_t>(p.shape[1]);
      const std::uint64_t inner = n / (outer * cols);
      const std::uint64_t part = cols / static_cast<std::uint64_t>(t);
      s.shape[1] = static_cast<std::int64_t>(part);
      for (std::uint64_t o = 0; o < outer; ++o)
        append(s.segments, {global, (o * cols + static_cast<std::uint64_t>(tp) * part) * inner, part * inner});
      break;
    }
    case Split::vocab: {
      const auto real = static_cast<std::uint64_t>(p.shape[0]);
      const std::uint64_t inner = n / real;
      const auto rows = static_cast<std::uint64_t>(padded_rows(spec, p.shape[0], t) / t);
      s.shape[0] = static_cast<std::int64_t>(rows);
      const std::uint64_t first = static_cast<std::uint64_t>(tp) * rows;
      const std::uint64_t held = first >= real ? 0 : std::min(rows, real - first);
      append(s.segments, {global, first * inner, held * inner});
      append(s.segments, {-1, 0, (rows - held) * inner});  // vocabulary padding
      break;
    }
  }
  return s;
}

// Elements [begin, end) of the concatenation of `segments`.
std::vector<Segment> slice(const std::vector<Segment>& segments, std::uint64_t begin, std::uint64_t end) {
  std::vector<Segment> out;
  std::uint64_t at = 0;
  for (const Segment& s : segments) {
    const std::uint64_t lo = std::max(begin, at);
    const std::uint64_t hi = std::min(end, at + s.count);
    if (lo < hi) append(out, {s.global, s.global < 0 ? 0 : s.start + (lo - at), hi - lo});
    at += s.count;
    if (at >= end) break;
  }
  return out;
}

// ZeRO: chunk `rank` of d of the flattening of `segments`, zero-padded to a multiple of d.
LocalTensor zero_chunk(std::string name, Dtype dtype, const std::vector<Segment>& segments, int rank, int d) {
  std::uint64_t total = 0;
  for (const Segment& s : segments) total += s.count;
  const std::uint64_t chunk = (total + static_cast<std::uint64_t>(d) - 1) / static_cast<std::uint64_t>(d);
  const std::uint64_t begin = chunk * static_cast<std::uint64_t>(rank);
  LocalTensor t;
  t.decl = {std::move(name), dtype, {static_cast<std::int64_t>(chunk)}};
  t.segments = slice(segments, begin, begin + chunk);
  std::uint64_t held = 0;
  for (const Segment& s : t.segments) held += s.count;
  append(t.segments, {-1, 0, chunk - held});
  return t;
}

}  // namespace

int global_count(const StateSpec& spec) { return static_cast<int>(spec.params.size()) * (1 + states(spec)); }

int global_id(const StateSpec& spec, int param, int state) { return param * (1 + states(spec)) + state + 1; }

GlobalTensor global_tensor(const StateSpec& spec, int id) {
  return {id / (1 + states(spec)), id % (1 + states(spec)) - 1};
}

std::string global_name(const StateSpec& spec, int id) {
  const GlobalTensor g = global_tensor(spec, id);
  const std::string& param = spec.params.at(static_cast<std::size_t>(g.param)).name;
  return g.state < 0 ? param : fmt::format("optim.{}.{}", spec.optimizer.at(static_cast<std::size_t>(g.state)), param);
}

Dtype global_dtype(const StateSpec& spec, int id) {
  const GlobalTensor g = global_tensor(spec, id);
  return g.state < 0 ? spec.params.at(static_cast<std::size_t>(g.param)).dtype : spec.optimizer_dtype;
}

std::vector<LocalTensor> rank_tensors(const StateSpec& spec, const Layout& layout, int rank) {
  const RankCoords c = coords_of(layout, rank);
  std::vector<int> owned;
  for (std::size_t i = 0; i < spec.params.size(); ++i)
    if (stage_owns(spec, layout, spec.params[i], c.pp)) owned.push_back(static_cast<int>(i));

  auto shard = [&](int param, int state) {
    return tp_shard(spec, spec.params[static_cast<std::size_t>(param)], global_id(spec, param, state), c.tp, layout.tp);
  };
  auto flattened = [&](int state) {
    std::vector<Segment> all;
    for (int p : owned)
      for (const Segment& s : shard(p, state).segments) append(all, s);
    return all;
  };

  std::vector<LocalTensor> out;
  if (layout.zero < 3) {
    for (int p : owned) {
      const ParamSpec& param = spec.params[static_cast<std::size_t>(p)];
      Shard s = shard(p, -1);
      out.push_back({{param.name, param.dtype, std::move(s.shape)}, std::move(s.segments)});
    }
  } else {
    for (int p : owned)
      if (spec.params[static_cast<std::size_t>(p)].dtype != spec.params[static_cast<std::size_t>(owned.front())].dtype)
        throw Error(fmt::format("ZeRO-3 flattens parameters into one tensor: {} and {} have different dtypes",
                                quote(spec.params[static_cast<std::size_t>(p)].name),
                                quote(spec.params[static_cast<std::size_t>(owned.front())].name)));
    const Dtype dtype = owned.empty() ? spec.optimizer_dtype : spec.params[static_cast<std::size_t>(owned.front())].dtype;
    out.push_back(zero_chunk("params.flat", dtype, flattened(-1), c.dp, layout.dp));
  }
  for (int k = 0; k < states(spec); ++k) {
    const std::string& state = spec.optimizer[static_cast<std::size_t>(k)];
    if (layout.zero == 0) {
      for (int p : owned) {
        Shard s = shard(p, k);
        out.push_back({{fmt::format("optim.{}.{}", state, spec.params[static_cast<std::size_t>(p)].name),
                        spec.optimizer_dtype, std::move(s.shape)},
                       std::move(s.segments)});
      }
    } else {
      out.push_back(zero_chunk("optim." + state, spec.optimizer_dtype, flattened(k), c.dp, layout.dp));
    }
  }
  return out;
}

std::size_t replicated_tensor_count(const StateSpec& spec, const Layout& layout, int rank) {
  if (layout.zero >= 3) return 0;
  const int stage = coords_of(layout, rank).pp;
  const auto owned = static_cast<std::size_t>(std::count_if(
      spec.params.begin(), spec.params.end(), [&](const ParamSpec& p) { return stage_owns(spec, layout, p, stage); }));
  return layout.zero == 0 ? owned * static_cast<std::size_t>(1 + states(spec)) : owned;
}

}  // namespace morph::state
