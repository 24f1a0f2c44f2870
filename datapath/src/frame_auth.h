// Authentication of the online-learning link with a pre-shared key (protocol 2; the link and
// the frame format are in learner_link.h, the Python twin is jaxcc/online/auth.py).
//
// Only HMAC-SHA256 (RFC 2104 over FIPS 180-4, OpenSSL's libcrypto) is used, composed as:
//   psk          the key file's bytes (a trailing "\n" or "\r\n" stripped), at least 16 bytes
//   nonce_s/_l   32 bytes each from the OS RNG (RAND_bytes / os.urandom), fresh per connection:
//                the sender's in its first frame, the learner's in its answer (AUTH frames)
//   k_s2l        HMAC-SHA256(psk, "jaxcc-link-v2 s->l" || nonce_s || nonce_l)
//   k_l2s        HMAC-SHA256(psk, "jaxcc-link-v2 l->s" || nonce_s || nonce_l)
//   sealed frame u32 len | u8 type | u64 seq | payload | tag (32 bytes)      (len, seq LE)
//   tag          HMAC-SHA256(k_dir, u8 dir || u64 seq || u8 type || payload), dir 0 = s->l, 1 = l->s
// seq counts each direction's sealed frames on one connection from 0 and must be exactly the
// previous one + 1; tags are compared in constant time (CRYPTO_memcmp). Fresh nonces give every
// connection fresh keys, so a frame captured on one connection fails on any other.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace jaxcc {
namespace auth {

constexpr int kProto = 2;            // the HELLO "proto" of an authenticated connection
constexpr uint8_t kAuthType = 0x07;  // AUTH: u8 proto (2) | 32-byte nonce; the handshake, unsealed
constexpr size_t kNonceLen = 32, kTagLen = 32, kSeqLen = 8, kMinKeyLen = 16;
constexpr size_t kOverhead = kSeqLen + kTagLen;  // a sealed payload's bytes beyond the plain one
enum Dir : uint8_t { kSenderToLearner = 0, kLearnerToSender = 1 };

using Digest = std::array<uint8_t, 32>;
using Nonce = std::array<uint8_t, kNonceLen>;

// HMAC-SHA256 of the concatenation of up to three byte ranges (each may be empty).
Digest HmacSha256(const void* key, size_t key_len, const void* a, size_t na, const void* b = nullptr,
                  size_t nb = 0, const void* c = nullptr, size_t nc = 0);

// Reads a key file: "" and *psk, or a one-line reason naming `flag`, the file and the rule.
std::string ReadKeyFile(const std::string& path, const std::string& flag, std::string* psk);

// A nonce from the OS RNG (RAND_bytes); false if the RNG failed.
bool RandomNonce(Nonce* n);

struct SessionKeys {
  Digest s2l, l2s;
};
SessionKeys DeriveSessionKeys(const std::string& psk, const Nonce& nonce_s, const Nonce& nonce_l);

// The AUTH frame's payload, and its parser ("" or a one-line reason).
std::string AuthPayload(const Nonce& n);
std::string ParseAuth(uint8_t type, const std::string& payload, Nonce* out);

Digest FrameTag(const Digest& key, Dir dir, uint64_t seq, uint8_t type, const void* payload, size_t n);
// Appends one sealed frame (len, type, seq, payload, tag) to *out.
void AppendSealedFrame(std::string* out, const Digest& key, Dir dir, uint64_t seq, uint8_t type,
                       const void* payload, size_t n);
// Checks a sealed frame's body (what FrameReader returns as its payload): "" and the plain
// payload in *payload, or why it is refused (short, another seq than `expect_seq`, bad tag).
std::string OpenSealedFrame(const Digest& key, Dir dir, uint64_t expect_seq, uint8_t type, const std::string& body,
                            std::string* payload);

// One end of an authenticated connection: its two keys and two sequence counters.
class Channel {
 public:
  Channel(const SessionKeys& keys, Dir me);
  void Seal(std::string* out, uint8_t type, const void* payload, size_t n);
  // A refused frame leaves the receive counter where it was (the caller drops the connection).
  std::string Open(uint8_t type, const std::string& body, std::string* payload);
  uint64_t sent() const { return send_seq_; }
  uint64_t received() const { return recv_seq_; }

 private:
  Digest send_key_, recv_key_;
  Dir send_dir_, recv_dir_;
  uint64_t send_seq_ = 0, recv_seq_ = 0;
};

}  // namespace auth
}  // namespace jaxcc
