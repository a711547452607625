// A payload sealed in a MUNGE credential: munged on the sending host vouches for the
// sender's uid and gid, munged on the receiving host checks the credential (same key,
// not expired, not replayed) and tells who sent it.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

#include <munge.h>

#include "libmorph/util/error.h"

namespace morph::report {

// munge's own error text ("Replayed credential", "Expired credential", "Invalid
// credential", "Failed to connect to ..."), with its code.
class MungeError : public Error {
 public:
  MungeError(munge_err_t code, const std::string& message) : Error(message), code_(code) {}
  munge_err_t code() const { return code_; }
  // munged could not answer now (down, restarting, out of memory, timed out): nothing is
  // wrong with the credential, which the sender may send again.
  bool unavailable() const {
    return code_ == EMUNGE_SOCKET || code_ == EMUNGE_TIMEOUT || code_ == EMUNGE_NO_MEMORY || code_ == EMUNGE_SNAFU;
  }

 private:
  munge_err_t code_;
};

struct MungeDecoded {
  std::string payload;
  uid_t uid = 0;
  gid_t gid = 0;
};

// A credential for the calling process's uid and gid carrying `payload`. Throws MungeError.
std::string munge_encode_payload(std::string_view payload);

// The payload and who sent it. Throws MungeError; a credential munged accepts only once
// (a second decode is MUNGE_CRED_REPLAYED).
MungeDecoded munge_decode_credential(const std::string& credential);

}  // namespace morph::report
