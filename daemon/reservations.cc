#include "daemon/reservations.h"

#include <algorithm>

namespace morph::daemon {
namespace {

constexpr double kYearS = 365.0 * 24 * 3600;  // Slurm's YEAR_SECONDS: a job without a time limit

const SlurmReservation* named(const std::vector<SlurmReservation>& reservations, const std::string& name) {
  const auto it = std::find_if(reservations.begin(), reservations.end(),
                               [&](const SlurmReservation& r) { return r.name == name; });
  return it == reservations.end() ? nullptr : &*it;
}

bool requested(const SlurmJob& job, const SlurmReservation& r) {
  return std::find(job.reservations.begin(), job.reservations.end(), r.name) != job.reservations.end();
}

// Sets `value` on the view's nodes of `r`; returns how many it holds.
std::size_t mark(const SlurmReservation& r, bool value, const std::map<std::string, int>& node_index,
                 std::vector<bool>& mask) {
  if (r.every_node) {
    std::fill(mask.begin(), mask.end(), value);
    return mask.size();
  }
  std::size_t held = 0;
  for (const std::string& name : r.nodes)
    if (const auto it = node_index.find(name); it != node_index.end()) {
      mask[static_cast<std::size_t>(it->second)] = value;
      ++held;
    }
  return held;
}

// Whether `r` is active at some time a job running from `from_s` to `to_s` would be.
bool meets(const SlurmReservation& r, double from_s, double to_s) { return r.start_s < to_s && r.end_s > from_s; }

// The nodes a job of `own`, active at `now_s`, may start on until `end_s`.
std::vector<bool> nodes_of(const SlurmReservation& own, const std::vector<SlurmReservation>& reservations,
                           double now_s, double end_s, const std::map<std::string, int>& node_index,
                           std::size_t node_count) {
  std::vector<bool> mask(node_count, own.flex || own.any_nodes);
  if (!own.flex && !own.any_nodes) mark(own, true, node_index, mask);
  if (own.maint) return mask;
  for (const SlurmReservation& other : reservations)
    if (other.name != own.name && other.whole_nodes && meets(other, now_s, end_s) && !(own.overlap && !other.maint))
      mark(other, false, node_index, mask);
  return mask;
}

}  // namespace

ReservationBound reservation_bound(const std::vector<SlurmReservation>& reservations, const SlurmJob& job,
                                   double now_s, const std::map<std::string, int>& node_index,
                                   std::size_t node_count) {
  const double end_s = now_s + (job.time_limit_s > 0 ? job.time_limit_s : kYearS);
  ReservationBound bound;
  bound.key = ":r";
  for (std::size_t i = 0; i < job.reservations.size(); ++i) bound.key += (i > 0 ? "," : "") + job.reservations[i];
  std::vector<bool> scratch(node_count, true);  // the nodes of no reservation it would meet
  for (const SlurmReservation& r : reservations)
    if (meets(r, now_s, end_s) && mark(r, false, node_index, scratch) > 0)
      bound.key += (requested(job, r) ? "+" : "-") + r.name;
  if (job.reservations.empty()) {
    bound.allowed = std::move(scratch);
  } else {
    bound.allowed.assign(node_count, false);
    for (const std::string& name : job.reservations) {
      const SlurmReservation* own = named(reservations, name);
      if (own == nullptr || (!own->flex && (now_s < own->start_s || now_s >= own->end_s))) continue;  // it waits
      const std::vector<bool> mask = nodes_of(*own, reservations, now_s, end_s, node_index, node_count);
      for (std::size_t n = 0; n < node_count; ++n) bound.allowed[n] = bound.allowed[n] || mask[n];
    }
  }
  if (std::all_of(bound.allowed.begin(), bound.allowed.end(), [](bool b) { return b; })) return {};
  return bound;
}

}  // namespace morph::daemon
