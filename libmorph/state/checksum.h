// Content checksums of checkpoint files (XXH3, 64 bits), streamed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace morph::state {

class Checksum {
 public:
  Checksum();
  ~Checksum();
  Checksum(const Checksum&) = delete;
  Checksum& operator=(const Checksum&) = delete;
  void update(const void* data, std::size_t bytes);
  std::uint64_t digest() const;

 private:
  void* state_;  // XXH3_state_t
};

// The checksum of a whole file, read in large blocks; throws morph::Error naming it.
std::uint64_t file_checksum(const std::string& path);
std::string checksum_hex(std::uint64_t digest);  // 16 lower-case hex digits

}  // namespace morph::state
