// Where Slurm's reservations let a job start: a reservation's nodes are its own jobs'
// from its start to its end, and a job of a reservation runs only on its nodes
// (reservation.c, job_test_resv). morphd plans a job only where this lets it start.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "daemon/cluster_snapshot.h"

namespace morph::daemon {

// A job's nodes by the reservations, by index into the view's nodes.
struct ReservationBound {
  std::vector<bool> allowed;  // empty: every node
  // What decides `allowed`: ":r", the job's reservations, then each reservation it would
  // meet on the view's nodes, "+NAME" one of its own, "-NAME" another. Jobs with the same
  // key have the same nodes.
  std::string key;
};

// Slurm's job_test_resv for `job` starting at `now_s` and running for its time limit (none:
// a year, as Slurm counts it). A job of no reservation may not use the nodes of any that
// is active before its limit ends, one starting later included; of a reservation (or of
// several, where one may start it), only its nodes while it is active (any node: FLEX,
// ANY_NODES), less those of other reservations it would meet (a MAINT one's jobs keep
// them, an OVERLAP one's all but MAINT ones'). Reservations of some cores of each node
// keep Morph off the whole node (Slurm lets a job use the other cores: a capacity lost,
// never a plan Slurm refuses). `node_index`: the view's nodes by name, `node_count` of them.
ReservationBound reservation_bound(const std::vector<SlurmReservation>& reservations, const SlurmJob& job,
                                   double now_s, const std::map<std::string, int>& node_index,
                                   std::size_t node_count);

}  // namespace morph::daemon
