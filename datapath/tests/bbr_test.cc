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
  int sent, drops;
  double cruise_rate_over_bw;  // pacing rate / max bw at the last ACK in a gain-1 phase
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
        inflight += mss;
      } else {  // dropped: reported at once (the sender's loss detector, without its delay)
        ++r.drops;
        bbr.OnLoss(mss, inflight, now_ns);
      }
      ++r.sent;
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
      if (bbr.mode() == BbrController::Mode::kProbeBw && bbr.pacing_gain() == 1.0)
        r.cruise_rate_over_bw = bbr.pacing_rate() / bbr.max_bw();
      if (t > seconds - 2) delivered_late += mss;
    }
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

// tcp_bbr.c paces ~1% below the estimate (bbr_pacing_margin_percent), so a flow cruising at
// gain 1 drains what its probes queued; jaxcc/baselines/bbr.py does the same.
TEST(Bbr, CruisesOnePercentBelowItsBandwidthEstimate) {
  SimResult r = Simulate(12e6 / 8, 0.04, 375000, 6.0);
  EXPECT_NEAR(r.cruise_rate_over_bw, 0.99, 1e-9);
}

// bbr_set_cwnd_to_recover_or_restore: a loss starts recovery with cwnd = packets in flight,
// packet conservation (cwnd >= inflight + acked) for a round, every further lost byte taken
// off, and the saved window restored when a packet sent after the loss is ACKed.
TEST(Bbr, LossConservesPacketsThenRestoresTheWindow) {
  const double mss = 1500;
  BbrController b(mss, 1e6);
  RateSample rs;
  double delivered = 0;
  uint64_t t = 1'000'000'000;
  for (int i = 0; i < 20; ++i) {  // 20 ACKs in startup: the window grows by each ACK's bytes
    delivered += mss;
    rs.now_ns = t += 1'000'000;
    rs.rtt_s = 0.05;
    rs.delivered = delivered;
    rs.prior_delivered = delivered - 10 * mss;
    rs.prior_time_ns = t - 50'000'000;
    rs.send_ns = t - 50'000'000;
    rs.inflight = 20 * mss;
    b.OnAck(rs);
  }
  const double before = b.cwnd();
  EXPECT_DOUBLE_EQ(before, 30 * mss);  // 10 initial + 20 ACKed (target 2.885 BDP: 31.9)
  const uint64_t loss_t = t += 1'000'000;
  b.OnLoss(mss, 18 * mss, loss_t);
  EXPECT_TRUE(b.in_recovery());
  EXPECT_DOUBLE_EQ(b.cwnd(), 18 * mss);
  b.OnLoss(mss, 17 * mss, t += 1'000'000);  // a second loss in the same recovery: -1 packet
  EXPECT_DOUBLE_EQ(b.cwnd(), 17 * mss);
  // an ACK of a packet sent before the loss, 12 packets left in flight: conservation keeps
  // cwnd at max(cwnd, inflight + acked) = 17 packets
  delivered += mss;
  rs.now_ns = t += 1'000'000;
  rs.delivered = delivered;
  rs.prior_delivered = delivered - 10 * mss;
  rs.send_ns = loss_t - 1000;
  rs.inflight = 12 * mss;
  b.OnAck(rs);
  EXPECT_TRUE(b.in_recovery());
  EXPECT_DOUBLE_EQ(b.cwnd(), 17 * mss);
  // a packet sent after the loss is ACKed: recovery ends and the saved 30 packets come back
  delivered += mss;
  rs.now_ns = t += 1'000'000;
  rs.delivered = delivered;
  rs.send_ns = loss_t + 1000;
  b.OnAck(rs);
  EXPECT_FALSE(b.in_recovery());
  EXPECT_GE(b.cwnd(), before);
}

}  // namespace
