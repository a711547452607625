// Which measurements teach a fit the most (Bayesian D-optimal design, greedy): the
// candidate whose log iteration time the parameters known so far predict least surely.
// Adding point g to the information M of the fit multiplies det M by 1 + g' M^-1 g (the
// matrix determinant lemma), so the greedy D-optimal choice is the largest predictive
// variance g' M^-1 g; the information then grows by g g' and the next is chosen.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include <Eigen/Dense>

#include "libmorph/perf/iteration_time.h"
#include "libmorph/perf/perf_params.h"

namespace morph {

// d log T_iter / d log(k_i + prior_floor(i)) at `at`, for every parameter i: the
// sensitivity of a prediction on the scale of the fit's prior.
Eigen::VectorXd log_sensitivity(const IterationTerms& terms, const PerfParams& at);

// Up to `k` of `candidates` (indices, in the order chosen), none twice, only those with
// eligible[i]. The information starts at prior_weight^2 per parameter (> 0) plus that of
// the `fitted` points' iteration times; ties go to the first candidate.
std::vector<std::size_t> most_informative(std::span<const IterationTerms> fitted,
                                          std::span<const IterationTerms> candidates,
                                          const std::vector<bool>& eligible, const PerfParams& at,
                                          double prior_weight, int k);

}  // namespace morph
