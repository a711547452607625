// Templates of the framework rules. A text template is a string with placeholders
// ("--save={checkpoint_dir}"; "{{" and "}}" stand for braces). A JSON template is any JSON
// value whose strings are text templates: a string that is exactly one placeholder takes
// the placeholder's type (numbers stay numbers, booleans booleans), and an object with a
// "$when" member (a predicate or a list of them, all of which must hold) is left out,
// together with its key or array slot, when the condition fails.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "libmorph/launch/placeholders.h"

namespace morph::launch {

class TextTemplate {
 public:
  // Throws morph::Error "WHAT: ..." for an unknown placeholder or an unbalanced brace.
  static TextTemplate parse(std::string_view text, std::string_view what);

  // Throws morph::Error naming `what` when a placeholder it uses has no value.
  std::string render(const Values& values) const;
  // The typed value when the template is exactly one placeholder, else render()'s text.
  nlohmann::json render_json(const Values& values) const;
  bool uses(std::string_view placeholder) const;

 private:
  struct Piece {
    bool placeholder = false;
    std::string text;  // literal text or the placeholder's name
  };
  const Value& lookup(const Values& values, const std::string& name) const;
  std::vector<Piece> pieces_;
  std::string what_;
};

// Checks a JSON template (placeholders, predicates, no "$" key other than "$when").
// Throws morph::Error naming `what` and the path of the bad member.
void check_json_template(const nlohmann::json& node, std::string_view what);
// The template under `values`; `node` must have passed check_json_template.
nlohmann::json render_json_template(const nlohmann::json& node, const Values& values, std::string_view what);

}  // namespace morph::launch
