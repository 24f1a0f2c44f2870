// Monitor-interval (MI) statistics: what the sender learned during one MI.
//
// A line-by-line twin of jaxcc/envs/mi.py (MIStats, RunningStats and their derived values):
// plain sums, mins, maxes and copies, so the features computed from them in the datapath
// are the ones the policy saw in training. The per-packet update (AddSample) is mi.py's
// mi_add_sample with weight = packet bytes, sample = the packet's RTT and time = its ACK's
// arrival since the MI started. Checked by the shared vectors (tests/vectors/features_*.json).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace jaxcc {

// jaxcc.sim.core.BIG: "no sample yet" for minima (finite so arithmetic never makes inf-inf).
constexpr double kBig = 1e30;

struct MonitorStats {
  double duration = 0;   // s, length of the MI
  double active = 0;     // s the flow was active (the datapath's flow always is: = duration)
  double sent = 0;       // bytes sent
  double acked = 0;      // bytes whose ACK arrived
  double lost = 0;       // bytes declared lost
  double rtt_wsum = 0;   // sum of r*w (s*bytes)
  double rtt_min = kBig; // s
  double rtt_max = 0;    // s
  double rtt_first = 0;  // s, first sample of the MI
  double rtt_last = 0;   // s, last sample of the MI
  double n_samples = 0;  // number of samples (ACKed packets)
  double ls_w = 0, ls_wt = 0, ls_wtt = 0, ls_wr = 0, ls_wtr = 0;  // least-squares sums
  // Every RTT sample of the MI, kept only when `keep_rtts` is set (feature sets that need a
  // percentile, FeatureFn::NeedsRttSamples: DeepCC's p95 delay). Not part of mi.py's sums.
  bool keep_rtts = false;
  std::vector<double> rtts;

  // mi_add_sample: one RTT sample r (s) of weight w (bytes) at time t (s since MI start).
  void AddSample(double w, double r, double t) {
    if (!(w > 0)) return;
    if (n_samples == 0) rtt_first = r;
    acked += w;
    rtt_wsum += w * r;
    rtt_min = std::min(rtt_min, r);
    rtt_max = std::max(rtt_max, r);
    rtt_last = r;
    n_samples += 1;
    ls_w += w;
    ls_wt += w * t;
    ls_wtt += w * t * t;
    ls_wr += w * r;
    ls_wtr += w * t * r;
    if (keep_rtts) rtts.push_back(r);
  }

  bool HasRtt() const { return n_samples > 0; }
  double RttMean() const { return acked > 0 ? rtt_wsum / std::max(acked, 1e-30) : 0.0; }
  double SendRate() const { return sent / std::max(duration, 1e-30); }
  double DeliveryRate() const { return acked / std::max(duration, 1e-30); }
  double LossRate() const {
    const double known = acked + lost;
    return known > 0 ? lost / std::max(known, 1e-30) : 0.0;
  }
  // Weighted least-squares slope of RTT against time (s/s); 0 when undefined.
  double RttSlope() const {
    const double den = ls_w * ls_wtt - ls_wt * ls_wt;
    const double num = ls_w * ls_wtr - ls_wt * ls_wr;
    const bool ok = den > 1e-30 * std::max(ls_w * ls_w, 1.0);
    return ok ? num / den : 0.0;
  }
};

// Nearest-rank percentile (q in (0, 100]) of `v`: the ceil(q/100 * n)-th smallest value; 0
// when `v` is empty. Reorders `v`.
inline double NearestRankPercentile(std::vector<double>* v, double q) {
  if (v->empty()) return 0.0;
  const double n = static_cast<double>(v->size());
  size_t rank = static_cast<size_t>(std::ceil(q / 100.0 * n));
  rank = std::min(std::max<size_t>(rank, 1), v->size());
  std::nth_element(v->begin(), v->begin() + (rank - 1), v->end());
  return (*v)[rank - 1];
}

// Across MIs (mi.py RunningStats); Update() with each finished MI before computing features.
struct RunningStats {
  double min_rtt = kBig;       // s
  double min_mean_rtt = kBig;  // s, min over MIs with samples of the MI mean RTT
  double max_delivery = 0;     // bytes/s

  void Update(const MonitorStats& m) {
    min_rtt = std::min(min_rtt, m.rtt_min);
    if (m.HasRtt()) min_mean_rtt = std::min(min_mean_rtt, m.RttMean());
    max_delivery = std::max(max_delivery, m.DeliveryRate());
  }
  double KnownMinRtt(double fallback) const { return min_rtt < kBig * 0.5 ? min_rtt : fallback; }
};

}  // namespace jaxcc
