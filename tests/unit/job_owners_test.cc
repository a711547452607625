// Who owns the job a report names (daemon/job_owners.h): the snapshot's jobs for free, the
// others asked of slurmctld once each and at most kLookupsPerSnapshot times per snapshot.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "daemon/job_owners.h"

namespace morph::daemon {
namespace {

using Kind = JobOwners::Answer::Kind;

SlurmJob job(std::uint32_t id, std::uint32_t uid) {
  SlurmJob j;
  j.id = id;
  j.user_id = uid;
  return j;
}

// slurmctld as the lookup sees it: jobs 1000-1999 belong to uid 7, job 5000 does not
// answer, every other job is gone; each question is counted.
struct Slurmctld {
  int asked = 0;
  JobOwners::Lookup lookup() {
    return [this](std::uint32_t id, bool* gone) -> std::optional<SlurmJob> {
      ++asked;
      *gone = id != 5000;
      if (id >= 1000 && id < 2000) return job(id, 7);
      return std::nullopt;
    };
  }
};

TEST(JobOwners, TheSnapshotAnswersAndEveryOtherJobIsAskedOnce) {
  Slurmctld slurmctld;
  JobOwners owners(slurmctld.lookup());
  owners.reset({job(1, 42), job(2, 43)});
  EXPECT_EQ(owners.owner(1).kind, Kind::owner);
  EXPECT_EQ(owners.owner(2).uid, 43u);
  EXPECT_EQ(slurmctld.asked, 0);
  // Submitted since the snapshot: asked once, then remembered.
  for (int i = 0; i < 3; ++i) {
    const JobOwners::Answer a = owners.owner(1500);
    EXPECT_EQ(a.kind, Kind::owner);
    EXPECT_EQ(a.uid, 7u);
  }
  // No such job: asked once too.
  for (int i = 0; i < 3; ++i) EXPECT_EQ(owners.owner(9).kind, Kind::no_such_job);
  EXPECT_EQ(slurmctld.asked, 2);
  // slurmctld not answering: the report waits, and the next report asks again.
  EXPECT_EQ(owners.owner(5000).kind, Kind::later);
  EXPECT_EQ(owners.owner(5000).kind, Kind::later);
  EXPECT_EQ(slurmctld.asked, 4);
  // A new snapshot forgets what was asked: job 1 ended, job 1500 is in it.
  owners.reset({job(1500, 7)});
  EXPECT_EQ(owners.owner(1500).uid, 7u);
  EXPECT_EQ(owners.owner(1).kind, Kind::no_such_job);
  EXPECT_EQ(slurmctld.asked, 5);
}

TEST(JobOwners, AFloodOfOtherJobIdsCostsSlurmctldABoundedNumberOfQuestions) {
  Slurmctld slurmctld;
  JobOwners owners(slurmctld.lookup());
  owners.reset({job(1, 42)});
  int later = 0;
  for (std::uint32_t id = 10'000; id < 10'000 + 1'000; ++id) later += owners.owner(id).kind == Kind::later;
  EXPECT_EQ(slurmctld.asked, JobOwners::kLookupsPerSnapshot);
  EXPECT_EQ(later, 1'000 - JobOwners::kLookupsPerSnapshot);
  const JobOwners::Answer waits = owners.owner(1200);  // an honest new job waits too ...
  EXPECT_EQ(waits.kind, Kind::later);
  EXPECT_NE(waits.why.find("outside morphd's view"), std::string::npos) << waits.why;
  EXPECT_EQ(owners.owner(1).kind, Kind::owner);  // ... the snapshot's jobs do not
  owners.reset({job(1, 42)});                     // until the next snapshot
  EXPECT_EQ(owners.owner(1200).uid, 7u);
  EXPECT_EQ(slurmctld.asked, JobOwners::kLookupsPerSnapshot + 1);
}

}  // namespace
}  // namespace morph::daemon
