#include "libmorph/state/reshard_plan.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"

namespace morph::state {
namespace {

// A run of a global tensor in an old rank's file.
struct Piece {
  std::uint64_t start = 0;  // elements
  std::uint64_t count = 0;
  int rank = 0;
  std::uint64_t offset = 0;  // file byte offset of element `start`
};

// Who holds each element of one global tensor: its elementary intervals (between
// consecutive piece boundaries) and, for each, the pieces covering it (its replicas).
struct Coverage {
  std::vector<Piece> pieces;
  std::vector<std::uint64_t> bounds;       // interval i is [bounds[i], bounds[i+1])
  std::vector<std::vector<int>> covering;  // per interval: indices into pieces

  void build() {
    for (const Piece& p : pieces) {
      bounds.push_back(p.start);
      bounds.push_back(p.start + p.count);
    }
    std::sort(bounds.begin(), bounds.end());
    bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
    std::vector<int> order(pieces.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
    std::sort(order.begin(), order.end(), [&](int a, int b) { return pieces[a].start < pieces[b].start; });
    std::vector<int> active;
    std::size_t next = 0;
    for (std::size_t i = 0; i + 1 < bounds.size(); ++i) {
      std::erase_if(active, [&](int p) { return pieces[p].start + pieces[p].count <= bounds[i]; });
      while (next < order.size() && pieces[order[next]].start <= bounds[i]) active.push_back(order[next++]);
      covering.push_back(active);
    }
  }
};

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += fmt::format("{}{}", i ? ", " : "", shape[i]);
  return s + "]";
}

class Planner {
 public:
  Planner(const StateSpec& spec, const Layout& from, const Layout& to, const RankNodes& nodes)
      : spec_(spec), from_(from), to_(to), nodes_(nodes), coverage_(static_cast<std::size_t>(global_count(spec))),
        load_(static_cast<std::size_t>(from.ranks()), 0) {}

  void add_source(int rank, const SafetensorsHeader& header);
  void index();
  RankPlan plan_rank(int rank, ReshardPlan& totals);

 private:
  const std::string& node_from(int rank) const;
  const std::string& node_to(int rank) const;
  int choose(const std::vector<int>& candidates, const Coverage& c, int dest, int previous) const;

  const StateSpec& spec_;
  Layout from_, to_;
  const RankNodes& nodes_;
  std::vector<Coverage> coverage_;
  std::vector<std::uint64_t> load_;  // bytes read from each old rank so far
};

const std::string& Planner::node_from(int rank) const {
  static const std::string local;
  return nodes_.from.empty() ? local : nodes_.from.at(static_cast<std::size_t>(rank));
}

const std::string& Planner::node_to(int rank) const {
  static const std::string local;
  return nodes_.to.empty() ? local : nodes_.to.at(static_cast<std::size_t>(rank));
}

void Planner::add_source(int rank, const SafetensorsHeader& header) {
  for (const LocalTensor& t : rank_tensors(spec_, from_, rank)) {
    const std::string what = fmt::format("old rank {} under {}: tensor {}", rank, to_string(from_), quote(t.decl.name));
    const TensorEntry* e = header.find(t.decl.name);
    if (e == nullptr) throw Error(what + " is missing from its file");
    if (e->dtype != t.decl.dtype || e->shape != t.decl.shape)
      throw Error(fmt::format("{} is {} {} in its file; the layout needs {} {}", what, dtype_name(e->dtype),
                              shape_text(e->shape), dtype_name(t.decl.dtype), shape_text(t.decl.shape)));
    const std::uint64_t element = dtype_bytes(t.decl.dtype);
    std::uint64_t at = 0;
    for (const Segment& s : t.segments) {
      if (s.global >= 0)
        coverage_[static_cast<std::size_t>(s.global)].pieces.push_back(
            {s.start, s.count, rank, header.data_offset + e->begin + at * element});
      at += s.count;
    }
  }
}

void Planner::index() {
  for (Coverage& c : coverage_) c.build();
}

// A copy on the reader's node first, then the file the previous run came from (longer
// reads), then the least-read file (reads spread over the old files).
int Planner::choose(const std::vector<int>& candidates, const Coverage& c, int dest, int previous) const {
  int best = -1;
  auto key = [&](int p) {
    const Piece& piece = c.pieces[static_cast<std::size_t>(p)];
    return std::make_tuple(node_from(piece.rank) == node_to(dest) ? 0 : 1, piece.rank == previous ? 0 : 1,
                           load_[static_cast<std::size_t>(piece.rank)], piece.rank);
  };
  for (int p : candidates)
    if (best < 0 || key(p) < key(best)) best = p;
  return best;
}

RankPlan Planner::plan_rank(int rank, ReshardPlan& totals) {
  RankPlan plan;
  plan.rank = rank;
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
        if (i == 0 || i >= c.bounds.size() || c.covering[i - 1].empty())
          throw Error(fmt::format("internal: elements of {} from {} are in no old file", global_name(spec_, s.global), x));
        const std::uint64_t stop = std::min(end, c.bounds[i]);
        const Piece& p = c.pieces[static_cast<std::size_t>(choose(c.covering[i - 1], c, rank, previous))];
        const CopyOp op{p.rank, p.offset + (x - p.start) * element, tensor, (at + (x - s.start)) * element,
                        (stop - x) * element};
        CopyOp* last = plan.ops.empty() ? nullptr : &plan.ops.back();
        if (last != nullptr && last->source_rank == op.source_rank && last->tensor == op.tensor &&
            last->source_offset + last->bytes == op.source_offset && last->offset + last->bytes == op.offset)
          last->bytes += op.bytes;
        else
          plan.ops.push_back(op);
        load_[static_cast<std::size_t>(p.rank)] += op.bytes;
        totals.bytes_between_nodes[{node_from(p.rank), node_to(rank)}] += op.bytes;
        totals.bytes += op.bytes;
        previous = p.rank;
        x = stop;
      }
      at += s.count;
    }
  }
  return plan;
}

}  // namespace

ReshardPlan plan_reshard(const StateSpec& spec, const Layout& from, const std::vector<SafetensorsHeader>& sources,
                         const Layout& to, const RankNodes& nodes) {
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
  Planner planner(spec, from, to, nodes);
  for (int r = 0; r < from.ranks(); ++r) planner.add_source(r, sources[static_cast<std::size_t>(r)]);
  planner.index();
  ReshardPlan plan;
  plan.from = from;
  plan.to = to;
  for (int r = 0; r < to.ranks(); ++r) plan.ranks.push_back(planner.plan_rank(r, plan));
  return plan;
}

}  // namespace morph::state
