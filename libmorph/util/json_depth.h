// A SAX pass over JSON text before its DOM is built. nlohmann parses iteratively but
// copies, compares and destroys recursively, so text nested deeper than a limit is
// refused here; a pass that checks more (duplicate keys) overrides the events it needs
// and calls enter() and leave() for the nesting.
#pragma once

#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include "libmorph/util/error.h"

namespace morph {

template <typename Json>
class JsonDepthCheck : public nlohmann::json_sax<Json> {
 public:
  using typename nlohmann::json_sax<Json>::number_integer_t;
  using typename nlohmann::json_sax<Json>::number_unsigned_t;
  using typename nlohmann::json_sax<Json>::number_float_t;
  using typename nlohmann::json_sax<Json>::string_t;
  using typename nlohmann::json_sax<Json>::binary_t;

  // `too_deep`: the error thrown past `max_depth` levels of objects and arrays.
  JsonDepthCheck(int max_depth, std::string too_deep) : max_depth_(max_depth), too_deep_(std::move(too_deep)) {}

  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return enter(); }
  bool end_object() override { return leave(); }
  bool start_array(std::size_t) override { return enter(); }
  bool end_array() override { return leave(); }
  bool key(string_t&) override { return true; }
  // Syntax errors are left to the DOM parse that follows.
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

 protected:
  bool enter() {
    if (++depth_ > max_depth_) throw Error(too_deep_);
    return true;
  }
  bool leave() {
    --depth_;
    return true;
  }

 private:
  int max_depth_;
  std::string too_deep_;
  int depth_ = 0;
};

}  // namespace morph
