// morph forget: drops what morphd learnt online about a model, its refitted parameters
// (fitted_params of source "online") and the points of its refit (refit_points), after
// a change that makes them wrong (new GPUs, drivers, NCCL, or a new model code under the
// same name). morphd then predicts the model from PerfModelDir, or the FLOP estimate,
// until its jobs teach it again. morphd keeps the points in memory and would write them
// back, so this takes morphd's lock (daemon/store/writer_lock.h) and refuses to run
// beside it. The database is morphd's (mode 0600): run as root or SlurmUser.
#include <iostream>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "daemon/online_params.h"
#include "daemon/store/state_store.h"
#include "daemon/store/writer_lock.h"
#include "libmorph/util/error.h"
#include "tools/morph/commands.h"
#include "tools/morph/state_file.h"

namespace morph::cli {
namespace {

struct ForgetArgs {
  std::string state;  // --state: the database ("": morph.conf StateDatabase)
  std::string model;  // catalog name or alias, or the name of a model the catalog no longer has
};

void run_forget(Context& context, const ForgetArgs& args) {
  std::string model = args.model;
  std::optional<Error> unknown;  // not in the catalog: what the database learnt under that name, if anything
  try {
    model = context.catalog().named(args.model, "--model").name;
  } catch (const Error& e) {
    unknown = e;
  }
  const std::string path = morphd_state_path(context, args.state);
  const store::WriterLock lock = store::WriterLock::acquire(
      path, "stop morphd first: it keeps what it learnt in memory and would write it back");
  store::StateStore state = store::StateStore::open_existing(path);
  const store::StateStore::Forgotten forgotten = state.forget_learnt(model, daemon::kOnlineRefitSource);
  if (unknown && forgotten.fitted_params == 0 && forgotten.refit_points == 0) throw *unknown;
  if (context.json) {
    std::cout << nlohmann::json{{"model", model},
                                {"state", path},
                                {"fitted_params", forgotten.fitted_params},
                                {"refit_points", forgotten.refit_points}}
                     .dump(2)
              << '\n';
    return;
  }
  if (forgotten.fitted_params == 0 && forgotten.refit_points == 0) {
    std::cout << fmt::format("{}: morphd had learnt nothing about {} online\n", path, model);
    return;
  }
  std::cout << fmt::format(
      "{}: forgot {} online refit{} and {} refit point{} of {}; morphd predicts it from PerfModelDir (or the FLOP "
      "estimate) until its jobs report again\n",
      path, forgotten.fitted_params, forgotten.fitted_params == 1 ? "" : "s", forgotten.refit_points,
      forgotten.refit_points == 1 ? "" : "s", model);
}

}  // namespace

void add_forget_command(command_line::Command& app, Context& context) {
  auto args = std::make_shared<ForgetArgs>();
  command_line::Command cmd = app.subcommand(
      "forget", "drop what morphd learnt online about a model (its refits and their points); morphd must be stopped");
  cmd.option("--model", args->model,
             "the catalog model (name or alias), or the full name of one the catalog no longer has")
      .required();
  cmd.option("--state", args->state, "morphd's state database (default: morph.conf StateDatabase)");
  cmd.on_run([&context, args] { run_forget(context, *args); });
}

}  // namespace morph::cli
