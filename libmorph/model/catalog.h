// The model catalog: named models (with aliases) loaded from a JSON file installed
// under $(pkgdatadir)/models.json.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "libmorph/model/model_spec.h"

namespace morph {

class Catalog {
 public:
  static Catalog load_file(const std::string& path);
  static Catalog parse(std::string_view json_text, const std::string& source);

  // A catalog name or alias (case-insensitive), or an inline spec containing '='.
  ModelSpec resolve(std::string_view name_or_spec, std::string_view what) const;
  // A catalog model by name or alias only: for what was recorded of a catalog model
  // (morph forget, morph models), where an inline specification means nothing.
  ModelSpec named(std::string_view name, std::string_view what) const;
  const ModelSpec* find(std::string_view name) const;
  const std::vector<ModelSpec>& models() const { return models_; }

 private:
  std::string known_names() const;  // "a, b, c": the models' names, for errors
  std::vector<ModelSpec> models_;
  std::vector<std::vector<std::string>> aliases_;  // lower-case, parallel to models_
};

}  // namespace morph
