#include "libmorph/state/reshard_plan.h"

#include <algorithm>
#include <limits>
#include <set>
#include <tuple>

#include <fmt/format.h>

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

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += fmt::format("{}{}", i ? ", " : "", shape[i]);
  return s + "]";
}

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
  // New rank `rank`'s file; adds the bytes it reads to `bytes_from_node` (per old node).
  FilePlan plan_file(int rank, std::vector<std::uint64_t>& bytes_from_node) const;

 private:
  struct Choice {
    int run = -1;
    int source = -1;  // old rank
  };
  int holder_set(std::vector<int> ranks);
  void add_runs(const LocalTensor& t, std::uint64_t offset, int holders);
  int best_holder(int holders, int rank) const;
  Choice choose(std::span<const int> covering, const Coverage& c, int rank, int previous,
                std::vector<int>& best_of_set) const;

  const StateSpec& spec_;
  Layout from_, to_;
  const NodeTable& nodes_;
  std::vector<Coverage> coverage_;
  std::vector<bool> needed_;                 // per global tensor
  std::vector<std::vector<int>> holders_;    // holder sets: old ranks, increasing
  std::map<std::vector<int>, int> holder_id_;
};

void Planner::need(int rank) {
  for (const LocalTensor& t : rank_tensors(spec_, to_, rank))
    for (const Segment& s : t.segments)
      if (s.global >= 0) needed_[static_cast<std::size_t>(s.global)] = true;
}

int Planner::holder_set(std::vector<int> ranks) {
  auto [it, fresh] = holder_id_.try_emplace(std::move(ranks), static_cast<int>(holders_.size()));
  if (fresh) holders_.push_back(it->first);
  return it->second;
}

void Planner::add_runs(const LocalTensor& t, std::uint64_t offset, int holders) {
  const std::uint64_t element = dtype_bytes(t.decl.dtype);
  std::uint64_t at = 0;
  for (const Segment& s : t.segments) {
    if (s.global >= 0 && needed_[static_cast<std::size_t>(s.global)])
      coverage_[static_cast<std::size_t>(s.global)].runs.push_back({s.start, s.count, offset + at * element, holders});
    at += s.count;
  }
}

// The tensors that data-parallel replicas hold alike (replicated_tensor_count) are taken
// from dp rank 0 of their TP and PP coordinates and indexed once per distinct file offset,
// with the replicas holding them there; the others (ZeRO partitions) per rank. The files
// are checked in rank order, so the first error is the lowest rank's.
void Planner::add_sources(const std::vector<SafetensorsHeader>& headers) {
  for (int pp = 0; pp < from_.pp; ++pp) {
    std::vector<std::vector<LocalTensor>> shared;  // per tp: dp rank 0's tensors
    std::vector<std::size_t> replicated;           // per tp
    for (int tp = 0; tp < from_.tp; ++tp) {
      shared.push_back(rank_tensors(spec_, from_, rank_of(from_, {0, tp, pp})));
      replicated.push_back(replicated_tensor_count(spec_, from_, rank_of(from_, {0, tp, pp})));
    }
    // (tp, tensor, file offset) -> the old ranks holding that tensor there
    std::map<std::tuple<int, std::size_t, std::uint64_t>, std::vector<int>> copies;
    for (int dp = 0; dp < from_.dp; ++dp)
      for (int tp = 0; tp < from_.tp; ++tp) {
        const auto at = static_cast<std::size_t>(tp);
        const int rank = rank_of(from_, {dp, tp, pp});
        const SafetensorsHeader& header = headers[static_cast<std::size_t>(rank)];
        const bool partitioned = dp > 0 && replicated[at] < shared[at].size();  // ZeRO: tensors of its own
        const std::vector<LocalTensor> own =
            partitioned ? rank_tensors(spec_, from_, rank) : std::vector<LocalTensor>();
        const std::vector<LocalTensor>& tensors = partitioned ? own : shared[at];
        for (std::size_t i = 0; i < tensors.size(); ++i) {
          const LocalTensor& t = tensors[i];
          auto what = [&] {
            return fmt::format("old rank {} under {}: tensor {}", rank, to_string(from_), quote(t.decl.name));
          };
          const TensorEntry* e = i < header.tensors.size() && header.tensors[i].name == t.decl.name
                                     ? &header.tensors[i]
                                     : header.find(t.decl.name);
          if (e == nullptr) throw Error(what() + " is missing from its file");
          if (e->dtype != t.decl.dtype || e->shape != t.decl.shape)
            throw Error(fmt::format("{} is {} {} in its file; the layout needs {} {}", what(), dtype_name(e->dtype),
                                    shape_text(e->shape), dtype_name(t.decl.dtype), shape_text(t.decl.shape)));
          if (i < replicated[at])
            copies[{tp, i, header.data_offset + e->begin}].push_back(rank);
          else
            add_runs(t, header.data_offset + e->begin, holder_set({rank}));
        }
      }
    for (auto& [where, ranks] : copies)
      add_runs(shared[static_cast<std::size_t>(std::get<0>(where))][std::get<1>(where)], std::get<2>(where),
               holder_set(std::move(ranks)));
  }
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

// A copy on the reader's node first (Tenplex §4.2), then the file the previous run came
// from (longer reads), then the old ranks in turn from the reader's own number, which
// spreads the readers over the copies. The choice depends on the new rank alone, so a
// plan of some ranks gives each the reads the whole plan gives it. Every old rank holds an
// element at most once, so the least key over the covering runs' holders is one holder;
// each run offers its best holder (best_of_set, cached per file), or `previous` when it
// holds it on an equally good node.
Planner::Choice Planner::choose(std::span<const int> covering, const Coverage& c, int rank, int previous,
                                std::vector<int>& best_of_set) const {
  const int n = from_.ranks();
  const int node = nodes_.to(rank);
  auto key = [&](int source) {
    return std::make_tuple(nodes_.from(source) == node ? 0 : 1, source == previous ? 0 : 1, (source - rank % n + n) % n);
  };
  Choice best;
  for (int r : covering) {
    const int holders = c.runs[static_cast<std::size_t>(r)].holders;
    int& cached = best_of_set[static_cast<std::size_t>(holders)];
    if (cached < 0) cached = best_holder(holders, rank);
    int source = cached;
    const std::vector<int>& set = holders_[static_cast<std::size_t>(holders)];
    if (previous >= 0 && previous != source && (nodes_.from(previous) == node) == (nodes_.from(source) == node) &&
        std::binary_search(set.begin(), set.end(), previous))
      source = previous;
    if (best.run < 0 || key(source) < key(best.source)) best = {r, source};
  }
  return best;
}

FilePlan Planner::plan_file(int rank, std::vector<std::uint64_t>& bytes_from_node) const {
  FilePlan plan;
  std::vector<int> best_of_set(holders_.size(), -1);
  int previous = -1;
  for (const LocalTensor& t : rank_tensors(spec_, to_, rank)) {
    const int tensor = static_cast<int>(plan.tensors.size());
    plan.tensors.push_back(t.decl);
    const std::uint64_t element = dtype_bytes(t.decl.dtype);
    std::uint64_t at = 0;  // local element
    for (const Segment& s : t.segments) {
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
        const Choice choice = choose(c.covering_of(i - 1), c, rank, previous, best_of_set);
        const Run& run = c.runs[static_cast<std::size_t>(choice.run)];
        const CopyOp op{choice.source, run.offset + (x - run.start) * element, tensor,
                        (at + (x - s.start)) * element, (stop - x) * element};
        CopyOp* last = plan.ops.empty() ? nullptr : &plan.ops.back();
        if (last != nullptr && last->source_rank == op.source_rank && last->tensor == op.tensor &&
            last->source_offset + last->bytes == op.source_offset && last->offset + last->bytes == op.offset)
          last->bytes += op.bytes;
        else
          plan.ops.push_back(op);
        bytes_from_node[static_cast<std::size_t>(nodes_.from(choice.source))] += op.bytes;
        previous = choice.source;
        x = stop;
      }
      at += s.count;
    }
  }
  return plan;
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

ReshardPlan plan_reshard(const StateSpec& spec, const Layout& from, const std::vector<SafetensorsHeader>& sources,
                         const Layout& to, const RankNodes& nodes) {
  std::vector<int> all(static_cast<std::size_t>(std::max(to.ranks(), 0)));
  for (std::size_t r = 0; r < all.size(); ++r) all[r] = static_cast<int>(r);
  return plan_reshard(spec, from, sources, to, nodes, all);
}

ReshardPlan plan_reshard(const StateSpec& spec, const Layout& from, const std::vector<SafetensorsHeader>& sources,
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

  const NodeTable node_ids(nodes, from, to);
  const std::vector<int> first = replica_group_first(to, node_ids);
  Planner planner(spec, from, to, node_ids);
  std::set<int> files;  // the first rank of each replica group planned
  for (int r : wanted) files.insert(first[static_cast<std::size_t>(r)]);
  for (int f : files) planner.need(f);
  planner.add_sources(sources);
  planner.index();

  ReshardPlan plan;
  plan.from = from;
  plan.to = to;
  std::map<int, std::size_t> file_of;                     // a group's first rank -> index in plan.files
  std::vector<std::vector<std::uint64_t>> bytes_of_file;  // per file: bytes read from each old node
  for (int r : wanted) {
    const int f = first[static_cast<std::size_t>(r)];
    auto [it, fresh] = file_of.try_emplace(f, plan.files.size());
    if (fresh) {
      bytes_of_file.emplace_back(static_cast<std::size_t>(node_ids.count()), 0);
      plan.files.push_back(std::make_shared<const FilePlan>(planner.plan_file(f, bytes_of_file.back())));
    }
    const FilePlan& file = *plan.files[it->second];
    plan.ranks.push_back({r, file.tensors, file.ops});
    const std::vector<std::uint64_t>& read = bytes_of_file[it->second];
    for (int n = 0; n < node_ids.count(); ++n) {
      const std::uint64_t bytes = read[static_cast<std::size_t>(n)];
      if (bytes == 0) continue;
      plan.bytes_between_nodes[{node_ids.name(n), node_ids.name(node_ids.to(r))}] += bytes;
      plan.bytes += bytes;
    }
  }
  return plan;
}

}  // namespace morph::state
