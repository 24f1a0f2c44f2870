// The sender's side of the online-learning link (Pareto §IV "Online training stage",
// Algorithm 4): every decision's record goes to a learner process, new weights come back.
//
// Wire protocol (proto 1, shared with jaxcc/online/experience.py): a stream socket
// (unix:/abs/path or tcp:HOST:PORT; the learner listens, each sender connects and reconnects
// every 0.2 s). Frame = u32 LE len (bytes after the field = 1 + payload), u8 type, payload;
// len > 64 MiB is a protocol error (the connection is closed), unknown types are skipped.
//   0x01 HELLO   s->l JSON {proto, flow_id, feature_set, history, obs_dim, mi_rtts,
//                          policy_sha256, weight_version, fallback}; first frame of a connection
//   0x02 RECORD  s->l u32 D, then 24 + D float64 LE (kRecordFields below, then the features)
//   0x03 WEIGHTS l->s u64 version, then a whole policy file (safetensors + spec)
//   0x04 WEIGHTS_ACK s->l JSON {version, ok, reason, decision, t_s}
//   0x05 BYE     s->l JSON: the sender's counters at the end
//   0x06 PING    l->s empty (at least every second)
//
// Proto 2 (--learner-key=FILE on the sender, --key=FILE on the learner; required for tcp:):
// the same frames, authenticated with a pre-shared key (frame_auth.h has the construction).
//   0x07 AUTH    both u8 proto (2), then a 32-byte nonce from the OS RNG; unsealed. The
//                sender's first frame of every connection; the learner answers with its own.
// Session keys k_s2l, k_l2s = HMAC-SHA256(psk, label || nonce_s || nonce_l); every later frame,
// HELLO (proto 2) first, is sealed: u32 len | u8 type | u64 seq | payload | 32-byte tag, the tag
// HMAC-SHA256(k_dir, u8 dir || u64 seq || u8 type || payload), seq 0, 1, 2, ... per direction.
// Refused, counted (auth_refused, auth_refusals) and the connection dropped: a first frame that
// is not the learner's AUTH, a bad tag (a wrong key, a flipped bit), a seq other than the
// previous + 1 (a replay, also of a frame from another connection: its keys differ), a frame too
// short for seq and tag, an AUTH answer missing after --learner-timeout-s; and, without a key,
// an AUTH frame (a learner that wants a key). The policy in force keeps running meanwhile.
//
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "frame_auth.h"
#include "policy.h"

namespace jaxcc {

namespace proto {
constexpr int kVersion = 1;
constexpr uint8_t kHello = 0x01, kRecord = 0x02, kWeights = 0x03, kWeightsAck = 0x04, kBye = 0x05, kPing = 0x06;
constexpr uint32_t kMaxLen = 64u << 20;  // largest allowed frame len field
// RECORD head: seq, t_s, weight_version, action, rate_before, rate_after, min_rtt_s, the 16
// MonitorStats sums (jaxcc.envs.mi.MIStats order), records_dropped; then the D features.
constexpr int kRecordHead = 24;
}  // namespace proto

// Appends one frame (len, type, payload) to *out.
void AppendFrame(std::string* out, uint8_t type, const void* payload, size_t n);

// Incremental frame parser for a byte stream.
class FrameReader {
 public:
  enum Status { kNeedMore, kFrame, kBadLength };
  void Feed(const uint8_t* p, size_t n);
  // kFrame: *type and *payload hold the next frame. kBadLength: the stream is unusable (len 0
  // or > proto::kMaxLen; bad_len() has it).
  Status Next(uint8_t* type, std::string* payload);
  size_t buffered() const { return buf_.size() - pos_; }
  uint64_t bad_len() const { return bad_len_; }
  void Clear() { buf_.clear(), pos_ = 0; }

 private:
  std::string buf_;
  size_t pos_ = 0;
  uint64_t bad_len_ = 0;
};

// Encodes record `rec` (proto::kRecordHead + D values) as a RECORD payload.
std::string EncodeRecord(const double* rec, int D);

// The 16 MonitorStats sums in jaxcc.envs.mi.MIStats order.
struct MonitorStats;
void MonitorSums(const MonitorStats& m, double out[16]);

// A bounded FIFO of fixed-width records that drops the oldest when full (and counts it).
class RecordQueue {
 public:
  RecordQueue(size_t capacity, size_t width);
  void Push(const double* rec);
  // Pushes n records (oldest first) if the lock is free at once; false (nothing pushed) if not.
  bool TryPush(const double* recs, size_t n);
  bool Pop(double* rec);
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
  size_t size() const;
  size_t capacity() const { return cap_; }
  size_t width() const { return width_; }

 private:
  const size_t cap_, width_;
  mutable std::mutex mu_;
  std::vector<double> slots_;
  size_t head_ = 0, count_ = 0;
  std::atomic<uint64_t> dropped_{0};
};

// "" when `candidate`'s spec matches `running`'s (JSON texts) in everything but tensor values:
// format, version, algorithm, features, mi_rtts, goal_dim, layers, head and action are equal
// (tensor names and shapes follow from layers, and Policy::LoadBytes refuses any other
// tensor); otherwise a one-line reason naming the first field that differs.
std::string SpecMismatch(const std::string& running_spec, const std::string& candidate_spec);

// Full validation of a WEIGHTS blob against the running spec: Policy::LoadBytes (every loader
// check, finite values included) and SpecMismatch. Returns "" and sets *out, or the reason.
std::string ValidateWeights(const std::string& running_spec, const uint8_t* blob, size_t n,
                            std::unique_ptr<Policy>* out);

struct LearnerAddress {
  bool is_unix = true;
  std::string path, host;
  int port = 0;
};
// Parses unix:/abs/path or tcp:HOST:PORT; returns "" or a one-line reason.
std::string ParseLearnerAddress(const std::string& s, LearnerAddress* out);

struct LinkOptions {
  std::string address;         // as given (--learner)
  size_t queue = 8192;         // --record-queue
  double timeout_s = 5;        // --learner-timeout-s
  double reconnect_s = 0.2;
  int obs_dim = 0;
  nlohmann::json hello;        // HELLO without weight_version (added per connection)
  std::string running_spec;    // the spec text every WEIGHTS blob must match
  uint64_t t0_ns = 0;          // CLOCK_MONOTONIC of t_s = 0 (the --log clock)
  std::string psk;             // --learner-key's bytes; "" = proto 1 (no authentication)
};

class LearnerLink {
 public:
  explicit LearnerLink(LinkOptions opt);
  ~LearnerLink();
  LearnerLink(const LearnerLink&) = delete;
  LearnerLink& operator=(const LearnerLink&) = delete;

  void Start();
  // Sends what is queued, then BYE (`bye` plus the link's counters), waits up to `flush_s`
  // for it to go out and for the learner to close its end, closes and joins the I/O thread.
  void Stop(const nlohmann::json& bye, double flush_s = 1.0);

  // --- decision thread only (never blocks on the network or the I/O thread)
  void PushRecord(const double* rec);
  // A validated policy waiting to be swapped in, if any (and the mailbox lock is free): the
  // caller swaps it in for decision `decision` at t_s (the --log clock); the I/O thread then
  // sends WEIGHTS_ACK ok=true.
  bool TakeWeights(std::unique_ptr<Policy>* p, uint64_t* version, uint64_t decision, double t_s);
  // No connection or no frame from the learner for longer than timeout_s.
  bool gone() const { return gone_.load(std::memory_order_relaxed); }
  uint64_t weight_version() const { return version_.load(std::memory_order_relaxed); }
  uint64_t records_dropped() const {
    return queue_.dropped() + lost_in_flight_.load(std::memory_order_relaxed) +
           stash_dropped_.load(std::memory_order_relaxed);
  }
  static constexpr size_t kMaxStash = 64;  // records the decision thread keeps while the queue is busy

  // The summary's `online` counters owned by the link (call after Stop, or for BYE).
  nlohmann::json Counters() const;

 private:
  void Run();
  bool Connect();
  void Disconnect(const char* why);
  // After the BYE has been written: half-closes, and reads (dropping it) what the learner still
  // sends until it closes its end or `deadline_ns` passes; the caller then closes.
  void CloseAfterPeer(uint64_t deadline_ns, std::vector<uint8_t>* chunk);
  // A frame (or handshake) refused by the authentication: counted, logged, connection dropped.
  void RefuseAuth(const std::string& why, uint64_t now);
  // Appends one frame to out_, sealed on an authenticated connection.
  void Emit(uint8_t type, const std::string& payload);
  // The connection may carry HELLO, records, ACKs and BYE (proto 1, or proto 2 after AUTH).
  bool ready() const { return opt_.psk.empty() || channel_ != nullptr; }
  void HandleFrame(uint8_t type, const std::string& payload, uint64_t now);
  void Ack(uint64_t version, bool ok, const std::string& reason, nlohmann::json decision, double t_s);
  // Applied versions from the decision thread: counted, and ACKed when `send`.
  void DrainApplied(bool send);
  double Ts(uint64_t ns) const { return (static_cast<double>(ns) - static_cast<double>(opt_.t0_ns)) * 1e-9; }

  LinkOptions opt_;
  LearnerAddress addr_;
  RecordQueue queue_;
  std::thread thr_;
  std::atomic<bool> stop_{false};
  nlohmann::json bye_;
  double flush_s_ = 1.0;

  // I/O thread state.
  int fd_ = -1;
  std::string out_;
  uint64_t records_in_out_ = 0;  // RECORD frames in out_ not yet fully written
  FrameReader reader_;
  uint64_t last_alive_ns_ = 0, next_connect_ns_ = 0;
  uint64_t accepted_version_ = 0;  // newest version validated (applied or in the mailbox)
  bool connected_once_ = false;
  auth::Nonce nonce_s_{};                  // this connection's nonce (proto 2)
  std::unique_ptr<auth::Channel> channel_;  // set once the learner's AUTH arrived (proto 2)
  uint64_t connected_ns_ = 0;

  // Mailbox (one slot) and ACKs from the decision thread.
  std::mutex mbox_mu_;
  std::unique_ptr<Policy> mbox_;
  uint64_t mbox_version_ = 0;
  std::atomic<bool> mbox_full_{false};
  struct AppliedVersion {
    uint64_t version, decision;
    double t_s;
  };
  std::vector<AppliedVersion> applied_;  // guarded by mbox_mu_: swapped in, not yet ACKed

  // Decision thread only: records waiting for a free queue lock.
  std::vector<double> stash_;
  std::atomic<uint64_t> stash_dropped_{0};

  std::atomic<bool> gone_{false};
  std::atomic<uint64_t> version_{0};
  std::atomic<uint64_t> lost_in_flight_{0};

  // Counters (guarded by info_mu_).
  mutable std::mutex info_mu_;
  uint64_t records_sent_ = 0, weights_received_ = 0, weights_applied_ = 0, weights_rejected_ = 0,
           weights_superseded_ = 0, protocol_errors_ = 0, unknown_frames_ = 0, connections_ = 0, pings_ = 0,
           auth_refused_ = 0;
  nlohmann::json versions_ = nlohmann::json::array(), rejections_ = nlohmann::json::array(),
                 gone_events_ = nlohmann::json::array(), auth_refusals_ = nlohmann::json::array();
  static constexpr size_t kMaxAuthRefusals = 32;  // the first ones are kept with their reason
};

// Lowercase hex SHA-256 of a file's bytes ("" if it cannot be read). FIPS 180-4.
std::string Sha256File(const std::string& path);
std::string Sha256Hex(const uint8_t* data, size_t n);

}  // namespace jaxcc
