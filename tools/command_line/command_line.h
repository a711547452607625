// The options and subcommands of Morph's programs, on CLI11 without including it. Debian's
// CLI11 (2.1) is one header that compiles in 8 s per translation unit, 18 s under the
// sanitizers, and morph and morph-profile register their options in a file per subcommand:
// command_line.cc is the one file that includes it. Help, usage errors and the checks'
// messages are CLI11's own.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace morph::command_line {

// An option, flag or positional argument (a CLI::Option). A handle: copies name the same
// option, and each setter returns it for the next.
class Option {
 public:
  Option& required();
  // Values in [min, max] only (CLI::Range; "INT in [1 - 4096]" in the help).
  template <class T>
  Option& range(T min, T max);
  // One of `values` only (CLI::IsMember).
  Option& one_of(std::vector<std::string> values);
  // A check of the caller's (a CLI::Validator).
  struct Check {
    std::function<std::string(const std::string&)> problem;  // what is wrong with a value; "" when nothing
    std::string name;                                        // what stands for it in the help
  };
  Option& check(Check check);
  // The help shows the value the option holds before parsing.
  Option& show_default();
  Option& needs(const Option& other);
  // Never together with `other` (either way round).
  Option& excludes(const Option& other);
  // A list option splits each value at `separator` too ("--hosts a,b").
  Option& delimiter(char separator);
  // A positional list that takes every remaining argument and no other.
  Option& no_extra_args();
  // After parsing: the option was on the command line.
  bool given() const;

 private:
  friend class Command;
  explicit Option(CLI::Option* option) : option_(option) {}
  CLI::Option* option_;
};

// A program or one of its subcommands (a CLI::App). A handle, as Option is.
class Command {
 public:
  Command subcommand(const std::string& name, const std::string& description);
  // An option that stores its value in `value`; "--name" or "-n,--name", or a name
  // without dashes for a positional argument.
  template <class T>
  Option option(const std::string& name, T& value, const std::string& description);
  Option flag(const std::string& name, bool& value, const std::string& description);
  // --config FILE: the morph.conf to read (libmorph's morph_conf_path when not given).
  Option config(std::string& path);
  // An option added before, by name.
  Option find(const std::string& name);
  // What the subcommand does when it is chosen; it runs inside Program::parse.
  void on_run(std::function<void()> run);

 protected:
  explicit Command(CLI::App* app) : app_(app) {}
  CLI::App* app_;
};

// The program: its global options, its subcommands, and the parse of its arguments.
class Program : public Command {
 public:
  // Usage errors are printed as "NAME: what is wrong".
  Program(const std::string& name, const std::string& description);
  ~Program();
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  // --version prints `version`.
  void version(const std::string& version);
  // Exactly one subcommand must be named; the global options may also follow it.
  void require_subcommand();
  std::vector<std::string> subcommand_names() const;
  // What `name` ("--json", "-h") is among the program's own options, not its subcommands'.
  enum class OwnOption { none, flag, valued };
  OwnOption own_option(const std::string& name) const;
  // Parses argv and runs the chosen subcommand. nullopt when the program goes on; an exit
  // status after --help, --version (0) or a usage error (printed).
  std::optional<int> parse(int argc, char** argv);
  // Parses argv for a program that prints nothing itself: false after --help (the help is
  // printed when `print`); a usage error is thrown as morph::Error.
  bool parse_or_throw(int argc, char** argv, bool print);

 private:
  std::unique_ptr<CLI::App> program_;
};

}  // namespace morph::command_line
