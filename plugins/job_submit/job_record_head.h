// The AdminComment of a job as job_modify() sees it: slurmctld passes its job_record_t,
// which no public header describes. Its head -- magic cookie, account, admin_comment --
// has not moved since Slurm 20.11 (22.05 and 23.11 alike) and is marked "DO NOT
// ALPHABETIZE" in slurmctld.h; the plugin loads only into the exact release it was built
// for (plugin_version), and nothing is read unless the magic cookie is JOB_MAGIC. Only
// this one field is read, never written.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>

namespace morph::plugin {

inline constexpr std::uint32_t kSlurmJobMagic = 0xf0b7392c;  // slurmctld.h JOB_MAGIC

// The job's AdminComment ("" when it has none), or nullopt when `job_ptr` is not a job
// record this plugin can read.
inline std::optional<std::string> job_admin_comment(const void* job_ptr) {
  struct Head {
    std::uint32_t magic;
    char* account;
    char* admin_comment;
  } head;
  if (job_ptr == nullptr) return std::nullopt;
  std::memcpy(&head, job_ptr, sizeof head);
  if (head.magic != kSlurmJobMagic) return std::nullopt;
  return std::string(head.admin_comment != nullptr ? head.admin_comment : "");
}

}  // namespace morph::plugin
