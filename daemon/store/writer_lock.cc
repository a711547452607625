#include "daemon/store/writer_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "libmorph/util/error.h"

namespace morph::store {
namespace {

// The pid the holder wrote, or "unknown" (a lock taken by something else than morphd).
std::string holder_of(int fd) {
  char text[32] = {};
  const ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
  std::string pid(text, n > 0 ? static_cast<std::size_t>(n) : 0);
  while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
  const bool digits = !pid.empty() && pid.find_first_not_of("0123456789") == std::string::npos;
  return digits ? pid : "unknown";
}

}  // namespace

WriterLock WriterLock::acquire(const std::string& database_path, std::string_view advice) {
  std::string path = database_path + ".lock";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) throw Error(fmt::format("{}: open morphd's lock file: {}", path, std::strerror(errno)));
  WriterLock lock(fd, std::move(path));
  // A hard link planted at the name (O_NOFOLLOW stops only symlinks) would have root hand
  // the file it shares to the database's owner below, and truncate it.
  struct stat database {}, file {};
  if (::fstat(fd, &file) != 0 || !S_ISREG(file.st_mode) || file.st_nlink != 1)
    throw Error(fmt::format("{}: not morphd's lock file (a regular file of one link): remove it", lock.path_));
  // root (morph forget, a morphd started by hand) leaves the file to the database's owner,
  // so that the morphd of the systemd unit, SlurmUser, can still open it.
  if (::geteuid() == 0 && ::stat(database_path.c_str(), &database) == 0 &&
      (file.st_uid != database.st_uid || file.st_gid != database.st_gid) &&
      ::fchown(fd, database.st_uid, database.st_gid) != 0)
    throw Error(fmt::format("{}: give it to the owner of {}: {}", lock.path_, database_path, std::strerror(errno)));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK)
      throw Error(fmt::format("{}: lock it: {}", lock.path_, std::strerror(errno)));
    throw Error(fmt::format("{}: morphd (pid {}) runs on this state database ({} is locked): {}", database_path,
                            holder_of(fd), lock.path_, advice));
  }
  lock.write_pid();
  return lock;
}

void WriterLock::write_pid() const {
  const std::string pid = fmt::format("{}\n", ::getpid());
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size()))
    throw Error(fmt::format("{}: write morphd's pid: {}", path_, std::strerror(errno)));
}

WriterLock::WriterLock(WriterLock&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), path_(std::move(other.path_)) {}

WriterLock::~WriterLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace morph::store
