// Where Slurm's reservations let a job start (daemon/reservations): reservation.c's
// job_test_resv, on a four-node view.
#include "daemon/reservations.h"

#include <gtest/gtest.h>

namespace morph::daemon {
namespace {

const std::map<std::string, int> kNodes = {{"n1", 0}, {"n2", 1}, {"n3", 2}, {"n4", 3}};
constexpr double kNow = 10'000;

SlurmReservation reservation(std::string name, std::vector<std::string> nodes, double start_s, double end_s) {
  SlurmReservation r;
  r.name = std::move(name);
  r.nodes = std::move(nodes);
  r.start_s = start_s;
  r.end_s = end_s;
  return r;
}

SlurmJob job(std::vector<std::string> reservations = {}, double time_limit_s = 3600) {
  SlurmJob j;
  j.time_limit_s = time_limit_s;
  j.reservations = std::move(reservations);
  return j;
}

ReservationBound bound(const std::vector<SlurmReservation>& reservations, const SlurmJob& j) {
  return reservation_bound(reservations, j, kNow, kNodes, kNodes.size());
}

// A job outside an active reservation may not start on its nodes (MAINT or not): they
// counted as usable, and morphd planned jobs onto nodes Slurm would not start them on.
TEST(Reservations, AJobOutsideAnActiveReservationKeepsOffItsNodes) {
  SlurmReservation maint = reservation("maint", {"n1"}, kNow - 60, kNow + 600);
  maint.maint = true;
  const std::vector<SlurmReservation> all = {maint, reservation("course", {"n3"}, kNow - 60, kNow + 600)};
  const ReservationBound b = bound(all, job());
  EXPECT_EQ(b.allowed, (std::vector<bool>{false, true, false, true}));
  EXPECT_EQ(b.key, ":r-maint-course");
}

// Slurm keeps a job off a reservation that starts before the job's time limit ends, and
// counts a job without one as running for a year.
TEST(Reservations, AReservationStartingBeforeTheJobsLimitEndsKeepsItOff) {
  const std::vector<SlurmReservation> later = {reservation("later", {"n2"}, kNow + 1800, kNow + 3600)};
  EXPECT_EQ(bound(later, job({}, 3600)).allowed, (std::vector<bool>{true, false, true, true}));
  EXPECT_TRUE(bound(later, job({}, 900)).allowed.empty());  // it ends before: every node
  EXPECT_EQ(bound(later, job({}, 0)).allowed, (std::vector<bool>{true, false, true, true}));
}

TEST(Reservations, AnEndedReservationOrOneOffTheViewBindsNothing) {
  EXPECT_TRUE(bound({reservation("past", {"n1"}, kNow - 600, kNow - 60)}, job()).allowed.empty());
  const ReservationBound elsewhere = bound({reservation("other", {"x9"}, kNow - 60, kNow + 600)}, job());
  EXPECT_TRUE(elsewhere.allowed.empty());
  EXPECT_TRUE(elsewhere.key.empty());
}

// A job of a reservation runs on its nodes only, less those of another reservation it
// would meet; a MAINT reservation's jobs keep those too.
TEST(Reservations, AJobOfAReservationRunsOnItsNodesOnly) {
  std::vector<SlurmReservation> all = {reservation("mine", {"n1", "n2", "n3"}, kNow - 60, kNow + 7200),
                                       reservation("other", {"n3"}, kNow - 60, kNow + 600)};
  ReservationBound b = bound(all, job({"mine"}));
  EXPECT_EQ(b.allowed, (std::vector<bool>{true, true, false, false}));
  EXPECT_EQ(b.key, ":rmine+mine-other");
  all[0].maint = true;
  EXPECT_EQ(bound(all, job({"mine"})).allowed, (std::vector<bool>{true, true, true, false}));
}

// Of several reservations (--reservation=a,b), any may start it.
TEST(Reservations, AJobOfSeveralReservationsMayStartInAny) {
  const std::vector<SlurmReservation> all = {reservation("a", {"n1"}, kNow - 60, kNow + 7200),
                                             reservation("b", {"n4"}, kNow - 60, kNow + 600)};
  EXPECT_EQ(bound(all, job({"b", "a"})).allowed, (std::vector<bool>{true, false, false, true}));
}

TEST(Reservations, AFlexOrAnyNodesReservationsJobMayRunElsewhere) {
  std::vector<SlurmReservation> all = {reservation("mine", {"n1"}, kNow - 60, kNow + 7200),
                                       reservation("other", {"n4"}, kNow - 60, kNow + 600)};
  all[0].flex = true;
  EXPECT_EQ(bound(all, job({"mine"})).allowed, (std::vector<bool>{true, true, true, false}));
  all[0].flex = false;
  all[0].any_nodes = true;
  all[0].nodes.clear();
  EXPECT_EQ(bound(all, job({"mine"})).allowed, (std::vector<bool>{true, true, true, false}));
}

// A job of a reservation not active yet (or gone) waits for it (Reason=Reservation): no
// node may start it.
TEST(Reservations, AJobOfAReservationNotActiveMayStartNowhere) {
  const std::vector<SlurmReservation> all = {reservation("soon", {"n1"}, kNow + 600, kNow + 7200)};
  EXPECT_EQ(bound(all, job({"soon"})).allowed, std::vector<bool>(4, false));
  EXPECT_EQ(bound(all, job({"gone"})).allowed, std::vector<bool>(4, false));
}

// Some cores of each node (CoreCnt): Slurm lets others use the rest; morphd keeps Morph
// off the whole node. NodeList=ALL, or a list morphd cannot read, is every node.
TEST(Reservations, APartialOrUnreadableReservationKeepsMorphOffItsWholeNodes) {
  SlurmReservation cores = reservation("cores", {"n2"}, kNow - 60, kNow + 600);
  cores.whole_nodes = false;
  EXPECT_EQ(bound({cores}, job()).allowed, (std::vector<bool>{true, false, true, true}));
  SlurmReservation all = reservation("all", {}, kNow - 60, kNow + 600);
  all.every_node = true;
  EXPECT_EQ(bound({all}, job()).allowed, std::vector<bool>(4, false));
  EXPECT_TRUE(bound({all}, job({"all"})).allowed.empty());
}

}  // namespace
}  // namespace morph::daemon
