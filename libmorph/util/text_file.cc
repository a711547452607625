#include "libmorph/util/text_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>

#include "libmorph/util/error.h"

namespace morph {
namespace {

// What a file of mode `mode` is, for a message refusing it.
const char* kind_of(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "a special file";
}

}  // namespace

// Opened without blocking (a FIFO with no writer would wait forever) and read only when
// fstat(2) of the opened file says it is a regular file: no FIFO, socket or device.
std::string read_text_file(const std::string& path, std::string_view what, std::size_t max_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR) throw Error(fmt::format("{}: {}: no such file", what, path));
    throw Error(fmt::format("{}: {}: cannot open: {}", what, path, std::strerror(errno)));
  }
  auto fail = [&](const std::string& message) {
    ::close(fd);
    throw Error(message);
  };
  struct stat st {};
  if (::fstat(fd, &st) != 0) fail(fmt::format("{}: {}: {}", what, path, std::strerror(errno)));
  if (S_ISDIR(st.st_mode)) fail(fmt::format("{}: {}: is a folder, not a file", what, path));
  if (!S_ISREG(st.st_mode)) fail(fmt::format("{}: {}: is {}, not a regular file", what, path, kind_of(st.st_mode)));
  std::string text;
  char chunk[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(fmt::format("{}: {}: read error: {}", what, path, std::strerror(errno)));
    if (n == 0) break;
    if (text.size() + static_cast<std::size_t>(n) > max_bytes)
      fail(fmt::format("{}: {}: larger than {} bytes", what, path, max_bytes));
    text.append(chunk, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return text;
}

void append_text_line(const std::string& path, std::string_view line, std::string_view what) {
  const std::string text = fmt::format("{}\n", line);
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw Error(fmt::format("cannot open {} ({}) to append to it: {}", path, what, std::strerror(errno)));
  ssize_t written;
  do written = ::write(fd, text.data(), text.size());
  while (written < 0 && errno == EINTR);
  const int write_errno = errno;
  ::close(fd);
  if (written < 0)
    throw Error(fmt::format("cannot append to {} ({}): {}", path, what, std::strerror(write_errno)));
  if (static_cast<std::size_t>(written) != text.size())
    throw Error(fmt::format("cannot append to {} ({}): wrote {} of {} bytes", path, what, written, text.size()));
}

void replace_text_file(const std::string& path, std::string_view text, std::string_view what) {
  // A name others may guess, in a folder they may write (a shared checkpoint folder): made
  // afresh, never opened through what is there (a symlink planted to make us truncate
  // another file).
  const std::string temporary = fmt::format("{}.{}.tmp", path, ::getpid());
  ::unlink(temporary.c_str());
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) throw Error(fmt::format("cannot write {} ({}): {}: {}", path, what, temporary, std::strerror(errno)));
  auto fail = [&](const char* step) {
    const int saved = errno;
    ::close(fd);
    ::unlink(temporary.c_str());
    throw Error(fmt::format("cannot write {} ({}): {}: {}", path, what, step, std::strerror(saved)));
  };
  for (std::size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("write");
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) fail("fsync");
  if (::close(fd) != 0) {
    const int saved = errno;
    ::unlink(temporary.c_str());
    throw Error(fmt::format("cannot write {} ({}): close: {}", path, what, std::strerror(saved)));
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    const int saved = errno;
    ::unlink(temporary.c_str());
    throw Error(fmt::format("cannot write {} ({}): rename: {}", path, what, std::strerror(saved)));
  }
}

}  // namespace morph
