#include "libmorph/launch/framework.h"

#include <filesystem>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "libmorph/launch/predicate.h"
#include "libmorph/launch/template.h"
#include "libmorph/plan/plan.h"
#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"
#include "libmorph/util/text_file.h"

namespace morph::launch {

struct Framework::Rules {
  struct Refusal {
    Condition when;
    TextTemplate message;
  };
  struct Args {
    Condition when;  // empty: always
    std::vector<TextTemplate> add;
  };
  struct Env {
    Condition when;
    std::string name;
    TextTemplate value;
  };
  struct ConfigFile {
    std::string name;  // a file name inside RenderContext::config_dir
    nlohmann::json content;
  };

  std::string name;
  std::string source;
  std::string description;
  std::vector<Refusal> refusals;
  std::vector<Args> args;
  std::vector<Env> env;
  std::optional<ConfigFile> config_file;
};

namespace {

using nlohmann::json;
using Rules = Framework::Rules;

// JSON with every repeated key refused (nlohmann keeps the last one silently).
json parse_json_strict(std::string_view text, const std::string& source) {
  std::vector<std::set<std::string>> keys;
  std::string repeated;
  const json::parser_callback_t check = [&](int, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) keys.emplace_back();
    else if (event == json::parse_event_t::object_end && !keys.empty()) keys.pop_back();
    else if (event == json::parse_event_t::key && !keys.empty() && !keys.back().insert(parsed.get<std::string>()).second &&
             repeated.empty())
      repeated = parsed.get<std::string>();
    return true;
  };
  json j;
  try {
    j = json::parse(text, check);
  } catch (const json::exception& e) {
    throw Error(fmt::format("{}: not JSON: {}", source, e.what()));
  }
  if (!repeated.empty()) throw Error(fmt::format("{}: key {} appears twice in one object", source, quote(repeated)));
  return j;
}

// Refuses any key of `object` not in `known`; "comment" is allowed everywhere.
void check_keys(const json& object, std::string_view what, std::initializer_list<std::string_view> known) {
  if (!object.is_object()) throw Error(fmt::format("{}: must be an object", what));
  for (const auto& [key, value] : object.items()) {
    bool ok = key == "comment";
    for (std::string_view k : known) ok = ok || key == k;
    if (ok) continue;
    std::string list;
    for (std::string_view k : known) list += fmt::format("{}, ", k);
    throw Error(fmt::format("{}: unknown key {} (known: {}comment)", what, quote(key), list));
  }
}

std::string string_of(const json& j, std::string_view what) {
  if (!j.is_string()) throw Error(fmt::format("{}: must be a string", what));
  return j.get<std::string>();
}

const json* optional_member(const json& j, const char* key) {
  const auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}

const json& array_member(const json& j, const char* key, std::string_view what) {
  static const json kEmpty = json::array();
  const json* member = optional_member(j, key);
  if (member == nullptr) return kEmpty;
  if (!member->is_array()) throw Error(fmt::format("{}: {} must be an array", what, key));
  return *member;
}

bool is_name(std::string_view text, bool upper) {
  if (text.empty()) return false;
  for (char c : text) {
    const bool letter = upper ? ((c >= 'A' && c <= 'Z') || c == '_') : ((c >= 'a' && c <= 'z') || c == '_' || c == '-');
    if (!letter && !(c >= '0' && c <= '9')) return false;
  }
  return !(text.front() >= '0' && text.front() <= '9');
}

Condition condition_of(const json& entry, std::string_view what) {
  const json* when = optional_member(entry, "when");
  return when == nullptr ? Condition{} : parse_condition(*when, fmt::format("{}.when", what));
}

void parse_refusals(const json& j, const std::string& source, Rules& rules) {
  const json& list = array_member(j, "refuse", source);
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string what = fmt::format("{}: refuse[{}]", source, i);
    check_keys(list[i], what, {"when", "message"});
    if (!list[i].contains("when")) throw Error(what + ": missing 'when'");
    if (!list[i].contains("message")) throw Error(what + ": missing 'message'");
    const std::string message_what = what + ".message";
    rules.refusals.push_back(
        {condition_of(list[i], what), TextTemplate::parse(string_of(list[i]["message"], message_what), message_what)});
  }
}

void parse_args(const json& j, const std::string& source, Rules& rules) {
  const json& list = array_member(j, "args", source);
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string what = fmt::format("{}: args[{}]", source, i);
    check_keys(list[i], what, {"when", "add"});
    const json& add = array_member(list[i], "add", what);
    if (add.empty()) throw Error(what + ": add must be a non-empty array of strings");
    Rules::Args args{condition_of(list[i], what), {}};
    for (std::size_t k = 0; k < add.size(); ++k) {
      const std::string item = fmt::format("{}.add[{}]", what, k);
      args.add.push_back(TextTemplate::parse(string_of(add[k], item), item));
    }
    rules.args.push_back(std::move(args));
  }
}

void parse_env(const json& j, const std::string& source, Rules& rules) {
  const json& list = array_member(j, "env", source);
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string what = fmt::format("{}: env[{}]", source, i);
    check_keys(list[i], what, {"when", "name", "value"});
    if (!list[i].contains("name") || !list[i].contains("value")) throw Error(what + ": needs 'name' and 'value'");
    const std::string name = string_of(list[i]["name"], what + ".name");
    if (!is_name(name, true)) throw Error(fmt::format("{}.name: {} is not an environment variable name", what, quote(name)));
    for (std::string_view owned : kLauncherVariables)
      if (name == owned) throw Error(fmt::format("{}.name: {} is set by morphrun for each rank", what, name));
    rules.env.push_back({condition_of(list[i], what), name,
                         TextTemplate::parse(string_of(list[i]["value"], what + ".value"), what + ".value")});
  }
}

void parse_config_file(const json& j, const std::string& source, Rules& rules) {
  const json* file = optional_member(j, "config_file");
  if (file == nullptr) return;
  const std::string what = source + ": config_file";
  check_keys(*file, what, {"name", "content"});
  if (!file->contains("name") || !file->contains("content")) throw Error(what + ": needs 'name' and 'content'");
  const std::string name = string_of((*file)["name"], what + ".name");
  if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..")
    throw Error(fmt::format("{}.name: {} must be a plain file name", what, quote(name)));
  check_json_template((*file)["content"], what + ".content");
  rules.config_file = Rules::ConfigFile{name, (*file)["content"]};
}

// {config_file} means nothing without a generated file.
void check_config_file_use(const Rules& rules) {
  if (rules.config_file) return;
  auto refuse = [&](const TextTemplate& t, const std::string& where) {
    if (t.uses("config_file"))
      throw Error(fmt::format("{}: {} uses {{config_file}} but the rules declare no config_file", rules.source, where));
  };
  for (std::size_t i = 0; i < rules.args.size(); ++i)
    for (std::size_t k = 0; k < rules.args[i].add.size(); ++k) refuse(rules.args[i].add[k], fmt::format("args[{}].add[{}]", i, k));
  for (std::size_t i = 0; i < rules.env.size(); ++i) refuse(rules.env[i].value, fmt::format("env[{}].value", i));
  for (std::size_t i = 0; i < rules.refusals.size(); ++i) refuse(rules.refusals[i].message, fmt::format("refuse[{}].message", i));
}

// The plan must run the job's global batch: global_batch = micro_batch_size * ga * dp.
void check_batch(const std::string& framework, const RenderContext& context) {
  const ExecutionPlan& plan = context.record.current.plan;
  const std::int64_t global_batch = context.record.request.global_batch;
  if (global_batch < 1) throw Error(fmt::format("{}: the job has no global batch (batch={})", framework, global_batch));
  // A heterogeneous plan's groups add up to the batch (checked with the record); a torch
  // trainer of --morph-adaptive-batch takes the batch it reached, and its plan is made
  // for the batch morphd forecast, within the bounds (also checked with the record).
  if (!context.record.current.heterogeneous() && !context.record.request.trainer_adapts_batch() &&
      plan.global_batch() != global_batch)
    throw Error(fmt::format("{}: plan {} runs {} samples per step (micro_batch_size {} * ga {} * dp {}), but the job's "
                            "global batch is {}",
                            framework, to_string(plan), plan.global_batch(), plan.micro_batch_size,
                            std::int64_t{plan.ga_steps} * plan.micro_batches, plan.dp, global_batch));
}

}  // namespace

Framework::Framework(std::shared_ptr<const Rules> rules) : rules_(std::move(rules)) {}

Framework Framework::parse(std::string_view json_text, const std::string& source) {
  const json j = parse_json_strict(json_text, source);
  check_keys(j, source, {"framework", "description", "refuse", "args", "env", "config_file"});
  auto rules = std::make_shared<Rules>();
  rules->source = source;
  if (!j.contains("framework")) throw Error(source + ": missing 'framework'");
  rules->name = string_of(j["framework"], source + ": framework");
  if (!is_name(rules->name, false))
    throw Error(fmt::format("{}: framework {} must be lower-case letters, digits, '-' or '_'", source, quote(rules->name)));
  if (const json* d = optional_member(j, "description")) rules->description = string_of(*d, source + ": description");
  parse_refusals(j, source, *rules);
  parse_args(j, source, *rules);
  parse_env(j, source, *rules);
  parse_config_file(j, source, *rules);
  check_config_file_use(*rules);
  return Framework(std::move(rules));
}

Framework Framework::load(const std::string& path) { return parse(read_text_file(path, "framework rules"), path); }

Framework Framework::find(const std::string& name, const std::vector<std::string>& dirs) {
  if (is_name(name, false)) {
    for (const std::string& dir : dirs) {
      const std::string path = dir + "/" + name + ".json";
      if (!std::filesystem::is_regular_file(path)) continue;
      Framework f = load(path);
      if (f.name() != name) throw Error(fmt::format("{}: declares framework {}, not {}", path, quote(f.name()), quote(name)));
      return f;
    }
  }
  std::string known;
  for (const std::string& n : framework_names(dirs)) known += fmt::format("{}{}", known.empty() ? "" : ", ", n);
  std::string searched;
  for (const std::string& dir : dirs) searched += fmt::format("{}{}", searched.empty() ? "" : ", ", dir);
  throw Error(fmt::format("unknown framework {} (known: {}; searched {})", quote(name), known.empty() ? "none" : known,
                          searched.empty() ? "no folder" : searched));
}

const std::string& Framework::name() const { return rules_->name; }
const std::string& Framework::source() const { return rules_->source; }
const std::string& Framework::description() const { return rules_->description; }

Rendering Framework::render(const RenderContext& context) const {
  const Rules& r = *rules_;
  const ExecutionPlan& plan = context.record.current.plan;
  validate_plan_shape(plan, fmt::format("{}: plan", r.name));
  std::string config_path;
  if (r.config_file) {
    if (context.config_dir.empty())
      throw Error(fmt::format("{}: {} is generated, but no folder for generated files was given", r.name, r.config_file->name));
    config_path = context.config_dir + "/" + r.config_file->name;
  }
  const Values values = placeholder_values(context, r.name, config_path);
  for (const Rules::Refusal& refusal : r.refusals)
    if (holds(refusal.when, values))
      throw Error(fmt::format("{} cannot run plan {} ({}): {}", r.name, to_string(plan), plan_family(plan),
                              refusal.message.render(values)));
  check_batch(r.name, context);

  Rendering out;
  for (const Rules::Args& args : r.args)
    if (holds(args.when, values))
      for (const TextTemplate& t : args.add) out.args.push_back(t.render(values));
  for (const Rules::Env& env : r.env) {
    if (!holds(env.when, values)) continue;
    for (const auto& [name, value] : out.env)
      if (name == env.name) throw Error(fmt::format("{}: {} is set twice under plan {}", r.source, name, to_string(plan)));
    out.env.emplace_back(env.name, env.value.render(values));
  }
  if (r.config_file)
    out.files.emplace_back(config_path,
                           render_json_template(r.config_file->content, values, r.source + ": config_file.content")
                                   .dump(2) + "\n");
  return out;
}

std::vector<std::string> framework_names(const std::vector<std::string>& dirs) {
  std::set<std::string> names;
  for (const std::string& dir : dirs) {
    std::error_code error;
    for (std::filesystem::directory_iterator it(dir, error), end; !error && it != end; it.increment(error))
      if (it->path().extension() == ".json" && it->is_regular_file()) names.insert(it->path().stem().string());
  }
  return {names.begin(), names.end()};
}

}  // namespace morph::launch
