// What the plugins take from the Slurm process that loads them (slurmctld, slurmstepd,
// sbatch, srun: all link libslurmfull), without linking libslurm: the allocator
// slurmctld frees our strings with, and its log. And one guard for every C entry point:
// no C++ exception may cross the C ABI.
#pragma once

#include <cstddef>
#include <cstdio>
#include <exception>
#include <string>

// The plugins compile with -fvisibility=hidden; what Slurm looks up is marked with this
// (and listed in the plugin's linker version script).
#define MORPH_PLUGIN_EXPORT __attribute__((visibility("default")))

extern "C" {
char* slurm_xstrdup(const char* str);
void slurm_xfree(void** pointer);
void slurm_info(const char* format, ...) __attribute__((format(printf, 1, 2)));
void slurm_error(const char* format, ...) __attribute__((format(printf, 1, 2)));
}

namespace morph::plugin {

// Replaces a string slurmctld owns with a copy it can free (xmalloc'd).
inline void replace_slurm_string(char*& field, const std::string& value) {
  if (field != nullptr) slurm_xfree(reinterpret_cast<void**>(&field));
  field = slurm_xstrdup(value.c_str());
}

// Runs `body`; an exception becomes `failure` and a log line naming `entry`, also
// written into `error` when given (a C caller that prints it when the call fails).
template <typename Body>
int guarded(const char* entry, int failure, Body&& body, char* error = nullptr, std::size_t error_size = 0) noexcept {
  char line[1024];
  try {
    return body();
  } catch (const std::exception& e) {
    std::snprintf(line, sizeof line, "morph: %s: %s", entry, e.what());
  } catch (...) {
    std::snprintf(line, sizeof line, "morph: %s: unknown exception", entry);
  }
  slurm_error("%s", line);
  if (error != nullptr && error_size > 0) std::snprintf(error, error_size, "%s", line);
  return failure;
}

}  // namespace morph::plugin
