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

// The parameter of global tensor `global`.
const ParamSpec& param_of(const StateSpec& spec, int global) {
  return spec.params[static_cast<std::size_t>(global_tensor(spec, global).param)];
}

// The local shape of a parameter's tensor-parallel shards, on each of `t` ranks.
std::vector<std::int64_t> shard_shape(const StateSpec& spec, const ParamSpec& p, int t) {
  std::vector<std::int64_t> shape = p.shape;
  switch (p.split) {
    case Split::replicated: break;
    case Split::column: shape[0] = p.shape[0] / t; break;
    case Split::row: shape[1] = p.shape[1] / t; break;
    case Split::vocab: shape[0] = padded_rows(spec, p.shape[0], t) / t; break;
  }
  return shape;
}

// A parameter's tensor-parallel shard on rank `tp` of `t`: its local shape and the runs
// of the global tensor `global` (the parameter or one of its optimizer states) it holds.
struct Shard {
  std::vector<std::int64_t> shape;
  std::vector<Segment> segments;
};

Shard tp_shard(const StateSpec& spec, const ParamSpec& p, int global, int tp, int t) {
  Shard s;
  s.shape = shard_shape(spec, p, t);
  const std::uint64_t n = p.elements();
  switch (p.split) {
    case Split::replicated: append(s.segments, {global, 0, n}); break;
    case Split::column: {
      const auto rows = static_cast<std::uint64_t>(s.shape[0]);
      const std::uint64_t inner = n / static_cast<std::uint64_t>(p.shape[0]);
      append(s.segments, {global, static_cast<std::uint64_t>(tp) * rows * inner, rows * inner});
      break;
    }
    case Split::row: {
      const auto outer = static_cast<std::uint64_t>(p.shape[0]);
      const auto cols = static_cast<std::uint64_t>(p.shape[1]);
      const std::uint64_t inner = n / (outer * cols);
      const auto part = static_cast<std::uint64_t>(s.shape[1]);
      if (part == cols) {  // t = 1: the rows are one run
        append(s.segments, {global, 0, n});
        break;
      }
      for (std::uint64_t o = 0; o < outer; ++o)
        append(s.segments, {global, (o * cols + static_cast<std::uint64_t>(tp) * part) * inner, part * inner});
      break;
    }
    case Split::vocab: {
      const auto real = static_cast<std::uint64_t>(p.shape[0]);
      const std::uint64_t inner = n / real;
      const auto rows = static_cast<std::uint64_t>(s.shape[0]);
      const std::uint64_t first = static_cast<std::uint64_t>(tp) * rows;
      const std::uint64_t held = first >= real ? 0 : std::min(rows, real - first);
      append(s.segments, {global, first * inner, held * inner});
      append(s.segments, {-1, 0, (rows - held) * inner});  // vocabulary padding
      break;
    }
  }
  return s;
}

// Appends elements [begin, end) of the concatenation of `segments`, whose first element
// is element `at` of it, to `out`.
void append_slice(std::vector<Segment>& out, const std::vector<Segment>& segments, std::uint64_t at,
                  std::uint64_t begin, std::uint64_t end) {
  for (const Segment& s : segments) {
    const std::uint64_t lo = std::max(begin, at);
    const std::uint64_t hi = std::min(end, at + s.count);
    if (lo < hi) append(out, {s.global, s.global < 0 ? 0 : s.start + (lo - at), hi - lo});
    at += s.count;
    if (at >= end) break;
  }
}

// ZeRO: the flattening of TP coordinate `tp`'s shards of `globals`, to be cut into chunks
// named `name`, one per data-parallel rank.
ZeroPartition zero_partition(const StateSpec& spec, const Layout& layout, std::string name, Dtype dtype,
                             std::vector<int> globals, int tp) {
  ZeroPartition z;
  z.tp = tp;
  std::uint64_t total = 0;
  for (int g : globals) {
    z.first.push_back(total);
    std::uint64_t elements = 1;
    for (std::int64_t d : shard_shape(spec, param_of(spec, g), layout.tp)) elements *= static_cast<std::uint64_t>(d);
    total += elements;
  }
  const auto d = static_cast<std::uint64_t>(layout.dp);
  z.decl = {std::move(name), dtype, {static_cast<std::int64_t>((total + d - 1) / d)}};
  z.globals = std::move(globals);
  return z;
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

std::vector<Segment> ZeroPartition::chunk(const StateSpec& spec, const Layout& layout, int dp) const {
  const auto size = static_cast<std::uint64_t>(decl.shape[0]);
  const std::uint64_t begin = size * static_cast<std::uint64_t>(dp);
  const std::uint64_t end = begin + size;
  std::vector<Segment> out;
  // From the last shard starting at or before `begin`, each shard that starts before `end`.
  const auto after = static_cast<std::size_t>(std::upper_bound(first.begin(), first.end(), begin) - first.begin());
  for (std::size_t i = after > 0 ? after - 1 : 0; i < globals.size() && first[i] < end; ++i) {
    const int g = globals[i];
    append_slice(out, tp_shard(spec, param_of(spec, g), g, tp, layout.tp).segments, first[i], begin, end);
  }
  std::uint64_t held = 0;
  for (const Segment& s : out) held += s.count;
  append(out, {-1, 0, size - held});
  return out;
}

namespace {

// data_parallel_tensors(), with the replicated tensors' segments only `with_segments`.
DataParallelTensors group_tensors(const StateSpec& spec, const Layout& layout, int tp, int pp, bool with_segments) {
  std::vector<int> owned;
  for (std::size_t i = 0; i < spec.params.size(); ++i)
    if (stage_owns(spec, layout, spec.params[i], pp)) owned.push_back(static_cast<int>(i));

  auto shard = [&](int param, int state) {
    const ParamSpec& p = spec.params[static_cast<std::size_t>(param)];
    if (!with_segments) return Shard{shard_shape(spec, p, layout.tp), {}};
    return tp_shard(spec, p, global_id(spec, param, state), tp, layout.tp);
  };
  auto flattened = [&](int state) {  // the global tensors whose shards a ZeRO partition flattens
    std::vector<int> globals;
    for (int p : owned) globals.push_back(global_id(spec, p, state));
    return globals;
  };

  DataParallelTensors out;
  if (layout.zero < 3) {
    for (int p : owned) {
      const ParamSpec& param = spec.params[static_cast<std::size_t>(p)];
      Shard s = shard(p, -1);
      out.replicated.push_back({{param.name, param.dtype, std::move(s.shape)}, std::move(s.segments)});
    }
  } else {
    for (int p : owned)
      if (spec.params[static_cast<std::size_t>(p)].dtype != spec.params[static_cast<std::size_t>(owned.front())].dtype)
        throw Error(fmt::format("ZeRO-3 flattens parameters into one tensor: {} and {} have different dtypes",
                                quote(spec.params[static_cast<std::size_t>(p)].name),
                                quote(spec.params[static_cast<std::size_t>(owned.front())].name)));
    const Dtype dtype = owned.empty() ? spec.optimizer_dtype : spec.params[static_cast<std::size_t>(owned.front())].dtype;
    out.partitioned.push_back(zero_partition(spec, layout, "params.flat", dtype, flattened(-1), tp));
  }
  for (int k = 0; k < states(spec); ++k) {
    const std::string& state = spec.optimizer[static_cast<std::size_t>(k)];
    if (layout.zero == 0) {
      for (int p : owned) {
        Shard s = shard(p, k);
        out.replicated.push_back({{fmt::format("optim.{}.{}", state, spec.params[static_cast<std::size_t>(p)].name),
                                   spec.optimizer_dtype, std::move(s.shape)},
                                  std::move(s.segments)});
      }
    } else {
      out.partitioned.push_back(zero_partition(spec, layout, "optim." + state, spec.optimizer_dtype, flattened(k), tp));
    }
  }
  return out;
}

}  // namespace

DataParallelTensors data_parallel_tensors(const StateSpec& spec, const Layout& layout, int tp, int pp) {
  return group_tensors(spec, layout, tp, pp, true);
}

std::vector<TensorDecl> data_parallel_decls(const StateSpec& spec, const Layout& layout, int tp, int pp) {
  DataParallelTensors group = group_tensors(spec, layout, tp, pp, false);
  std::vector<TensorDecl> out;
  for (LocalTensor& t : group.replicated) out.push_back(std::move(t.decl));
  for (ZeroPartition& z : group.partitioned) out.push_back(std::move(z.decl));
  return out;
}

std::vector<LocalTensor> rank_tensors(const StateSpec& spec, const Layout& layout, int rank) {
  const RankCoords c = coords_of(layout, rank);
  DataParallelTensors group = data_parallel_tensors(spec, layout, c.tp, c.pp);
  std::vector<LocalTensor> out = std::move(group.replicated);
  for (const ZeroPartition& z : group.partitioned) out.push_back({z.decl, z.chunk(spec, layout, c.dp)});
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
