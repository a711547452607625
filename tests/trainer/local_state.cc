#include "tests/trainer/local_state.h"

#include <algorithm>

#include <fmt/format.h>

#include "libmorph/util/error.h"

namespace morph::trainer {

LocalState::LocalState(const state::StateSpec& spec, const state::Layout& layout, state::RankCoords c)
    : slot_of_(spec.params.size(), -1), zero_(layout.zero) {
  const int t = layout.tp;
  for (std::size_t i = 0; i < spec.params.size(); ++i) {
    const state::ParamSpec& p = spec.params[i];
    if (!state::stage_owns(spec, layout, p, c.pp)) continue;
    Slot s;
    s.param = static_cast<int>(i);
    s.offset = flat_size_;
    s.global_rows = p.shape.at(0);
    s.global_cols = p.shape.size() > 1 ? p.shape[1] : 1;
    s.rows = s.global_rows;
    s.cols = s.global_cols;
    switch (p.split) {
      case state::Split::replicated: break;
      case state::Split::column:
        s.rows = s.global_rows / t;
        s.first_row = s.rows * c.tp;
        break;
      case state::Split::row:
        s.cols = s.global_cols / t;
        s.first_col = s.cols * c.tp;
        break;
      case state::Split::vocab:
        s.rows = state::padded_rows(spec, s.global_rows, t) / t;
        s.first_row = s.rows * c.tp;
        break;
    }
    s.shape = p.shape.size() > 1 ? std::vector<std::int64_t>{s.rows, s.cols} : std::vector<std::int64_t>{s.rows};
    flat_size_ += s.elements();
    slot_of_[i] = static_cast<int>(slots_.size());
    slots_.push_back(std::move(s));
  }
  const auto d = static_cast<std::uint64_t>(layout.dp);
  chunk_ = partitioned() ? (flat_size_ + d - 1) / d : flat_size_;
  chunk_begin_ = partitioned() ? chunk_ * static_cast<std::uint64_t>(c.dp) : 0;
  const std::uint64_t padded = partitioned() ? chunk_ * d : flat_size_;
  params.assign(padded, 0.0);
  grads.assign(padded, 0.0);
  optim.assign(spec.optimizer.size(), std::vector<double>(chunk_, 0.0));
}

bool LocalState::owns(int param) const {
  return param >= 0 && param < static_cast<int>(slot_of_.size()) && slot_of_[static_cast<std::size_t>(param)] >= 0;
}

const Slot& LocalState::slot(int param) const {
  if (!owns(param)) throw Error(fmt::format("parameter {} is not held by this pipeline stage", param));
  return slots_[static_cast<std::size_t>(slot_of_[static_cast<std::size_t>(param)])];
}

std::int64_t LocalState::global_index(const Slot& s, std::uint64_t k) {
  const auto i = static_cast<std::int64_t>(k) / s.cols;
  const auto j = static_cast<std::int64_t>(k) % s.cols;
  const std::int64_t row = s.first_row + i;
  if (row >= s.global_rows) return -1;  // vocabulary padding
  return row * s.global_cols + s.first_col + j;
}

MatMap LocalState::map(std::vector<double>& v, int param) {
  const Slot& s = slot(param);
  return MatMap(v.data() + s.offset, s.rows, s.cols);
}

VecMap LocalState::vec_map(std::vector<double>& v, int param) {
  const Slot& s = slot(param);
  return VecMap(v.data() + s.offset, static_cast<Eigen::Index>(s.elements()));
}

}  // namespace morph::trainer
