// A BBR-like rate controller (BBR v1 as in Linux tcp_bbr.c and the BBR paper), used as a
// comparison baseline and as the fallback when no policy is available.
//
// It is a pure state machine: feed it one RateSample per ACK and OnLoss() per packet declared
// lost, and read pacing_rate()/cwnd(). Losses do not change the model (v1), but they do
// change the window, as tcp_bbr.c's bbr_set_cwnd_to_recover_or_restore does: the window gives
// back every lost byte, and entering recovery holds it to packet conservation for a round. The sender's ACK thread owns it and publishes the outputs
// through atomics, so pacing never waits on it.
#pragma once

#include <algorithm>
#include <cstdint>

namespace jaxcc {

struct RateSample {
  uint64_t now_ns = 0;
  double rtt_s = 0;             // RTT of the acked packet
  double delivered = 0;         // bytes delivered (acked) so far, including this packet
  double prior_delivered = 0;   // `delivered` when the acked packet was sent
  uint64_t prior_time_ns = 0;   // time `prior_delivered` was reached
  uint64_t send_ns = 0;         // when the acked packet was sent
  double inflight = 0;          // bytes in flight after this ACK
};

class BbrController {
 public:
  enum class Mode { kStartup, kDrain, kProbeBw, kProbeRtt };

  // 2/ln(2): the smallest gain that doubles the sending rate each round, like slow start.
  static constexpr double kHighGain = 2.885;
  // Probe 25% above the estimate for a round, drain the queue that made for a round, cruise
  // for six: the eight-phase cycle spends 1/8 of the time probing, as in tcp_bbr.c.
  static constexpr double kCycle[8] = {1.25, 0.75, 1, 1, 1, 1, 1, 1};
  static constexpr int kBwWindowRounds = 10;        // max-filter length for bottleneck bw
  static constexpr uint64_t kMinRttWindowNs = 10'000'000'000ull;  // min-RTT validity: 10 s
  static constexpr uint64_t kProbeRttNs = 200'000'000ull;         // hold 4 packets for 200 ms
  static constexpr double kCwndGain = 2.0;          // room for delayed/aggregated ACKs
  // The pipe is full when three rounds in a row fail to grow bw by 25%.
  static constexpr double kFullBwThresh = 1.25;
  static constexpr int kFullBwRounds = 3;
  // Pace ~1% below the estimated bw, to reduce the queue at the bottleneck
  // (tcp_bbr.c bbr_pacing_margin_percent, Linux >= 4.20; jaxcc/baselines/bbr.py PACING_MARGIN).
  static constexpr double kPacingMargin = 0.01;

  BbrController(double mss, double initial_rate_bps, uint64_t seed = 1);

  void OnAck(const RateSample& rs);
  // `bytes` declared lost at `now_ns` with `inflight` bytes left in flight (loss excluded).
  void OnLoss(double bytes, double inflight, uint64_t now_ns);

  double pacing_rate() const { return pacing_rate_; }  // bytes/s
  // bytes; PROBE_RTT caps it at 4 packets without losing the window it restores (bbr.py bbr_cwnd)
  double cwnd() const { return mode_ == Mode::kProbeRtt ? std::min(cwnd_, 4 * mss_) : cwnd_; }
  bool in_recovery() const { return in_recovery_; }
  Mode mode() const { return mode_; }
  double max_bw() const { return MaxBw(); }
  double min_rtt_s() const { return min_rtt_s_; }
  uint64_t round_count() const { return round_count_; }
  double pacing_gain() const { return pacing_gain_; }

 private:
  double MaxBw() const;
  double Bdp(double gain) const;
  void UpdateBw(const RateSample& rs);
  void UpdateMinRtt(const RateSample& rs);
  void CheckFullPipe();
  void AdvanceCycle(const RateSample& rs);
  void SetOutputs(const RateSample& rs);

  double mss_;
  Mode mode_ = Mode::kStartup;
  double pacing_gain_ = kHighGain, cwnd_gain_ = kHighGain;
  double pacing_rate_, cwnd_;
  // Windowed max bw: one maximum per round in a ring of kBwWindowRounds slots.
  double bw_ring_[kBwWindowRounds] = {0};
  uint64_t round_count_ = 0;
  double next_round_delivered_ = 0;
  bool round_start_ = false;
  double full_bw_ = 0;
  int full_bw_count_ = 0;
  bool filled_pipe_ = false;
  double min_rtt_s_ = 0;  // 0: no sample yet
  uint64_t min_rtt_stamp_ns_ = 0;
  int cycle_idx_ = 0;
  uint64_t cycle_stamp_ns_ = 0;
  uint64_t probe_rtt_done_ns_ = 0;
  bool probe_rtt_round_done_ = false;
  uint64_t seed_;
  // Loss recovery (TCP_CA_Recovery as tcp_bbr.c sees it): entered on a loss, left when a
  // packet sent after it began is ACKed (everything outstanding then is ACKed or lost).
  bool in_recovery_ = false, packet_conservation_ = false;
  uint64_t recovery_start_ns_ = 0;
  double prior_cwnd_ = 0, last_delivered_ = 0;
};

}  // namespace jaxcc
