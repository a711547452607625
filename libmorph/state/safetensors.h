// The safetensors file format (https://huggingface.co/docs/safetensors): an 8-byte
// little-endian header length N, N bytes of JSON {name: {dtype, shape, data_offsets:
// [begin, end]}, "__metadata__": {string: string}}, then the data section. Offsets are
// relative to the data section. Files are read by ranges (pread), never whole.
//
// The parser trusts nothing: every offset, shape and size is checked against the file,
// tensors may not overlap, and errors name the file and the tensor.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "libmorph/state/dtype.h"

namespace morph::state {

struct TensorEntry {
  std::string name;
  Dtype dtype = Dtype::f32;
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0;  // byte offsets in the data section, end exclusive
  std::uint64_t end = 0;

  std::uint64_t elements() const;  // product of the shape (1 for a scalar)
  std::uint64_t bytes() const { return end - begin; }
};

struct SafetensorsHeader {
  std::vector<TensorEntry> tensors;  // in data order
  std::map<std::string, std::string> metadata;
  std::uint64_t data_offset = 0;  // file offset of the data section: 8 + N

  // nullptr when absent.
  const TensorEntry* find(std::string_view name) const;
};

// "[4096, 1024]" (at most 8 dims shown), as errors name a tensor's shape.
std::string shape_text(const std::vector<std::int64_t>& shape);

// Largest header accepted (the reference implementation's limit).
constexpr std::uint64_t kMaxHeaderBytes = 100u << 20;

// Parses the start of a file of `file_bytes` bytes. `prefix` holds at least the first 8
// bytes; when it holds fewer than 8 + N bytes the header is incomplete (an error). Throws
// morph::Error naming `what`.
SafetensorsHeader parse_safetensors(std::span<const std::uint8_t> prefix, std::uint64_t file_bytes,
                                    std::string_view what);

// A safetensors file opened for ranged reads.
class SafetensorsReader {
 public:
  explicit SafetensorsReader(const std::string& path);  // opens and parses; throws morph::Error
  ~SafetensorsReader();
  SafetensorsReader(SafetensorsReader&& other) noexcept;
  SafetensorsReader& operator=(SafetensorsReader&& other) noexcept;
  SafetensorsReader(const SafetensorsReader&) = delete;
  SafetensorsReader& operator=(const SafetensorsReader&) = delete;

  const std::string& path() const { return path_; }
  const SafetensorsHeader& header() const { return header_; }
  std::uint64_t file_bytes() const { return file_bytes_; }
  // `bytes` bytes of `tensor` from byte `offset` of its data (short reads and EINTR are
  // retried; a range outside the tensor is an error).
  void read(const TensorEntry& tensor, std::uint64_t offset, void* out, std::uint64_t bytes) const;

 private:
  std::string path_;
  int fd_ = -1;
  std::uint64_t file_bytes_ = 0;
  SafetensorsHeader header_;
};

struct TensorDecl {
  std::string name;
  Dtype dtype = Dtype::f32;
  std::vector<std::int64_t> shape;
};

// Writes a safetensors file: the header (tensors in the given order, data 8-byte aligned
// by padding the header with spaces) at construction, the data by ranges in any order,
// and finish() fsyncs and closes. A writer destroyed before finish() removes its file.
class SafetensorsWriter {
 public:
  SafetensorsWriter(std::string path, const std::vector<TensorDecl>& tensors,
                    const std::map<std::string, std::string>& metadata);
  ~SafetensorsWriter();
  SafetensorsWriter(const SafetensorsWriter&) = delete;
  SafetensorsWriter& operator=(const SafetensorsWriter&) = delete;

  const SafetensorsHeader& header() const { return header_; }
  void write(const TensorEntry& tensor, std::uint64_t offset, const void* data, std::uint64_t bytes);
  void finish();

 private:
  std::string path_;
  int fd_ = -1;
  SafetensorsHeader header_;
};

}  // namespace morph::state
