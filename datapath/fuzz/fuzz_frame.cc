// libFuzzer target: the learner link's frame reader and the authenticated-frame verifier
// (src/learner_link.h, src/frame_auth.h).
//   1. The input, fed to a FrameReader in chunks whose sizes come from its first byte, splits
//      into frames that re-encode to exactly the bytes consumed; every frame goes through the
//      handshake parser and the verifier (fixed session keys) -- which must refuse it, since
//      nobody without the key can make a tag -- unless it is a frame sealed here.
//   2. The input as a payload: sealed, it opens to the same payload and type; with any one bit
//      flipped (position from the input) or under the next seq, it is refused.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "frame_auth.h"
#include "learner_link.h"

namespace {

const jaxcc::auth::SessionKeys& Keys() {
  static const jaxcc::auth::SessionKeys k = [] {
    jaxcc::auth::Nonce ns{}, nl{};
    for (size_t i = 0; i < ns.size(); ++i) ns[i] = static_cast<uint8_t>(i), nl[i] = static_cast<uint8_t>(0x80 + i);
    return jaxcc::auth::DeriveSessionKeys("jaxcc fuzz key, 16+ bytes", ns, nl);
  }();
  return k;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace jaxcc;
  const auth::SessionKeys& k = Keys();
  // 1. Reader + verifier on arbitrary bytes.
  {
    FrameReader r;
    const size_t step = size ? 1 + data[0] % 64 : 1;
    std::string rebuilt, payload, plain;
    size_t fed = 0;
    uint8_t type = 0;
    uint64_t seq = 0;
    bool bad = false;
    while (fed < size && !bad) {
      const size_t n = std::min(step, size - fed);
      r.Feed(data + fed, n);
      fed += n;
      for (;;) {
        const FrameReader::Status st = r.Next(&type, &payload);
        if (st == FrameReader::kNeedMore) break;
        if (st == FrameReader::kBadLength) {
          if (r.bad_len() != 0 && r.bad_len() <= proto::kMaxLen) std::abort();
          bad = true;
          break;
        }
        AppendFrame(&rebuilt, type, payload.data(), payload.size());
        auth::Nonce nonce;
        const std::string why = auth::ParseAuth(type, payload, &nonce);
        if (why.empty() != (type == auth::kAuthType && payload.size() == 33 && payload[0] == auth::kProto))
          std::abort();
        // Random bytes never carry a valid tag (a 2^-256 chance), in either direction.
        if (auth::OpenSealedFrame(k.l2s, auth::kLearnerToSender, seq, type, payload, &plain).empty()) std::abort();
        if (auth::OpenSealedFrame(k.s2l, auth::kSenderToLearner, seq, type, payload, &plain).empty()) std::abort();
        ++seq;
      }
    }
    // Whole frames consumed = the bytes before what is still buffered, re-encoded identically.
    if (!bad && (rebuilt.size() + r.buffered() != size || std::memcmp(rebuilt.data(), data, rebuilt.size()) != 0))
      std::abort();
  }
  // 2. Seal -> open round trip, and tampering refused.
  {
    const uint8_t type = size ? data[size - 1] : 0;
    const uint64_t seq = size >= 8 ? (static_cast<uint64_t>(data[1 % size]) << 40) | size : size;
    std::string wire;
    auth::AppendSealedFrame(&wire, k.l2s, auth::kLearnerToSender, seq, type, data, size);
    FrameReader r;
    r.Feed(reinterpret_cast<const uint8_t*>(wire.data()), wire.size());
    uint8_t t = 0;
    std::string body, plain;
    if (r.Next(&t, &body) != FrameReader::kFrame || t != type) std::abort();
    if (!auth::OpenSealedFrame(k.l2s, auth::kLearnerToSender, seq, t, body, &plain).empty()) std::abort();
    if (plain.size() != size || (size && std::memcmp(plain.data(), data, size) != 0)) std::abort();
    if (auth::OpenSealedFrame(k.l2s, auth::kLearnerToSender, seq + 1, t, body, &plain).empty()) std::abort();
    if (auth::OpenSealedFrame(k.s2l, auth::kLearnerToSender, seq, t, body, &plain).empty()) std::abort();
    const size_t bit = size ? (static_cast<size_t>(data[0]) * 131 + size) % (8 * body.size()) : 0;
    body[bit / 8] = static_cast<char>(body[bit / 8] ^ (1 << (bit % 8)));
    if (auth::OpenSealedFrame(k.l2s, auth::kLearnerToSender, seq, t, body, &plain).empty()) std::abort();
  }
  return 0;
}
