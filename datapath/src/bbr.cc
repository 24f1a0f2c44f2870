#include "bbr.h"

#include <algorithm>

namespace jaxcc {

constexpr double BbrController::kCycle[8];

BbrController::BbrController(double mss, double initial_rate_bps, uint64_t seed)
    : mss_(mss), pacing_rate_(initial_rate_bps), cwnd_(10 * mss), seed_(seed) {}

double BbrController::MaxBw() const {
  double m = 0;
  for (double b : bw_ring_) m = std::max(m, b);
  return m;
}

double BbrController::Bdp(double gain) const {
  // Without a min-RTT sample there is no BDP; keep the initial window (RFC 6928's 10 MSS).
  if (min_rtt_s_ <= 0 || MaxBw() <= 0) return 10 * mss_;
  return gain * MaxBw() * min_rtt_s_;
}

void BbrController::UpdateBw(const RateSample& rs) {
  // Round counting: a round ends when a packet sent after the previous round ended is acked.
  round_start_ = false;
  if (rs.prior_delivered >= next_round_delivered_) {
    next_round_delivered_ = rs.delivered;
    ++round_count_;
    round_start_ = true;
    bw_ring_[round_count_ % kBwWindowRounds] = 0;  // the slot now holds this new round
    packet_conservation_ = false;                   // conservation lasts one round (tcp_bbr.c)
  }
  // Delivery rate: bytes delivered between this packet's send and its ACK over the longer
  // of the send and ACK intervals (draft-cheng-iccrg-delivery-rate-estimation), so ACK
  // compression cannot inflate the estimate.
  const double ack_elapsed = rs.now_ns > rs.prior_time_ns ? (rs.now_ns - rs.prior_time_ns) * 1e-9 : 0;
  const double send_elapsed = rs.now_ns > rs.send_ns ? (rs.now_ns - rs.send_ns) * 1e-9 : 0;
  const double interval = std::max(ack_elapsed, send_elapsed);
  if (interval <= 0 || rs.delivered <= rs.prior_delivered) return;
  const double bw = (rs.delivered - rs.prior_delivered) / interval;
  double& slot = bw_ring_[round_count_ % kBwWindowRounds];
  slot = std::max(slot, bw);
}

void BbrController::UpdateMinRtt(const RateSample& rs) {
  if (rs.rtt_s <= 0) return;
  const bool expired = min_rtt_s_ > 0 && rs.now_ns > min_rtt_stamp_ns_ + kMinRttWindowNs;
  // As tcp_bbr.c: take a lower sample, or any sample once the old minimum has expired.
  if (min_rtt_s_ <= 0 || rs.rtt_s <= min_rtt_s_ || expired) {
    min_rtt_s_ = rs.rtt_s;
    min_rtt_stamp_ns_ = rs.now_ns;
  }
  // The estimate is 10 s old: drain the queue for a moment so the next samples see the
  // propagation delay again (PROBE_RTT).
  if (expired && mode_ != Mode::kProbeRtt) {
    mode_ = Mode::kProbeRtt;
    pacing_gain_ = 1.0;
    probe_rtt_done_ns_ = 0;
  }
  if (mode_ == Mode::kProbeRtt) {
    if (probe_rtt_done_ns_ == 0 && rs.inflight <= 4 * mss_) {
      probe_rtt_done_ns_ = rs.now_ns + kProbeRttNs;
      probe_rtt_round_done_ = false;
      next_round_delivered_ = rs.delivered;
    } else if (probe_rtt_done_ns_ != 0) {
      if (round_start_) probe_rtt_round_done_ = true;
      if (probe_rtt_round_done_ && rs.now_ns >= probe_rtt_done_ns_) {
        min_rtt_stamp_ns_ = rs.now_ns;  // the samples seen while draining refreshed min RTT
        if (filled_pipe_) {
          mode_ = Mode::kProbeBw;
          cycle_idx_ = 2;
          cycle_stamp_ns_ = rs.now_ns;
          pacing_gain_ = kCycle[cycle_idx_];
          cwnd_gain_ = kCwndGain;
        } else {
          mode_ = Mode::kStartup;
          pacing_gain_ = cwnd_gain_ = kHighGain;
        }
      }
    }
  }
}

void BbrController::CheckFullPipe() {
  if (filled_pipe_ || !round_start_) return;
  const double bw = MaxBw();
  if (bw >= full_bw_ * kFullBwThresh) {
    full_bw_ = bw;
    full_bw_count_ = 0;
    return;
  }
  if (++full_bw_count_ >= kFullBwRounds) filled_pipe_ = true;
}

void BbrController::AdvanceCycle(const RateSample& rs) {
  const double elapsed = (rs.now_ns - cycle_stamp_ns_) * 1e-9;
  bool advance = elapsed > min_rtt_s_;
  const double gain = kCycle[cycle_idx_];
  // Stay in the probing phase until it actually put 1.25 BDP in flight (or saw it could
  // not), and leave the draining phase early once the queue it targets is gone.
  if (gain > 1.0 && rs.inflight < Bdp(gain)) advance = false;
  if (gain < 1.0 && rs.inflight <= Bdp(1.0)) advance = true;
  if (advance) {
    cycle_idx_ = (cycle_idx_ + 1) % 8;
    cycle_stamp_ns_ = rs.now_ns;
  }
  pacing_gain_ = kCycle[cycle_idx_];
}

void BbrController::SetOutputs(const RateSample& rs) {
  const double bw = MaxBw();
  if (bw > 0) {
    const double rate = pacing_gain_ * bw * (1.0 - kPacingMargin);
    // In startup never lower the rate: early samples are noisy and the pipe is not full yet.
    pacing_rate_ = (mode_ == Mode::kStartup && !filled_pipe_) ? std::max(pacing_rate_, rate) : rate;
  }
  // bbr_set_cwnd: towards the target window by the bytes this ACK delivered (three extra
  // packets keep the pipe full across delayed ACKs, tcp_bbr.c's quantum); while conserving
  // packets (the first round of recovery) no more than what is in flight plus this ACK.
  const double acked = std::max(rs.delivered - last_delivered_, 0.0);
  last_delivered_ = rs.delivered;
  if (in_recovery_ && rs.send_ns >= recovery_start_ns_) {  // left recovery: restore the window
    in_recovery_ = packet_conservation_ = false;
    cwnd_ = std::max(cwnd_, prior_cwnd_);
  }
  if (packet_conservation_) {
    cwnd_ = std::max(cwnd_, rs.inflight + acked);
    return;
  }
  const double target = Bdp(cwnd_gain_) + 3 * mss_;
  if (filled_pipe_) {
    cwnd_ = std::min(cwnd_ + acked, target);
  } else if (cwnd_ < target) {
    cwnd_ += acked;
  }
  cwnd_ = std::max(cwnd_, 4 * mss_);
}

void BbrController::OnLoss(double bytes, double inflight, uint64_t now_ns) {
  // bbr_set_cwnd_to_recover_or_restore: cwnd -= losses; entering recovery saves the window
  // (bbr_save_cwnd), starts a round and conserves packets: cwnd = packets in flight.
  if (!in_recovery_) {
    prior_cwnd_ = mode_ == Mode::kProbeRtt ? std::max(prior_cwnd_, cwnd_) : cwnd_;
    in_recovery_ = packet_conservation_ = true;
    recovery_start_ns_ = now_ns;
    next_round_delivered_ = last_delivered_;
    cwnd_ = std::max(inflight, mss_);
  } else {
    cwnd_ = std::max(cwnd_ - bytes, mss_);
  }
}

void BbrController::OnAck(const RateSample& rs) {
  UpdateBw(rs);
  CheckFullPipe();
  if (mode_ == Mode::kStartup && filled_pipe_) {
    mode_ = Mode::kDrain;
    pacing_gain_ = 1.0 / kHighGain;  // drain the queue startup built, in about one round
    cwnd_gain_ = kHighGain;
  }
  if (mode_ == Mode::kDrain && rs.inflight <= Bdp(1.0)) {
    mode_ = Mode::kProbeBw;
    cwnd_gain_ = kCwndGain;
    // Start at a pseudo-random phase other than the draining one, as tcp_bbr.c does, so
    // competing flows do not probe in lockstep.
    seed_ = seed_ * 6364136223846793005ull + 1442695040888963407ull;
    cycle_idx_ = static_cast<int>((seed_ >> 33) % 7);
    if (cycle_idx_ >= 1) ++cycle_idx_;
    cycle_stamp_ns_ = rs.now_ns;
    pacing_gain_ = kCycle[cycle_idx_];
  }
  if (mode_ == Mode::kProbeBw) AdvanceCycle(rs);
  UpdateMinRtt(rs);
  SetOutputs(rs);
}

}  // namespace jaxcc
