// BBR against a tiny packet-level bottleneck simulation: it must find the bottleneck rate,
// keep the queue small in steady state, and go through its modes.
#include "bbr.h"

#include <gtest/gtest.h>

#include <deque>

using jaxcc::BbrController;
using jaxcc::RateSample;

namespace {

struct SimResult {
  double max_bw, min_rtt, goodput, p_queue_ms_last;
  bool saw_drain, saw_probe_bw, saw_probe_rtt;
};

// Bottleneck `bw` bytes/s, propagation RTT `rtt` s, drop-tail buffer `buf` bytes.
SimResult Simulate(double bw, double rtt, double buf, double seconds) {
  const double mss = 1500, dt = 20e-6;
  BbrController bbr(mss, 10 * mss / rtt, 3);
  struct Pkt {
    double send_t, prior_delivered, ack_t;
    uint64_t prior_time_ns;
  };
  std::deque<Pkt> queue, returning;  // at the bottleneck; on the way back (with ack time)
  double queue_bytes = 0, next_send = 0, serve_until = 0, delivered = 0, inflight = 0;
  uint64_t delivered_time_ns = 0;
  SimResult r{};
  double delivered_late = 0, qsum = 0;
  int qn = 0;
  for (double t = 0; t < seconds; t += dt) {
    const uint64_t now_ns = static_cast<uint64_t>(t * 1e9);
    // Send while the pacer allows and the window has room.
    while (next_send <= t && inflight + mss <= bbr.cwnd()) {
      if (queue_bytes + mss <= buf) {
        queue.push_back({t, delivered, 0, delivered_time_ns});
        queue_bytes += mss;
      }  // else dropped; BBR v1 does not react to loss, the ACK never comes
      inflight += mss;
      next_send += mss / bbr.pacing_rate();
      if (next_send < t) next_send = t;
    }
    if (next_send < t) next_send = t;  // window-limited: no credit builds up
    // Serve the queue.
    while (!queue.empty() && serve_until <= t) {
      Pkt p = queue.front();
      queue.pop_front();
      queue_bytes -= mss;
      serve_until = std::max(serve_until, p.send_t) + mss / bw;
      p.ack_t = serve_until + rtt;
      returning.push_back(p);
    }
    while (!returning.empty() && returning.front().ack_t <= t) {
      Pkt p = returning.front();
      returning.pop_front();
      delivered += mss;
      delivered_time_ns = now_ns;
      inflight -= mss;
      RateSample rs;
      rs.now_ns = now_ns;
      rs.rtt_s = t - p.send_t;
      rs.delivered = delivered;
      rs.prior_delivered = p.prior_delivered;
      rs.prior_time_ns = p.prior_time_ns ? p.prior_time_ns : static_cast<uint64_t>(p.send_t * 1e9);
      rs.send_ns = static_cast<uint64_t>(p.send_t * 1e9);
      rs.inflight = inflight;
      bbr.OnAck(rs);
      if (t > seconds - 2) delivered_late += mss;
    }
    // Inflight of dropped packets never returns; BBR's estimate of inflight would come
    // from loss detection in the real sender. Approximate it here by bounding the phantom.
    const double real = queue_bytes + mss * returning.size();
    if (inflight > real + 4 * mss) inflight = real;
    if (t > seconds - 2) {
      qsum += queue_bytes / bw * 1e3;
      ++qn;
    }
    r.saw_drain |= bbr.mode() == BbrController::Mode::kDrain;
    r.saw_probe_bw |= bbr.mode() == BbrController::Mode::kProbeBw;
    r.saw_probe_rtt |= bbr.mode() == BbrController::Mode::kProbeRtt;
  }
  r.max_bw = bbr.max_bw();
  r.min_rtt = bbr.min_rtt_s();
  r.goodput = delivered_late / 2;
  r.p_queue_ms_last = qn ? qsum / qn : 0;
  return r;
}

TEST(Bbr, FindsBottleneckAndKeepsQueueSmall) {
  const double bw = 12e6 / 8, rtt = 0.04;
  SimResult r = Simulate(bw, rtt, 375000, 12.0);
  EXPECT_NEAR(r.max_bw, bw, 0.15 * bw);
  EXPECT_NEAR(r.min_rtt, rtt, 0.005);
  EXPECT_GT(r.goodput, 0.85 * bw);
  EXPECT_LT(r.p_queue_ms_last, 40.0);  // about one BDP at most (cwnd gain 2)
  EXPECT_TRUE(r.saw_drain);
  EXPECT_TRUE(r.saw_probe_bw);
  EXPECT_TRUE(r.saw_probe_rtt);  // the 10 s min-RTT window expired once
}

TEST(Bbr, StartupGrowsExponentially) {
  BbrController b(1500, 1e5);
  EXPECT_EQ(b.mode(), BbrController::Mode::kStartup);
  EXPECT_DOUBLE_EQ(b.pacing_gain(), BbrController::kHighGain);
  EXPECT_DOUBLE_EQ(b.cwnd(), 15000);
}

}  // namespace
