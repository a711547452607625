#include "daemon/report/munge_credential.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include "munge_support.h"

namespace morph::report {
namespace {

TEST(MungeCredential, RoundTripCarriesPayloadUidAndGid) {
  MORPH_REQUIRE_MUNGED();
  const std::string payload("report \0 with a zero byte", 25);
  const std::string credential = munge_encode_payload(payload);
  EXPECT_EQ(credential.rfind("MUNGE:", 0), 0u);
  const MungeDecoded decoded = munge_decode_credential(credential);
  EXPECT_EQ(decoded.payload, payload);
  EXPECT_EQ(decoded.uid, getuid());
  EXPECT_EQ(decoded.gid, getgid());
}

TEST(MungeCredential, EmptyPayload) {
  MORPH_REQUIRE_MUNGED();
  EXPECT_EQ(munge_decode_credential(munge_encode_payload("")).payload, "");
}

TEST(MungeCredential, ASecondDecodeIsAReplay) {
  MORPH_REQUIRE_MUNGED();
  const std::string credential = munge_encode_payload("once");
  munge_decode_credential(credential);
  try {
    munge_decode_credential(credential);
    FAIL() << "a replayed credential was accepted";
  } catch (const MungeError& e) {
    EXPECT_EQ(e.code(), EMUNGE_CRED_REPLAYED);
    EXPECT_STREQ(e.what(), "munge decode: Replayed credential");
  }
}

TEST(MungeCredential, GarbageAndTamperingAreRefused) {
  MORPH_REQUIRE_MUNGED();
  EXPECT_THROW(munge_decode_credential("not a credential"), MungeError);
  std::string credential = munge_encode_payload("payload");
  credential[credential.size() / 2] = credential[credential.size() / 2] == 'A' ? 'B' : 'A';
  try {
    munge_decode_credential(credential);
    FAIL() << "a tampered credential was accepted";
  } catch (const MungeError& e) {
    EXPECT_NE(e.code(), EMUNGE_SUCCESS);
    EXPECT_EQ(std::string(e.what()).rfind("munge decode: ", 0), 0u) << e.what();
  }
}

}  // namespace
}  // namespace morph::report
