#include "libmorph/model/catalog.h"

#include <algorithm>
#include <initializer_list>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "libmorph/request/option_check.h"
#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"
#include "libmorph/util/text_file.h"

namespace morph {
namespace {

std::int64_t json_int(const nlohmann::json& entry, const char* key, const std::string& where,
                      bool required) {
  if (!entry.contains(key)) {
    if (required) throw Error(fmt::format("{}: missing \"{}\"", where, key));
    return 0;
  }
  const nlohmann::json& v = entry.at(key);
  if (!v.is_number_integer()) throw Error(fmt::format("{}: \"{}\" must be an integer", where, key));
  return v.get<std::int64_t>();
}

// A key the catalog does not know is refused, not ignored: a misspelt "vocab" would
// silently change the parameter count.
void known_keys_only(const nlohmann::json& object, std::initializer_list<std::string_view> known,
                     const std::string& where) {
  for (const auto& [key, value] : object.items())
    if (std::find(known.begin(), known.end(), key) == known.end())
      throw Error(fmt::format("{}: unknown key {} (known: {})", where, quote(key), fmt::join(known, ", ")));
}

}  // namespace

Catalog Catalog::load_file(const std::string& path) { return parse(read_text_file(path, "model catalog"), path); }

Catalog Catalog::parse(std::string_view json_text, const std::string& source) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("{}: not valid JSON: {}", source, e.what()));
  }
  if (!doc.is_object() || !doc.contains("models") || !doc["models"].is_array())
    throw Error(fmt::format("{}: expected an object with a \"models\" array", source));
  known_keys_only(doc, {"version", "description", "models"}, source);
  Catalog catalog;
  std::size_t index = 0;
  for (const nlohmann::json& entry : doc["models"]) {
    const std::string where = fmt::format("{}: models[{}]", source, index++);
    if (!entry.is_object() || !entry.contains("name") || !entry["name"].is_string())
      throw Error(fmt::format("{}: expected an object with a \"name\" string", where));
    ModelSpec m;
    m.name = entry["name"].get<std::string>();
    const std::string at = fmt::format("{} ({})", where, m.name);
    known_keys_only(entry, {"name", "aliases", "layers", "hidden", "heads", "kv_heads", "seq", "vocab", "params", "source"},
                    at);
    m.layers = json_int(entry, "layers", at, true);
    m.hidden = json_int(entry, "hidden", at, true);
    m.heads = json_int(entry, "heads", at, true);
    m.kv_heads = json_int(entry, "kv_heads", at, false);
    m.seq_len = json_int(entry, "seq", at, true);
    m.vocab = json_int(entry, "vocab", at, false);
    if (entry.contains("params")) {
      if (!entry["params"].is_number()) throw Error(fmt::format("{}: \"params\" must be a number", at));
      m.params = entry["params"].get<double>();
    } else {
      m.params = frenzy_parameter_count(m.layers, m.hidden, m.vocab);
    }
    validate_model(m, at);
    std::vector<std::string> names{to_lower(m.name)};
    if (entry.contains("aliases")) {
      if (!entry["aliases"].is_array()) throw Error(fmt::format("{}: \"aliases\" must be an array", at));
      for (const nlohmann::json& a : entry["aliases"]) {
        if (!a.is_string()) throw Error(fmt::format("{}: aliases must be strings", at));
        names.push_back(to_lower(a.get<std::string>()));
      }
    }
    for (const std::string& n : names) {
      // A name --morph-model refuses (empty, spaces, '=', ...) could never be asked for.
      char error[256];
      if (n.find('=') != std::string::npos || morph_check_option("model", n.c_str(), error, sizeof error) != 0)
        throw Error(fmt::format("{}: name or alias {} is not a model name --morph-model accepts (letters, digits, "
                                "'.', '-', '_')", at, quote(n)));
      if (catalog.find(n) != nullptr)
        throw Error(fmt::format("{}: name or alias '{}' is used twice", at, n));
    }
    catalog.models_.push_back(std::move(m));
    catalog.aliases_.push_back(std::move(names));
  }
  return catalog;
}

const ModelSpec* Catalog::find(std::string_view name) const {
  const std::string key = to_lower(name);
  for (std::size_t i = 0; i < models_.size(); ++i)
    for (const std::string& alias : aliases_[i])
      if (alias == key) return &models_[i];
  return nullptr;
}

ModelSpec Catalog::resolve(std::string_view name_or_spec, std::string_view what) const {
  if (name_or_spec.find('=') != std::string_view::npos) return parse_inline_model(name_or_spec, what);
  if (const ModelSpec* m = find(trim(name_or_spec))) return *m;
  throw Error(fmt::format("{}: unknown model {} (known: {}; or an inline spec like "
                          "layers=32,hidden=4096,heads=32,seq=4096,vocab=32000)",
                          what, quote(name_or_spec), known_names()));
}

ModelSpec Catalog::named(std::string_view name, std::string_view what) const {
  if (const ModelSpec* m = find(trim(name))) return *m;
  throw Error(fmt::format("{}: unknown model {} (known: {})", what, quote(name), known_names()));
}

std::string Catalog::known_names() const {
  std::string known;
  for (const ModelSpec& m : models_) known += (known.empty() ? "" : ", ") + m.name;
  return known;
}

}  // namespace morph
