// The message sizes of a bandwidth sweep: --sizes MIN:MAX.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace morph::hw {

// "1K:64M" -> 1 KiB, 4 KiB, ... 64 MiB: MIN times powers of 4, then MAX if the last step
// missed it. Suffixes K, M, G (binary); a bare number is bytes; MIN >= 4 (one float),
// MAX <= 4G. Throws morph::Error naming --sizes and the bad value.
std::vector<std::size_t> parse_size_sweep(std::string_view text);

// The parts, in bytes, that one message of `bytes` is sent as over MPI, whose counts are
// ints: 1 GiB each and the rest (the sweep goes to 4G).
std::vector<int> mpi_message_parts(std::size_t bytes);

// 1024 -> "1K", 67108864 -> "64M", 1000 -> "1000"
std::string size_label(std::size_t bytes);

}  // namespace morph::hw
