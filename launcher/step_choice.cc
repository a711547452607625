#include "launcher/step_choice.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <thread>

#include <fmt/format.h>

#include "launcher/marker_files.h"
#include "libmorph/util/error.h"
#include "libmorph/util/text_file.h"

namespace morph::launcher {

namespace fs = std::filesystem;

namespace {

constexpr const char* kChosen = "chosen\n";
constexpr const char* kFailed = "failed\n";

std::string job_prefix(std::uint32_t job_id) { return fmt::format(".morph-choice.{}.", job_id); }

}  // namespace

std::string step_choice_path(const std::string& checkpoint_dir, const StepChoiceId& id) {
  return fmt::format("{}/{}{}.{}", checkpoint_dir, job_prefix(id.job_id), id.restarts, id.step_id);
}

void publish_step_choice(const std::string& checkpoint_dir, const StepChoiceId& id, const std::string& folder,
                         const std::string& error) {
  const std::string path = step_choice_path(checkpoint_dir, id);
  std::error_code ec;
  fs::create_directories(checkpoint_dir, ec);
  // The job's earlier steps and runs published theirs here: no task reads them now.
  const std::string prefix = job_prefix(id.job_id), name = fs::path(path).filename().string();
  remove_marker_files(checkpoint_dir, [&](const std::string& file) { return file.starts_with(prefix) && file != name; });

  replace_text_file(path, std::string(error.empty() ? kChosen : kFailed) + (error.empty() ? folder : error),
                    "the step's checkpoint choice");
}

bool read_step_choice(const std::string& path, std::string* folder_or_error) {
  const std::string text = read_text_file(path, "the step's checkpoint choice");
  for (const std::string head : {kChosen, kFailed})
    if (text.starts_with(head)) {
      *folder_or_error = text.substr(head.size());
      return head == kChosen;
    }
  throw Error(fmt::format("{}: not a checkpoint choice of morphrun's task 0", path));
}

std::optional<launch::CheckpointChoice> step_checkpoint_choice(const std::string& checkpoint_dir,
                                                               const StepChoiceId& id, int task,
                                                               const state::Layout& layout, const std::string& model,
                                                               double wait_s) {
  if (task == 0) {
    std::optional<launch::CheckpointChoice> choice;
    std::string error;
    try {
      choice = launch::choose_checkpoint(checkpoint_dir, layout, model);
    } catch (const Error& e) {
      error = e.what();
    }
    publish_step_choice(checkpoint_dir, id, choice ? choice->newest : std::string(), error);
    if (!error.empty()) throw Error(error);
    return choice;
  }
  const std::string path = step_choice_path(checkpoint_dir, id);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(wait_s);
  std::string why = "it is not there";
  for (;;) {
    std::error_code ec;
    if (fs::exists(path, ec)) {
      std::string folder;
      if (!read_step_choice(path, &folder)) throw Error(fmt::format("task 0 of the step: {}", folder));
      try {
        return launch::choice_of(folder, layout, model);
      } catch (const Error& e) {  // the folder not yet seen on this node (NFS)
        why = fmt::format("it names {}, which this node cannot read: {}", folder, e.what());
      }
    }
    if (std::chrono::steady_clock::now() > deadline)
      throw Error(fmt::format("waited {:g} s (CheckpointTimeoutSeconds) for task 0's checkpoint choice in {}: {}; "
                              "--checkpoint must be a folder every node of the step shares",
                              wait_s, path, why));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace morph::launcher
