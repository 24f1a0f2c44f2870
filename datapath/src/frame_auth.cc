#include "frame_auth.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace jaxcc {
namespace auth {

namespace {

void PutLE(std::string* out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t GetLE64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

// Fetched once (thread-safe static), shared by every context.
EVP_MAC* Hmac() {
  static EVP_MAC* mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
  return mac;
}

constexpr char kLabelS2L[] = "jaxcc-link-v2 s->l";
constexpr char kLabelL2S[] = "jaxcc-link-v2 l->s";

}  // namespace

Digest HmacSha256(const void* key, size_t key_len, const void* a, size_t na, const void* b, size_t nb,
                  const void* c, size_t nc) {
  Digest out{};
  EVP_MAC* mac = Hmac();
  EVP_MAC_CTX* ctx = mac ? EVP_MAC_CTX_new(mac) : nullptr;
  if (!ctx) throw std::runtime_error("libcrypto: no HMAC implementation");
  char digest[] = "SHA256";
  const OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                               OSSL_PARAM_construct_end()};
  // OpenSSL refuses a NULL key pointer even with length 0.
  static const uint8_t kEmpty = 0;
  size_t len = 0;
  const bool ok = EVP_MAC_init(ctx, key_len ? static_cast<const uint8_t*>(key) : &kEmpty, key_len, params) == 1 &&
                  (na == 0 || EVP_MAC_update(ctx, static_cast<const uint8_t*>(a), na) == 1) &&
                  (nb == 0 || EVP_MAC_update(ctx, static_cast<const uint8_t*>(b), nb) == 1) &&
                  (nc == 0 || EVP_MAC_update(ctx, static_cast<const uint8_t*>(c), nc) == 1) &&
                  EVP_MAC_final(ctx, out.data(), &len, out.size()) == 1 && len == out.size();
  EVP_MAC_CTX_free(ctx);
  if (!ok) throw std::runtime_error("libcrypto: HMAC-SHA256 failed");
  return out;
}

std::string ReadKeyFile(const std::string& path, const std::string& flag, std::string* psk) {
  const std::string rule = "it must hold at least " + std::to_string(kMinKeyLen) +
                           " bytes after a trailing newline is stripped";
  std::ifstream f(path, std::ios::binary);
  if (!f) return flag + "=" + path + ": cannot read the key file (" + rule + ")";
  std::string k((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (!k.empty() && k.back() == '\n') {
    k.pop_back();
    if (!k.empty() && k.back() == '\r') k.pop_back();
  }
  if (k.size() < kMinKeyLen)
    return flag + "=" + path + ": key file has " + std::to_string(k.size()) + " bytes; " + rule;
  *psk = std::move(k);
  return "";
}

bool RandomNonce(Nonce* n) { return RAND_bytes(n->data(), static_cast<int>(n->size())) == 1; }

SessionKeys DeriveSessionKeys(const std::string& psk, const Nonce& nonce_s, const Nonce& nonce_l) {
  SessionKeys k;
  k.s2l = HmacSha256(psk.data(), psk.size(), kLabelS2L, sizeof(kLabelS2L) - 1, nonce_s.data(), kNonceLen,
                     nonce_l.data(), kNonceLen);
  k.l2s = HmacSha256(psk.data(), psk.size(), kLabelL2S, sizeof(kLabelL2S) - 1, nonce_s.data(), kNonceLen,
                     nonce_l.data(), kNonceLen);
  return k;
}

std::string AuthPayload(const Nonce& n) {
  std::string p(1, static_cast<char>(kProto));
  p.append(reinterpret_cast<const char*>(n.data()), n.size());
  return p;
}

std::string ParseAuth(uint8_t type, const std::string& payload, Nonce* out) {
  if (type != kAuthType)
    return "expected an AUTH frame (0x07, protocol 2) first, got type 0x" +
           std::string(1, "0123456789abcdef"[type >> 4]) + std::string(1, "0123456789abcdef"[type & 15]) +
           " (a peer without the key?)";
  if (payload.size() != 1 + kNonceLen || static_cast<uint8_t>(payload[0]) != kProto)
    return "AUTH frame of " + std::to_string(payload.size()) + " bytes is not protocol 2 with a " +
           std::to_string(kNonceLen) + "-byte nonce";
  std::memcpy(out->data(), payload.data() + 1, kNonceLen);
  return "";
}

Digest FrameTag(const Digest& key, Dir dir, uint64_t seq, uint8_t type, const void* payload, size_t n) {
  std::string head(1, static_cast<char>(dir));
  PutLE(&head, seq, 8);
  head.push_back(static_cast<char>(type));
  return HmacSha256(key.data(), key.size(), head.data(), head.size(), payload, n);
}

void AppendSealedFrame(std::string* out, const Digest& key, Dir dir, uint64_t seq, uint8_t type,
                       const void* payload, size_t n) {
  const Digest tag = FrameTag(key, dir, seq, type, payload, n);
  PutLE(out, static_cast<uint32_t>(1 + kSeqLen + n + kTagLen), 4);
  out->push_back(static_cast<char>(type));
  PutLE(out, seq, 8);
  if (n) out->append(static_cast<const char*>(payload), n);
  out->append(reinterpret_cast<const char*>(tag.data()), tag.size());
}

std::string OpenSealedFrame(const Digest& key, Dir dir, uint64_t expect_seq, uint8_t type, const std::string& body,
                            std::string* payload) {
  if (body.size() < kOverhead)
    return "sealed frame of " + std::to_string(body.size()) + " bytes is shorter than its seq and tag (" +
           std::to_string(kOverhead) + ")";
  const uint64_t seq = GetLE64(body.data());
  const size_t n = body.size() - kOverhead;
  const Digest want = FrameTag(key, dir, seq, type, body.data() + kSeqLen, n);
  // The tag first (constant time), so a forged frame learns nothing from which check failed.
  if (CRYPTO_memcmp(want.data(), body.data() + kSeqLen + n, kTagLen) != 0) return "bad tag";
  if (seq != expect_seq)
    return "seq " + std::to_string(seq) + " where " + std::to_string(expect_seq) + " was due (replayed or reordered)";
  payload->assign(body, kSeqLen, n);
  return "";
}

Channel::Channel(const SessionKeys& keys, Dir me)
    : send_key_(me == kSenderToLearner ? keys.s2l : keys.l2s),
      recv_key_(me == kSenderToLearner ? keys.l2s : keys.s2l),
      send_dir_(me),
      recv_dir_(me == kSenderToLearner ? kLearnerToSender : kSenderToLearner) {}

void Channel::Seal(std::string* out, uint8_t type, const void* payload, size_t n) {
  AppendSealedFrame(out, send_key_, send_dir_, send_seq_++, type, payload, n);
}

std::string Channel::Open(uint8_t type, const std::string& body, std::string* payload) {
  const std::string why = OpenSealedFrame(recv_key_, recv_dir_, recv_seq_, type, body, payload);
  if (why.empty()) ++recv_seq_;
  return why;
}

}  // namespace auth
}  // namespace jaxcc
