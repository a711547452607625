// A training framework as morphrun starts it: the rules that turn an execution plan into
// the framework's arguments, environment and generated files. Rules are data
// (share/frameworks/<name>.json, format in docs/frameworks.md), so a site adds a
// framework by dropping a file in a frameworks folder.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "libmorph/launch/render_context.h"

namespace morph::launch {

class Framework {
 public:
  // Strict: unknown or repeated keys, unknown placeholders and predicates are
  // morph::Error naming `source` and the key.
  static Framework parse(std::string_view json_text, const std::string& source);
  static Framework load(const std::string& path);
  // "megatron" -> <dir>/megatron.json for the first of `dirs` that has it; an unknown
  // name is a morph::Error listing the known ones.
  static Framework find(const std::string& name, const std::vector<std::string>& dirs);

  const std::string& name() const;
  const std::string& source() const;
  const std::string& description() const;

  // Throws morph::Error naming the framework and the plan when the plan is not valid, is
  // one the framework cannot run, or does not process the job's global batch.
  Rendering render(const RenderContext& context) const;

  struct Rules;  // the parsed rule file, opaque (framework.cc)

 private:
  explicit Framework(std::shared_ptr<const Rules> rules);
  std::shared_ptr<const Rules> rules_;
};

// The names of the frameworks in `dirs` (their *.json files), sorted; missing folders
// are skipped.
std::vector<std::string> framework_names(const std::vector<std::string>& dirs);

}  // namespace morph::launch
