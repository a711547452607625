// libFuzzer target for the safetensors header parser: any input must either parse into a
// header that tiles the data section or throw morph::Error; anything else is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "libmorph/state/safetensors.h"
#include "libmorph/util/error.h"

namespace {

// The parser's promises about an accepted header.
void check_invariants(const morph::state::SafetensorsHeader& header, std::size_t file_bytes) {
  std::uint64_t covered_bytes = 0;
  for (const morph::state::TensorEntry& t : header.tensors) {
    if (t.begin != covered_bytes || t.end < t.begin) std::abort();
    if (t.elements() * morph::state::dtype_bytes(t.dtype) != t.bytes()) std::abort();
    if (header.find(t.name) == nullptr) std::abort();
    covered_bytes = t.end;
  }
  if (header.data_offset + covered_bytes != file_bytes) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    check_invariants(morph::state::parse_safetensors(std::span(data, size), size, "fuzz"), size);
  } catch (const morph::Error&) {
  }
  return 0;
}
