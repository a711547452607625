// One writer per state database. Two morphd on one database would both reconfigure the
// same jobs through Slurm and interleave their journals; so morphd holds an exclusive
// flock(2) on "<database>.lock" for as long as it runs, and a second one refuses to start,
// naming the first one's pid. The kernel drops the lock when its holder exits, however it
// exits, so a crashed morphd leaves nothing to clean up.
#pragma once

#include <string>
#include <string_view>
#include <utility>

namespace morph::store {

class WriterLock {
 public:
  // Takes the lock of the database at `database_path` or throws morph::Error naming the
  // database, the lock file and the holder's pid (as it wrote it; "unknown" otherwise),
  // followed by `advice`. morphd takes it for as long as it runs, and so does anything
  // else that writes what morphd keeps in memory (morph forget).
  static WriterLock acquire(const std::string& database_path, std::string_view advice);

  WriterLock(WriterLock&& other) noexcept;
  WriterLock& operator=(WriterLock&&) = delete;
  WriterLock(const WriterLock&) = delete;
  WriterLock& operator=(const WriterLock&) = delete;
  ~WriterLock();

  const std::string& path() const { return path_; }
  // Writes this process's pid into the lock file again: after fork(), whose child holds
  // the lock on (morphd becoming a daemon).
  void write_pid() const;

 private:
  WriterLock(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_ = -1;
  std::string path_;
};

}  // namespace morph::store
