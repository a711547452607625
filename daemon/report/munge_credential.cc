#include "daemon/report/munge_credential.h"

#include <cstdlib>
#include <limits>
#include <memory>

#include <fmt/format.h>

namespace morph::report {
namespace {

// munge_encode and munge_decode hand back malloc'd buffers.
struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

MungeError munge_error(munge_err_t code, std::string_view what) {
  return MungeError(code, fmt::format("munge {}: {}", what, munge_strerror(code)));
}

}  // namespace

std::string munge_encode_payload(std::string_view payload) {
  if (payload.size() > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    throw MungeError(EMUNGE_BAD_LENGTH, "munge encode: payload too large");
  char* raw = nullptr;
  const munge_err_t code =
      munge_encode(&raw, nullptr, payload.empty() ? nullptr : payload.data(), static_cast<int>(payload.size()));
  std::unique_ptr<char, FreeDeleter> credential(raw);
  if (code != EMUNGE_SUCCESS) throw munge_error(code, "encode");
  return credential ? std::string(credential.get()) : std::string{};
}

MungeDecoded munge_decode_credential(const std::string& credential) {
  void* raw = nullptr;
  int length = 0;
  MungeDecoded decoded;
  const munge_err_t code = munge_decode(credential.c_str(), nullptr, &raw, &length, &decoded.uid, &decoded.gid);
  std::unique_ptr<void, FreeDeleter> payload(raw);
  if (code != EMUNGE_SUCCESS) throw munge_error(code, "decode");
  if (payload && length > 0) decoded.payload.assign(static_cast<const char*>(payload.get()), static_cast<std::size_t>(length));
  return decoded;
}

}  // namespace morph::report
