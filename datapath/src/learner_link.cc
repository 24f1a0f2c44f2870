#include "learner_link.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/evp.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>

#include "clock.h"
#include "monitor.h"

namespace jaxcc {

using json = nlohmann::json;

namespace {

void PutLE32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint32_t GetLE32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

uint64_t GetLE64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

constexpr size_t kOutHighWater = 256u << 10;  // stop encoding records above this many bytes queued
constexpr size_t kOutMax = 8u << 20;           // stop reading frames above this (ACK backpressure)

}  // namespace

void AppendFrame(std::string* out, uint8_t type, const void* payload, size_t n) {
  PutLE32(out, static_cast<uint32_t>(n + 1));
  out->push_back(static_cast<char>(type));
  if (n) out->append(static_cast<const char*>(payload), n);
}

void FrameReader::Feed(const uint8_t* p, size_t n) {
  if (pos_ > 0 && pos_ >= buf_.size() / 2) {  // compact
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  buf_.append(reinterpret_cast<const char*>(p), n);
}

FrameReader::Status FrameReader::Next(uint8_t* type, std::string* payload) {
  if (buffered() < 4) return kNeedMore;
  const uint32_t len = GetLE32(buf_.data() + pos_);
  if (len == 0 || len > proto::kMaxLen) {
    bad_len_ = len;
    return kBadLength;
  }
  if (buffered() < 4 + static_cast<size_t>(len)) return kNeedMore;
  *type = static_cast<uint8_t>(buf_[pos_ + 4]);
  payload->assign(buf_, pos_ + 5, len - 1);
  pos_ += 4 + len;
  if (pos_ == buf_.size()) buf_.clear(), pos_ = 0;
  return kFrame;
}

std::string EncodeRecord(const double* rec, int D) {
  std::string p;
  const size_t n = proto::kRecordHead + static_cast<size_t>(D);
  p.reserve(4 + 8 * n);
  PutLE32(&p, static_cast<uint32_t>(D));
  // float64 little-endian: the hosts we target are little-endian (as the policy loader assumes).
  p.append(reinterpret_cast<const char*>(rec), 8 * n);
  return p;
}

void MonitorSums(const MonitorStats& m, double out[16]) {
  const double v[16] = {m.duration, m.active, m.sent,      m.acked,     m.lost,      m.rtt_wsum,
                        m.rtt_min,  m.rtt_max, m.rtt_first, m.rtt_last, m.n_samples, m.ls_w,
                        m.ls_wt,    m.ls_wtt,  m.ls_wr,     m.ls_wtr};
  std::memcpy(out, v, sizeof(v));
}

RecordQueue::RecordQueue(size_t capacity, size_t width)
    : cap_(std::max<size_t>(capacity, 1)), width_(width), slots_(cap_ * width) {}

void RecordQueue::Push(const double* rec) {
  std::lock_guard<std::mutex> lk(mu_);
  if (count_ == cap_) {  // full: the oldest goes
    head_ = (head_ + 1) % cap_;
    --count_;
    dropped_.fetch_add(1, std::memory_order_relaxed);
  }
  std::memcpy(&slots_[((head_ + count_) % cap_) * width_], rec, sizeof(double) * width_);
  ++count_;
}

bool RecordQueue::TryPush(const double* recs, size_t n) {
  std::unique_lock<std::mutex> lk(mu_, std::try_to_lock);
  if (!lk.owns_lock()) return false;
  for (size_t i = 0; i < n; ++i) {
    if (count_ == cap_) {
      head_ = (head_ + 1) % cap_;
      --count_;
      dropped_.fetch_add(1, std::memory_order_relaxed);
    }
    std::memcpy(&slots_[((head_ + count_) % cap_) * width_], recs + i * width_, sizeof(double) * width_);
    ++count_;
  }
  return true;
}

bool RecordQueue::Pop(double* rec) {
  std::lock_guard<std::mutex> lk(mu_);
  if (count_ == 0) return false;
  std::memcpy(rec, &slots_[head_ * width_], sizeof(double) * width_);
  head_ = (head_ + 1) % cap_;
  --count_;
  return true;
}

size_t RecordQueue::size() const {
  std::lock_guard<std::mutex> lk(mu_);
  return count_;
}

std::string SpecMismatch(const std::string& running_spec, const std::string& candidate_spec) {
  const json a = json::parse(running_spec, nullptr, false), b = json::parse(candidate_spec, nullptr, false);
  if (a.is_discarded() || b.is_discarded()) return "spec is not valid JSON";
  for (const char* k : {"format", "version", "algorithm", "features", "mi_rtts", "goal_dim", "layers", "head", "action"}) {
    const bool ha = a.contains(k), hb = b.contains(k);
    if (ha != hb || (ha && a[k] != b[k])) return std::string("spec field '") + k + "' differs from the running policy's";
  }
  return "";
}

std::string ValidateWeights(const std::string& running_spec, const uint8_t* blob, size_t n,
                            std::unique_ptr<Policy>* out) {
  try {
    auto p = std::make_unique<Policy>(Policy::LoadBytes(blob, n, "weights blob"));
    const std::string why = SpecMismatch(running_spec, p->spec_json());
    if (!why.empty()) return why;
    *out = std::move(p);
    return "";
  } catch (const PolicyError& e) {
    return e.what();
  }
}

std::string ParseLearnerAddress(const std::string& s, LearnerAddress* out) {
  if (s.rfind("unix:", 0) == 0) {
    out->is_unix = true;
    out->path = s.substr(5);
    if (out->path.empty() || out->path[0] != '/')
      return "--learner unix:PATH needs an absolute path, got '" + s + "'";
    if (out->path.size() >= sizeof(sockaddr_un{}.sun_path))
      return "--learner unix:PATH is longer than " + std::to_string(sizeof(sockaddr_un{}.sun_path) - 1) + " bytes";
    return "";
  }
  if (s.rfind("tcp:", 0) == 0) {
    const std::string rest = s.substr(4);
    const size_t c = rest.rfind(':');
    if (c == std::string::npos || c == 0) return "--learner tcp:HOST:PORT needs a host and a port, got '" + s + "'";
    out->is_unix = false;
    out->host = rest.substr(0, c);
    char* end = nullptr;
    const long port = std::strtol(rest.c_str() + c + 1, &end, 10);
    if (*end != '\0' || c + 1 == rest.size() || port < 1 || port > 65535)
      return "--learner tcp:HOST:PORT needs a port in 1..65535, got '" + rest.substr(c + 1) + "'";
    out->port = static_cast<int>(port);
    return "";
  }
  return "--learner must be unix:/abs/path or tcp:HOST:PORT, got '" + s + "'";
}

LearnerLink::LearnerLink(LinkOptions opt)
    : opt_(std::move(opt)), queue_(opt_.queue, proto::kRecordHead + static_cast<size_t>(opt_.obs_dim)) {
  const std::string why = ParseLearnerAddress(opt_.address, &addr_);
  if (!why.empty()) throw std::invalid_argument(why);
  if (!addr_.is_unix && opt_.psk.empty())
    throw std::invalid_argument("--learner " + opt_.address + " needs --learner-key=FILE (tcp: is authenticated)");
  stash_.reserve((kMaxStash + 1) * queue_.width());  // no allocation on the decision path
  applied_.reserve(16);
}

void LearnerLink::PushRecord(const double* rec) {
  const size_t w = queue_.width();
  stash_.insert(stash_.end(), rec, rec + w);
  if (queue_.TryPush(stash_.data(), stash_.size() / w)) {
    stash_.clear();
  } else if (stash_.size() / w > kMaxStash) {  // the queue stayed busy: drop the stash's oldest
    stash_.erase(stash_.begin(), stash_.begin() + static_cast<std::ptrdiff_t>(w));
    stash_dropped_.fetch_add(1, std::memory_order_relaxed);
  }
}

LearnerLink::~LearnerLink() {
  if (thr_.joinable()) {
    stop_ = true;
    thr_.join();
  }
  if (fd_ >= 0) close(fd_);
}

void LearnerLink::Start() {
  last_alive_ns_ = MonoNs();
  thr_ = std::thread(&LearnerLink::Run, this);
}

void LearnerLink::Stop(const json& bye, double flush_s) {
  bye_ = bye;
  flush_s_ = flush_s;
  stop_ = true;
  if (thr_.joinable()) thr_.join();
}

bool LearnerLink::TakeWeights(std::unique_ptr<Policy>* p, uint64_t* version, uint64_t decision, double t_s) {
  if (!mbox_full_.load(std::memory_order_acquire)) return false;
  std::unique_lock<std::mutex> lk(mbox_mu_, std::try_to_lock);
  if (!lk.owns_lock() || !mbox_) return false;  // busy: the next decision takes it
  *p = std::move(mbox_);
  *version = mbox_version_;
  mbox_full_.store(false, std::memory_order_release);
  applied_.push_back({mbox_version_, decision, t_s});
  version_.store(mbox_version_, std::memory_order_relaxed);
  return true;
}

void LearnerLink::DrainApplied(bool send) {
  std::vector<AppliedVersion> done;
  {
    std::lock_guard<std::mutex> lk(mbox_mu_);
    done.swap(applied_);
    applied_.reserve(16);
  }
  for (const AppliedVersion& a : done) {
    if (send) Ack(a.version, true, "", a.decision, a.t_s);
    std::lock_guard<std::mutex> lk(info_mu_);
    ++weights_applied_;
    versions_.push_back({{"version", a.version}, {"decision", a.decision}, {"t_s", a.t_s}});
  }
}

void LearnerLink::Ack(uint64_t version, bool ok, const std::string& reason, json decision, double t_s) {
  const json ack = {{"version", version}, {"ok", ok}, {"reason", reason}, {"decision", decision}, {"t_s", t_s}};
  Emit(proto::kWeightsAck, ack.dump());
}

void LearnerLink::Emit(uint8_t type, const std::string& payload) {
  if (channel_)
    channel_->Seal(&out_, type, payload.data(), payload.size());
  else
    AppendFrame(&out_, type, payload.data(), payload.size());
}

void LearnerLink::RefuseAuth(const std::string& why, uint64_t now) {
  {
    std::lock_guard<std::mutex> lk(info_mu_);
    ++auth_refused_;
    if (auth_refusals_.size() < kMaxAuthRefusals) auth_refusals_.push_back({{"t_s", Ts(now)}, {"reason", why}});
  }
  std::cerr << "jaxcc-sender: learner frame refused: " << why << "\n";
  Disconnect("authentication");
}

bool LearnerLink::Connect() {
  int fd = -1;
  if (addr_.is_unix) {
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return false;
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::strncpy(sa.sun_path, addr_.path.c_str(), sizeof(sa.sun_path) - 1);
    if (connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) {
      close(fd);
      return false;
    }
  } else {
    addrinfo hints{}, *res = nullptr;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(addr_.host.c_str(), std::to_string(addr_.port).c_str(), &hints, &res) != 0 || !res) return false;
    for (addrinfo* ai = res; ai; ai = ai->ai_next) {
      fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
      if (fd < 0) continue;
      // Non-blocking connect bounded by the retry period, so the I/O thread never hangs here.
      int r = connect(fd, ai->ai_addr, ai->ai_addrlen);
      if (r != 0 && errno == EINPROGRESS) {
        pollfd pfd{fd, POLLOUT, 0};
        int err = 0;
        socklen_t el = sizeof(err);
        r = (poll(&pfd, 1, static_cast<int>(opt_.reconnect_s * 1e3)) == 1 &&
             getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) == 0 && err == 0)
                ? 0
                : -1;
      }
      if (r == 0) break;
      close(fd);
      fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0) return false;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  fd_ = fd;
  out_.clear();
  records_in_out_ = 0;
  reader_.Clear();
  channel_.reset();
  connected_ns_ = MonoNs();
  if (opt_.psk.empty()) {
    json hello = opt_.hello;
    hello["proto"] = proto::kVersion;
    hello["weight_version"] = version_.load();
    Emit(proto::kHello, hello.dump());
  } else {  // proto 2: our nonce first; HELLO goes sealed once the learner's AUTH is in
    if (!auth::RandomNonce(&nonce_s_)) {
      Disconnect("the OS RNG failed");
      return false;
    }
    Emit(auth::kAuthType, auth::AuthPayload(nonce_s_));
  }
  {
    std::lock_guard<std::mutex> lk(info_mu_);
    ++connections_;
  }
  if (connected_once_) std::cerr << "jaxcc-sender: learner " << opt_.address << " reconnected\n";
  connected_once_ = true;
  return true;
}

void LearnerLink::Disconnect(const char* why) {
  if (fd_ < 0) return;
  close(fd_);
  fd_ = -1;
  // Records encoded but not fully written are lost with the connection.
  lost_in_flight_.fetch_add(records_in_out_, std::memory_order_relaxed);
  records_in_out_ = 0;
  out_.clear();
  reader_.Clear();
  channel_.reset();
  next_connect_ns_ = MonoNs() + static_cast<uint64_t>(opt_.reconnect_s * 1e9);
  std::cerr << "jaxcc-sender: learner connection closed (" << why << ")\n";
}

void LearnerLink::CloseAfterPeer(uint64_t deadline_ns, std::vector<uint8_t>* chunk) {
  // A TCP socket closed with unread data sends a reset instead of a FIN, and the reset discards
  // what this end's kernel still holds for the learner: the last records and the BYE, whenever
  // the learner reads more slowly than they were written. So: a FIN after the BYE, then read
  // (and drop) what the learner still sends, such as its PINGs, until it closes its end.
  shutdown(fd_, SHUT_WR);
  for (uint64_t now = MonoNs(); now < deadline_ns; now = MonoNs()) {
    pollfd pfd{fd_, POLLIN, 0};
    const int wait_ms = static_cast<int>(std::min<uint64_t>((deadline_ns - now) / 1'000'000 + 1, 20));
    const int r = poll(&pfd, 1, wait_ms);
    if (r < 0 && errno != EINTR) return;
    if (r <= 0) continue;
    const ssize_t n = recv(fd_, chunk->data(), chunk->size(), 0);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) return;
  }
}

void LearnerLink::HandleFrame(uint8_t type, const std::string& payload, uint64_t now) {
  switch (type) {
    case proto::kPing: {
      std::lock_guard<std::mutex> lk(info_mu_);
      ++pings_;
      break;
    }
    case proto::kWeights: {
      const double t = Ts(now);
      {
        std::lock_guard<std::mutex> lk(info_mu_);
        ++weights_received_;
      }
      uint64_t version = 0;
      std::string why;
      std::unique_ptr<Policy> p;
      if (payload.size() < 8) {
        why = "WEIGHTS payload of " + std::to_string(payload.size()) + " bytes is shorter than its 8-byte version";
      } else {
        version = GetLE64(payload.data());
        if (version <= accepted_version_) {
          why = "version " + std::to_string(version) + " is not newer than " + std::to_string(accepted_version_);
        } else {
          why = ValidateWeights(opt_.running_spec, reinterpret_cast<const uint8_t*>(payload.data()) + 8,
                                payload.size() - 8, &p);
        }
      }
      if (!why.empty()) {
        {
          std::lock_guard<std::mutex> lk(info_mu_);
          ++weights_rejected_;
          rejections_.push_back({{"version", version}, {"reason", why}, {"t_s", t}});
        }
        std::cerr << "jaxcc-sender: weights version " << version << " rejected: " << why << "\n";
        Ack(version, false, why, nullptr, t);
        return;
      }
      accepted_version_ = version;
      uint64_t superseded = 0;
      {
        std::lock_guard<std::mutex> lk(mbox_mu_);
        if (mbox_) superseded = mbox_version_;
        mbox_ = std::move(p);
        mbox_version_ = version;
        mbox_full_.store(true, std::memory_order_release);
      }
      if (superseded) {
        {
          std::lock_guard<std::mutex> lk(info_mu_);
          ++weights_superseded_;
        }
        Ack(superseded, false, "superseded by version " + std::to_string(version) + " before it was applied",
            nullptr, t);
      }
      break;
    }
    default: {  // a type a sender does not take (or unknown): skipped by its length
      std::lock_guard<std::mutex> lk(info_mu_);
      ++unknown_frames_;
      break;
    }
  }
}

void LearnerLink::Run() {
  // Background work: on a busy host the pacer, ACK and decision threads go first (Linux nice
  // is per thread; best effort, a failure only leaves the default priority).
  setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 10);
  const size_t width = queue_.width();
  std::vector<double> rec(width);
  std::vector<uint8_t> chunk(1u << 20);
  // Kept across frames so their capacity is reused: a learner sending big blobs costs no
  // repeated mmap/munmap (which would hold the process's memory map lock against the
  // page faults of the sender's other threads).
  std::string payload, plain;
  const uint64_t timeout_ns = static_cast<uint64_t>(opt_.timeout_s * 1e9);
  bool stopping = false;
  uint64_t stop_deadline = 0;
  bool bye_queued = false;
  for (;;) {
    const uint64_t now = MonoNs();
    if (stop_.load() && !stopping) {
      stopping = true;
      stop_deadline = now + static_cast<uint64_t>(flush_s_ * 1e9);
    }
    if (stopping && (fd_ < 0 || now >= stop_deadline)) break;
    // Learner gone: no connection or no frame for longer than the timeout.
    if (!gone_.load() && now - std::min(now, last_alive_ns_) > timeout_ns) {
      gone_.store(true);
      std::lock_guard<std::mutex> lk(info_mu_);
      gone_events_.push_back({{"t_s", Ts(now)}, {"back_t_s", nullptr}});
      std::cerr << "jaxcc-sender: learner gone (nothing for " << opt_.timeout_s << " s) at t=" << Ts(now) << " s\n";
    }
    if (fd_ < 0) {
      if (now >= next_connect_ns_ && !Connect()) next_connect_ns_ = now + static_cast<uint64_t>(opt_.reconnect_s * 1e9);
      if (fd_ < 0) {
        // Nobody to send to: the queue keeps the newest records (dropping the oldest).
        SleepUntilMono(std::min(next_connect_ns_, now + 50'000'000));
        continue;
      }
    }
    // Proto 2: a learner that never answers AUTH is not one (the peer cannot authenticate).
    if (!ready() && now - std::min(now, connected_ns_) > timeout_ns) {
      RefuseAuth("no AUTH answer within " + std::to_string(opt_.timeout_s) + " s", now);
      continue;
    }
    // Fill the output (once authenticated): ACKs of applied weights first, then records.
    if (ready()) {
      DrainApplied(true);
      while (out_.size() < kOutHighWater && queue_.Pop(rec.data())) {
        Emit(proto::kRecord, EncodeRecord(rec.data(), opt_.obs_dim));
        ++records_in_out_;
      }
    }
    if (stopping && !bye_queued && ready() && queue_.size() == 0) {
      json bye = Counters();
      for (auto it = bye_.begin(); it != bye_.end(); ++it) bye[it.key()] = it.value();
      Emit(proto::kBye, bye.dump());
      bye_queued = true;
    }
    if (stopping && bye_queued && out_.empty()) break;
    pollfd pfd{fd_, 0, 0};
    if (out_.size() < kOutMax && !stopping) pfd.events |= POLLIN;  // backpressure on a flood
    if (!out_.empty()) pfd.events |= POLLOUT;
    const int r = poll(&pfd, 1, 20);
    if (r < 0 && errno != EINTR) {
      Disconnect("poll failed");
      continue;
    }
    if (r <= 0) continue;
    if (pfd.revents & POLLOUT) {
      const ssize_t n = send(fd_, out_.data(), out_.size(), MSG_NOSIGNAL);
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        Disconnect(std::strerror(errno));
        continue;
      }
      if (n > 0) out_.erase(0, static_cast<size_t>(n));
      if (out_.empty() && records_in_out_) {
        std::lock_guard<std::mutex> lk(info_mu_);
        records_sent_ += records_in_out_;
        records_in_out_ = 0;
      }
    }
    if (pfd.revents & (POLLIN | POLLHUP | POLLERR)) {
      const ssize_t n = recv(fd_, chunk.data(), chunk.size(), 0);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        Disconnect(n == 0 ? "closed by the learner" : std::strerror(errno));
        continue;
      }
      if (n > 0) {
        reader_.Feed(chunk.data(), static_cast<size_t>(n));
        uint8_t type;
        for (;;) {
          const FrameReader::Status st = reader_.Next(&type, &payload);
          if (st == FrameReader::kNeedMore) break;
          if (st == FrameReader::kBadLength) {
            {
              std::lock_guard<std::mutex> lk(info_mu_);
              ++protocol_errors_;
            }
            std::cerr << "jaxcc-sender: learner frame length " << reader_.bad_len() << " outside 1.."
                      << proto::kMaxLen << ": protocol error\n";
            Disconnect("protocol error");
            break;
          }
          const uint64_t t = MonoNs();
          // Authentication before anything else reads the frame (liveness included).
          if (!opt_.psk.empty()) {
            if (!channel_) {
              auth::Nonce nonce_l;
              const std::string why = auth::ParseAuth(type, payload, &nonce_l);
              if (!why.empty()) {
                RefuseAuth(why, t);
                break;
              }
              channel_ = std::make_unique<auth::Channel>(auth::DeriveSessionKeys(opt_.psk, nonce_s_, nonce_l),
                                                         auth::kSenderToLearner);
              json hello = opt_.hello;
              hello["proto"] = auth::kProto;
              hello["weight_version"] = version_.load();
              Emit(proto::kHello, hello.dump());
              continue;  // the handshake is not a sign of life yet: the first sealed frame is
            } else {
              const std::string why = channel_->Open(type, payload, &plain);
              if (!why.empty()) {
                RefuseAuth(std::string(why) + " (frame type " + std::to_string(type) + ")", t);
                break;
              }
              payload.swap(plain);
            }
          } else if (type == auth::kAuthType) {
            RefuseAuth("the learner asks for protocol 2 (a key); this sender has no --learner-key", t);
            break;
          }
          last_alive_ns_ = t;
          if (gone_.load()) {
            gone_.store(false);
            std::lock_guard<std::mutex> lk(info_mu_);
            if (!gone_events_.empty()) gone_events_.back()["back_t_s"] = Ts(t);
            std::cerr << "jaxcc-sender: learner back at t=" << Ts(t) << " s\n";
          }
          HandleFrame(type, payload, t);
        }
      }
    }
  }
  DrainApplied(false);  // swapped in after the last send: counted, not ACKed
  if (fd_ >= 0) {
    if (bye_queued && out_.empty()) CloseAfterPeer(stop_deadline, &chunk);
    close(fd_);
    fd_ = -1;
  }
  lost_in_flight_.fetch_add(records_in_out_, std::memory_order_relaxed);
  records_in_out_ = 0;
}

json LearnerLink::Counters() const {
  std::lock_guard<std::mutex> lk(info_mu_);
  json o;
  o["learner"] = opt_.address;
  o["records_sent"] = records_sent_;
  o["records_dropped"] = records_dropped();
  o["record_queue"] = queue_.capacity();
  o["weights_received"] = weights_received_;
  o["weights_applied"] = weights_applied_;
  o["weights_rejected"] = weights_rejected_;
  o["weights_superseded"] = weights_superseded_;
  o["weight_version"] = version_.load();
  o["versions"] = versions_;
  o["rejections"] = rejections_;
  o["learner_gone"] = gone_events_;
  o["protocol_errors"] = protocol_errors_;
  o["unknown_frames"] = unknown_frames_;
  o["connections"] = connections_;
  o["pings"] = pings_;
  o["auth"] = opt_.psk.empty() ? "none" : "psk-hmac-sha256";
  o["auth_refused"] = auth_refused_;
  o["auth_refusals"] = auth_refusals_;
  return o;
}

std::string Sha256Hex(const uint8_t* data, size_t n) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(data, n, md, &len, EVP_sha256(), nullptr) != 1) return "";
  static const char* hex = "0123456789abcdef";
  std::string s;
  for (unsigned int i = 0; i < len; ++i) s += hex[md[i] >> 4], s += hex[md[i] & 15];
  return s;
}

std::string Sha256File(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return "";
  const std::string b((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return Sha256Hex(reinterpret_cast<const uint8_t*>(b.data()), b.size());
}

}  // namespace jaxcc
