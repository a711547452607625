#include "tools/command_line/command_line.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "libmorph/config/morph_conf.h"
#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"

namespace morph::command_line {

Option& Option::required() {
  option_->required();
  return *this;
}

template <class T>
Option& Option::range(T min, T max) {
  if constexpr (std::is_floating_point_v<T>)  // NaN compares false with both bounds
    option_->check(CLI::Validator(
        [](std::string& text) {
          T value{};
          return CLI::detail::lexical_cast(text, value) && !std::isfinite(value)
                     ? "Value " + text + " is not a finite number"
                     : std::string();
        },
        "FINITE"));
  option_->check(CLI::Range(min, max));
  return *this;
}

Option& Option::one_of(std::vector<std::string> values) {
  option_->check(CLI::IsMember(std::move(values)));
  return *this;
}

Option& Option::check(Check check) {
  option_->check(CLI::Validator([problem = std::move(check.problem)](std::string& value) { return problem(value); }, "",
                                check.name));
  return *this;
}

Option& Option::show_default() {
  option_->capture_default_str();
  return *this;
}

Option& Option::needs(const Option& other) {
  option_->needs(other.option_);
  return *this;
}

Option& Option::excludes(const Option& other) {
  option_->excludes(other.option_);
  return *this;
}

Option& Option::delimiter(char separator) {
  option_->delimiter(separator);
  return *this;
}

Option& Option::no_extra_args() {
  option_->allow_extra_args(false);
  return *this;
}

bool Option::given() const { return option_->count() > 0; }

Command Command::subcommand(const std::string& name, const std::string& description) {
  return Command(app_->add_subcommand(name, description));
}

namespace {

// CLI11 converts integers with strtoll(..., 0): "064" was 52 and "0x10" 16, with exit 0.
// Integer options are decimal, as the plugins read --morph-* values: leading zeros are
// dropped before the conversion, and a hexadecimal value is refused in their words.
const CLI::Validator& decimal() {
  static const CLI::Validator canonical(
      [](std::string& text) -> std::string {
        const std::size_t sign = !text.empty() && (text[0] == '+' || text[0] == '-') ? 1 : 0;
        const std::string_view digits = std::string_view(text).substr(sign);
        if (digits.size() > 1 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X'))
          return "'" + text + "' is not an integer";
        if (!is_digits(digits)) return {};
        const std::size_t first = std::min(digits.find_first_not_of('0'), digits.size() - 1);
        text = text.substr(0, sign) + std::string(digits.substr(first));
        return {};
      },
      "DECIMAL");
  return canonical;
}

template <class T>
constexpr bool kIntegers = std::is_integral_v<T>;
template <class T>
constexpr bool kIntegers<std::vector<T>> = std::is_integral_v<T>;

}  // namespace

template <class T>
Option Command::option(const std::string& name, T& value, const std::string& description) {
  CLI::Option* added = app_->add_option(name, value, description);
  if constexpr (kIntegers<T>) added->transform(decimal());
  return Option(added);
}

Option Command::flag(const std::string& name, bool& value, const std::string& description) {
  return Option(app_->add_flag(name, value, description));
}

Option Command::config(std::string& path) {
  return option("--config", path, std::string("morph.conf (default: $MORPH_CONF or ") + kInstalledMorphConf + ")");
}

Option Command::find(const std::string& name) { return Option(app_->get_option(name)); }

void Command::on_run(std::function<void()> run) { app_->callback(std::move(run)); }

Program::Program(const std::string& name, const std::string& description)
    : Command(new CLI::App(description, name)), program_(app_) {
  program_->failure_message([name](const CLI::App*, const CLI::Error& e) { return name + ": " + e.what() + "\n"; });
}

Program::~Program() = default;

void Program::version(const std::string& version) { program_->set_version_flag("--version", version); }

void Program::require_subcommand() {
  program_->require_subcommand(1);
  program_->fallthrough();
}

std::vector<std::string> Program::subcommand_names() const {
  std::vector<std::string> names;
  for (const CLI::App* sub : program_->get_subcommands([](const CLI::App*) { return true; }))
    names.push_back(sub->get_name());
  return names;
}

Program::OwnOption Program::own_option(const std::string& name) const {
  const CLI::App& program = *program_;
  const CLI::Option* option = program.get_option_no_throw(name);
  if (option == nullptr || option->get_positional()) return OwnOption::none;
  return option->get_expected_min() == 0 ? OwnOption::flag : OwnOption::valued;
}

namespace {

// CLI11 lists what it did not expect, "--" included ("-- --bogus" for `--bogus -- cmd`):
// the first such word, named as an unknown option or an unexpected argument.
std::string not_expected(const CLI::App& app) {
  for (const std::string& word : app.remaining(true)) {
    if (word == "--") continue;
    return word.size() > 1 && word[0] == '-' ? "unknown option " + word.substr(0, word.find('='))
                                              : "unexpected argument " + word;
  }
  return {};
}

}  // namespace

std::optional<int> Program::parse(int argc, char** argv) {
  try {
    program_->parse(argc, argv);
  } catch (const CLI::ExtrasError& e) {
    const std::string what = not_expected(*program_);
    if (what.empty()) return program_->exit(e);
    std::fprintf(stderr, "%s: %s\n", program_->get_name().c_str(), what.c_str());
    return e.get_exit_code();
  } catch (const CLI::ParseError& e) {
    return program_->exit(e);
  }
  return std::nullopt;
}

bool Program::parse_or_throw(int argc, char** argv, bool print) {
  try {
    program_->parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    if (print) std::fputs(program_->help().c_str(), stdout);
    return false;
  } catch (const CLI::ParseError& e) {
    throw Error(e.what());
  }
  return true;
}

// The types Morph's programs parse.
template Option& Option::range(int, int);
template Option& Option::range(std::int64_t, std::int64_t);
template Option& Option::range(std::uint64_t, std::uint64_t);
template Option& Option::range(double, double);
template Option Command::option(const std::string&, std::string&, const std::string&);
template Option Command::option(const std::string&, int&, const std::string&);
template Option Command::option(const std::string&, unsigned&, const std::string&);
template Option Command::option(const std::string&, std::int64_t&, const std::string&);
template Option Command::option(const std::string&, std::uint64_t&, const std::string&);
template Option Command::option(const std::string&, double&, const std::string&);
template Option Command::option(const std::string&, std::vector<std::string>&, const std::string&);
template Option Command::option(const std::string&, std::vector<std::int64_t>&, const std::string&);

}  // namespace morph::command_line
