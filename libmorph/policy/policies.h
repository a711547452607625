// The policies behind make_policy(): Morphling and its break-down variants (Table 4 of
// seed 000) and the baselines it is measured against.
#pragma once

#include <memory>

#include "libmorph/policy/policy.h"

namespace morph::policy {

std::unique_ptr<Policy> make_morphling();    // plans and resources (Algorithm 1)
std::unique_ptr<Policy> make_morphling_e();  // plans only, on the requested GPU count
std::unique_ptr<Policy> make_morphling_r();  // resources only, the requested plan scaled along DP
std::unique_ptr<Policy> make_morphling_n();  // neither: the requested GPUs and plan, Morphling's ordering
std::unique_ptr<Policy> make_fifo();
std::unique_ptr<Policy> make_synergy();
std::unique_ptr<Policy> make_sia();
std::unique_ptr<Policy> make_antman();

}  // namespace morph::policy
