// The online link's authentication (src/frame_auth.h): HMAC-SHA256 against RFC 4231's published
// test vectors, sealed frames round-tripped and every tampering refused, the Python side's
// sealed frames (tests/vectors/frame_auth.json, jaxcc/online/auth.py) verified here and sealed
// here to the same bytes, key files, and a tcp: link without a key refused.
#include "frame_auth.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "learner_link.h"

namespace jaxcc {
namespace {

using auth::Digest;
using json = nlohmann::json;

std::string Hex(const void* p, size_t n) {
  static const char* h = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    const uint8_t b = static_cast<const uint8_t*>(p)[i];
    s += h[b >> 4], s += h[b & 15];
  }
  return s;
}
std::string Hex(const std::string& s) { return Hex(s.data(), s.size()); }
std::string Hex(const Digest& d) { return Hex(d.data(), d.size()); }

std::string Unhex(const std::string& h) {
  std::string s;
  for (size_t i = 0; i + 1 < h.size(); i += 2) s.push_back(static_cast<char>(std::stoi(h.substr(i, 2), nullptr, 16)));
  return s;
}

// RFC 4231 section 4: HMAC-SHA-256 test cases 1-7 (case 5's output is truncated to 128 bits).
TEST(HmacSha256, Rfc4231TestVectors) {
  struct Case {
    std::string key, data, mac;
  };
  const std::string aa131(131, '\xaa');
  std::string k4;
  for (int i = 1; i <= 25; ++i) k4.push_back(static_cast<char>(i));
  const Case cases[] = {
      {std::string(20, '\x0b'), "Hi There", "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"},
      {"Jefe", "what do ya want for nothing?", "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"},
      {std::string(20, '\xaa'), std::string(50, '\xdd'),
       "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"},
      {k4, std::string(50, '\xcd'), "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"},
      {std::string(20, '\x0c'), "Test With Truncation", "a3b6167473100ee06e0c796c2955552b"},
      {aa131, "Test Using Larger Than Block-Size Key - Hash Key First",
       "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"},
      {aa131,
       "This is a test using a larger than block-size key and a larger than block-size data. The key needs to be "
       "hashed before being used by the HMAC algorithm.",
       "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"},
  };
  int i = 0;
  for (const Case& c : cases) {
    ++i;
    const Digest d = auth::HmacSha256(c.key.data(), c.key.size(), c.data.data(), c.data.size());
    EXPECT_EQ(Hex(d).substr(0, c.mac.size()), c.mac) << "RFC 4231 test case " << i;
    // The same message split over the three ranges gives the same MAC.
    const size_t a = c.data.size() / 3, b = c.data.size() / 2;
    const Digest split = auth::HmacSha256(c.key.data(), c.key.size(), c.data.data(), a, c.data.data() + a, b - a,
                                          c.data.data() + b, c.data.size() - b);
    EXPECT_EQ(Hex(split), Hex(d)) << "test case " << i;
  }
}

auth::SessionKeys Keys(const std::string& psk = "0123456789abcdef-a-test-key") {
  auth::Nonce ns{}, nl{};
  for (size_t i = 0; i < ns.size(); ++i) ns[i] = static_cast<uint8_t>(i), nl[i] = static_cast<uint8_t>(200 - i);
  return auth::DeriveSessionKeys(psk, ns, nl);
}

// Splits one whole frame into (type, body) as FrameReader does.
std::pair<uint8_t, std::string> Split(const std::string& frame) {
  FrameReader r;
  r.Feed(reinterpret_cast<const uint8_t*>(frame.data()), frame.size());
  uint8_t type = 0;
  std::string body;
  EXPECT_EQ(r.Next(&type, &body), FrameReader::kFrame);
  EXPECT_EQ(r.buffered(), 0u);
  return {type, body};
}

TEST(Sealed, RoundTripBothDirectionsInOrder) {
  const auth::SessionKeys k = Keys();
  auth::Channel sender(k, auth::kSenderToLearner), learner(k, auth::kLearnerToSender);
  for (int i = 0; i < 3; ++i) {
    std::string wire;
    const std::string rec = "record " + std::to_string(i);
    sender.Seal(&wire, proto::kRecord, rec.data(), rec.size());
    ASSERT_EQ(wire.size(), 4 + 1 + 8 + rec.size() + 32);
    auto [type, body] = Split(wire);
    std::string plain;
    ASSERT_EQ(learner.Open(type, body, &plain), "") << i;
    EXPECT_EQ(type, proto::kRecord);
    EXPECT_EQ(plain, rec);
    std::string back;
    learner.Seal(&back, proto::kPing, nullptr, 0);
    auto [t2, b2] = Split(back);
    ASSERT_EQ(sender.Open(t2, b2, &plain), "") << i;
    EXPECT_EQ(plain, "");
  }
  EXPECT_EQ(sender.sent(), 3u);
  EXPECT_EQ(learner.received(), 3u);
}

TEST(Sealed, EveryFlippedBitIsRefused) {
  const auth::SessionKeys k = Keys();
  std::string wire;
  auth::AppendSealedFrame(&wire, k.l2s, auth::kLearnerToSender, 0, proto::kWeights, "\x01\0\0\0\0\0\0\0ab", 10);
  // Bits of the type byte, seq, payload and tag (the length field is the framing's: a change
  // there splits the stream elsewhere, and the tag then fails on the bytes it covers).
  for (size_t byte = 4; byte < wire.size(); ++byte) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string bad = wire;
      bad[byte] = static_cast<char>(bad[byte] ^ (1 << bit));
      auto [type, body] = Split(bad);
      std::string plain;
      EXPECT_NE(auth::OpenSealedFrame(k.l2s, auth::kLearnerToSender, 0, type, body, &plain), "")
          << "byte " << byte << " bit " << bit;
    }
  }
  auto [type, body] = Split(wire);
  std::string plain;
  EXPECT_EQ(auth::OpenSealedFrame(k.l2s, auth::kLearnerToSender, 0, type, body, &plain), "");
}

TEST(Sealed, ReplayedSkippedOtherDirectionAndTruncatedAreRefused) {
  const auth::SessionKeys k = Keys();
  auth::Channel learner(k, auth::kLearnerToSender), sender(k, auth::kSenderToLearner);
  std::string f0, f1, f2;
  learner.Seal(&f0, proto::kPing, nullptr, 0);
  learner.Seal(&f1, proto::kWeights, "\x02\0\0\0\0\0\0\0", 8);
  learner.Seal(&f2, proto::kPing, "abc", 3);
  std::string plain;
  // Skipped: seq 1 while 0 is due.
  {
    auth::Channel s(k, auth::kSenderToLearner);
    auto [t, b] = Split(f1);
    EXPECT_NE(s.Open(t, b, &plain).find("seq 1 where 0 was due"), std::string::npos);
    EXPECT_EQ(s.received(), 0u);  // a refused frame does not move the counter
  }
  auto [t0, b0] = Split(f0);
  ASSERT_EQ(sender.Open(t0, b0, &plain), "");
  // Replayed: seq 0 again.
  EXPECT_NE(sender.Open(t0, b0, &plain).find("seq 0 where 1 was due"), std::string::npos);
  auto [t1, b1] = Split(f1);
  ASSERT_EQ(sender.Open(t1, b1, &plain), "");
  // Sealed with the other direction's key (a sender's frame reflected back as the learner's).
  std::string reflected;
  auth::AppendSealedFrame(&reflected, k.s2l, auth::kLearnerToSender, 2, proto::kPing, nullptr, 0);
  auto [tr, br] = Split(reflected);
  EXPECT_EQ(sender.Open(tr, br, &plain), "bad tag");
  // The right key with the other direction byte.
  std::string wrong_dir;
  auth::AppendSealedFrame(&wrong_dir, k.l2s, auth::kSenderToLearner, 2, proto::kPing, nullptr, 0);
  auto [td, bd] = Split(wrong_dir);
  EXPECT_EQ(sender.Open(td, bd, &plain), "bad tag");
  // Truncated tag: one byte short, and shorter than seq + tag altogether.
  auto [t2, b2] = Split(f2);
  EXPECT_EQ(sender.Open(t2, b2.substr(0, b2.size() - 1), &plain), "bad tag");
  EXPECT_NE(sender.Open(t2, b2.substr(0, 39), &plain).find("shorter than its seq and tag"), std::string::npos);
  // Another psk: same nonces, other keys.
  const auth::SessionKeys other = Keys("another key of 16+ bytes");
  auth::Channel wrong(other, auth::kSenderToLearner);
  auto [t2b, b2b] = Split(f0);
  EXPECT_EQ(wrong.Open(t2b, b2b, &plain), "bad tag");
  // And the untampered next frame still opens.
  ASSERT_EQ(sender.Open(t2, b2, &plain), "");
  EXPECT_EQ(sender.received(), 3u);
}

TEST(Auth, HandshakeFramesAndRefusals) {
  auth::Nonce n{};
  n[0] = 9;
  n[31] = 7;
  std::string wire;
  const std::string p = auth::AuthPayload(n);
  AppendFrame(&wire, auth::kAuthType, p.data(), p.size());
  EXPECT_EQ(wire.size(), 4u + 1 + 1 + 32);
  EXPECT_EQ(Hex(wire.substr(0, 7)), "22000000070209");
  auto [t, b] = Split(wire);
  auth::Nonce got{};
  ASSERT_EQ(auth::ParseAuth(t, b, &got), "");
  EXPECT_EQ(got, n);
  EXPECT_NE(auth::ParseAuth(proto::kPing, "", &got).find("got type 0x06"), std::string::npos);
  EXPECT_NE(auth::ParseAuth(proto::kWeights, "x", &got).find("got type 0x03"), std::string::npos);
  EXPECT_NE(auth::ParseAuth(auth::kAuthType, b.substr(0, 32), &got).find("not protocol 2"), std::string::npos);
  std::string v1 = b;
  v1[0] = 1;
  EXPECT_NE(auth::ParseAuth(auth::kAuthType, v1, &got).find("not protocol 2"), std::string::npos);
  // Two nonces from the OS RNG differ.
  auth::Nonce a{}, c{};
  ASSERT_TRUE(auth::RandomNonce(&a) && auth::RandomNonce(&c));
  EXPECT_NE(a, c);
}

// Python sealed these (jaxcc/online/auth.py); C++ must open them and seal the same bytes.
TEST(Parity, PythonSealedFramesOpenHereAndSealHereIdentically) {
  std::ifstream f(std::string(JAXCC_VECTORS_DIR) + "/frame_auth.json");
  ASSERT_TRUE(f.good()) << "tests/vectors/frame_auth.json missing";
  const json v = json::parse(f);
  const std::string psk = Unhex(v["psk"]);
  auth::Nonce ns{}, nl{};
  const std::string s = Unhex(v["nonce_s"]), l = Unhex(v["nonce_l"]);
  std::copy(s.begin(), s.end(), ns.begin());
  std::copy(l.begin(), l.end(), nl.begin());
  const auth::SessionKeys k = auth::DeriveSessionKeys(psk, ns, nl);
  EXPECT_EQ(Hex(k.s2l), v["k_s2l"].get<std::string>());
  EXPECT_EQ(Hex(k.l2s), v["k_l2s"].get<std::string>());
  std::string as, al;
  const std::string ps = auth::AuthPayload(ns), pl = auth::AuthPayload(nl);
  AppendFrame(&as, auth::kAuthType, ps.data(), ps.size());
  AppendFrame(&al, auth::kAuthType, pl.data(), pl.size());
  EXPECT_EQ(Hex(as), v["auth_s"].get<std::string>());
  EXPECT_EQ(Hex(al), v["auth_l"].get<std::string>());
  ASSERT_GE(v["cases"].size(), 6u);
  for (const json& c : v["cases"]) {
    const auto dir = static_cast<auth::Dir>(c["dir"].get<int>());
    const uint64_t seq = c["seq"].get<uint64_t>();
    const uint8_t type = static_cast<uint8_t>(c["type"].get<int>());
    const std::string payload = Unhex(c["payload"]), frame = Unhex(c["frame"]);
    const Digest& key = dir == auth::kSenderToLearner ? k.s2l : k.l2s;
    std::string mine;
    auth::AppendSealedFrame(&mine, key, dir, seq, type, payload.data(), payload.size());
    EXPECT_EQ(Hex(mine), Hex(frame)) << "seq " << seq;
    auto [t, b] = Split(frame);
    std::string plain;
    EXPECT_EQ(auth::OpenSealedFrame(key, dir, seq, t, b, &plain), "") << "seq " << seq;
    EXPECT_EQ(plain, payload);
    EXPECT_EQ(t, type);
  }
}

std::string WriteTemp(const std::string& bytes) {
  char path[] = "/tmp/jaxcc_key_XXXXXX";
  const int fd = mkstemp(path);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  close(fd);
  return path;
}

TEST(KeyFile, SixteenBytesAfterOneTrailingNewline) {
  std::string psk;
  const std::string ok = WriteTemp("0123456789abcdef\n"), crlf = WriteTemp("0123456789abcdef\r\n"),
                    short_ = WriteTemp("0123456789abcde\n"), two_nl = WriteTemp("0123456789abcde\n\n");
  EXPECT_EQ(auth::ReadKeyFile(ok, "--learner-key", &psk), "");
  EXPECT_EQ(psk, "0123456789abcdef");
  EXPECT_EQ(auth::ReadKeyFile(crlf, "--learner-key", &psk), "");
  EXPECT_EQ(psk, "0123456789abcdef");
  const std::string why = auth::ReadKeyFile(short_, "--learner-key", &psk);
  EXPECT_NE(why.find("--learner-key=" + short_ + ": key file has 15 bytes"), std::string::npos) << why;
  EXPECT_NE(why.find("at least 16 bytes after a trailing newline is stripped"), std::string::npos) << why;
  EXPECT_EQ(why.find('\n'), std::string::npos);
  EXPECT_EQ(auth::ReadKeyFile(two_nl, "--learner-key", &psk), "");  // only one newline is stripped
  EXPECT_EQ(psk.size(), 16u);
  const std::string missing = auth::ReadKeyFile("/nonexistent/k", "--learner-key", &psk);
  EXPECT_NE(missing.find("--learner-key=/nonexistent/k: cannot read the key file"), std::string::npos) << missing;
  for (const std::string& p : {ok, crlf, short_, two_nl}) std::remove(p.c_str());
}

TEST(KeyFile, TcpLinkWithoutAKeyIsRefused) {
  LinkOptions lo;
  lo.address = "tcp:127.0.0.1:9";
  lo.obs_dim = 2;
  try {
    LearnerLink link(lo);
    FAIL() << "a tcp: link without a key was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("needs --learner-key=FILE"), std::string::npos) << e.what();
  }
  lo.psk = "0123456789abcdef";
  EXPECT_NO_THROW(LearnerLink link(lo));
}

}  // namespace
}  // namespace jaxcc
