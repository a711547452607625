#include "libmorph/util/median.h"

#include <algorithm>

namespace morph {

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  const std::size_t n = values.size();
  const auto middle = values.begin() + static_cast<std::ptrdiff_t>(n / 2);
  std::nth_element(values.begin(), middle, values.end());
  if (n % 2 == 1) return *middle;
  return (*middle + *std::max_element(values.begin(), middle)) / 2;
}

}  // namespace morph
