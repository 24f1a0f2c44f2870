// ns-3 dumbbell: the project's independent packet-level reference for the simulator
// (the second, next to the kernel's TCP).  Built against Debian's ns-3 3.37 (libns3-dev) by
// datapath/ns3/build.sh; driven by jaxcc/emulation/ns3.py.
//
// Topology (one sender node per flow, so each flow has its own access link and TCP variant):
//
//   S_i --access_i (fast, delay a_i)--> R1 ==bottleneck (C, delay d_b)==> R2 --(fast, 0 ms)--> D
//
// * Bottleneck: R1's point-to-point device, DataRate C (optionally a piecewise-constant
//   schedule: SetDataRate at each change), a byte-limited DropTail device queue of
//   buffer_bytes and NO traffic-control qdisc (TrafficControlHelper::Uninstall).  The reverse
//   direction (R2 -> R1, ACKs only) runs at the access rate, as the netns harness shapes only
//   the forward direction.
// * Units: the simulator's packet is a 1500-byte IP packet.  A PPP frame adds 2 bytes, so the
//   device rate is C * 1502/1500 and the queue limit buffer_bytes * 1502/1500: a 1500-byte IP
//   packet takes 1500*8/C seconds and the queue holds floor(buffer_bytes/1500) of them (plus the
//   one being transmitted, which ns-3's device has already dequeued).
// * RTT: d_b = min_i(rtt_i)/4 and a_i = rtt_i/2 - d_b, so each flow's propagation RTT is its
//   rtt_ms (plus serialisation: 1500*8/C of the data packet, microseconds on the fast links).
// * Random loss: a RateErrorModel (packet unit) on R1's receiving side of every access link, i.e.
//   before the bottleneck queue, where the simulator (jaxcc/sim/core.py: "random loss ->
//   drop-tail FIFO") and the netns harness (iptables statistic before tbf) lose packets; a lost
//   packet does not use bottleneck capacity.  Only the data direction passes there.
// * TCP (reno = ns3::TcpNewReno, cubic = ns3::TcpCubic, bbr = ns3::TcpBbr, set per sender node
//   through TcpL4Protocol::SocketType): BulkSend, SegmentSize 1448 with timestamps (32-byte TCP
//   header) = 1500-byte IP packets; SACK on; PRR recovery (ns-3's default, as Linux);
//   InitialCwnd 10 (Linux); MinRto 1 s (ns-3's default; see below); no RACK or TLP (ns-3.37 has
//   neither; Linux has both, so a lost retransmission or tail that Linux repairs waits for an RTO
//   here).  MinRto: Linux re-arms its RTO on every ACK that advances snd_una, also in recovery,
//   and its RTO is at least srtt + 200 ms; ns-3.37's fires during a long SACK recovery (the
//   slow-start overshoot of one NewReno flow on 50 Mbit/s, 90 ms, 440 kB: an RTO at 1.2-1.3 s
//   with MinRto = rtt + 110 or rtt + 200 ms, 37.6-47.6 Mbit/s; none with rtt + 400 ms or more,
//   48.05 Mbit/s).  Such spurious timeouts are ns-3 artefacts Linux does not have, while real
//   ones are rare on these links, so ns-3's own 1 s floor is kept; delayed ACKs
//   OFF (DelAckCount 1): ns-3.37's TcpNewReno grows cwnd per ACK, not per acked segment
//   (tcp-congestion-ops.cc CongestionAvoidance), so with Linux's ACK-every-other-segment it
//   would grow at half of Linux's per-segment rate (RFC 5681 §3.1 with ABC, RFC 3465); one ACK
//   per segment gives the Linux/RFC growth and matches the simulator's per-byte ACK clock.
//   Send and receive buffers are sized so that neither limits the window (2 * (max BDP +
//   buffer) + 1 MB).  BBR paces itself (TcpBbr::InitPacingRate); reno/cubic do not pace (as
//   Linux without the fq qdisc).
// * UDP fixed:MBPS: a constant-rate sender of 1500-byte IP packets (1472-byte payload), one
//   packet every 1500*8/(MBPS*1e6) s from start_s to stop_s (absolute times, no drift).
//
// Measurements (per flow and for the link), written as JSON to --out:
// * throughput_mbps: bytes delivered to the receiving application with arrival in
//   [start_s + rtt/2, stop_s + rtt/2] (the active time seen one propagation delay later: an
//   arrival by stop_s + rtt/2 was sent by stop_s), counted as 1500-byte packets (app bytes * 1500/payload, the simulator's
//   unit), over stop_s - start_s; goodput_mbps is the same in payload bytes.
// * one-way delay of every data packet: from the start of its transmission on the sender's
//   NIC (PhyTxBegin) to the end of its reception at the receiver's NIC (PhyRxEnd): propagation,
//   serialisation on every hop, and the bottleneck queue; p50/p95 exact over the samples
//   (nearest rank: the smallest sample with at least q*N samples at or below it, the rule of
//   jaxcc.metrics.weighted_percentile for equal weights).
// * queueing delay of every data packet: bottleneck queue sojourn, enqueue to dequeue (the
//   simulator's qdelay, which excludes serialisation).
// * loss: (bottleneck drops + error-model losses) / data packets sent (retransmissions count as
//   sent, as the simulator counts every byte sent).
// * bins: IP-equivalent bytes delivered per bin_s bin from the flow's start (on the same clock,
//   shifted by rtt/2; the last bin ends at stop_s), for Jain's index over the last 20 s (jaxcc.metrics.jain_window).
// * rto, rto_times_s: TCP congestion-state transitions into CA_LOSS (retransmission timeouts).
//
// Arguments (all --key=value; an unknown key or a bad value is one line on stderr and exit 2):
//   --duration=S                       simulated seconds (> 0)
//   --rate_mbps=C | --schedule=T:C,... bottleneck capacity in Mbit/s (constant, or steps; the
//                                      first at T=0, times increasing)
//   --buffer_bytes=B                   bottleneck queue in bytes (>= 1500)
//   --loss=P                           random loss probability in [0, 1) (default 0)
//   --flows=CTRL,RTT_MS,START_S,STOP_S;...   CTRL one of reno, cubic, bbr, fixed:MBPS
//   --seed=N                           RngSeedManager run number (default 0); same seed, same output
//   --bin_s=S                          delivery bins (default 0.5)
//   --out=FILE                         the JSON result
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

using namespace ns3;
using json = nlohmann::json;

namespace {

constexpr double kPacketBytes = 1500.0;  // the simulator's packet (an IP packet)
constexpr double kPppBytes = 2.0;        // PPP header on every point-to-point frame
constexpr uint32_t kTcpPayload = 1448;   // 1500 - 20 (IP) - 32 (TCP + timestamps)
constexpr uint32_t kUdpPayload = 1472;   // 1500 - 20 (IP) - 8 (UDP)
constexpr double kAccessBps = 100e9;     // access links: far faster than any bottleneck
constexpr uint16_t kPortBase = 9000;

[[noreturn]] void Fail(const std::string& msg) {
  std::cerr << "ns3-dumbbell: " << msg << std::endl;
  std::exit(2);
}

double ParseNumber(const std::string& key, const std::string& text) {
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || errno != 0 || !std::isfinite(v)) {
    Fail(key + ": expected a finite number, got '" + text + "'");
  }
  return v;
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep)) out.push_back(cur);
  if (!s.empty() && s.back() == sep) out.push_back("");
  return out;
}

struct FlowArg {
  std::string controller;  // reno | cubic | bbr | fixed:MBPS
  double rtt_ms = 0, start_s = 0, stop_s = 0, fixed_mbps = 0;
  bool Tcp() const { return controller != "fixed"; }
};

struct Args {
  double duration = 0, buffer_bytes = 0, loss = 0, bin_s = 0.5;
  std::vector<std::pair<double, double>> schedule;  // (t_s, Mbit/s)
  std::vector<FlowArg> flows;
  uint64_t seed = 0;
  std::string out;
};

Args ParseArgs(int argc, char** argv) {
  std::map<std::string, std::string> kv;
  const std::vector<std::string> allowed = {"duration", "rate_mbps", "schedule", "buffer_bytes", "loss",
                                            "flows",    "seed",      "bin_s",    "out"};
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto eq = a.find('=');
    if (a.rfind("--", 0) != 0 || eq == std::string::npos) {
      Fail("argument '" + a + "': expected --key=value (keys: duration, rate_mbps|schedule, buffer_bytes, "
           "loss, flows, seed, bin_s, out)");
    }
    std::string k = a.substr(2, eq - 2);
    if (std::find(allowed.begin(), allowed.end(), k) == allowed.end()) {
      Fail("unknown argument --" + k + " (keys: duration, rate_mbps|schedule, buffer_bytes, loss, flows, "
           "seed, bin_s, out)");
    }
    kv[k] = a.substr(eq + 1);
  }
  auto need = [&](const std::string& k) {
    if (!kv.count(k)) Fail("--" + k + ": missing (required)");
    return kv[k];
  };
  Args r;
  r.duration = ParseNumber("--duration", need("duration"));
  if (r.duration <= 0 || r.duration > 3600) Fail("--duration: must be in (0, 3600] s, got " + kv["duration"]);
  r.buffer_bytes = ParseNumber("--buffer_bytes", need("buffer_bytes"));
  if (r.buffer_bytes < kPacketBytes || r.buffer_bytes > 1e10) {
    Fail("--buffer_bytes: must be in [1500, 1e10] (at least one packet), got " + kv["buffer_bytes"]);
  }
  if (kv.count("loss")) {
    r.loss = ParseNumber("--loss", kv["loss"]);
    if (!(r.loss >= 0 && r.loss < 1)) Fail("--loss: must be in [0, 1), got " + kv["loss"]);
  }
  if (kv.count("bin_s")) {
    r.bin_s = ParseNumber("--bin_s", kv["bin_s"]);
    if (!(r.bin_s >= 0.01 && r.bin_s <= 60)) Fail("--bin_s: must be in [0.01, 60] s, got " + kv["bin_s"]);
  }
  if (kv.count("seed")) {
    double s = ParseNumber("--seed", kv["seed"]);
    if (s < 0 || s != std::floor(s) || s > 1e15) Fail("--seed: must be an integer >= 0, got " + kv["seed"]);
    r.seed = static_cast<uint64_t>(s);
  }
  r.out = need("out");
  if (r.out.empty()) Fail("--out: expected a file name");
  if (kv.count("rate_mbps") == kv.count("schedule")) Fail("give exactly one of --rate_mbps and --schedule");
  if (kv.count("rate_mbps")) {
    double c = ParseNumber("--rate_mbps", kv["rate_mbps"]);
    if (!(c >= 0.01 && c <= 100000)) Fail("--rate_mbps: must be in [0.01, 100000] Mbit/s, got " + kv["rate_mbps"]);
    r.schedule.push_back({0.0, c});
  } else {
    auto steps = Split(kv["schedule"], ',');
    for (size_t i = 0; i < steps.size(); ++i) {
      std::string where = "--schedule[" + std::to_string(i) + "]";
      auto tc = Split(steps[i], ':');
      if (tc.size() != 2) Fail(where + ": expected T_S:MBPS, got '" + steps[i] + "'");
      double t = ParseNumber(where + ".t_s", tc[0]), c = ParseNumber(where + ".mbps", tc[1]);
      if (!(c >= 0.01 && c <= 100000)) Fail(where + ".mbps: must be in [0.01, 100000], got " + tc[1]);
      if (i == 0 && t != 0) Fail(where + ".t_s: the schedule must start at 0, got " + tc[0]);
      if (i > 0 && t <= r.schedule.back().first) Fail(where + ".t_s: times must increase, got " + tc[0]);
      r.schedule.push_back({t, c});
    }
  }
  auto specs = Split(need("flows"), ';');
  if (specs.empty() || (specs.size() == 1 && specs[0].empty())) Fail("--flows: expected at least one flow");
  if (specs.size() > 64) Fail("--flows: at most 64 flows, got " + std::to_string(specs.size()));
  for (size_t i = 0; i < specs.size(); ++i) {
    std::string where = "--flows[" + std::to_string(i) + "]";
    auto f = Split(specs[i], ',');
    if (f.size() != 4) Fail(where + ": expected CTRL,RTT_MS,START_S,STOP_S, got '" + specs[i] + "'");
    FlowArg fa;
    if (f[0] == "reno" || f[0] == "cubic" || f[0] == "bbr") {
      fa.controller = f[0];
    } else if (f[0].rfind("fixed:", 0) == 0) {
      fa.controller = "fixed";
      fa.fixed_mbps = ParseNumber(where + ".controller", f[0].substr(6));
      if (!(fa.fixed_mbps > 0 && fa.fixed_mbps <= 100000)) {
        Fail(where + ".controller: fixed rate must be in (0, 100000] Mbit/s, got " + f[0]);
      }
    } else {
      Fail(where + ".controller: '" + f[0] + "' is not one of reno, cubic, bbr, fixed:MBPS");
    }
    fa.rtt_ms = ParseNumber(where + ".rtt_ms", f[1]);
    fa.start_s = ParseNumber(where + ".start_s", f[2]);
    fa.stop_s = ParseNumber(where + ".stop_s", f[3]);
    if (!(fa.rtt_ms >= 0.1 && fa.rtt_ms <= 10000)) Fail(where + ".rtt_ms: must be in [0.1, 10000], got " + f[1]);
    if (!(fa.start_s >= 0 && fa.start_s < r.duration)) {
      Fail(where + ".start_s: must be in [0, duration), got " + f[2]);
    }
    if (!(fa.stop_s > fa.start_s && fa.stop_s <= r.duration)) {
      Fail(where + ".stop_s: must be in (start_s, duration], got " + f[3]);
    }
    r.flows.push_back(fa);
  }
  return r;
}

// ------------------------------------------------------------------------------ measurement

struct FlowStats {
  uint64_t sent_pkts = 0, sent_bytes = 0, queue_drops = 0, random_losses = 0;
  uint64_t app_bytes_window = 0, app_bytes_total = 0, rto = 0, in_network_at_end = 0;
  uint32_t max_ip_bytes = 0;
  std::vector<double> owd, qdelay;  // seconds, one per delivered / dequeued data packet
  std::vector<double> bins;         // app bytes per bin from the flow's start
  std::vector<double> rto_times;    // when each retransmission timeout happened (s)
};

struct InFlight {
  uint32_t flow;
  double t_tx;
  double t_enq;         // < 0: never entered the bottleneck queue
  bool at_neck = false; // R1 routed it to the bottleneck interface
  bool done = false;    // received, or lost
};

// A packet tag with the transmission's serial number.  Packet uids do not name transmissions:
// TCP copies every segment of one application write, and every retransmission, from the same
// buffered packet, and copies keep the uid.
class TxTag : public Tag {
 public:
  static TypeId GetTypeId() {
    static TypeId tid = TypeId("ns3::JaxccTxTag").SetParent<Tag>().AddConstructor<TxTag>();
    return tid;
  }
  TypeId GetInstanceTypeId() const override { return GetTypeId(); }
  uint32_t GetSerializedSize() const override { return 8; }
  void Serialize(TagBuffer b) const override { b.WriteU64(id); }
  void Deserialize(TagBuffer b) override { id = b.ReadU64(); }
  void Print(std::ostream& os) const override { os << "tx=" << id; }
  uint64_t id = 0;
};

Args g_args;
std::vector<FlowStats> g_stats;
std::vector<InFlight> g_tx;  // every data transmission, by TxTag id
uint64_t g_max_queue_bytes = 0;
Ptr<Queue<Packet>> g_bottleneck_queue;

// IP bytes of a data packet (UDP, or TCP carrying payload); 0 for anything else.
uint32_t DataIpBytes(Ptr<const Packet> frame) {
  Ptr<Packet> p = frame->Copy();
  PppHeader ppp;
  p->RemoveHeader(ppp);
  if (ppp.GetProtocol() != 0x0021) return 0;  // PPP's IPv4 code
  Ipv4Header ip;
  p->RemoveHeader(ip);
  if (ip.GetProtocol() == 17) return ip.GetPayloadSize() + ip.GetSerializedSize();
  if (ip.GetProtocol() != 6) return 0;
  TcpHeader tcp;
  p->PeekHeader(tcp);
  uint32_t payload = ip.GetPayloadSize() - tcp.GetLength() * 4;
  return payload > 0 ? ip.GetPayloadSize() + ip.GetSerializedSize() : 0;
}

// The transmission a packet belongs to (nullptr: not a data packet from a sender).
InFlight* Lookup(Ptr<const Packet> p) {
  TxTag tag;
  if (!p->PeekPacketTag(tag) || tag.id >= g_tx.size()) return nullptr;
  return &g_tx[tag.id];
}

void OnSenderTx(uint32_t flow, Ptr<const Packet> p) {
  uint32_t bytes = DataIpBytes(p);
  if (bytes == 0) return;
  FlowStats& s = g_stats[flow];
  s.sent_pkts++;
  s.sent_bytes += bytes;
  s.max_ip_bytes = std::max(s.max_ip_bytes, bytes);
  TxTag tag;
  tag.id = g_tx.size();
  p->AddPacketTag(tag);  // tags are mutable on a const packet; copies downstream carry it
  g_tx.push_back(InFlight{flow, Simulator::Now().GetSeconds(), -1.0, false, false});
}

void OnRandomLoss(Ptr<const Packet> p) {
  if (InFlight* t = Lookup(p)) {
    g_stats[t->flow].random_losses++;
    t->done = true;
  }
}

void OnEnqueue(Ptr<const Packet> p) {
  g_max_queue_bytes = std::max<uint64_t>(g_max_queue_bytes, g_bottleneck_queue->GetNBytes());
  if (InFlight* t = Lookup(p)) t->t_enq = Simulator::Now().GetSeconds();
}

void OnDequeue(Ptr<const Packet> p) {
  InFlight* t = Lookup(p);
  if (t && t->t_enq >= 0) g_stats[t->flow].qdelay.push_back(Simulator::Now().GetSeconds() - t->t_enq);
}

// R1's IP layer hands a packet to the bottleneck interface.  With no qdisc, ns-3.37's
// TrafficControlLayer::Send discards it without a trace when the device has stopped its
// transmit queue (the DropTail queue cannot take one more MTU): such a packet is a drop-tail
// drop like one the queue itself refuses ("Drop" trace), counted at the end of the run.
uint32_t g_neck_if = 0;
void OnRouterIpTx(Ptr<const Packet> p, Ptr<Ipv4>, uint32_t iface) {
  if (iface != g_neck_if) return;
  if (InFlight* t = Lookup(p)) t->at_neck = true;
}

void OnQueueDrop(Ptr<const Packet> p) {
  if (InFlight* t = Lookup(p)) {
    g_stats[t->flow].queue_drops++;
    t->done = true;
  }
}

void OnReceiverRx(Ptr<const Packet> p) {
  if (InFlight* t = Lookup(p)) {
    g_stats[t->flow].owd.push_back(Simulator::Now().GetSeconds() - t->t_tx);
    t->done = true;
  }
}

void OnAppRx(uint32_t flow, Ptr<const Packet> p, const Address&) {
  const FlowArg& f = g_args.flows[flow];
  FlowStats& s = g_stats[flow];
  // Arrival time on the flow's clock: shifted by its one-way propagation delay, so the window
  // [start_s, stop_s] holds what was sent while the flow was active (an arrival by
  // stop_s + rtt/2 was sent by stop_s) and a constant-rate flow's throughput is its rate.
  double t = Simulator::Now().GetSeconds() - f.rtt_ms / 2e3;
  s.app_bytes_total += p->GetSize();
  if (t < f.start_s || t > f.stop_s) return;
  s.app_bytes_window += p->GetSize();
  size_t bin = std::min(s.bins.size() - 1, static_cast<size_t>((t - f.start_s) / g_args.bin_s));
  s.bins[bin] += p->GetSize();
}

void OnCongState(uint32_t flow, TcpSocketState::TcpCongState_t, TcpSocketState::TcpCongState_t now) {
  if (now == TcpSocketState::CA_LOSS) {
    g_stats[flow].rto++;
    g_stats[flow].rto_times.push_back(Simulator::Now().GetSeconds());
  }
}

void HookSocket(uint32_t flow, Ptr<BulkSendApplication> app) {
  Ptr<Socket> sock = app->GetSocket();
  if (!sock || !sock->TraceConnectWithoutContext("CongState", MakeBoundCallback(&OnCongState, flow))) {
    Fail("internal: cannot trace the TCP socket of flow " + std::to_string(flow));
  }
}

// Constant-rate UDP sender: packet k leaves at start + k * interval (absolute, no drift).
class CbrApp : public Application {
 public:
  void Configure(Address dest, double mbps, double start_s, double stop_s) {
    m_dest = dest;
    m_interval = kPacketBytes * 8.0 / (mbps * 1e6);
    m_start = start_s;
    m_stop = stop_s;
  }

 private:
  void StartApplication() override {
    m_socket = Socket::CreateSocket(GetNode(), UdpSocketFactory::GetTypeId());
    m_socket->Bind();
    m_socket->Connect(m_dest);
    SendNext();
  }
  void StopApplication() override {
    m_event.Cancel();
    if (m_socket) m_socket->Close();
  }
  void SendNext() {
    m_socket->Send(Create<Packet>(kUdpPayload));
    ++m_k;
    double next = m_start + m_k * m_interval;
    if (next < m_stop) m_event = Simulator::Schedule(Seconds(next) - Simulator::Now(), &CbrApp::SendNext, this);
  }
  Ptr<Socket> m_socket;
  Address m_dest;
  double m_interval = 0, m_start = 0, m_stop = 0;
  uint64_t m_k = 0;
  EventId m_event;
};

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  size_t k = static_cast<size_t>(std::ceil(q * v.size() * (1 - 1e-12)));
  return v[std::min(v.size() - 1, k == 0 ? 0 : k - 1)];
}

json DelayStats(const std::vector<double>& v) {
  json j;
  j["n"] = v.size();
  if (v.empty()) {
    for (const char* k : {"p50_ms", "p95_ms", "mean_ms", "min_ms", "max_ms"}) j[k] = nullptr;
    return j;
  }
  double sum = 0;
  for (double x : v) sum += x;
  j["p50_ms"] = Percentile(v, 0.50) * 1e3;
  j["p95_ms"] = Percentile(v, 0.95) * 1e3;
  j["mean_ms"] = sum / v.size() * 1e3;
  j["min_ms"] = *std::min_element(v.begin(), v.end()) * 1e3;
  j["max_ms"] = *std::max_element(v.begin(), v.end()) * 1e3;
  return j;
}

// Length of the union of the flows' [start, stop] intervals.
double BusySeconds(const std::vector<FlowArg>& flows) {
  std::vector<std::pair<double, double>> iv;
  for (const auto& f : flows) iv.push_back({f.start_s, f.stop_s});
  std::sort(iv.begin(), iv.end());
  double busy = 0, lo = iv[0].first, hi = iv[0].second;
  for (size_t i = 1; i < iv.size(); ++i) {
    if (iv[i].first > hi) {
      busy += hi - lo;
      lo = iv[i].first;
      hi = iv[i].second;
    } else {
      hi = std::max(hi, iv[i].second);
    }
  }
  return busy + hi - lo;
}

}  // namespace

int main(int argc, char** argv) {
  auto wall0 = std::chrono::steady_clock::now();
  g_args = ParseArgs(argc, argv);
  const Args& a = g_args;
  const size_t n = a.flows.size();
  RngSeedManager::SetSeed(1);
  RngSeedManager::SetRun(a.seed);

  double min_rtt = a.flows[0].rtt_ms, max_rtt = 0, max_mbps = 0;
  for (const auto& f : a.flows) {
    min_rtt = std::min(min_rtt, f.rtt_ms);
    max_rtt = std::max(max_rtt, f.rtt_ms);
  }
  for (const auto& s : a.schedule) max_mbps = std::max(max_mbps, s.second);
  // Socket buffers: never the limit (2 x (largest BDP + buffer) + 1 MB).
  double bdp = max_mbps * 1e6 / 8 * max_rtt / 1e3;
  uint64_t sockbuf = static_cast<uint64_t>(std::min(2.0 * (bdp + a.buffer_bytes) + 1e6, 2e9));

  Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(kTcpPayload));
  Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(10));
  Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(1));
  Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(sockbuf));
  Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(sockbuf));
  Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(true));
  Config::SetDefault("ns3::TcpSocketBase::Timestamp", BooleanValue(true));
  Config::SetDefault("ns3::TcpSocketBase::WindowScaling", BooleanValue(true));
  Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(Seconds(1)));  // see the header

  NodeContainer senders, routers, receiver;
  senders.Create(n);
  routers.Create(2);
  receiver.Create(1);
  InternetStackHelper stack;
  stack.InstallAll();

  // Each flow's own TCP variant: the SocketType of its sender node.
  for (size_t i = 0; i < n; ++i) {
    if (!a.flows[i].Tcp()) continue;
    std::string tid = a.flows[i].controller == "reno"    ? "ns3::TcpNewReno"
                      : a.flows[i].controller == "cubic" ? "ns3::TcpCubic"
                                                         : "ns3::TcpBbr";
    senders.Get(i)->GetObject<TcpL4Protocol>()->SetAttribute("SocketType",
                                                              TypeIdValue(TypeId::LookupByName(tid)));
  }

  const double d_b = min_rtt / 4.0;  // ms, bottleneck propagation; access_i = rtt_i/2 - d_b
  const std::string big_queue = "1000000p";
  PointToPointHelper fast;
  fast.SetDeviceAttribute("DataRate", DataRateValue(DataRate(static_cast<uint64_t>(kAccessBps))));
  fast.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", QueueSizeValue(QueueSize(big_queue)));

  Ipv4AddressHelper addr;
  std::vector<NetDeviceContainer> access(n);
  std::vector<Ipv4InterfaceContainer> access_if(n);
  for (size_t i = 0; i < n; ++i) {
    fast.SetChannelAttribute("Delay", TimeValue(MicroSeconds(
                                          static_cast<int64_t>(std::llround((a.flows[i].rtt_ms / 2 - d_b) * 1e3)))));
    access[i] = fast.Install(senders.Get(i), routers.Get(0));
    std::ostringstream net;
    net << "10." << (1 + i / 250) << "." << (i % 250) << ".0";
    addr.SetBase(net.str().c_str(), "255.255.255.0");
    access_if[i] = addr.Assign(access[i]);
  }

  const double wire = (kPacketBytes + kPppBytes) / kPacketBytes;
  PointToPointHelper neck;
  neck.SetDeviceAttribute("DataRate", DataRateValue(DataRate(static_cast<uint64_t>(a.schedule[0].second * 1e6 * wire))));
  neck.SetChannelAttribute("Delay", TimeValue(MicroSeconds(static_cast<int64_t>(std::llround(d_b * 1e3)))));
  neck.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize",
                QueueSizeValue(QueueSize(QueueSizeUnit::BYTES, static_cast<uint32_t>(std::min(
                                                                   a.buffer_bytes * wire, 4.0e9)))));
  NetDeviceContainer bottleneck = neck.Install(routers.Get(0), routers.Get(1));
  auto fwd = DynamicCast<PointToPointNetDevice>(bottleneck.Get(0));
  auto rev = DynamicCast<PointToPointNetDevice>(bottleneck.Get(1));
  rev->SetDataRate(DataRate(static_cast<uint64_t>(kAccessBps)));  // ACK direction: never a bottleneck
  rev->SetQueue(CreateObjectWithAttributes<DropTailQueue<Packet>>("MaxSize", QueueSizeValue(QueueSize(big_queue))));
  addr.SetBase("10.250.0.0", "255.255.255.0");
  addr.Assign(bottleneck);

  fast.SetChannelAttribute("Delay", TimeValue(Seconds(0)));
  NetDeviceContainer last = fast.Install(routers.Get(1), receiver.Get(0));
  addr.SetBase("10.251.0.0", "255.255.255.0");
  Ipv4InterfaceContainer last_if = addr.Assign(last);
  Ipv4GlobalRoutingHelper::PopulateRoutingTables();

  // No traffic-control qdisc anywhere: the device queues are the only queues (Ipv4AddressHelper
  // installed the default pfifo_fast on every device).
  TrafficControlHelper tch;
  for (size_t i = 0; i < n; ++i) tch.Uninstall(access[i]);
  tch.Uninstall(bottleneck);
  tch.Uninstall(last);

  // Random loss before the bottleneck queue, on R1's side of every access link.
  for (size_t i = 0; i < n; ++i) {
    auto dev = DynamicCast<PointToPointNetDevice>(access[i].Get(1));
    if (a.loss > 0) {
      auto em = CreateObject<RateErrorModel>();
      em->SetUnit(RateErrorModel::ERROR_UNIT_PACKET);
      em->SetRate(a.loss);
      em->AssignStreams(1000 + i);
      dev->SetReceiveErrorModel(em);
    }
    dev->TraceConnectWithoutContext("PhyRxDrop", MakeCallback(&OnRandomLoss));
    access[i].Get(0)->TraceConnectWithoutContext("PhyTxBegin", MakeBoundCallback(&OnSenderTx, static_cast<uint32_t>(i)));
  }
  g_neck_if = routers.Get(0)->GetObject<Ipv4>()->GetInterfaceForDevice(fwd);
  if (!routers.Get(0)->GetObject<Ipv4L3Protocol>()->TraceConnectWithoutContext("Tx", MakeCallback(&OnRouterIpTx))) {
    Fail("internal: cannot trace R1's IP layer");
  }
  g_bottleneck_queue = fwd->GetQueue();
  g_bottleneck_queue->TraceConnectWithoutContext("Enqueue", MakeCallback(&OnEnqueue));
  g_bottleneck_queue->TraceConnectWithoutContext("Dequeue", MakeCallback(&OnDequeue));
  g_bottleneck_queue->TraceConnectWithoutContext("Drop", MakeCallback(&OnQueueDrop));
  last.Get(1)->TraceConnectWithoutContext("PhyRxEnd", MakeCallback(&OnReceiverRx));

  for (size_t i = 1; i < a.schedule.size(); ++i) {
    DataRate r(static_cast<uint64_t>(a.schedule[i].second * 1e6 * wire));
    Simulator::Schedule(Seconds(a.schedule[i].first), [fwd, r]() { fwd->SetDataRate(r); });
  }

  g_stats.resize(n);
  Ipv4Address dst = last_if.GetAddress(1);
  for (size_t i = 0; i < n; ++i) {
    const FlowArg& f = a.flows[i];
    g_stats[i].bins.assign(std::max<size_t>(1, std::ceil((f.stop_s - f.start_s) / a.bin_s - 1e-9)), 0.0);
    uint16_t port = kPortBase + i;
    const char* factory = f.Tcp() ? "ns3::TcpSocketFactory" : "ns3::UdpSocketFactory";
    PacketSinkHelper sink(factory, InetSocketAddress(Ipv4Address::GetAny(), port));
    ApplicationContainer sa = sink.Install(receiver.Get(0));
    sa.Start(Seconds(0));
    sa.Get(0)->TraceConnectWithoutContext("Rx", MakeBoundCallback(&OnAppRx, static_cast<uint32_t>(i)));
    if (f.Tcp()) {
      BulkSendHelper bulk("ns3::TcpSocketFactory", InetSocketAddress(dst, port));
      bulk.SetAttribute("MaxBytes", UintegerValue(0));
      bulk.SetAttribute("SendSize", UintegerValue(kTcpPayload * 8));
      ApplicationContainer app = bulk.Install(senders.Get(i));
      app.Start(Seconds(f.start_s));
      app.Stop(Seconds(f.stop_s));
      auto bs = DynamicCast<BulkSendApplication>(app.Get(0));
      Simulator::Schedule(Seconds(f.start_s) + NanoSeconds(1), &HookSocket, static_cast<uint32_t>(i), bs);
    } else {
      auto cbr = CreateObject<CbrApp>();
      cbr->Configure(InetSocketAddress(dst, port), f.fixed_mbps, f.start_s, f.stop_s);
      senders.Get(i)->AddApplication(cbr);
      cbr->SetStartTime(Seconds(f.start_s));
      cbr->SetStopTime(Seconds(f.stop_s));
    }
  }

  Simulator::Stop(Seconds(a.duration + 2.0 * max_rtt / 1e3 + 0.5));
  Simulator::Run();
  for (const InFlight& t : g_tx) {
    if (t.at_neck && t.t_enq < 0) {
      g_stats[t.flow].queue_drops++;
    } else if (!t.done) {
      g_stats[t.flow].in_network_at_end++;  // sent after stop_s, still on its way at the end
    }
  }

  // ---------------------------------------------------------------------------- output
  json out;
  out["program"] = "ns3-dumbbell";
  out["ns3_version"] = "3.37";
  out["packet_bytes"] = kPacketBytes;
  out["bin_s"] = a.bin_s;
  out["seed"] = a.seed;
  out["duration_s"] = a.duration;
  out["buffer_bytes"] = a.buffer_bytes;
  out["loss_prob"] = a.loss;
  out["schedule"] = json::array();
  for (const auto& s : a.schedule) out["schedule"].push_back({s.first, s.second});
  out["bottleneck_delay_ms"] = d_b;
  out["max_queue_bytes"] = static_cast<double>(g_max_queue_bytes) / wire;  // in IP bytes
  std::vector<double> all_owd, all_q;
  uint64_t sent = 0, lost = 0, qd = 0, rl = 0;
  double delivered = 0;
  json flows = json::array();
  for (size_t i = 0; i < n; ++i) {
    const FlowArg& f = a.flows[i];
    FlowStats& s = g_stats[i];
    double payload = f.Tcp() ? kTcpPayload : kUdpPayload;
    double scale = kPacketBytes / payload;  // app bytes -> IP bytes of full-size packets
    double active = f.stop_s - f.start_s;
    json j;
    j["flow"] = i;
    j["controller"] = f.Tcp() ? f.controller : "fixed:" + json(f.fixed_mbps).dump();
    j["ns3_type"] = f.controller == "reno"    ? "TcpNewReno"
                    : f.controller == "cubic" ? "TcpCubic"
                    : f.controller == "bbr"   ? "TcpBbr"
                                              : "UdpCbr";
    j["rtt_ms"] = f.rtt_ms;
    j["start_s"] = f.start_s;
    j["stop_s"] = f.stop_s;
    j["active_s"] = active;
    j["access_delay_ms"] = f.rtt_ms / 2 - d_b;
    j["payload_bytes"] = payload;
    j["max_data_ip_bytes"] = s.max_ip_bytes;
    j["app_bytes"] = s.app_bytes_window;
    j["app_bytes_total"] = s.app_bytes_total;
    j["throughput_mbps"] = s.app_bytes_window * scale * 8 / active / 1e6;
    j["goodput_mbps"] = s.app_bytes_window * 8.0 / active / 1e6;
    j["sent_packets"] = s.sent_pkts;
    j["sent_bytes"] = s.sent_bytes;
    j["queue_drops"] = s.queue_drops;
    j["random_losses"] = s.random_losses;
    j["in_network_at_end"] = s.in_network_at_end;
    uint64_t l = s.queue_drops + s.random_losses;
    j["loss"] = s.sent_pkts ? static_cast<double>(l) / s.sent_pkts : 0.0;
    j["owd"] = DelayStats(s.owd);
    j["qdelay"] = DelayStats(s.qdelay);
    j["rto"] = s.rto;
    j["rto_times_s"] = s.rto_times;
    json bins = json::array();
    for (double b : s.bins) bins.push_back(b * scale);
    j["bins_bytes"] = bins;  // IP-equivalent bytes per bin_s from start_s
    flows.push_back(j);
    all_owd.insert(all_owd.end(), s.owd.begin(), s.owd.end());
    all_q.insert(all_q.end(), s.qdelay.begin(), s.qdelay.end());
    sent += s.sent_pkts;
    lost += l;
    qd += s.queue_drops;
    rl += s.random_losses;
    delivered += s.app_bytes_window * scale;
  }
  out["flows"] = flows;
  double busy = BusySeconds(a.flows);
  json link;
  link["busy_s"] = busy;
  link["throughput_mbps"] = delivered * 8 / busy / 1e6;
  link["owd"] = DelayStats(all_owd);
  link["qdelay"] = DelayStats(all_q);
  link["sent_packets"] = sent;
  link["queue_drops"] = qd;
  link["random_losses"] = rl;
  link["loss"] = sent ? static_cast<double>(lost) / sent : 0.0;
  out["link"] = link;
  out["wall_s"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  Simulator::Destroy();

  std::ofstream f(a.out);
  if (!f) Fail("--out: cannot write '" + a.out + "'");
  f << out.dump(1) << "\n";
  if (!f.good()) Fail("--out: write to '" + a.out + "' failed");
  return 0;
}
