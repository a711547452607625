// Where morphrun's iteration reports go in morphd: each accepted report (its munge uid
// owns the job; daemon/report) becomes observations in the state database, which
// `morph status` compares with the predicted throughput and the online refit reads.
#pragma once

#include <sys/types.h>

#include <vector>

#include "daemon/report/report_message.h"
#include "daemon/store/records.h"

namespace morph::daemon {

// The observations of one report, less its iterations of unknown (0) samples;
// `received_s` stamps them (the sender's clock is not trusted).
std::vector<store::Observation> observations_of(const report::ReportMessage& message, double received_s);

}  // namespace morph::daemon
