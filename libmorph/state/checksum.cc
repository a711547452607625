#include "libmorph/state/checksum.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <new>

#include <fmt/format.h>
#include <xxhash.h>

#include "libmorph/util/error.h"

namespace morph::state {
namespace {

constexpr std::size_t kFileBlockBytes = 8u << 20;
constexpr std::size_t kMinBlockBytes = 64u << 10;

XXH3_state_t* xxh3(void* state) { return static_cast<XXH3_state_t*>(state); }

// Closes a descriptor on every path out of file_checksum().
struct FdCloser {
  int fd;
  ~FdCloser() { ::close(fd); }
};

}  // namespace

Checksum::Checksum() : state_(XXH3_createState()) {
  if (state_ == nullptr) throw std::bad_alloc();
  XXH3_64bits_reset(xxh3(state_));
}

Checksum::~Checksum() { XXH3_freeState(xxh3(state_)); }

void Checksum::update(const void* data, std::size_t bytes) {
  if (bytes == 0) return;
  if (XXH3_64bits_update(xxh3(state_), data, bytes) != XXH_OK) throw Error("XXH3 update failed");
}

std::uint64_t Checksum::digest() const { return XXH3_64bits_digest(static_cast<const XXH3_state_t*>(state_)); }

std::uint64_t file_checksum(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  const FdCloser closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw Error(fmt::format("{}: cannot stat: {}", path, std::strerror(errno)));
  // Small files get a small buffer, uninitialised: a zeroed 8 MiB per call dominates
  // checksumming many small files.
  const auto file_bytes = static_cast<std::size_t>(std::max<off_t>(st.st_size, 0));
  const std::size_t block_bytes = std::clamp(file_bytes, kMinBlockBytes, kFileBlockBytes);
  const auto block = std::make_unique_for_overwrite<unsigned char[]>(block_bytes);
  Checksum sum;
  while (true) {
    const ssize_t got = ::read(fd, block.get(), block_bytes);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw Error(fmt::format("{}: read failed: {}", path, std::strerror(errno)));
    if (got == 0) return sum.digest();
    sum.update(block.get(), static_cast<std::size_t>(got));
  }
}

std::string checksum_hex(std::uint64_t digest) { return fmt::format("{:016x}", digest); }

}  // namespace morph::state
