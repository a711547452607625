// The median of a sample: the middle value, or the mean of the two middle values.
#pragma once

#include <vector>

namespace morph {

// 0 for an empty sample. Takes a copy: the caller's order is kept.
double median(std::vector<double> values);

}  // namespace morph
