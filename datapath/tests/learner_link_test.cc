// The online-learning link (src/learner_link.h): framing against hand-built bytes, the
// drop-oldest queue, weight validation, and a whole session against a fake learner on a unix
// socket written here with plain POSIX calls.
#include "learner_link.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <thread>
#include <vector>

#include "clock.h"
#include "frame_auth.h"
#include "monitor.h"
#include "test_util.h"

namespace jaxcc {
namespace {

using json = nlohmann::json;
using jaxcc_test::MakeSafetensors;
using jaxcc_test::ReadFile;

const std::string kLstm = std::string(JAXCC_VECTORS_DIR) + "/lstm.safetensors";

std::string Bytes(std::initializer_list<int> b) {
  std::string s;
  for (int x : b) s.push_back(static_cast<char>(x));
  return s;
}

TEST(Framing, PingIsFiveHandBuiltBytes) {
  std::string out;
  AppendFrame(&out, proto::kPing, nullptr, 0);
  EXPECT_EQ(out, Bytes({1, 0, 0, 0, 6}));
  std::string out2;
  AppendFrame(&out2, proto::kBye, "{}", 2);
  EXPECT_EQ(out2, Bytes({3, 0, 0, 0, 5, '{', '}'}));
}

TEST(Framing, ReaderTakesFramesByteByByte) {
  // Two frames: WEIGHTS_ACK "ab" then an unknown type 0x7f with 3 bytes.
  const std::string stream = Bytes({3, 0, 0, 0, 4, 'a', 'b', 4, 0, 0, 0, 0x7f, 1, 2, 3});
  FrameReader r;
  std::vector<std::pair<int, std::string>> got;
  uint8_t type;
  std::string payload;
  for (char c : stream) {
    const uint8_t b = static_cast<uint8_t>(c);
    r.Feed(&b, 1);
    for (FrameReader::Status st; (st = r.Next(&type, &payload)) == FrameReader::kFrame;) got.emplace_back(type, payload);
  }
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], std::make_pair(4, std::string("ab")));
  EXPECT_EQ(got[1], std::make_pair(0x7f, Bytes({1, 2, 3})));
  EXPECT_EQ(r.buffered(), 0u);
}

TEST(Framing, LengthAboveSixtyFourMebibytesOrZeroIsAProtocolError) {
  FrameReader r;
  uint8_t type;
  std::string payload;
  const uint32_t big = (64u << 20) + 1;  // 0x04000001
  const std::string s = Bytes({0x01, 0x00, 0x00, 0x04, 3});
  ASSERT_EQ(static_cast<uint8_t>(s[3]), big >> 24);
  r.Feed(reinterpret_cast<const uint8_t*>(s.data()), s.size());
  EXPECT_EQ(r.Next(&type, &payload), FrameReader::kBadLength);
  EXPECT_EQ(r.bad_len(), big);
  FrameReader z;
  const std::string zero = Bytes({0, 0, 0, 0});
  z.Feed(reinterpret_cast<const uint8_t*>(zero.data()), zero.size());
  EXPECT_EQ(z.Next(&type, &payload), FrameReader::kBadLength);
  // Exactly 64 MiB is allowed (it just needs more bytes).
  FrameReader ok;
  const std::string edge = Bytes({0x00, 0x00, 0x00, 0x04, 3});
  ok.Feed(reinterpret_cast<const uint8_t*>(edge.data()), edge.size());
  EXPECT_EQ(ok.Next(&type, &payload), FrameReader::kNeedMore);
}

TEST(Record, LayoutIsCountThenLittleEndianFloat64s) {
  std::vector<double> rec(proto::kRecordHead + 2, 0.0);
  rec[0] = 1.0;    // 0x3FF0000000000000
  rec[3] = -2.0;   // 0xC000000000000000
  rec[24] = 0.5;   // 0x3FE0000000000000
  const std::string p = EncodeRecord(rec.data(), 2);
  ASSERT_EQ(p.size(), 4u + 8u * 26u);
  EXPECT_EQ(p.substr(0, 4), Bytes({2, 0, 0, 0}));
  EXPECT_EQ(p.substr(4, 8), Bytes({0, 0, 0, 0, 0, 0, 0xf0, 0x3f}));
  EXPECT_EQ(p.substr(4 + 3 * 8, 8), Bytes({0, 0, 0, 0, 0, 0, 0, 0xc0}));
  EXPECT_EQ(p.substr(4 + 24 * 8, 8), Bytes({0, 0, 0, 0, 0, 0, 0xe0, 0x3f}));
}

TEST(Record, MonitorSumsFollowMiStatsOrder) {
  MonitorStats m;
  m.duration = 1, m.active = 2, m.sent = 3, m.AddSample(1500, 0.05, 0.1);
  m.lost = 7;
  double s[16];
  MonitorSums(m, s);
  // duration, active, sent, acked, lost, rtt_wsum, rtt_min, rtt_max, rtt_first, rtt_last,
  // n_samples, ls_w, ls_wt, ls_wtt, ls_wr, ls_wtr (jaxcc/envs/mi.py MIStats)
  const double want[16] = {1, 2, 3, 1500, 7, 75, 0.05, 0.05, 0.05, 0.05, 1, 1500, 150, 1500 * 0.01, 75, 7.5};
  for (int i = 0; i < 16; ++i) EXPECT_DOUBLE_EQ(s[i], want[i]) << i;
}

TEST(RecordQueue, TryPushAppendsInOrderAndDropsTheOldest) {
  RecordQueue q(4, 1);
  const double a[3] = {1, 2, 3};
  ASSERT_TRUE(q.TryPush(a, 3));
  double r;
  ASSERT_TRUE(q.Pop(&r));
  EXPECT_EQ(r, 1);
  const double b[3] = {4, 5, 6};
  ASSERT_TRUE(q.TryPush(b, 3));  // 2,3 + 4,5,6 into 4 slots: 2 dropped
  EXPECT_EQ(q.dropped(), 1u);
  for (double want : {3.0, 4.0, 5.0, 6.0}) {
    ASSERT_TRUE(q.Pop(&r));
    EXPECT_EQ(r, want);
  }
}

TEST(RecordQueue, DropsTheOldestAndCounts) {
  RecordQueue q(3, 2);
  for (int i = 1; i <= 5; ++i) {
    const double r[2] = {static_cast<double>(i), -static_cast<double>(i)};
    q.Push(r);
  }
  EXPECT_EQ(q.dropped(), 2u);
  EXPECT_EQ(q.size(), 3u);
  double r[2];
  for (int want = 3; want <= 5; ++want) {
    ASSERT_TRUE(q.Pop(r));
    EXPECT_EQ(r[0], want);
    EXPECT_EQ(r[1], -want);
  }
  EXPECT_FALSE(q.Pop(r));
}

// The lstm vector file split into its spec and tensors (independently of the loader).
struct Parsed {
  json spec;
  std::map<std::string, jaxcc_test::T> tensors;
};
Parsed ParseVector(const std::string& path) {
  const std::vector<uint8_t> b = ReadFile(path);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | b[i];
  const json h = json::parse(b.begin() + 8, b.begin() + 8 + n);
  Parsed p;
  p.spec = json::parse(h["__metadata__"]["jaxcc"].get<std::string>());
  for (auto it = h.begin(); it != h.end(); ++it) {
    if (it.key() == "__metadata__") continue;
    jaxcc_test::T t;
    t.shape = it.value()["shape"].get<std::vector<int64_t>>();
    const size_t b0 = it.value()["data_offsets"][0], b1 = it.value()["data_offsets"][1];
    t.data.resize((b1 - b0) / 4);
    std::memcpy(t.data.data(), b.data() + 8 + n + b0, b1 - b0);
    p.tensors[it.key()] = t;
  }
  return p;
}

std::vector<uint8_t> Scaled(const Parsed& p, float k) {
  auto t = p.tensors;
  for (auto& kv : t)
    for (float& v : kv.second.data) v *= k;
  return MakeSafetensors(p.spec, t);
}

TEST(Validate, AcceptsSameSpecNewValuesRejectsTheRest) {
  const Policy running = Policy::LoadFile(kLstm);
  const Parsed p = ParseVector(kLstm);
  std::unique_ptr<Policy> out;
  const std::vector<uint8_t> good = Scaled(p, 0.5f);
  EXPECT_EQ(ValidateWeights(running.spec_json(), good.data(), good.size(), &out), "");
  ASSERT_TRUE(out);
  // A metadata-only difference (not in the compared fields) is fine.
  Parsed meta = p;
  meta.spec["like"] = "something else";
  const std::vector<uint8_t> m = MakeSafetensors(meta.spec, meta.tensors);
  EXPECT_EQ(ValidateWeights(running.spec_json(), m.data(), m.size(), &out), "");

  // Corrupted: truncated, and a flipped byte in the JSON header.
  std::vector<uint8_t> cut(good.begin(), good.end() - 100);
  std::unique_ptr<Policy> none;
  EXPECT_NE(ValidateWeights(running.spec_json(), cut.data(), cut.size(), &none).find("truncated"), std::string::npos);
  std::vector<uint8_t> flip = good;
  flip[9] = '!';
  EXPECT_NE(ValidateWeights(running.spec_json(), flip.data(), flip.size(), &none), "");
  // A NaN value.
  Parsed nan = p;
  nan.tensors["fc1.bias"].data[3] = std::numeric_limits<float>::quiet_NaN();
  const std::vector<uint8_t> nb = MakeSafetensors(nan.spec, nan.tensors);
  EXPECT_NE(ValidateWeights(running.spec_json(), nb.data(), nb.size(), &none).find("NaN"), std::string::npos);
  // Mis-shaped: a tensor of the wrong shape for the same spec, and a different layer size.
  Parsed shape = p;
  shape.tensors["out.bias"] = {{2}, {0.f, 0.f}};
  const std::vector<uint8_t> sb = MakeSafetensors(shape.spec, shape.tensors);
  EXPECT_NE(ValidateWeights(running.spec_json(), sb.data(), sb.size(), &none).find("has shape [2]"), std::string::npos);
  Parsed wide = p;
  wide.spec["layers"][2]["out"] = 16;
  wide.spec["layers"][3]["in"] = 16;
  wide.tensors["fc1.kernel"] = {{64, 16}, std::vector<float>(64 * 16, 0.1f)};
  wide.tensors["fc1.bias"] = {{16}, std::vector<float>(16, 0.f)};
  wide.tensors["out.kernel"] = {{16, 1}, std::vector<float>(16, 0.1f)};
  const std::vector<uint8_t> wb = MakeSafetensors(wide.spec, wide.tensors);
  EXPECT_EQ(ValidateWeights(running.spec_json(), wb.data(), wb.size(), &none),
            "spec field 'layers' differs from the running policy's");
  Parsed head = p;
  head.spec["head"]["low"] = -0.5;
  const std::vector<uint8_t> hb = MakeSafetensors(head.spec, head.tensors);
  EXPECT_EQ(ValidateWeights(running.spec_json(), hb.data(), hb.size(), &none),
            "spec field 'head' differs from the running policy's");
  EXPECT_FALSE(none);
}

TEST(Address, ParsesUnixAndTcpAndNamesBadOnes) {
  LearnerAddress a;
  EXPECT_EQ(ParseLearnerAddress("unix:/tmp/x.sock", &a), "");
  EXPECT_TRUE(a.is_unix);
  EXPECT_EQ(a.path, "/tmp/x.sock");
  EXPECT_EQ(ParseLearnerAddress("tcp:127.0.0.1:9100", &a), "");
  EXPECT_FALSE(a.is_unix);
  EXPECT_EQ(a.host, "127.0.0.1");
  EXPECT_EQ(a.port, 9100);
  EXPECT_NE(ParseLearnerAddress("unix:rel.sock", &a).find("absolute"), std::string::npos);
  EXPECT_NE(ParseLearnerAddress("tcp:h:0", &a).find("1..65535"), std::string::npos);
  EXPECT_NE(ParseLearnerAddress("tcp:h:70000", &a).find("1..65535"), std::string::npos);
  EXPECT_NE(ParseLearnerAddress("http://x", &a).find("unix:/abs/path or tcp:HOST:PORT"), std::string::npos);
}

TEST(Sha256, KnownAnswer) {
  // FIPS 180-4 example "abc".
  EXPECT_EQ(Sha256Hex(reinterpret_cast<const uint8_t*>("abc"), 3),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

// A fake learner: a listening unix socket and blocking reads of whole frames.
class FakeLearner {
 public:
  explicit FakeLearner(const std::string& path) : path_(path) {
    unlink(path.c_str());
    lfd_ = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::strncpy(sa.sun_path, path.c_str(), sizeof(sa.sun_path) - 1);
    EXPECT_EQ(bind(lfd_, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)), 0);
    EXPECT_EQ(listen(lfd_, 4), 0);
  }
  ~FakeLearner() {
    if (fd_ >= 0) close(fd_);
    close(lfd_);
    unlink(path_.c_str());
  }
  bool Accept(int timeout_ms = 3000) {
    pollfd p{lfd_, POLLIN, 0};
    if (poll(&p, 1, timeout_ms) != 1) return false;
    fd_ = accept(lfd_, nullptr, nullptr);
    return fd_ >= 0;
  }
  void CloseConn() {
    close(fd_);
    fd_ = -1;
  }
  bool ReadN(char* p, size_t n, int timeout_ms) {
    while (n) {
      pollfd pf{fd_, POLLIN, 0};
      if (poll(&pf, 1, timeout_ms) != 1) return false;
      const ssize_t r = read(fd_, p, n);
      if (r <= 0) return false;
      p += r, n -= static_cast<size_t>(r);
    }
    return true;
  }
  // Returns false on timeout/EOF.
  bool ReadFrame(uint8_t* type, std::string* payload, int timeout_ms = 3000) {
    char h[5];
    if (!ReadN(h, 5, timeout_ms)) return false;
    uint32_t len;
    std::memcpy(&len, h, 4);
    *type = static_cast<uint8_t>(h[4]);
    payload->assign(len - 1, '\0');
    return len == 1 || ReadN(&(*payload)[0], len - 1, timeout_ms);
  }
  void Send(uint8_t type, const std::string& payload) {
    std::string f;
    const uint32_t len = static_cast<uint32_t>(payload.size() + 1);
    f.append(reinterpret_cast<const char*>(&len), 4);
    f.push_back(static_cast<char>(type));
    f += payload;
    ASSERT_EQ(write(fd_, f.data(), f.size()), static_cast<ssize_t>(f.size()));
  }
  void Raw(const std::string& bytes) { ASSERT_EQ(write(fd_, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size())); }
  void SendWeights(uint64_t version, const std::vector<uint8_t>& blob) {
    std::string p(reinterpret_cast<const char*>(&version), 8);
    p.append(blob.begin(), blob.end());
    Send(proto::kWeights, p);
  }

 private:
  std::string path_;
  int lfd_ = -1, fd_ = -1;
};

template <class F>
bool WaitFor(F f, double s) {
  const uint64_t end = MonoNs() + static_cast<uint64_t>(s * 1e9);
  while (MonoNs() < end) {
    if (f()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return f();
}

LinkOptions Options(const std::string& sock, const Policy& p, double timeout_s = 5, size_t queue = 64) {
  LinkOptions o;
  o.address = "unix:" + sock;
  o.queue = queue;
  o.timeout_s = timeout_s;
  o.obs_dim = p.obs_dim();
  o.running_spec = p.spec_json();
  o.hello = {{"flow_id", 7}, {"feature_set", p.feature_name()}};
  o.t0_ns = MonoNs();
  return o;
}

std::string SockPath(const char* name) { return "/tmp/jaxcc_ll_" + std::to_string(getpid()) + "_" + name; }

TEST(LearnerLink, SessionHelloRecordsWeightsAcksBye) {
  const Policy running = Policy::LoadFile(kLstm);
  const Parsed parsed = ParseVector(kLstm);
  const std::string sock = SockPath("session");
  FakeLearner fl(sock);
  LearnerLink link(Options(sock, running));
  link.Start();
  ASSERT_TRUE(fl.Accept());
  uint8_t type;
  std::string payload;
  ASSERT_TRUE(fl.ReadFrame(&type, &payload));
  ASSERT_EQ(type, proto::kHello);
  const json hello = json::parse(payload);
  EXPECT_EQ(hello["proto"], 1);
  EXPECT_EQ(hello["flow_id"], 7);
  EXPECT_EQ(hello["weight_version"], 0);

  // Three records arrive in order, byte for byte.
  const int D = running.obs_dim();
  std::vector<std::vector<double>> sent;
  for (int i = 0; i < 3; ++i) {
    std::vector<double> rec(proto::kRecordHead + D);
    for (size_t k = 0; k < rec.size(); ++k) rec[k] = i * 100.0 + k * 0.25;
    link.PushRecord(rec.data());
    sent.push_back(rec);
  }
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(fl.ReadFrame(&type, &payload));
    ASSERT_EQ(type, proto::kRecord);
    ASSERT_EQ(payload.size(), 4 + 8 * sent[i].size());
    uint32_t d;
    std::memcpy(&d, payload.data(), 4);
    EXPECT_EQ(d, static_cast<uint32_t>(D));
    EXPECT_EQ(std::memcmp(payload.data() + 4, sent[i].data(), 8 * sent[i].size()), 0) << i;
  }

  // Good weights: placed in the mailbox, taken between decisions, ACKed ok with the decision.
  fl.SendWeights(3, Scaled(parsed, 0.5f));
  std::unique_ptr<Policy> np;
  uint64_t v = 0;
  ASSERT_TRUE(WaitFor([&] { return link.TakeWeights(&np, &v, 42, 1.5); }, 3));
  EXPECT_EQ(v, 3u);
  // The swapped policy computes with the new values (different output on the same input).
  std::vector<float> obs(static_cast<size_t>(running.history()) * D, 0.3f);
  const float a_old = running.Apply(obs.data(), nullptr).values[0];
  const float a_new = np->Apply(obs.data(), nullptr).values[0];
  EXPECT_NE(a_old, a_new);
  ASSERT_TRUE(fl.ReadFrame(&type, &payload));
  ASSERT_EQ(type, proto::kWeightsAck);
  json ack = json::parse(payload);
  EXPECT_EQ(ack["version"], 3);
  EXPECT_EQ(ack["ok"], true);
  EXPECT_EQ(ack["decision"], 42);
  EXPECT_EQ(link.weight_version(), 3u);

  // Not newer, corrupted, mis-shaped: each rejected with a reason, nothing in the mailbox.
  fl.SendWeights(3, Scaled(parsed, 0.25f));
  std::vector<uint8_t> bad = Scaled(parsed, 0.25f);
  bad.resize(bad.size() / 2);
  fl.SendWeights(4, bad);
  Parsed shape = parsed;
  shape.tensors["out.bias"] = {{2}, {0.f, 0.f}};
  fl.SendWeights(5, MakeSafetensors(shape.spec, shape.tensors));
  const char* want[] = {"not newer", "truncated", "has shape"};
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(fl.ReadFrame(&type, &payload));
    ASSERT_EQ(type, proto::kWeightsAck);
    ack = json::parse(payload);
    EXPECT_EQ(ack["ok"], false);
    EXPECT_NE(ack["reason"].get<std::string>().find(want[i]), std::string::npos) << ack.dump();
  }
  EXPECT_FALSE(link.TakeWeights(&np, &v, 0, 0.0));

  // Two good blobs before a decision: the second supersedes the first (ACK ok=false for it).
  fl.SendWeights(6, Scaled(parsed, 0.7f));
  fl.SendWeights(7, Scaled(parsed, 0.8f));
  ASSERT_TRUE(fl.ReadFrame(&type, &payload));
  ack = json::parse(payload);
  EXPECT_EQ(ack["version"], 6);
  EXPECT_EQ(ack["ok"], false);
  EXPECT_NE(ack["reason"].get<std::string>().find("superseded by version 7"), std::string::npos);
  ASSERT_TRUE(link.TakeWeights(&np, &v, 43, 1.6));
  EXPECT_EQ(v, 7u);

  // An unknown frame type is skipped.
  fl.Send(0x42, "xyz");
  fl.Send(proto::kPing, "");
  ASSERT_TRUE(fl.ReadFrame(&type, &payload));  // the ACK of 7
  EXPECT_EQ(type, proto::kWeightsAck);

  link.Stop({{"extra", 1}});
  ASSERT_TRUE(fl.ReadFrame(&type, &payload));
  ASSERT_EQ(type, proto::kBye);
  const json bye = json::parse(payload);
  EXPECT_EQ(bye["extra"], 1);
  EXPECT_EQ(bye["weights_received"], 6);  // versions 3, 3, 4, 5, 6, 7
  EXPECT_EQ(bye["weights_rejected"], 3);
  EXPECT_EQ(bye["weights_applied"], 2);
  EXPECT_EQ(bye["weights_superseded"], 1);
  EXPECT_EQ(bye["unknown_frames"], 1);
  EXPECT_EQ(bye["records_sent"], 3);
  EXPECT_EQ(bye["records_dropped"], 0);
  const json c = link.Counters();
  ASSERT_EQ(c["versions"].size(), 2u);
  EXPECT_EQ(c["versions"][0], json({{"version", 3}, {"decision", 42}, {"t_s", 1.5}}));
  ASSERT_EQ(c["rejections"].size(), 3u);
  EXPECT_EQ(c["rejections"][1]["version"], 4);
}

// The learner over TCP (authenticated, as tcp: must be) reads nothing until the sender has been
// told to stop and keeps sending PINGs all along, so the sender ends its connection with unread
// PINGs and with records still in its kernel.  Every record and the BYE must arrive, and the
// connection must end in an orderly close: a sender that closes with unread data sends a reset,
// which discards what its kernel still holds.
TEST(LearnerLink, EveryRecordAndTheByeReachASlowTcpLearnerThatKeepsPinging) {
  const Policy running = Policy::LoadFile(kLstm);
  const int lfd = socket(AF_INET, SOCK_STREAM, 0);
  const int rcvbuf = 4096;  // the accepted socket inherits it: a small window
  ASSERT_EQ(setsockopt(lfd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)), 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t sl = sizeof(sa);
  ASSERT_EQ(bind(lfd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)), 0);
  ASSERT_EQ(listen(lfd, 1), 0);
  ASSERT_EQ(getsockname(lfd, reinterpret_cast<sockaddr*>(&sa), &sl), 0);
  const int kRecords = 4000;
  LinkOptions o = Options("", running, 30, /*queue=*/kRecords);
  o.address = "tcp:127.0.0.1:" + std::to_string(ntohs(sa.sin_port));
  o.psk = std::string(32, 'k');
  LearnerLink link(o);
  link.Start();
  pollfd lp{lfd, POLLIN, 0};
  ASSERT_EQ(poll(&lp, 1, 3000), 1);
  const int fd = accept(lfd, nullptr, nullptr);
  ASSERT_GE(fd, 0);

  FrameReader reader;
  std::vector<uint8_t> buf(1 << 16);
  uint8_t type = 0;
  std::string body, plain;
  auto next_frame = [&](int timeout_ms) -> int {  // 1 a frame, 0 EOF, else -errno (or -ETIMEDOUT)
    for (;;) {
      if (reader.Next(&type, &body) == FrameReader::kFrame) return 1;
      pollfd pf{fd, POLLIN, 0};
      if (poll(&pf, 1, timeout_ms) != 1) return -ETIMEDOUT;
      const ssize_t n = read(fd, buf.data(), buf.size());
      if (n <= 0) return n == 0 ? 0 : -errno;
      reader.Feed(buf.data(), static_cast<size_t>(n));
    }
  };
  // The handshake: the sender's AUTH, the learner's answer, then the sealed HELLO.
  ASSERT_EQ(next_frame(3000), 1);
  auth::Nonce nonce_s, nonce_l;
  ASSERT_EQ(auth::ParseAuth(type, body, &nonce_s), "");
  ASSERT_TRUE(auth::RandomNonce(&nonce_l));
  std::string f;
  const std::string ap = auth::AuthPayload(nonce_l);
  AppendFrame(&f, auth::kAuthType, ap.data(), ap.size());
  ASSERT_EQ(write(fd, f.data(), f.size()), static_cast<ssize_t>(f.size()));
  auth::Channel ch(auth::DeriveSessionKeys(o.psk, nonce_s, nonce_l), auth::kLearnerToSender);
  ASSERT_EQ(next_frame(3000), 1);
  ASSERT_EQ(ch.Open(type, body, &plain), "");
  ASSERT_EQ(type, proto::kHello);

  const int D = running.obs_dim();
  std::vector<double> rec(proto::kRecordHead + D, 0.5);
  for (int i = 0; i < kRecords; ++i) link.PushRecord(rec.data());
  std::atomic<bool> pinging{true};
  std::thread pinger([&] {  // a PING every millisecond until the learner is done reading
    while (pinging.load()) {
      std::string ping;
      ch.Seal(&ping, proto::kPing, nullptr, 0);
      if (send(fd, ping.data(), ping.size(), MSG_NOSIGNAL) < 0) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  std::thread stopper([&] { link.Stop({}, 10.0); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the sender stops; nothing read yet

  int records = 0, byes = 0, end = 1;
  while ((end = next_frame(10000)) == 1) {
    ASSERT_EQ(ch.Open(type, body, &plain), "") << "frame type " << int(type);
    records += type == proto::kRecord;
    byes += type == proto::kBye;
  }
  pinging.store(false);
  pinger.join();
  close(fd);  // the learner's end: the sender, waiting for it, closes its own
  stopper.join();
  close(lfd);
  EXPECT_EQ(end, 0) << "the connection ended in " << std::strerror(-end) << ", not an orderly close";
  EXPECT_EQ(records, kRecords);
  EXPECT_EQ(byes, 1);
  EXPECT_EQ(link.records_dropped(), 0u);
}

TEST(LearnerLink, QueueDropsOldestWhileNoLearnerThenSendsTheNewest) {
  const Policy running = Policy::LoadFile(kLstm);
  const std::string sock = SockPath("late");
  unlink(sock.c_str());
  LearnerLink link(Options(sock, running, 5, /*queue=*/4));
  link.Start();
  const int D = running.obs_dim();
  for (int i = 0; i < 10; ++i) {
    std::vector<double> rec(proto::kRecordHead + D, 0.0);
    rec[0] = i;
    link.PushRecord(rec.data());
  }
  EXPECT_EQ(link.records_dropped(), 6u);
  FakeLearner fl(sock);  // the learner appears; the sender retries every 0.2 s
  ASSERT_TRUE(fl.Accept());
  uint8_t type;
  std::string payload;
  ASSERT_TRUE(fl.ReadFrame(&type, &payload));
  EXPECT_EQ(type, proto::kHello);
  for (int want = 6; want < 10; ++want) {
    ASSERT_TRUE(fl.ReadFrame(&type, &payload));
    ASSERT_EQ(type, proto::kRecord);
    double seq;
    std::memcpy(&seq, payload.data() + 4, 8);
    EXPECT_EQ(seq, want);
  }
  link.Stop({});
}

TEST(LearnerLink, GoneAfterTimeoutBackOnAFrameReconnectsAfterClose) {
  const Policy running = Policy::LoadFile(kLstm);
  const std::string sock = SockPath("gone");
  FakeLearner fl(sock);
  LearnerLink link(Options(sock, running, /*timeout_s=*/0.3));
  link.Start();
  ASSERT_TRUE(fl.Accept());
  EXPECT_FALSE(link.gone());
  ASSERT_TRUE(WaitFor([&] { return link.gone(); }, 2));  // no PING for 0.3 s
  fl.Send(proto::kPing, "");
  ASSERT_TRUE(WaitFor([&] { return !link.gone(); }, 2));
  // The learner closes: the sender reconnects and says HELLO again.
  fl.CloseConn();
  ASSERT_TRUE(fl.Accept());
  uint8_t type;
  std::string payload;
  ASSERT_TRUE(fl.ReadFrame(&type, &payload));
  EXPECT_EQ(type, proto::kHello);
  link.Stop({});
  const json c = link.Counters();
  ASSERT_GE(c["learner_gone"].size(), 1u);
  EXPECT_TRUE(c["learner_gone"][0]["back_t_s"].is_number());
  EXPECT_GE(c["connections"], 2);
}

TEST(LearnerLink, OversizedFrameClosesTheConnectionAndCounts) {
  const Policy running = Policy::LoadFile(kLstm);
  const std::string sock = SockPath("proto");
  FakeLearner fl(sock);
  LearnerLink link(Options(sock, running));
  link.Start();
  ASSERT_TRUE(fl.Accept());
  uint8_t type;
  std::string payload;
  ASSERT_TRUE(fl.ReadFrame(&type, &payload));  // HELLO
  fl.Raw(Bytes({0x01, 0x00, 0x00, 0x04, proto::kPing}));  // len 64 MiB + 1
  // The sender closes this connection and comes back with a new HELLO.
  EXPECT_FALSE(fl.ReadFrame(&type, &payload));
  fl.CloseConn();
  ASSERT_TRUE(fl.Accept());
  ASSERT_TRUE(fl.ReadFrame(&type, &payload));
  EXPECT_EQ(type, proto::kHello);
  link.Stop({});
  EXPECT_EQ(link.Counters()["protocol_errors"], 1);
}

}  // namespace
}  // namespace jaxcc
