#include "libmorph/state/reshard_plan.h"

#include <algorithm>
#include <limits>
#include <mutex>
#include <span>
#include <tuple>

#include <fmt/format.h>

#include "libmorph/state/safetensors.h"
#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"

namespace morph::state {
namespace {

// A run of a global tensor that the old ranks of one holder set all hold at one file
// offset: the data-parallel copies of a shard are one Run, however many there are.
struct Run {
  std::uint64_t start = 0;  // elements
  std::uint64_t count = 0;
  std::uint64_t offset = 0;  // file byte offset of element `start`, in each holder's file
  int holders = 0;           // index into Planner::holders_
};

// Who holds each element of one global tensor: its elementary intervals (between
// consecutive run boundaries) and, for each, the runs covering it.
struct Coverage {
  std::vector<Run> runs;
  std::vector<std::uint64_t> bounds;  // interval i is [bounds[i], bounds[i+1])
  std::vector<std::size_t> first;     // interval i is covered by covering[first[i]] up to covering[first[i+1]]
  std::vector<int> covering;          // indices into runs

  std::span<const int> covering_of(std::size_t interval) const {
    return std::span<const int>(covering).subspan(first[interval], first[interval + 1] - first[interval]);
  }

  void build() {
    for (const Run& r : runs) {
      bounds.push_back(r.start);
      bounds.push_back(r.start + r.count);
    }
    std::sort(bounds.begin(), bounds.end());
    bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
    std::vector<int> order(runs.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
    std::sort(order.begin(), order.end(), [&](int a, int b) { return runs[a].start < runs[b].start; });
    std::vector<int> active;
    std::size_t next = 0;
    first.push_back(0);
    for (std::size_t i = 0; i + 1 < bounds.size(); ++i) {
      std::erase_if(active, [&](int r) { return runs[r].start + runs[r].count <= bounds[i]; });
      while (next < order.size() && runs[order[next]].start <= bounds[i]) active.push_back(order[next++]);
      covering.insert(covering.end(), active.begin(), active.end());
      first.push_back(covering.size());
    }
  }
};

// Node names as small numbers, for the choice of copies and the byte counts.
class NodeTable {
 public:
  NodeTable(const RankNodes& nodes, const Layout& from, const Layout& to)
      : from_(ids(nodes.from, from.ranks())), to_(ids(nodes.to, to.ranks())) {}
  int from(int rank) const { return from_[static_cast<std::size_t>(rank)]; }
  int to(int rank) const { return to_[static_cast<std::size_t>(rank)]; }
  const std::string& name(int id) const { return names_[static_cast<std::size_t>(id)]; }
  int count() const { return static_cast<int>(names_.size()); }

 private:
  std::vector<int> ids(const std::vector<std::string>& names, int ranks) {
    std::vector<int> out;
    for (int r = 0; r < ranks; ++r) {
      const std::string& name = names.empty() ? std::string() : names[static_cast<std::size_t>(r)];
      auto [it, fresh] = id_.try_emplace(name, count());
      if (fresh) names_.push_back(name);
      out.push_back(it->second);
    }
    return out;
  }
  std::map<std::string, int> id_;
  std::vector<std::string> names_;
  std::vector<int> from_, to_;
};

// A stretch of a new file that a new rank reads from one old file: an elementary interval
// of a global tensor's coverage, or several that every file reads in one go (add_piece).
// Where it lies does not depend on the file it is read from, so the pieces of the tensors
// that data-parallel replicas hold alike serve all of them.
struct Piece {
  int global = 0;
  std::size_t interval = 0;   // its first, in the global tensor's Coverage
  std::uint64_t start = 0;    // first element in the global tensor
  std::uint64_t count = 0;    // elements
  int tensor = 0;             // in the new file
  std::uint64_t offset = 0;   // byte offset in that tensor
  std::uint64_t element = 0;  // bytes per element
};

class Planner {
 public:
  Planner(const StateSpec& spec, const Layout& from, const Layout& to, const NodeTable& nodes)
      : spec_(spec), from_(from), to_(to), nodes_(nodes), coverage_(static_cast<std::size_t>(global_count(spec))),
        needed_(coverage_.size(), false) {}

  void need(int rank);  // new rank `rank` will be planned: index what its file holds
  // Indexes the old files (`headers[r]`: old rank r's), each after checking it holds what
  // the old layout says.
  void add_sources(const std::vector<SafetensorsHeader>& headers);
  void index();
  // The pieces of the tensors that the new ranks of (tp, pp) hold alike, for the files of
  // a group that plans more than one.
  std::vector<Piece> alike_pieces(int tp, int pp) const;
  // The reads of new rank `rank`'s file, `alike` its group's alike_pieces() or null; adds
  // the bytes it reads to bytes_from_node (per old node).
  FilePlan plan_file(int rank, const std::vector<Piece>* alike, std::vector<std::uint64_t>& bytes_from_node) const;

 private:
  struct Choice {
    int run = -1;
    int source = -1;  // old rank
  };
  // The new ranks of one TP and PP coordinate: the tensors of each of their files, first
  // those they hold alike, then their ZeRO chunks.
  struct NewGroup {
    std::vector<TensorDecl> tensors;
    std::vector<ZeroPartition> partitioned;
  };
  // For one new file, per holder set: its best holder and the last answer of holder_after().
  struct SetChoice {
    int best = -1;
    int previous = -1;
    int source = -1;
  };
  int holder_set(std::vector<int> ranks);
  void mark_needed(std::span<const Segment> segments);
  std::uint64_t checked_offset(const SafetensorsHeader& header, int rank, std::size_t i, const TensorDecl& decl) const;
  void add_runs(Dtype dtype, std::span<const Segment> segments, std::uint64_t offset, int holders);
  const Run* sole_run(const Piece& p) const;
  bool continues(const Piece& last, const Piece& next) const;
  template <typename Take>
  void walk(int tensor, Dtype dtype, std::span<const Segment> segments, Take&& take) const;
  template <typename Take>
  void walk_replicated(int tp, int pp, Take&& take) const;
  void add_piece(std::vector<Piece>& out, const Piece& piece) const;
  int best_holder(int holders, int rank) const;
  int holder_after(int holders, int rank, int previous, std::vector<SetChoice>& memo) const;
  Choice choose(std::span<const int> covering, const Coverage& c, int rank, int previous,
                std::vector<SetChoice>& memo) const;

  const StateSpec& spec_;
  Layout from_, to_;
  const NodeTable& nodes_;
  std::vector<Coverage> coverage_;
  std::vector<bool> needed_;                 // per global tensor
  std::vector<std::vector<int>> holders_;    // holder sets: old ranks, increasing
  std::map<std::vector<int>, int> holder_id_;
  std::map<std::pair<int, int>, NewGroup> groups_;  // (tp, pp) of the new ranks planned
};

void Planner::mark_needed(std::span<const Segment> segments) {
  for (const Segment& s : segments)
    if (s.global >= 0) needed_[static_cast<std::size_t>(s.global)] = true;
}

// The tensors its group's ranks hold alike are marked once, its ZeRO chunks per rank.
void Planner::need(int rank) {
  const RankCoords c = coords_of(to_, rank);
  auto [it, fresh] = groups_.try_emplace({c.tp, c.pp});
  NewGroup& group = it->second;
  if (fresh) {
    DataParallelTensors tensors = data_parallel_tensors(spec_, to_, c.tp, c.pp);
    for (const LocalTensor& t : tensors.replicated) {
      mark_needed(t.segments);
      group.tensors.push_back(t.decl);
    }
    for (const ZeroPartition& z : tensors.partitioned) group.tensors.push_back(z.decl);
    group.partitioned = std::move(tensors.partitioned);
  }
  for (const ZeroPartition& z : group.partitioned) mark_needed(z.chunk(spec_, to_, c.dp));
}

int Planner::holder_set(std::vector<int> ranks) {
  auto [it, fresh] = holder_id_.try_emplace(std::move(ranks), static_cast<int>(holders_.size()));
  if (fresh) holders_.push_back(it->first);
  return it->second;
}

// The file offset of tensor i of old rank `rank`, after checking that its file holds it
// as `decl`.
std::uint64_t Planner::checked_offset(const SafetensorsHeader& header, int rank, std::size_t i,
                                      const TensorDecl& decl) const {
  auto what = [&] { return fmt::format("old rank {} under {}: tensor {}", rank, to_string(from_), quote(decl.name)); };
  const TensorEntry* e =
      i < header.tensors.size() && header.tensors[i].name == decl.name ? &header.tensors[i] : header.find(decl.name);
  if (e == nullptr) throw Error(what() + " is missing from its file");
  if (e->dtype != decl.dtype || e->shape != decl.shape)
    throw Error(fmt::format("{} is {} {} in its file; the layout needs {} {}", what(), dtype_name(e->dtype),
                            shape_text(e->shape), dtype_name(decl.dtype), shape_text(decl.shape)));
  return header.data_offset + e->begin;
}

void Planner::add_runs(Dtype dtype, std::span<const Segment> segments, std::uint64_t offset, int holders) {
  const std::uint64_t element = dtype_bytes(dtype);
  std::uint64_t at = 0;
  for (const Segment& s : segments) {
    if (s.global >= 0 && needed_[static_cast<std::size_t>(s.global)])
      coverage_[static_cast<std::size_t>(s.global)].runs.push_back({s.start, s.count, offset + at * element, holders});
    at += s.count;
  }
}

// The tensors that data-parallel replicas hold alike (data_parallel_tensors) are indexed
// once per distinct file offset, with the replicas holding them there; each ZeRO chunk
// with its rank, found by offset in its TP and PP coordinate's flattening. The files are
// checked in rank order, so the first error is the lowest rank's.
void Planner::add_sources(const std::vector<SafetensorsHeader>& headers) {
  for (int pp = 0; pp < from_.pp; ++pp) {
    std::vector<DataParallelTensors> groups;  // per tp
    for (int tp = 0; tp < from_.tp; ++tp) groups.push_back(data_parallel_tensors(spec_, from_, tp, pp));
    // (tp, tensor, file offset) -> the old ranks holding that tensor there
    std::map<std::tuple<int, std::size_t, std::uint64_t>, std::vector<int>> copies;
    for (int dp = 0; dp < from_.dp; ++dp)
      for (int tp = 0; tp < from_.tp; ++tp) {
        const DataParallelTensors& group = groups[static_cast<std::size_t>(tp)];
        const int rank = rank_of(from_, {dp, tp, pp});
        const SafetensorsHeader& header = headers[static_cast<std::size_t>(rank)];
        const std::size_t alike = group.replicated.size();
        // Each tensor is looked up by name: one more in the file would go unseen.
        if (header.tensors.size() != alike + group.partitioned.size())
          throw Error(fmt::format("old rank {} under {}: its file holds {} tensors, the layout places {} on it", rank,
                                  to_string(from_), header.tensors.size(), alike + group.partitioned.size()));
        for (std::size_t i = 0; i < alike; ++i)
          copies[{tp, i, checked_offset(header, rank, i, group.replicated[i].decl)}].push_back(rank);
        for (std::size_t k = 0; k < group.partitioned.size(); ++k) {
          const ZeroPartition& z = group.partitioned[k];
          add_runs(z.decl.dtype, z.chunk(spec_, from_, dp), checked_offset(header, rank, alike + k, z.decl),
                   holder_set({rank}));
        }
      }
    for (auto& [where, ranks] : copies) {
      const auto& [tp, i, offset] = where;
      const LocalTensor& t = groups[static_cast<std::size_t>(tp)].replicated[i];
      add_runs(t.decl.dtype, t.segments, offset, holder_set(std::move(ranks)));
    }
  }
}

// The run covering piece `p`'s elements when one does (nullptr when several do).
const Run* Planner::sole_run(const Piece& p) const {
  const Coverage& c = coverage_[static_cast<std::size_t>(p.global)];
  const std::span<const int> covering = c.covering_of(p.interval);
  return covering.size() == 1 ? &c.runs[static_cast<std::size_t>(covering[0])] : nullptr;
}

// Whether every new file reads `next` within its read of `last`: each is covered by one
// run, of one holder set, and they follow each other in the new tensor and in the
// holders' files. The file chosen for `last` holds `next` too and, being the previous
// run's, is chosen again (holder_after); the read is extended.
bool Planner::continues(const Piece& last, const Piece& next) const {
  if (last.tensor != next.tensor || last.offset + last.count * last.element != next.offset) return false;
  const Run* a = sole_run(last);
  const Run* b = sole_run(next);
  return a != nullptr && b != nullptr && a->holders == b->holders &&
         a->offset + (last.start + last.count - a->start) * last.element ==
             b->offset + (next.start - b->start) * next.element;
}

// Hands `take` the pieces of tensor `tensor` of a new file, whose segments are
// `segments`, in order.
template <typename Take>
void Planner::walk(int tensor, Dtype dtype, std::span<const Segment> segments, Take&& take) const {
  const std::uint64_t element = dtype_bytes(dtype);
  std::uint64_t at = 0;  // local element
  for (const Segment& s : segments) {
    if (s.global < 0) {
      at += s.count;
      continue;
    }
    const Coverage& c = coverage_[static_cast<std::size_t>(s.global)];
    const std::uint64_t end = s.start + s.count;
    std::size_t i = static_cast<std::size_t>(std::upper_bound(c.bounds.begin(), c.bounds.end(), s.start) - c.bounds.begin());
    for (std::uint64_t x = s.start; x < end; ++i) {
      if (i == 0 || i >= c.bounds.size() || c.covering_of(i - 1).empty())
        throw Error(fmt::format("internal: elements of {} from {} are in no old file", global_name(spec_, s.global), x));
      const std::uint64_t stop = std::min(end, c.bounds[i]);
      take(Piece{s.global, i - 1, x, stop - x, tensor, (at + (x - s.start)) * element, element});
      x = stop;
    }
    at += s.count;
  }
}

// Hands `take` the pieces of the tensors that the new ranks of (tp, pp) hold alike, their
// shards computed anew: a group keeps only their pieces, and only when it plans more than
// one file.
template <typename Take>
void Planner::walk_replicated(int tp, int pp, Take&& take) const {
  const DataParallelTensors tensors = data_parallel_tensors(spec_, to_, tp, pp);
  for (std::size_t i = 0; i < tensors.replicated.size(); ++i) {
    const LocalTensor& t = tensors.replicated[i];
    walk(static_cast<int>(i), t.decl.dtype, t.segments, take);
  }
}

// Adds `piece` to `out`, joined with the last piece when every file reads both in one go.
void Planner::add_piece(std::vector<Piece>& out, const Piece& piece) const {
  if (!out.empty() && continues(out.back(), piece))
    out.back().count += piece.count;
  else
    out.push_back(piece);
}

void Planner::index() {
  for (Coverage& c : coverage_) c.build();
}

// The holder of set `holders` that new rank `rank` prefers, leaving aside the previous
// run's file: one on its node first, then the old ranks in turn from its own number.
int Planner::best_holder(int holders, int rank) const {
  const int n = from_.ranks();
  const int node = nodes_.to(rank);
  auto key = [&](int source) {
    return std::make_pair(nodes_.from(source) == node ? 0 : 1, (source - rank % n + n) % n);
  };
  int best = -1;
  for (int source : holders_[static_cast<std::size_t>(holders)])
    if (best < 0 || key(source) < key(best)) best = source;
  return best;
}

// The holder of set `holders` that new rank `rank` reads after a run from `previous`: its
// best holder, or `previous` when that holds it on an equally good node. A file asks
// about one set after the same previous file many times in a row (alternating TP shards
// of one row, say), so the last answer per set is kept in `memo`.
int Planner::holder_after(int holders, int rank, int previous, std::vector<SetChoice>& memo) const {
  SetChoice& m = memo[static_cast<std::size_t>(holders)];
  if (m.best < 0) m.best = best_holder(holders, rank);
  if (m.source >= 0 && m.previous == previous) return m.source;
  const int node = nodes_.to(rank);
  const std::vector<int>& set = holders_[static_cast<std::size_t>(holders)];
  int source = m.best;
  if (previous >= 0 && previous != source && (nodes_.from(previous) == node) == (nodes_.from(source) == node) &&
      std::binary_search(set.begin(), set.end(), previous))
    source = previous;
  m.previous = previous;
  m.source = source;
  return source;
}

// A copy on the reader's node first (Tenplex §4.2), then the file the previous run came
// from (longer reads), then the old ranks in turn from the reader's own number, which
// spreads the readers over the copies. The choice depends on the new rank alone, so a
// plan of some ranks gives each the reads the whole plan gives it. Every old rank holds an
// element at most once, so the least key over the covering runs' holders is one holder;
// each run offers its holder_after().
Planner::Choice Planner::choose(std::span<const int> covering, const Coverage& c, int rank, int previous,
                                std::vector<SetChoice>& memo) const {
  const int n = from_.ranks();
  const int node = nodes_.to(rank);
  auto key = [&](int source) {
    return std::make_tuple(nodes_.from(source) == node ? 0 : 1, source == previous ? 0 : 1, (source - rank % n + n) % n);
  };
  Choice best;
  for (int r : covering) {
    const int source = holder_after(c.runs[static_cast<std::size_t>(r)].holders, rank, previous, memo);
    if (best.run < 0 || key(source) < key(best.source)) best = {r, source};
  }
  return best;
}

// The reads of new rank `rank`'s file: the pieces of the tensors its group holds alike
// (`alike`, or found here when null), then those of its ZeRO chunks, each read from the
// old file choose() picks for this rank.
FilePlan Planner::plan_file(int rank, const std::vector<Piece>* alike,
                            std::vector<std::uint64_t>& bytes_from_node) const {
  const RankCoords coords = coords_of(to_, rank);
  const NewGroup& group = groups_.at({coords.tp, coords.pp});
  FilePlan plan;
  plan.tensors = group.tensors;
  const std::size_t replicated = group.tensors.size() - group.partitioned.size();
  std::vector<Piece> own;
  for (std::size_t k = 0; k < group.partitioned.size(); ++k) {
    const ZeroPartition& z = group.partitioned[k];
    walk(static_cast<int>(replicated + k), z.decl.dtype, z.chunk(spec_, to_, coords.dp),
         [&](const Piece& piece) { add_piece(own, piece); });
  }
  std::vector<SetChoice> memo(holders_.size());
  int previous = -1;
  auto read = [&](const Piece& p) {
    const Coverage& c = coverage_[static_cast<std::size_t>(p.global)];
    const Choice choice = choose(c.covering_of(p.interval), c, rank, previous, memo);
    const Run& run = c.runs[static_cast<std::size_t>(choice.run)];
    const CopyOp op{choice.source, run.offset + (p.start - run.start) * p.element, p.tensor, p.offset,
                    p.count * p.element};
    CopyOp* last = plan.ops.empty() ? nullptr : &plan.ops.back();
    if (last != nullptr && last->source_rank == op.source_rank && last->tensor == op.tensor &&
        last->source_offset + last->bytes == op.source_offset && last->offset + last->bytes == op.offset)
      last->bytes += op.bytes;
    else
      plan.ops.push_back(op);
    bytes_from_node[static_cast<std::size_t>(nodes_.from(choice.source))] += op.bytes;
    previous = choice.source;
  };
  if (alike != nullptr) {
    plan.ops.reserve(alike->size() + own.size());
    for (const Piece& p : *alike) read(p);
  } else {
    walk_replicated(coords.tp, coords.pp, read);
  }
  for (const Piece& p : own) read(p);
  return plan;
}

std::vector<Piece> Planner::alike_pieces(int tp, int pp) const {
  std::vector<Piece> alike;
  walk_replicated(tp, pp, [&](const Piece& piece) { add_piece(alike, piece); });
  return alike;
}

std::vector<int> every_rank(const Layout& layout) {
  std::vector<int> all(static_cast<std::size_t>(std::max(layout.ranks(), 0)));
  for (std::size_t r = 0; r < all.size(); ++r) all[r] = static_cast<int>(r);
  return all;
}

// The first new rank whose file is rank r's (r itself unless r is a data-parallel replica):
// without ZeRO, ranks of one TP and PP coordinate on one node hold the same file.
std::vector<int> replica_group_first(const Layout& to, const NodeTable& nodes) {
  std::vector<int> first(static_cast<std::size_t>(to.ranks()));
  std::map<std::tuple<int, int, int>, int> seen;  // (tp, pp, node) -> first rank
  for (int r = 0; r < to.ranks(); ++r) {
    const RankCoords c = coords_of(to, r);
    first[static_cast<std::size_t>(r)] = to.zero == 0 ? seen.try_emplace({c.tp, c.pp, nodes.to(r)}, r).first->second : r;
  }
  return first;
}

}  // namespace

const RankPlan& ReshardPlan::rank(int r) const {
  auto it = std::lower_bound(ranks.begin(), ranks.end(), r, [](const RankPlan& p, int x) { return p.rank < x; });
  if (it == ranks.end() || it->rank != r) throw Error(fmt::format("new rank {} is not in the plan", r));
  return *it;
}

// The copy operations that a FilePlanner's plans hold now, and the most they held.
struct HeldOps {
  std::mutex mutex;
  std::uint64_t now = 0;
  std::uint64_t most = 0;
};

struct FilePlanner::Impl {
  // The files of one TP and PP coordinate's ranks, and the pieces they share while some
  // are still to be planned.
  struct Group {
    int tp = 0, pp = 0;
    std::size_t files = 0;
    std::size_t unplanned = 0;
    std::mutex mutex;
    std::shared_ptr<const std::vector<Piece>> alike;
  };
  struct File {
    std::size_t group = 0;
    int first = 0;           // the rank whose reads its replicas make (replica_group_first)
    std::vector<int> ranks;  // those wanted
  };

  Impl(const StateSpec& spec, const Layout& old_layout, const Layout& new_layout, const RankNodes& rank_nodes)
      : from(old_layout), to(new_layout), nodes(rank_nodes, old_layout, new_layout),
        planner(spec, old_layout, new_layout, nodes) {}

  Layout from, to;
  NodeTable nodes;
  Planner planner;
  std::vector<std::unique_ptr<Group>> groups;
  std::vector<File> files;
  std::shared_ptr<HeldOps> held = std::make_shared<HeldOps>();
};

FilePlanner::FilePlanner(const StateSpec& spec, const Layout& from, const std::vector<SafetensorsHeader>& sources,
                         const Layout& to, const RankNodes& nodes, const std::vector<int>& ranks) {
  check_layout(spec, from);
  check_layout(spec, to);
  if (static_cast<int>(sources.size()) != from.ranks())
    throw Error(fmt::format("layout {} has {} ranks, but {} old files are given", to_string(from), from.ranks(),
                            sources.size()));
  if (!nodes.from.empty() && static_cast<int>(nodes.from.size()) != from.ranks())
    throw Error(fmt::format("the node list of the old ranks has length {}, but the old layout {} has {} ranks",
                            nodes.from.size(), to_string(from), from.ranks()));
  if (!nodes.to.empty() && static_cast<int>(nodes.to.size()) != to.ranks())
    throw Error(fmt::format("the node list of the new ranks has length {}, but the new layout {} has {} ranks",
                            nodes.to.size(), to_string(to), to.ranks()));
  std::vector<int> wanted = ranks;
  std::sort(wanted.begin(), wanted.end());
  wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
  for (int r : wanted)
    if (r < 0 || r >= to.ranks())
      throw Error(fmt::format("new rank {} is not in the new layout {} ({} ranks)", r, to_string(to), to.ranks()));

  impl_ = std::make_unique<Impl>(spec, from, to, nodes);
  const std::vector<int> first = replica_group_first(to, impl_->nodes);
  std::map<int, std::vector<int>> replicas;  // a replica group's first rank -> its ranks wanted
  for (int r : wanted) replicas[first[static_cast<std::size_t>(r)]].push_back(r);
  std::map<std::pair<int, int>, std::vector<int>> by_group;  // (tp, pp) -> first ranks
  for (const auto& [f, members] : replicas) {
    impl_->planner.need(f);
    const RankCoords c = coords_of(to, f);
    by_group[{c.tp, c.pp}].push_back(f);
  }
  for (const auto& [where, firsts] : by_group) {
    auto group = std::make_unique<Impl::Group>();
    group->tp = where.first;
    group->pp = where.second;
    group->files = group->unplanned = firsts.size();
    for (int f : firsts) impl_->files.push_back({impl_->groups.size(), f, std::move(replicas.at(f))});
    impl_->groups.push_back(std::move(group));
  }
  impl_->planner.add_sources(sources);
  impl_->planner.index();
}

FilePlanner::FilePlanner(const StateSpec& spec, const Layout& from, const std::vector<SafetensorsHeader>& sources,
                         const Layout& to, const RankNodes& nodes)
    : FilePlanner(spec, from, sources, to, nodes, every_rank(to)) {}

FilePlanner::~FilePlanner() = default;

const Layout& FilePlanner::from() const { return impl_->from; }
const Layout& FilePlanner::to() const { return impl_->to; }
std::size_t FilePlanner::file_count() const { return impl_->files.size(); }
const std::vector<int>& FilePlanner::ranks_of(std::size_t file) const { return impl_->files.at(file).ranks; }

std::uint64_t FilePlanner::most_ops_held() const {
  const std::lock_guard<std::mutex> lock(impl_->held->mutex);
  return impl_->held->most;
}

// A group that plans more than one file finds the pieces its files share once, at its
// first file, and drops them when its last file has been planned.
ReshardPlan FilePlanner::plan(std::size_t file) const {
  const Impl::File& f = impl_->files.at(file);
  Impl::Group& group = *impl_->groups[f.group];
  std::shared_ptr<const std::vector<Piece>> alike;
  {
    const std::lock_guard<std::mutex> lock(group.mutex);
    if (group.files > 1 && group.alike == nullptr)
      group.alike = std::make_shared<const std::vector<Piece>>(impl_->planner.alike_pieces(group.tp, group.pp));
    alike = group.alike;
    if (group.unplanned > 0 && --group.unplanned == 0) group.alike.reset();
  }
  const NodeTable& nodes = impl_->nodes;
  std::vector<std::uint64_t> read(static_cast<std::size_t>(nodes.count()), 0);  // per old node
  FilePlan planned = impl_->planner.plan_file(f.first, alike.get(), read);
  alike.reset();

  const std::uint64_t ops = planned.ops.size();
  const std::shared_ptr<HeldOps> held = impl_->held;
  {
    const std::lock_guard<std::mutex> lock(held->mutex);
    held->now += ops;
    held->most = std::max(held->most, held->now);
  }
  const std::shared_ptr<const FilePlan> shared(new FilePlan(std::move(planned)), [held, ops](const FilePlan* p) {
    delete p;
    const std::lock_guard<std::mutex> lock(held->mutex);
    held->now -= ops;
  });

  ReshardPlan plan;
  plan.from = impl_->from;
  plan.to = impl_->to;
  plan.files.push_back(shared);
  for (int r : f.ranks) {
    plan.ranks.push_back({r, shared->tensors, shared->ops});
    for (int n = 0; n < nodes.count(); ++n) {
      const std::uint64_t bytes = read[static_cast<std::size_t>(n)];
      if (bytes == 0) continue;
      plan.bytes_between_nodes[{nodes.name(n), nodes.name(nodes.to(r))}] += bytes;
      plan.bytes += bytes;
    }
  }
  return plan;
}

ReshardPlan plan_reshard(const StateSpec& spec, const Layout& from, const std::vector<SafetensorsHeader>& sources,
                         const Layout& to, const RankNodes& nodes) {
  return plan_reshard(spec, from, sources, to, nodes, every_rank(to));
}

// The union of a FilePlanner's plans, the files in the order of their first ranks.
ReshardPlan plan_reshard(const StateSpec& spec, const Layout& from, const std::vector<SafetensorsHeader>& sources,
                         const Layout& to, const RankNodes& nodes, const std::vector<int>& ranks) {
  const FilePlanner planner(spec, from, sources, to, nodes, ranks);
  ReshardPlan plan;
  plan.from = from;
  plan.to = to;
  std::vector<std::pair<int, std::shared_ptr<const FilePlan>>> files;  // (first rank, plan)
  for (std::size_t f = 0; f < planner.file_count(); ++f) {
    ReshardPlan part = planner.plan(f);
    files.emplace_back(part.ranks.front().rank, part.files.front());
    plan.ranks.insert(plan.ranks.end(), part.ranks.begin(), part.ranks.end());
    for (const auto& [pair, bytes] : part.bytes_between_nodes) plan.bytes_between_nodes[pair] += bytes;
    plan.bytes += part.bytes;
  }
  std::sort(plan.ranks.begin(), plan.ranks.end(), [](const RankPlan& a, const RankPlan& b) { return a.rank < b.rank; });
  std::sort(files.begin(), files.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [first, file] : files) plan.files.push_back(std::move(file));
  return plan;
}

}  // namespace morph::state
