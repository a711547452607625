#include "libmorph/state/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "libmorph/util/error.h"
#include "libmorph/util/json_depth.h"
#include "libmorph/util/parse.h"

namespace morph::state {
namespace {

using Json = nlohmann::json;

constexpr std::uint64_t kLengthFieldBytes = 8;  // the little-endian header length N
constexpr std::uint64_t kMinHeaderBytes = 2;    // "{}"
constexpr std::uint64_t kAlignBytes = 8;        // data section alignment in the file
constexpr std::uint64_t kMaxIoBytes = 1u << 30;  // per pread/pwrite call
constexpr int kMaxJsonNesting = 3;  // header object > tensor object > shape array
constexpr std::size_t kMaxShapeDimsShown = 8;
constexpr std::size_t kMaxJsonErrorChars = 300;
constexpr const char* kMetadataKey = "__metadata__";

// A tensor name for a message: verbatim when short and printable, else via quote().
std::string name_text(std::string_view name) {
  constexpr std::size_t kMaxVerbatim = 200;
  const bool printable = std::all_of(name.begin(), name.end(),
                                     [](char c) { return std::isprint(static_cast<unsigned char>(c)) != 0; });
  if (printable && name.size() <= kMaxVerbatim) return fmt::format("'{}'", name);
  return quote(name);
}

// Text for a message that may echo hostile input (nlohmann's messages quote the bad
// token whole): printable and at most max_chars long.
std::string printable_text(std::string_view text, std::size_t max_chars) {
  std::string out(text.substr(0, max_chars));
  for (char& c : out)
    if (!std::isprint(static_cast<unsigned char>(c))) c = '?';
  if (text.size() > max_chars) out += "...";
  return out;
}

// A JSON value for a message: short and printable.
std::string json_text(const Json& value) {
  constexpr std::size_t kMaxChars = 80;
  return printable_text(value.dump(), kMaxChars);
}

// shape product * dtype size, or nullopt on a negative dim or 64-bit overflow.
std::optional<std::uint64_t> byte_count(const std::vector<std::int64_t>& shape, Dtype dtype) {
  std::uint64_t bytes = dtype_bytes(dtype);
  for (const std::int64_t dim : shape) {
    if (dim < 0 || __builtin_mul_overflow(bytes, static_cast<std::uint64_t>(dim), &bytes)) return std::nullopt;
  }
  return bytes;
}

std::string where_tensor(std::string_view what, std::string_view name) {
  return fmt::format("{}: tensor {}", what, name_text(name));
}

// The header length N from the first 8 bytes, checked against the limit and the file.
std::uint64_t header_length(std::span<const std::uint8_t> prefix, std::uint64_t file_bytes, std::string_view what) {
  if (file_bytes < kLengthFieldBytes)
    throw Error(fmt::format("{}: file is {} bytes, shorter than the 8-byte header length", what, file_bytes));
  if (prefix.size() < kLengthFieldBytes)
    throw Error(fmt::format("{}: only {} bytes of the file given, the header length needs 8", what, prefix.size()));
  std::uint64_t length_bytes = 0;
  for (std::size_t i = 0; i < kLengthFieldBytes; ++i) length_bytes |= std::uint64_t{prefix[i]} << (8 * i);
  if (length_bytes < kMinHeaderBytes)
    throw Error(fmt::format("{}: header length {} is too small for a JSON object", what, length_bytes));
  if (length_bytes > kMaxHeaderBytes)
    throw Error(fmt::format("{}: header length {} bytes exceeds the limit of {} bytes", what, length_bytes,
                            kMaxHeaderBytes));
  if (length_bytes > file_bytes - kLengthFieldBytes)
    throw Error(fmt::format("{}: header length {} bytes exceeds the {} bytes after the length field "
                            "(truncated file?)",
                            what, length_bytes, file_bytes - kLengthFieldBytes));
  return length_bytes;
}

// A first pass over the header text that rejects duplicate keys (nlohmann's DOM keeps the
// last) and nesting deeper than a header has. (A parser callback could do this, but
// nlohmann's callback parser rescans the parent object at each object's end: quadratic.)
class HeaderKeyCheck final : public JsonDepthCheck<Json> {
 public:
  explicit HeaderKeyCheck(std::string_view what)
      : JsonDepthCheck(kMaxJsonNesting, fmt::format("{}: header JSON is nested too deeply", what)), what_(what) {}

  bool start_object(std::size_t) override {
    objects_.push_back(OpenObject{{}, last_key_});
    return enter();
  }
  bool end_object() override {
    objects_.pop_back();
    return leave();
  }
  bool key(string_t& key) override {
    last_key_ = key;
    if (objects_.back().keys.insert(key).second) return true;
    if (objects_.size() == 1) throw Error(fmt::format("{}: duplicate tensor name {}", what_, name_text(key)));
    throw Error(fmt::format("{}: duplicate key {} in {}", what_, name_text(key), name_text(objects_.back().owner)));
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    throw Error(fmt::format("{}: header is not valid JSON: {}", what_, printable_text(e.what(), kMaxJsonErrorChars)));
  }

 private:
  struct OpenObject {
    std::set<std::string> keys;  // seen so far
    std::string owner;           // the key this object is the value of
  };

  std::string_view what_;
  std::vector<OpenObject> objects_;
  std::string last_key_;
};

Json parse_json(std::string_view text, std::string_view what) {
  // The JSON parser stops at a NUL byte, which would hide whatever follows it.
  if (const std::size_t nul = text.find('\0'); nul != std::string_view::npos)
    throw Error(fmt::format("{}: header holds a NUL byte at offset {}", what, nul));
  const char* first = text.data();
  const char* last = text.data() + text.size();
  HeaderKeyCheck check(what);
  Json::sax_parse(first, last, &check);
  try {
    return Json::parse(first, last);
  } catch (const Json::exception& e) {  // not expected after the first pass
    throw Error(fmt::format("{}: header is not valid JSON: {}", what, printable_text(e.what(), kMaxJsonErrorChars)));
  }
}

const Json& field(const Json& entry, const char* key, std::string_view where) {
  const auto it = entry.find(key);
  if (it == entry.end()) throw Error(fmt::format("{}: missing \"{}\"", where, key));
  return *it;
}

std::vector<std::int64_t> parse_shape(const Json& value, std::string_view where) {
  if (!value.is_array()) throw Error(fmt::format("{}: \"shape\" must be an array, got {}", where, value.type_name()));
  std::vector<std::int64_t> shape;
  shape.reserve(value.size());
  for (const Json& dim : value) {
    if (!dim.is_number_integer())
      throw Error(fmt::format("{}: shape dims must be integers, got {}", where, json_text(dim)));
    if (dim.is_number_unsigned()) {
      const auto size = dim.get<std::uint64_t>();
      if (size > std::numeric_limits<std::int64_t>::max())
        throw Error(fmt::format("{}: shape dim {} is too large", where, size));
      shape.push_back(static_cast<std::int64_t>(size));
    } else {
      const auto size = dim.get<std::int64_t>();
      if (size < 0) throw Error(fmt::format("{}: shape dim {} is negative", where, size));
      shape.push_back(size);
    }
  }
  return shape;
}

std::pair<std::uint64_t, std::uint64_t> parse_offsets(const Json& value, std::string_view where) {
  if (!value.is_array() || value.size() != 2)
    throw Error(fmt::format("{}: \"data_offsets\" must be an array [begin, end], got {}", where,
                            json_text(value)));
  for (const Json& offset : value) {
    if (!offset.is_number_unsigned())
      throw Error(fmt::format("{}: data_offsets must be non-negative integers, got {}", where,
                              json_text(offset)));
  }
  return {value[0].get<std::uint64_t>(), value[1].get<std::uint64_t>()};
}

TensorEntry parse_tensor(const std::string& name, const Json& entry, std::uint64_t data_bytes, std::string_view what) {
  const std::string where = where_tensor(what, name);
  if (!entry.is_object())
    throw Error(fmt::format("{}: expected an object with dtype, shape and data_offsets, got {}", where,
                            entry.type_name()));
  for (const auto& [key, value] : entry.items()) {
    if (key != "dtype" && key != "shape" && key != "data_offsets")
      throw Error(fmt::format("{}: unknown field {}", where, name_text(key)));
  }
  TensorEntry t;
  t.name = name;
  const Json& dtype = field(entry, "dtype", where);
  if (!dtype.is_string()) throw Error(fmt::format("{}: \"dtype\" must be a string, got {}", where, dtype.type_name()));
  t.dtype = parse_dtype(dtype.get_ref<const std::string&>(), where);
  t.shape = parse_shape(field(entry, "shape", where), where);
  std::tie(t.begin, t.end) = parse_offsets(field(entry, "data_offsets", where), where);
  if (t.begin > t.end)
    throw Error(fmt::format("{}: data_offsets [{}, {}] begin after they end", where, t.begin, t.end));
  if (t.end > data_bytes)
    throw Error(fmt::format("{}: data_offsets [{}, {}] go past the end of the data section ({} bytes)", where,
                            t.begin, t.end, data_bytes));
  const std::optional<std::uint64_t> bytes = byte_count(t.shape, t.dtype);
  if (!bytes)
    throw Error(fmt::format("{}: shape {} of {} overflows a 64-bit byte count", where, shape_text(t.shape),
                            dtype_name(t.dtype)));
  if (*bytes != t.bytes())
    throw Error(fmt::format("{}: data_offsets [{}, {}] do not match shape {} of {} ({} bytes)", where, t.begin,
                            t.end, shape_text(t.shape), dtype_name(t.dtype), *bytes));
  return t;
}

std::map<std::string, std::string> parse_metadata(const Json& value, std::string_view what) {
  if (!value.is_object())
    throw Error(fmt::format("{}: \"__metadata__\" must be an object of strings, got {}", what, value.type_name()));
  std::map<std::string, std::string> metadata;
  for (const auto& [key, text] : value.items()) {
    if (!text.is_string())
      throw Error(fmt::format("{}: __metadata__ {} must be a string, got {}", what, name_text(key), text.type_name()));
    metadata.emplace(key, text.get<std::string>());
  }
  return metadata;
}

// Sorts the tensors by offset and checks that they tile the data section: from 0, no
// overlaps, no holes, ending at its end.
void check_coverage(std::vector<TensorEntry>& tensors, std::uint64_t data_bytes, std::string_view what) {
  std::sort(tensors.begin(), tensors.end(), [](const TensorEntry& a, const TensorEntry& b) {
    return std::tie(a.begin, a.end, a.name) < std::tie(b.begin, b.end, b.name);
  });
  const TensorEntry* previous = nullptr;
  std::uint64_t covered_bytes = 0;
  for (const TensorEntry& t : tensors) {
    if (t.begin < covered_bytes)
      throw Error(fmt::format("{}: data_offsets [{}, {}] overlap tensor {} [{}, {}]", where_tensor(what, t.name),
                              t.begin, t.end, name_text(previous->name), previous->begin, previous->end));
    if (t.begin > covered_bytes && previous == nullptr)
      throw Error(fmt::format("{}: data_offsets [{}, {}] leave a hole at the start of the data section",
                              where_tensor(what, t.name), t.begin, t.end));
    if (t.begin > covered_bytes)
      throw Error(fmt::format("{}: data_offsets [{}, {}] leave a hole after tensor {}, which ends at {}",
                              where_tensor(what, t.name), t.begin, t.end, name_text(previous->name), covered_bytes));
    covered_bytes = t.end;
    previous = &t;
  }
  if (covered_bytes != data_bytes)
    throw Error(fmt::format("{}: data section is {} bytes but the tensors cover {} (size mismatch)", what, data_bytes,
                            covered_bytes));
}

// The entry of `header` that `tensor` stands for; throws when there is none, so that a
// stale or foreign entry cannot address bytes outside this file's tensors.
const TensorEntry& own_entry(const SafetensorsHeader& header, const TensorEntry& tensor, const std::string& path) {
  const std::less<const TensorEntry*> before;  // a total order, also across arrays
  const TensorEntry* first = header.tensors.data();
  if (!before(&tensor, first) && before(&tensor, first + header.tensors.size())) return tensor;  // fast path
  const TensorEntry* own = header.find(tensor.name);
  if (own == nullptr || own->begin != tensor.begin || own->end != tensor.end)
    throw Error(fmt::format("{}: {} is not a tensor of this file", path, name_text(tensor.name)));
  return *own;
}

void check_range(const TensorEntry& tensor, std::uint64_t offset, std::uint64_t bytes, const std::string& path) {
  if (offset > tensor.bytes() || bytes > tensor.bytes() - offset)
    throw Error(fmt::format("{}: bytes [{}, {}+{}) are outside the {} bytes of tensor {}", path, offset, offset, bytes,
                            tensor.bytes(), name_text(tensor.name)));
}

std::size_t io_chunk(std::uint64_t bytes) { return static_cast<std::size_t>(std::min(bytes, kMaxIoBytes)); }

void pread_all(int fd, void* out, std::uint64_t bytes, std::uint64_t file_offset, const std::string& path) {
  auto* cursor = static_cast<unsigned char*>(out);
  while (bytes > 0) {
    const ssize_t got = ::pread(fd, cursor, io_chunk(bytes), static_cast<off_t>(file_offset));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0)
      throw Error(fmt::format("{}: read at offset {} failed: {}", path, file_offset, std::strerror(errno)));
    if (got == 0) throw Error(fmt::format("{}: unexpected end of file at offset {} (file shrank?)", path, file_offset));
    cursor += got;
    bytes -= static_cast<std::uint64_t>(got);
    file_offset += static_cast<std::uint64_t>(got);
  }
}

void pwrite_all(int fd, const void* data, std::uint64_t bytes, std::uint64_t file_offset, const std::string& path) {
  const auto* cursor = static_cast<const unsigned char*>(data);
  while (bytes > 0) {
    const ssize_t put = ::pwrite(fd, cursor, io_chunk(bytes), static_cast<off_t>(file_offset));
    if (put < 0 && errno == EINTR) continue;
    if (put < 0)
      throw Error(fmt::format("{}: write at offset {} failed: {}", path, file_offset, std::strerror(errno)));
    cursor += put;
    bytes -= static_cast<std::uint64_t>(put);
    file_offset += static_cast<std::uint64_t>(put);
  }
}

// Checks the declarations and lays the tensors out contiguously in the given order.
SafetensorsHeader layout(const std::vector<TensorDecl>& tensors, const std::string& path) {
  SafetensorsHeader header;
  std::set<std::string_view> names;
  std::uint64_t data_bytes = 0;
  for (const TensorDecl& decl : tensors) {
    const std::string where = where_tensor(path, decl.name);
    if (decl.name.empty() || decl.name == kMetadataKey) throw Error(fmt::format("{}: reserved or empty name", where));
    if (!names.insert(decl.name).second) throw Error(fmt::format("{}: declared twice", where));
    const std::optional<std::uint64_t> bytes = byte_count(decl.shape, decl.dtype);
    if (!bytes || __builtin_add_overflow(data_bytes, *bytes, &data_bytes))
      throw Error(fmt::format("{}: shape {} of {} has a negative dim or is too large", where, shape_text(decl.shape),
                              dtype_name(decl.dtype)));
    header.tensors.push_back(TensorEntry{decl.name, decl.dtype, decl.shape, data_bytes - *bytes, data_bytes});
  }
  return header;
}

// The header bytes: length field and JSON, padded with spaces so the data is aligned.
std::string header_bytes(const SafetensorsHeader& header, const std::string& path) {
  nlohmann::ordered_json doc = nlohmann::ordered_json::object();
  if (!header.metadata.empty()) doc[kMetadataKey] = header.metadata;
  for (const TensorEntry& t : header.tensors) {
    doc[t.name] = {{"dtype", dtype_name(t.dtype)}, {"shape", t.shape}, {"data_offsets", {t.begin, t.end}}};
  }
  std::string json;
  try {
    json = doc.dump();
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("{}: cannot encode the header (names and metadata must be UTF-8): {}", path, e.what()));
  }
  const std::uint64_t padded_bytes = (json.size() + kAlignBytes - 1) / kAlignBytes * kAlignBytes;
  json.resize(padded_bytes, ' ');
  std::string out(kLengthFieldBytes, '\0');
  for (std::size_t i = 0; i < kLengthFieldBytes; ++i) out[i] = static_cast<char>((padded_bytes >> (8 * i)) & 0xff);
  return out + json;
}

}  // namespace

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i == kMaxShapeDimsShown) {
      out += fmt::format(", ... ({} dims)", shape.size());
      break;
    }
    out += fmt::format("{}{}", i == 0 ? "" : ", ", shape[i]);
  }
  return out + "]";
}

std::uint64_t TensorEntry::elements() const {
  std::uint64_t count = 1;
  for (const std::int64_t dim : shape) count *= static_cast<std::uint64_t>(dim);
  return count;
}

const TensorEntry* SafetensorsHeader::find(std::string_view name) const {
  for (const TensorEntry& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

SafetensorsHeader parse_safetensors(std::span<const std::uint8_t> prefix, std::uint64_t file_bytes,
                                    std::string_view what) {
  const std::uint64_t json_bytes = header_length(prefix, file_bytes, what);
  if (prefix.size() - kLengthFieldBytes < json_bytes)
    throw Error(fmt::format("{}: header incomplete: {} of its {} bytes given", what,
                            prefix.size() - kLengthFieldBytes, json_bytes));
  const std::string_view text(reinterpret_cast<const char*>(prefix.data() + kLengthFieldBytes), json_bytes);
  const Json doc = parse_json(text, what);
  if (!doc.is_object()) throw Error(fmt::format("{}: header must be a JSON object, got {}", what, doc.type_name()));

  SafetensorsHeader header;
  header.data_offset = kLengthFieldBytes + json_bytes;
  const std::uint64_t data_bytes = file_bytes - header.data_offset;
  for (const auto& [key, value] : doc.items()) {
    if (key == kMetadataKey) header.metadata = parse_metadata(value, what);
    else header.tensors.push_back(parse_tensor(key, value, data_bytes, what));
  }
  check_coverage(header.tensors, data_bytes, what);
  return header;
}

// ---- SafetensorsReader ----

SafetensorsReader::SafetensorsReader(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw Error(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  try {
    struct stat st {};
    if (::fstat(fd_, &st) != 0) throw Error(fmt::format("{}: cannot stat: {}", path, std::strerror(errno)));
    if (!S_ISREG(st.st_mode)) throw Error(fmt::format("{}: not a regular file", path));
    file_bytes_ = static_cast<std::uint64_t>(st.st_size);
    std::vector<std::uint8_t> prefix(std::min(file_bytes_, kLengthFieldBytes));
    pread_all(fd_, prefix.data(), prefix.size(), 0, path);
    prefix.resize(kLengthFieldBytes + header_length(prefix, file_bytes_, path));
    pread_all(fd_, prefix.data() + kLengthFieldBytes, prefix.size() - kLengthFieldBytes, kLengthFieldBytes, path);
    header_ = parse_safetensors(prefix, file_bytes_, path);
  } catch (...) {
    ::close(fd_);
    throw;
  }
}

SafetensorsReader::~SafetensorsReader() {
  if (fd_ >= 0) ::close(fd_);
}

SafetensorsReader::SafetensorsReader(SafetensorsReader&& other) noexcept
    : path_(std::move(other.path_)),
      fd_(std::exchange(other.fd_, -1)),
      file_bytes_(other.file_bytes_),
      header_(std::move(other.header_)) {}

SafetensorsReader& SafetensorsReader::operator=(SafetensorsReader&& other) noexcept {
  if (this == &other) return *this;
  if (fd_ >= 0) ::close(fd_);
  path_ = std::move(other.path_);
  fd_ = std::exchange(other.fd_, -1);
  file_bytes_ = other.file_bytes_;
  header_ = std::move(other.header_);
  return *this;
}

void SafetensorsReader::read(const TensorEntry& tensor, std::uint64_t offset, void* out, std::uint64_t bytes) const {
  const TensorEntry& own = own_entry(header_, tensor, path_);
  check_range(own, offset, bytes, path_);
  pread_all(fd_, out, bytes, header_.data_offset + own.begin + offset, path_);
}

// ---- SafetensorsWriter ----

SafetensorsWriter::SafetensorsWriter(std::string path, const std::vector<TensorDecl>& tensors,
                                     const std::map<std::string, std::string>& metadata)
    : path_(std::move(path)), header_(layout(tensors, path_)) {
  header_.metadata = metadata;
  const std::string head = header_bytes(header_, path_);
  if (head.size() - kLengthFieldBytes > kMaxHeaderBytes)  // what every reader refuses
    throw Error(fmt::format("{}: a header of {} bytes ({} tensors) exceeds the limit of {} bytes", path_,
                            head.size() - kLengthFieldBytes, header_.tensors.size(), kMaxHeaderBytes));
  header_.data_offset = head.size();
  const std::uint64_t data_bytes = header_.tensors.empty() ? 0 : header_.tensors.back().end;
  if (data_bytes > static_cast<std::uint64_t>(std::numeric_limits<off_t>::max()) - header_.data_offset)
    throw Error(fmt::format("{}: {} bytes of tensor data is too large for a file", path_, data_bytes));
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw Error(fmt::format("{}: cannot create: {}", path_, std::strerror(errno)));
  try {
    pwrite_all(fd_, head.data(), head.size(), 0, path_);
    if (::ftruncate(fd_, static_cast<off_t>(header_.data_offset + data_bytes)) != 0)
      throw Error(fmt::format("{}: cannot size to {} bytes: {}", path_, header_.data_offset + data_bytes,
                              std::strerror(errno)));
  } catch (...) {
    ::close(std::exchange(fd_, -1));
    ::unlink(path_.c_str());
    throw;
  }
}

SafetensorsWriter::~SafetensorsWriter() {
  if (fd_ < 0) return;
  ::close(fd_);
  ::unlink(path_.c_str());
}

void SafetensorsWriter::write(const TensorEntry& tensor, std::uint64_t offset, const void* data, std::uint64_t bytes) {
  if (fd_ < 0) throw Error(fmt::format("{}: write after finish()", path_));
  const TensorEntry& own = own_entry(header_, tensor, path_);
  check_range(own, offset, bytes, path_);
  pwrite_all(fd_, data, bytes, header_.data_offset + own.begin + offset, path_);
}

void SafetensorsWriter::finish() {
  if (fd_ < 0) throw Error(fmt::format("{}: already finished", path_));
  const int fd = std::exchange(fd_, -1);
  std::string failure;
  if (::fsync(fd) != 0) failure = fmt::format("fsync failed: {}", std::strerror(errno));
  if (::close(fd) != 0 && failure.empty()) failure = fmt::format("close failed: {}", std::strerror(errno));
  if (failure.empty()) return;
  ::unlink(path_.c_str());
  throw Error(fmt::format("{}: {} (file removed)", path_, failure));
}

}  // namespace morph::state
