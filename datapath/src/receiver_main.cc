// jaxcc-receiver: ACKs every jaxcc data packet and measures one-way delay per flow.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>
#include <vector>

#include "args.h"
#include "clock.h"
#include "protocol.h"
#include "stats.h"

namespace jaxcc {
namespace {

const char* kHelp = R"(jaxcc-receiver: receive jaxcc UDP flows, ACK every packet, log one-way delays.

Usage: jaxcc-receiver --port=N [options]

Options:
  --port=N          UDP port to listen on (default 9000)
  --bind=IP         IPv4 address to bind (default 0.0.0.0)
  --duration=S      stop after S seconds (default 0: run until SIGINT/SIGTERM)
  --log=FILE        per-packet CSV: flow,seq,size,send_ts_ns,recv_ts_ns,owd_ms,dup
  --summary=FILE    JSON summary (stdout when absent): per flow and overall
                    throughput_mbps (received IP bytes, payload + 28 per datagram, over
                    first..last arrival; goodput_mbps the payload), p50/p95_owd_ms,
                    p95_qdelay_ms (OWD minus the flow's minimum OWD), loss (1 - distinct
                    packets / (highest seq - lowest seq + 1)), duplicates, garbage counters
  --help            this text

Every valid data packet, duplicates included, is answered with one ACK carrying the echoed
send timestamp, the receive timestamp and the flow's receive counters. Datagrams that fail
the strict parser are counted and dropped.
Exit status: 0 ok, 1 runtime error (socket), 2 rejected input (bad option).
)";

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop.store(true); }

struct FlowRecv {
  uint32_t flow_id = 0;
  std::string peer;
  uint64_t packets = 0, bytes = 0, dups = 0;
  uint64_t lowest_seq = UINT64_MAX, highest_seq = 0;
  uint64_t first_ns = 0, last_ns = 0;
  std::vector<float> owd_ms;
  // Duplicate detection over a sliding window of recent seqs (bit per seq). Older seqs
  // than the window are treated as new: far-back duplicates are rare and only cost accuracy
  // of the duplicate counter.
  static constexpr uint64_t kWin = 1u << 16;
  std::vector<uint64_t> seen = std::vector<uint64_t>(kWin / 64, 0);
  uint64_t win_top = 0;  // seqs (win_top - kWin, win_top] are tracked

  bool MarkSeen(uint64_t seq) {
    if (seq + kWin <= win_top) return false;  // too old to track
    if (seq > win_top) {
      // Clear the bits of seqs that the advancing window now reuses.
      const uint64_t adv = seq - win_top;
      if (adv >= kWin) {
        std::fill(seen.begin(), seen.end(), 0);
      } else {
        for (uint64_t s = win_top + 1; s <= seq; ++s) seen[(s % kWin) / 64] &= ~(1ull << (s % 64));
      }
      win_top = seq;
    }
    uint64_t& w = seen[(seq % kWin) / 64];
    const uint64_t bit = 1ull << (seq % 64);
    const bool dup = w & bit;
    w |= bit;
    return dup;
  }
};

// `bytes`: UDP payload of `packets` distinct datagrams; throughput_mbps counts their IP bytes
// (payload + kIpUdpHeaderBytes each) as the sender and the simulator do, goodput_mbps payload.
nlohmann::json Summarize(const std::vector<float>& owd, double bytes, double first_ns, double last_ns,
                         uint64_t packets, uint64_t expected) {
  nlohmann::json j;
  const double dur = (last_ns - first_ns) * 1e-9;
  const double wire = bytes + static_cast<double>(packets) * kIpUdpHeaderBytes;
  j["throughput_mbps"] = dur > 0 ? wire * 8 / dur / 1e6 : 0.0;
  j["goodput_mbps"] = dur > 0 ? bytes * 8 / dur / 1e6 : 0.0;
  j["loss"] = expected > 0 ? 1.0 - static_cast<double>(packets) / static_cast<double>(expected) : 0.0;
  if (!owd.empty()) {
    std::vector<double> d(owd.begin(), owd.end());
    const double mn = *std::min_element(d.begin(), d.end());
    std::vector<double> q;
    q.reserve(d.size());
    for (double v : d) q.push_back(v - mn);
    j["p50_owd_ms"] = Percentile(d, 50);
    j["p95_owd_ms"] = Percentile(d, 95);
    j["min_owd_ms"] = mn;
    j["p95_qdelay_ms"] = Percentile(q, 95);
  } else {
    j["p50_owd_ms"] = j["p95_owd_ms"] = j["p95_qdelay_ms"] = nullptr;
  }
  return j;
}

int Main(int argc, char** argv) {
  int port = 9000;
  std::string bind_ip = "0.0.0.0", log_path, summary_path;
  double duration = 0;
  try {
    Args a(argc, argv, {"port", "bind", "duration", "log", "summary", "help"});
    if (a.has("help")) {
      std::cout << kHelp;
      return 0;
    }
    port = static_cast<int>(a.num("port", 9000));
    bind_ip = a.str("bind", bind_ip);
    duration = a.num("duration", 0);
    log_path = a.str("log");
    summary_path = a.str("summary");
    if (port <= 0 || port > 65535) throw std::invalid_argument("--port must be 1..65535");
    if (duration < 0) throw std::invalid_argument("--duration must be >= 0");
  } catch (const std::exception& e) {
    std::cerr << "jaxcc-receiver: " << e.what() << "\n";
    return 2;
  }
  std::ofstream log;
  if (!log_path.empty()) {
    log.open(log_path);
    if (!log) {
      std::cerr << "jaxcc-receiver: cannot write --log file " << log_path << "\n";
      return 2;
    }
    log << "flow,seq,size,send_ts_ns,recv_ts_ns,owd_ms,dup\n";
  }
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (fd < 0) {
    std::perror("jaxcc-receiver: socket");
    return 1;
  }
  int one = 1, big = 16 << 20;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, bind_ip.c_str(), &addr.sin_addr) != 1) {
    std::cerr << "jaxcc-receiver: --bind must be an IPv4 address, got '" << bind_ip << "'\n";
    return 2;
  }
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    std::perror("jaxcc-receiver: bind");
    return 1;
  }
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);

  constexpr int kBatch = 64;
  constexpr size_t kBuf = 65536;  // any datagram fits, so oversize garbage is seen whole
  std::vector<uint8_t> bufs(kBatch * kBuf);
  std::vector<mmsghdr> msgs(kBatch), acks(kBatch);
  std::vector<iovec> iovs(kBatch), ack_iovs(kBatch);
  std::vector<sockaddr_in> peers(kBatch);
  std::vector<uint8_t> ack_bufs(kBatch * kAckSize);
  std::map<std::tuple<uint32_t, uint16_t, uint32_t>, FlowRecv> flows;  // (ip, port, flow id)
  ParseCounters parse;
  const uint64_t t0 = MonoNs();
  const uint64_t t_end = duration > 0 ? t0 + static_cast<uint64_t>(duration * 1e9) : UINT64_MAX;
  while (!g_stop.load() && MonoNs() < t_end) {
    pollfd pfd{fd, POLLIN, 0};
    if (poll(&pfd, 1, 20) <= 0) continue;
    for (int i = 0; i < kBatch; ++i) {
      iovs[i] = {bufs.data() + i * kBuf, kBuf};
      std::memset(&msgs[i], 0, sizeof(mmsghdr));
      msgs[i].msg_hdr.msg_iov = &iovs[i];
      msgs[i].msg_hdr.msg_iovlen = 1;
      msgs[i].msg_hdr.msg_name = &peers[i];
      msgs[i].msg_hdr.msg_namelen = sizeof(sockaddr_in);
    }
    const int n = recvmmsg(fd, msgs.data(), kBatch, MSG_DONTWAIT, nullptr);
    if (n <= 0) continue;
    const uint64_t now = WallNs();
    int nacks = 0;
    for (int i = 0; i < n; ++i) {
      DataPacket dp;
      const size_t len = (msgs[i].msg_hdr.msg_flags & MSG_TRUNC) ? 0 : msgs[i].msg_len;
      const ParseResult pr = ParseData(bufs.data() + i * kBuf, len, &dp);
      parse.Add(pr);
      if (pr != ParseResult::kOk) continue;
      const auto key = std::make_tuple(peers[i].sin_addr.s_addr, peers[i].sin_port, dp.flow_id);
      FlowRecv& f = flows[key];
      if (f.packets == 0 && f.dups == 0) {
        f.flow_id = dp.flow_id;
        char ip[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &peers[i].sin_addr, ip, sizeof(ip));
        f.peer = std::string(ip) + ":" + std::to_string(ntohs(peers[i].sin_port));
        f.first_ns = now;
      }
      const bool dup = f.MarkSeen(dp.seq);
      const double owd = (static_cast<double>(now) - static_cast<double>(dp.send_ts_ns)) * 1e-6;
      if (dup) {
        ++f.dups;
      } else {
        ++f.packets;
        f.bytes += dp.size;
        f.lowest_seq = std::min(f.lowest_seq, dp.seq);
        f.highest_seq = std::max(f.highest_seq, dp.seq);
        f.last_ns = now;
        f.owd_ms.push_back(static_cast<float>(owd));
      }
      if (log.is_open())
        log << dp.flow_id << "," << dp.seq << "," << dp.size << "," << dp.send_ts_ns << "," << now << "," << owd << ","
            << (dup ? 1 : 0) << "\n";
      AckPacket ack;
      ack.flow_id = dp.flow_id;
      ack.seq = dp.seq;
      ack.echo_send_ts_ns = dp.send_ts_ns;
      ack.recv_ts_ns = now;
      ack.recv_packets = f.packets;
      ack.recv_bytes = f.bytes;
      ack.highest_seq = f.highest_seq;
      uint8_t* ab = ack_bufs.data() + nacks * kAckSize;
      EncodeAck(ack, ab);
      ack_iovs[nacks] = {ab, kAckSize};
      std::memset(&acks[nacks], 0, sizeof(mmsghdr));
      acks[nacks].msg_hdr.msg_iov = &ack_iovs[nacks];
      acks[nacks].msg_hdr.msg_iovlen = 1;
      acks[nacks].msg_hdr.msg_name = &peers[i];
      acks[nacks].msg_hdr.msg_namelen = sizeof(sockaddr_in);
      ++nacks;
    }
    // ACK errors (peer gone: ECONNREFUSED) are not the receiver's problem; keep receiving.
    for (int done = 0; done < nacks;) {
      const int k = sendmmsg(fd, acks.data() + done, static_cast<unsigned>(nacks - done), 0);
      if (k <= 0) break;
      done += k;
    }
  }
  close(fd);

  nlohmann::json s;
  nlohmann::json per_flow = nlohmann::json::array();
  std::vector<float> all_owd;
  double all_bytes = 0, first = 0, last = 0;
  uint64_t all_pkts = 0, all_expected = 0, all_dups = 0;
  for (auto& kv : flows) {
    FlowRecv& f = kv.second;
    const uint64_t expected = f.packets ? f.highest_seq - f.lowest_seq + 1 : 0;
    nlohmann::json j = Summarize(f.owd_ms, static_cast<double>(f.bytes), static_cast<double>(f.first_ns),
                                 static_cast<double>(f.last_ns), f.packets, expected);
    j["flow"] = f.flow_id;
    j["peer"] = f.peer;
    j["received"] = f.packets;
    j["received_bytes"] = f.bytes;
    j["duplicates"] = f.dups;
    j["highest_seq"] = f.highest_seq;
    per_flow.push_back(j);
    all_owd.insert(all_owd.end(), f.owd_ms.begin(), f.owd_ms.end());
    all_bytes += static_cast<double>(f.bytes);
    all_pkts += f.packets;
    all_expected += expected;
    all_dups += f.dups;
    if (f.packets) {
      first = first == 0 ? static_cast<double>(f.first_ns) : std::min(first, static_cast<double>(f.first_ns));
      last = std::max(last, static_cast<double>(f.last_ns));
    }
  }
  s = Summarize(all_owd, all_bytes, first, last, all_pkts, all_expected);
  s["received"] = all_pkts;
  s["received_bytes"] = all_bytes;
  s["duplicates"] = all_dups;
  s["flows"] = flows.size();
  s["garbage_datagrams"] = parse.garbage();
  nlohmann::json pc;
  for (int i = 0; i < 7; ++i) pc[ParseResultName(static_cast<ParseResult>(i))] = parse.counts[i];
  s["parse"] = pc;
  s["per_flow"] = per_flow;
  const std::string text = s.dump(1);
  return WriteSummary(text, summary_path, "jaxcc-receiver");
}

}  // namespace
}  // namespace jaxcc

int main(int argc, char** argv) { return jaxcc::Main(argc, argv); }
