#include "mi_features.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <nlohmann/json.hpp>

#include "policy.h"

namespace jaxcc {
namespace {

using json = nlohmann::json;

double Param(const json& f, const char* key, double def) {
  if (!f.contains(key)) return def;
  if (!f[key].is_number() || !std::isfinite(f[key].get<double>()))
    throw PolicyError(std::string("policy features: '") + key + "' must be a finite number");
  return f[key].get<double>();
}

// A list of finite numbers; `n` > 0 also fixes its length.
std::vector<double> ParamList(const json& f, const char* key, std::vector<double> def, size_t n = 0) {
  if (!f.contains(key)) return def;
  const json& v = f[key];
  const std::string what = std::string("policy features: '") + key + "' must be a list of " +
                           (n ? std::to_string(n) + " " : "") + "finite numbers";
  if (!v.is_array() || v.empty() || (n && v.size() != n)) throw PolicyError(what);
  std::vector<double> out;
  for (const json& x : v) {
    if (!x.is_number() || !std::isfinite(x.get<double>())) throw PolicyError(what);
    out.push_back(x.get<double>());
  }
  return out;
}

double Positive(const json& f, const char* key, double def) {
  const double v = Param(f, key, def);
  if (!(v > 0)) throw PolicyError(std::string("policy features: '") + key + "' must be > 0");
  return v;
}

bool SameTable(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::fabs(a[i] - b[i]) > 1e-6 * std::max(std::fabs(a[i]), std::fabs(b[i])) + 1e-9) return false;
  return true;
}

// Shortest %g text of a number ("-0.3", "2").
std::string G(double x) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", x);
  return buf;
}

std::string Join(const std::vector<double>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

bool Discrete(const Policy& p) { return p.head().type == HeadType::kDiscrete || p.head().type == HeadType::kQValues; }

double ClampRate(const Policy& p, double rate) {
  const double lo = p.action().min_mbps * kBytesPerMbit, hi = p.action().max_mbps * kBytesPerMbit;
  if (!(rate >= lo)) return lo;  // NaN falls to the floor, as in Policy::MapAction
  return std::min(rate, hi);
}

std::vector<float> EmptyFrom(const json& f, std::vector<float> def) {
  if (!f.contains("empty")) return def;
  const json& e = f["empty"];
  if (!e.is_array() || e.size() != def.size())
    throw PolicyError("policy features: 'empty' must list " + std::to_string(def.size()) + " numbers");
  std::vector<float> out;
  for (const json& v : e) {
    if (!v.is_number()) throw PolicyError("policy features: 'empty' must list numbers");
    out.push_back(v.get<float>());
  }
  return out;
}

// Python twin: jaxcc/senders/aurora_v1.py (the simulator's policy:FILE sender), over
// jaxcc/envs/aurora.py `features`: (latency gradient, latency ratio, sending ratio).
// aurora_v2 (`loss_level`; jaxcc/senders/aurora_v2.py) appends the MI's loss rate,
// lost / (acked + lost) (0 when both are 0).
// Start: init_pkts_per_rtt (10) packets per RTT, as the simulator's sender starts (the env's
// 0.3-1.5 x bandwidth is unknowable).
class AuroraFeatures : public FeatureFn {
 public:
  AuroraFeatures(const json& f, bool loss_level)
      : loss_level_(loss_level),
        clip_(Param(f, "send_ratio_clip", 1000.0)),
        init_pkts_(Positive(f, "init_pkts_per_rtt", 10.0)),
        empty_(EmptyFrom(f, loss_level ? std::vector<float>{0.0f, 1.0f, 1.0f, 0.0f}
                                       : std::vector<float>{0.0f, 1.0f, 1.0f})) {}
  int dim() const override { return loss_level_ ? 4 : 3; }
  std::vector<float> Empty() const override { return empty_; }
  void Start(double* rate, double*) override { *rate = init_pkts_ * kMss / rtt_guess_; }
  void Compute(const MonitorStats& m, const RunningStats& run, float* out) override {
    const double grad = m.n_samples >= 2 ? m.RttSlope() : 0.0;
    const double ratio = (m.HasRtt() && run.min_mean_rtt < kBig * 0.5)
                             ? m.RttMean() / std::max(run.min_mean_rtt, 1e-9)
                             : 1.0;
    double send = m.acked > 0 ? m.sent / std::max(m.acked, 1e-30) : 1.0;
    send = std::min(std::max(send, 0.0), clip_);
    out[0] = static_cast<float>(grad);
    out[1] = static_cast<float>(ratio);
    out[2] = static_cast<float>(send);
    if (loss_level_) out[3] = static_cast<float>(m.LossRate());
  }

 private:
  bool loss_level_;
  double clip_, init_pkts_;
  std::vector<float> empty_;
};

inline double Ewma(double prev, double now, double gain, bool first) {
  return first ? now : gain * now + (1.0 - gain) * prev;
}

// Python twin: jaxcc/senders/pareto_v1.py, over jaxcc/envs/pareto.py `signals` + `features`:
// [delay flag, dR/20, (dD/dT)/5, dL/dT, X]; stateful across MIs (EWMAs, previous step).
// Start: the env's init_pkts_per_rtt packets per init_rtt_s, as the simulator's sender starts.
class ParetoFeatures : public FeatureFn {
 public:
  explicit ParetoFeatures(const json& f) : ParetoFeatures(f, 5) {}
  int dim() const override { return 5; }
  std::vector<float> Empty() const override { return empty_; }
  void Start(double* rate, double*) override { *rate = init_rate_; }
  void Compute(const MonitorStats& m, const RunningStats& run, float* out) override {
    const bool first = !started_;
    // The fallback (the sim's propagation RTT) only matters when no RTT was ever seen, and
    // then the EWMA RTT is 0 and d is 0 whatever the fallback is.
    const double min_rtt = run.KnownMinRtt(0.0);
    const double rtt = m.HasRtt() ? Ewma(rtt_, m.RttMean(), gain_, first || rtt_ <= 0) : rtt_;
    const double R = Ewma(R_, m.DeliveryRate(), gain_, first);
    const double l = Ewma(l_, m.LossRate(), gain_, first);
    const double dt_ms = m.duration * 1000.0;
    const double d_ms = rtt > 0 ? std::max(rtt - min_rtt, 0.0) * 1000.0 : 0.0;
    const double r_floor = kMss / std::max(m.duration, 1e-9);  // one packet per step
    double dR = (R - R_) / std::max(std::min(R_, R), r_floor);
    double dD = (d_ms - d_ms_) / std::max(d_ms_, d_floor_ms_) / dt_ms;
    double dL = (l - l_) / std::max(l_, l_floor_) / dt_ms;
    if (first) dR = dD = dL = 0.0;
    const bool delayed = d_ms >= d_min_ms_;
    const double S = m.SendRate();
    const double X = delayed ? (S - R) / std::max(R, r_floor) : 0.0;
    const bool exp_now = exp_delay_ || delayed;
    out[0] = exp_now ? 1.0f : 0.0f;
    out[1] = static_cast<float>(dR / scale_dR_);
    out[2] = static_cast<float>(dD / scale_dD_);
    out[3] = static_cast<float>(dL);
    out[4] = static_cast<float>(X);
    started_ = true;
    rtt_ = rtt;
    R_ = R;
    l_ = l;
    d_ms_ = d_ms;
    exp_delay_ = exp_now;
  }

 protected:
  // `dim`: the length of the feature vector ("empty" must list that many numbers).
  ParetoFeatures(const json& f, size_t dim)
      : gain_(Param(f, "ewma_gain", 0.8)),
        scale_dR_(Param(f, "scale_dR", 20.0)),
        scale_dD_(Param(f, "scale_dD", 5.0)),
        d_min_ms_(Param(f, "d_min_ms", 4.0)),
        d_floor_ms_(Param(f, "d_floor_ms", 0.01)),
        l_floor_(Param(f, "l_floor", 0.001)),
        init_rate_(Positive(f, "init_pkts_per_rtt", 10.0) * kMss / Positive(f, "init_rtt_s", 0.09)),
        empty_(EmptyFrom(f, std::vector<float>(dim, 0.0f))) {}

  double R() const { return R_; }  // the EWMA delivery rate after the last Compute (bytes/s)

 private:
  double gain_, scale_dR_, scale_dD_, d_min_ms_, d_floor_ms_, l_floor_, init_rate_;
  std::vector<float> empty_;
  bool started_ = false, exp_delay_ = false;
  double rtt_ = 0, R_ = 0, l_ = 0, d_ms_ = 0;
};

// Python twin: jaxcc/senders/pareto_v2.py, over jaxcc/envs/pareto.py `signals` + `features`
// with feature_set "pareto_v2" (Pareto-Fair v2, ours, not the paper's): pareto_v1's five and
// the flow's own standing queue in packets,
//   5. log2(1 + q) / 8,  q = R * d / MSS,  d = max(MI min RTT sample - min RTT, 0) when the MI
//      had an RTT sample, else 0,
// with R pareto_v1's EWMA delivery rate after this MI and the min RTT over the connection
// including this MI (R * d is Vegas's "extra packets in the queue", Brakmo & Peterson 1995;
// the MI's smallest sample is Copa's RTTstanding, Arun & Balakrishnan 2018, §2.1).
// Everything else (start, action rate * (1 + a) over the file's head range) is pareto_v1's.
// A file that states its action range (features.action_low/high, export_features_spec) must
// have a continuous head over that range and a rate_multiplicative action.
class ParetoV2Features : public ParetoFeatures {
 public:
  explicit ParetoV2Features(const json& f)
      : ParetoFeatures(f, 6),
        has_range_(f.contains("action_low") || f.contains("action_high")),
        a_low_(Param(f, "action_low", -0.3)),
        a_high_(Param(f, "action_high", 0.5)) {}
  int dim() const override { return 6; }

  void Check(const Policy& p) const override {
    if (p.action().type != ActionType::kRateMultiplicative)
      throw PolicyError("pareto_v2 needs action rate_multiplicative (rate x (1 + a))");
    if (!has_range_) return;
    const Head& h = p.head();
    const double tol = 1e-6 * (std::fabs(a_low_) + std::fabs(a_high_));
    if (h.type != HeadType::kContinuous || std::fabs(h.low - a_low_) > tol || std::fabs(h.high - a_high_) > tol)
      throw PolicyError("pareto_v2 needs a continuous head over the feature set's action range [" + G(a_low_) +
                        ", " + G(a_high_) + "] (features.action_low/high), the file's is [" + G(h.low) + ", " +
                        G(h.high) + "]");
  }

  void Compute(const MonitorStats& m, const RunningStats& run, float* out) override {
    ParetoFeatures::Compute(m, run, out);
    const double d_stand = m.HasRtt() ? std::max(m.rtt_min - run.KnownMinRtt(0.0), 0.0) : 0.0;
    const double q_pkts = R() * d_stand / kMss;
    out[5] = static_cast<float>(std::log2(1.0 + q_pkts) / 8.0);
  }

 private:
  bool has_range_;
  double a_low_, a_high_;
};


// Python twin: jaxcc/senders/eagle_v1.py, over jaxcc/envs/eagle.py `EagleEnv.observe`
// (features) and `EagleEnv.apply_action` / `cwnd_for` (window), from the Eagle paper (INFOCOM 2020),
// §III-B:
//   "States": per step (3 RTTs, "Each time step lasts for three RTTs"), the last four stacked:
//     0. delay flag: the flow has experienced delay (queuing delay >= delay_thresh_ms) before;
//     1. while delayed ("if we experience a long delay"), decreases - increases, each the
//        cumulative product of the rate multipliers applied since the delay appeared; else 0;
//     2. EWMA of the queuing delay, MI mean RTT - min RTT (s);
//     3. EWMA of the loss rate;
//     4. ratio of the change in the delivery rate, (d_t - d_{t-1}) / d_{t-1}.
//   "Actions": rate x2.89, x1.25, hold, /1.25, /2.89 (the action block's rate_table) and a cwnd
//     of "a small multiple of [the] BDP estimate", the highest delivery rate x min RTT:
//     cwnd = cwnd_gain x cwnd_factors[a] x BDP (factors 2, 1.25, 1, 1/1.25, 1/2), at least
//     min_cwnd_pkts; 10 packets until a BDP can be estimated.  The highest delivery rate is the
//     max over the last bw_window_steps MIs (BBR's windowed BtlBw filter; 0 or absent: over the
//     whole connection, as files from before the window was added were trained).
//   "Startup": 300 kbit/s and a cwnd of 10 packets.
class EagleFeatures : public FeatureFn {
 public:
  static constexpr size_t kActions = 5;  // eagle.N_ACTIONS
  explicit EagleFeatures(const json& f)
      : gain_(Param(f, "ewma_gain", 0.8)),
        thresh_ms_(Param(f, "delay_thresh_ms", 4.0)),
        mult_(ParamList(f, "multipliers", {2.89, 1.25, 1.0, 1.0 / 1.25, 1.0 / 2.89}, kActions)),
        cwnd_factors_(ParamList(f, "cwnd_factors", {2.0, 1.25, 1.0, 1.0 / 1.25, 0.5}, kActions)),
        cwnd_gain_(Positive(f, "cwnd_gain", 2.0)),
        init_rate_mbps_(Positive(f, "init_rate_mbps", 0.3)),
        init_cwnd_pkts_(Positive(f, "init_cwnd_pkts", 10.0)),
        min_cwnd_pkts_(Positive(f, "min_cwnd_pkts", 4.0)),
        bw_window_steps_(Param(f, "bw_window_steps", 0.0)),
        empty_(EmptyFrom(f, {0, 0, 0, 0, 0})) {
    if (!(bw_window_steps_ >= 0 && bw_window_steps_ <= kMaxBwWindow) || bw_window_steps_ != std::floor(bw_window_steps_))
      throw PolicyError("policy features: 'bw_window_steps' must be an integer in [0, " +
                        std::to_string(kMaxBwWindow) + "]");
    for (double m : mult_)
      if (!(m > 0)) throw PolicyError("policy features: 'multipliers' must all be > 0");
    for (double k : cwnd_factors_)
      if (!(k > 0)) throw PolicyError("policy features: 'cwnd_factors' must all be > 0");
  }
  int dim() const override { return 5; }
  std::vector<float> Empty() const override { return empty_; }

  void Check(const Policy& p) const override {
    if (!Discrete(p) || p.head().n != static_cast<int>(mult_.size()))
      throw PolicyError("eagle_v1 needs a discrete head over " + std::to_string(mult_.size()) + " actions");
    if (p.action().type != ActionType::kRateTable || !SameTable(p.action().table, mult_))
      throw PolicyError("eagle_v1 needs action rate_table with the feature set's multipliers " + Join(mult_));
  }

  void Start(double* rate, double* cwnd) override {
    *rate = init_rate_mbps_ * kBytesPerMbit;
    *cwnd = init_cwnd_pkts_ * kMss;
  }

  void Compute(const MonitorStats& m, const RunningStats& run, float* out) override {
    const bool first = !started_;
    const double min_rtt = run.KnownMinRtt(rtt_guess_);
    const double q_sample = std::max(m.RttMean() - min_rtt, 0.0);
    const double q = m.HasRtt() ? Ewma(q_, q_sample, gain_, first) : q_;
    const double l = Ewma(l_, m.LossRate(), gain_, first);
    const double deliv = m.DeliveryRate();
    const double floor = kMss / std::max(m.duration, 1e-9);
    const double ratio_dd = first ? 0.0 : (deliv - deliv_) / std::max(deliv_, floor);
    const bool delayed = q * 1000.0 >= thresh_ms_;
    // eagle.update_counters with the action applied during this MI. The environment's table
    // is float32 (so is 1/mult); the same roundings here keep the products bit-close.
    const float mult = static_cast<float>(mult_[last_action_]);
    const double inc2 = inc_ * (mult > 1.0f ? static_cast<double>(mult) : 1.0);
    const double dec2 = dec_ * (mult < 1.0f ? static_cast<double>(1.0f / mult) : 1.0);
    inc_ = delayed ? inc2 : 1.0;
    dec_ = delayed ? dec2 : 1.0;
    exp_delay_ = exp_delay_ || delayed;
    out[0] = exp_delay_ ? 1.0f : 0.0f;
    out[1] = static_cast<float>(delayed ? dec_ - inc_ : 0.0);
    out[2] = static_cast<float>(q);
    out[3] = static_cast<float>(l);
    out[4] = static_cast<float>(ratio_dd);
    started_ = true;
    q_ = q;
    l_ = l;
    deliv_ = deliv;
    recent_deliv_.push_front(deliv);
    if (recent_deliv_.size() > static_cast<size_t>(bw_window_steps_)) recent_deliv_.pop_back();
  }

  bool AfterAction(const Policy&, const PolicyOutput& out, const RunningStats& run, double, double,
                   double*, double* cwnd) override {
    // The rate is the action block's (rate x multipliers[a], clamped); the window is Eagle's.
    const int a = out.index;
    if (a < 0 || a >= static_cast<int>(mult_.size())) throw PolicyError("eagle_v1: action index out of range");
    const double min_rtt = run.min_rtt < kBig * 0.5 ? run.min_rtt : kBig;
    double bw = run.max_delivery;
    if (bw_window_steps_ > 0) {
      bw = 0;
      for (double d : recent_deliv_) bw = std::max(bw, d);
    }
    const double bdp = bw * min_rtt;
    const bool known = bdp > 0 && min_rtt < kBig * 0.5;
    *cwnd = known ? std::max(cwnd_gain_ * static_cast<double>(static_cast<float>(cwnd_factors_[a])) * bdp,
                             min_cwnd_pkts_ * kMss)
                  : init_cwnd_pkts_ * kMss;
    last_action_ = a;
    return false;
  }

 private:
  double gain_, thresh_ms_;
  std::vector<double> mult_, cwnd_factors_;
  static constexpr double kMaxBwWindow = 16;  // eagle.MAX_BW_WINDOW
  double cwnd_gain_, init_rate_mbps_, init_cwnd_pkts_, min_cwnd_pkts_, bw_window_steps_;
  std::vector<float> empty_;
  bool started_ = false, exp_delay_ = false;
  double inc_ = 1, dec_ = 1, q_ = 0, l_ = 0, deliv_ = 0;
  std::deque<double> recent_deliv_;  // newest first, at most bw_window_steps_
  int last_action_ = 2;  // the environment's initial last action: hold
};

// Python twin: jaxcc/senders/mocc_v1.py, over jaxcc/envs/mocc.py `MoccEnv.observe` (features)
// and `MoccEnv.apply_action` (window): MOCC
// (IWQoS 2021) §IV-A state
// [Delay, ACK rate, sending rate, cwnd], normalised as the environment does:
//   0. MI mean RTT / timeout, timeout = max(timeout_min_s, timeout_rtts x min RTT) (the min RTT
//      when the MI had no sample);
//   1. ACK rate / max ACK rate over the connection; 2. sending rate / max ACK rate;
//   3. cwnd in force during the MI / (max ACK rate x min RTT); 1-3 are 0 before any ACK.
//   With max_ack_ewma a < 1 the max ACK rate is the running max of e = (1 - a) e + a x ACK
//   rate (e = the first MI's ACK rate), not of the MI's own ACK rate (1, the default: the raw max).
// Actions (§IV-A): cwnd x cwnd_mults[a] + cwnd_deltas_pkts[a] packets, within [min_cwnd_pkts,
// max_cwnd_pkts] (without the fields: halve, -50, -10, hold, +10, double, +50; deltas without
// multipliers: multipliers 1); after
// init_step MIs the action is overridden by §IV-B's init-cwnd, b x F(mean ACK rate) packets
// (F: the smallest of bw_set_mbps at or above the rate in Mbit/s). The window is paced at
// pacing_gain x cwnd / min RTT. The preference vector is the policy's goal input.
class MoccFeatures : public FeatureFn {
 public:
  explicit MoccFeatures(const json& f)
      : deltas_pkts_(ParamList(f, "cwnd_deltas_pkts", {0.0, -50.0, -10.0, 0.0, 10.0, 0.0, 50.0})),
        mults_(ParamList(f, "cwnd_mults",
                         f.contains("cwnd_deltas_pkts") ? std::vector<double>(deltas_pkts_.size(), 1.0)
                                                        : std::vector<double>{0.5, 1.0, 1.0, 1.0, 1.0, 2.0, 1.0},
                         deltas_pkts_.size())),
        bw_set_mbps_(ParamList(f, "bw_set_mbps", {6.0, 12.0, 24.0, 50.0, 100.0})),
        timeout_min_s_(Positive(f, "timeout_min_s", 0.2)),
        timeout_rtts_(Positive(f, "timeout_rtts", 2.0)),
        init_cwnd_pkts_(Positive(f, "init_cwnd_pkts", 10.0)),
        min_cwnd_pkts_(Positive(f, "min_cwnd_pkts", 2.0)),
        max_cwnd_pkts_(Positive(f, "max_cwnd_pkts", 10000.0)),
        b_(Positive(f, "b", 2.5)),
        init_step_(Param(f, "init_step", 2.0)),
        init_ref_rtt_s_(Param(f, "init_ref_rtt_s", 0.0)),
        max_ack_ewma_(Param(f, "max_ack_ewma", 1.0)),
        pacing_gain_(Positive(f, "pacing_gain", 1.2)),
        goal_dim_(f.contains("objectives") && f["objectives"].is_array() ? f["objectives"].size() : 3),
        empty_(EmptyFrom(f, {0, 0, 0, 0})) {
    for (size_t i = 1; i < bw_set_mbps_.size(); ++i)
      if (!(bw_set_mbps_[i] > bw_set_mbps_[i - 1]))
        throw PolicyError("policy features: 'bw_set_mbps' must be increasing");
    if (init_step_ < 0 || init_step_ != std::floor(init_step_))
      throw PolicyError("policy features: 'init_step' must be an integer >= 0");
    if (!(init_ref_rtt_s_ >= 0 && init_ref_rtt_s_ <= kInitRefRttMaxS))
      throw PolicyError("policy features: 'init_ref_rtt_s' must be in [0, 1] s (0: eq. 1 unscaled; mocc_v1)");
    if (!(max_ack_ewma_ > 0 && max_ack_ewma_ <= 1))
      throw PolicyError("policy features: 'max_ack_ewma' must be in (0, 1] (1: the running max of the raw ACK rate; mocc_v1)");
  }
  int dim() const override { return 4; }
  std::vector<float> Empty() const override { return empty_; }

  void Check(const Policy& p) const override {
    if (!Discrete(p) || p.head().n != static_cast<int>(deltas_pkts_.size()))
      throw PolicyError("mocc_v1 needs a discrete or q_values head over " + std::to_string(deltas_pkts_.size()) +
                        " actions");
    std::vector<double> bytes;
    for (double d : deltas_pkts_) bytes.push_back(d * kMss);
    if (p.action().type != ActionType::kCwndTable || !SameTable(p.action().table, bytes))
      throw PolicyError("mocc_v1 needs action cwnd_table with deltas " + Join(bytes) + " bytes (cwnd_deltas_pkts x 1500)");
    if (!SameTable(p.action().cwnd_mults, mults_))
      throw PolicyError("mocc_v1 needs action.multipliers " + Join(mults_) + " (features.cwnd_mults)");
    if (p.goal_dim() != static_cast<int>(goal_dim_))
      throw PolicyError("mocc_v1 needs a " + std::to_string(goal_dim_) + "-value preference goal, the policy has goal_dim " +
                        std::to_string(p.goal_dim()));
  }

  void Start(double*, double* cwnd) override { *cwnd = cwnd_ = init_cwnd_pkts_ * kMss; }

  void Compute(const MonitorStats& m, const RunningStats& run, float* out) override {
    const double min_rtt = run.KnownMinRtt(rtt_guess_);
    const double tmo = std::max(timeout_min_s_, timeout_rtts_ * min_rtt);
    const double delay = m.HasRtt() ? m.RttMean() : min_rtt;
    const double ack = m.DeliveryRate(), snd = m.SendRate();
    const double ewma = steps_ > 0 ? (1.0 - max_ack_ewma_) * ack_ewma_ + max_ack_ewma_ * ack : ack;
    const double max_ack = std::max(max_ack_, ewma);
    const bool ok = max_ack > 0;
    out[0] = static_cast<float>(delay / tmo);
    out[1] = static_cast<float>(ok ? ack / std::max(max_ack, 1e-9) : 0.0);
    out[2] = static_cast<float>(ok ? snd / std::max(max_ack, 1e-9) : 0.0);
    out[3] = static_cast<float>(ok ? cwnd_ / std::max(max_ack * min_rtt, 1e-9) : 0.0);
    acked_sum_ += m.acked;
    time_sum_ += m.duration;
    max_ack_ = max_ack;
    ack_ewma_ = ewma;
    steps_ += 1;
  }

  bool AfterAction(const Policy& p, const PolicyOutput& out, const RunningStats& run, double, double cwnd_in,
                   double* rate, double* cwnd) override {
    const int a = out.index;
    if (a < 0 || a >= static_cast<int>(deltas_pkts_.size())) throw PolicyError("mocc_v1: action index out of range");
    double c = std::min(std::max(cwnd_in * static_cast<double>(static_cast<float>(mults_[a])) +
                                     static_cast<double>(static_cast<float>(deltas_pkts_[a])) * kMss,
                                 min_cwnd_pkts_ * kMss),
                        max_cwnd_pkts_ * kMss);
    const double min_rtt = run.KnownMinRtt(rtt_guess_);
    if (steps_ == init_step_) c = InitCwndPkts(acked_sum_ / std::max(time_sum_, 1e-9), min_rtt) * kMss;
    *cwnd = cwnd_ = c;
    *rate = ClampRate(p, pacing_gain_ * c / std::max(min_rtt, 1e-6));
    return true;
  }

 private:
  // mocc.init_cwnd: b x the smallest set bandwidth (Mbit/s) at or above the ACK rate, the
  // largest one when the rate exceeds them all; in packets; with init_ref_rtt_s > 0, scaled by
  // min RTT / init_ref_rtt_s.
  double InitCwndPkts(double ack_rate, double min_rtt) const {
    const double mbps = ack_rate / kBytesPerMbit;
    size_t i = 0;
    while (i + 1 < bw_set_mbps_.size() && bw_set_mbps_[i] < mbps) ++i;
    const double scale = init_ref_rtt_s_ > 0 ? min_rtt / init_ref_rtt_s_ : 1.0;
    return b_ * bw_set_mbps_[i] * scale;
  }

  static constexpr double kInitRefRttMaxS = 1.0;  // jaxcc/envs/mocc.py INIT_REF_RTT_MAX_S
  std::vector<double> deltas_pkts_, mults_, bw_set_mbps_;
  double timeout_min_s_, timeout_rtts_, init_cwnd_pkts_, min_cwnd_pkts_, max_cwnd_pkts_, b_, init_step_, init_ref_rtt_s_,
      max_ack_ewma_, pacing_gain_;
  size_t goal_dim_;
  std::vector<float> empty_;
  double cwnd_ = 0, acked_sum_ = 0, time_sum_ = 0, max_ack_ = 0, ack_ewma_ = 0, steps_ = 0;
};

// Python twin: jaxcc/senders/deepcc_v1.py, over jaxcc/envs/deepcc.py `DeepccEnv.observe` and
// `action_to_rate`: DeepCC (IEEE/ACM ToN 2022) §IV-B state s_t and eq. 1 measurement m_t:
//   0. s1 last action u in [0, 1] (the log-scale rate position, below);
//   1. s2 EWMA RTT / min RTT (1 before any sample);
//   2. s3 sending rate / throughput_max (the largest delivery rate so far, this MI included),
//      clipped to [0, send_ratio_max]; 0 before any delivery;
//   3. s4 (MI mean RTT - min RTT) / min RTT (0 without a sample);
//   4. m1 throughput / max throughput so far; 5. m2 delay_t / min RTT, delay_t the MI's
//      95th-percentile RTT (nearest rank over the packets' samples, as the spec's delay_p95
//      says for a per-packet datapath; the per-tick simulator's samples make it the max), the
//      previous m2 when the MI had no sample (1 at the start); 6. m3 loss rate.
// Action: rate = low x (bound / low)^u (features.scale "log", low_mbps, bound_mbps; the
// action block's rate_absolute with scale log), u = clip(head output normalised to [0, 1]).
// With features.cwnd_rtts > 0 (jaxcc/envs/deepcc.py `ack_clock_cwnd`, the window the paper's
// sender derives from its rate and ACK-clocks) the decision also sets cwnd = cwnd_rtts x rate x
// min RTT (the --rtt-hint-ms guess before a sample), at least two packets; none on the first
// decision, before any MI. The start: u = init_action (1/3: 1 Mbit/s on 0.1-100). The goal
// (throughput, delay, loss weights) is the policy's goal input.
class DeepccFeatures : public FeatureFn {
 public:
  explicit DeepccFeatures(const json& f)
      : gain_(Param(f, "ewma_gain", 0.8)),
        bound_mbps_(Positive(f, "bound_mbps", 100.0)),
        low_mbps_(Positive(f, "low_mbps", 0.1)),
        ratio_max_(Positive(f, "send_ratio_max", 10.0)),
        cwnd_rtts_(Param(f, "cwnd_rtts", 0.0)),
        goal_dim_(f.contains("goal") && f["goal"].is_array() ? f["goal"].size() : 3),
        empty_(EmptyFrom(f, {0, 0, 0, 0, 0, 0, 0})),
        last_action_(Param(f, "init_action", 1.0 / 3.0)) {
    if (!(low_mbps_ < bound_mbps_))
      throw PolicyError("policy features: 'low_mbps' must be < 'bound_mbps' (deepcc_v1)");
    if (f.contains("scale") && !(f["scale"].is_string() && f["scale"].get<std::string>() == "log"))
      throw PolicyError("policy features: 'scale' must be \"log\" (deepcc_v1)");
    if (!(last_action_ >= 0 && last_action_ <= 1))
      throw PolicyError("policy features: 'init_action' must be in [0, 1] (deepcc_v1)");
    if (!(cwnd_rtts_ >= 0 && cwnd_rtts_ <= kCwndRttsMax))
      throw PolicyError("policy features: 'cwnd_rtts' must be in [0, 100] (0: no window; deepcc_v1)");
  }
  int dim() const override { return 7; }
  std::vector<float> Empty() const override { return empty_; }
  bool NeedsRttSamples() const override { return true; }

  void Check(const Policy& p) const override {
    if (Discrete(p)) throw PolicyError("deepcc_v1 needs a continuous or gaussian_mean head (a rate in [0, bound])");
    if (p.action().type != ActionType::kRateAbsolute ||
        std::fabs(p.action().bound_mbps - bound_mbps_) > 1e-9 * bound_mbps_)
      throw PolicyError("deepcc_v1 needs action rate_absolute with bound_mbps " + std::to_string(bound_mbps_) +
                        " (the feature set's bound)");
    if (!p.action().log_scale || std::fabs(p.action().low_mbps - low_mbps_) > 1e-9 * low_mbps_)
      throw PolicyError("deepcc_v1 needs action rate_absolute with scale log and low_mbps " + std::to_string(low_mbps_) +
                        " (the feature set's low)");
    if (p.goal_dim() != static_cast<int>(goal_dim_))
      throw PolicyError("deepcc_v1 needs a " + std::to_string(goal_dim_) + "-value goal, the policy has goal_dim " +
                        std::to_string(p.goal_dim()));
  }

  void Compute(const MonitorStats& m, const RunningStats& run, float* out) override {
    const bool first = !started_;
    const double min_rtt = run.KnownMinRtt(rtt_guess_);
    const bool has = m.HasRtt();
    const double mean = m.RttMean();
    const double rtt = has ? Ewma(rtt_, mean, gain_, first || rtt_ <= 0) : rtt_;
    const double thr = m.DeliveryRate();
    const double thr_max = std::max(thr_max_, thr);
    double delay_t = m.rtt_max;
    if (has && !m.rtts.empty()) {
      scratch_.assign(m.rtts.begin(), m.rtts.end());
      delay_t = NearestRankPercentile(&scratch_, 95.0);
    }
    const double m2 = has ? delay_t / std::max(min_rtt, 1e-9) : m2_;
    out[0] = static_cast<float>(last_action_);
    out[1] = static_cast<float>(rtt > 0 ? rtt / std::max(min_rtt, 1e-9) : 1.0);
    out[2] = static_cast<float>(thr_max > 0 ? std::min(m.SendRate() / std::max(thr_max, 1e-9), ratio_max_) : 0.0);
    out[3] = static_cast<float>(has ? std::max(mean - min_rtt, 0.0) / std::max(min_rtt, 1e-9) : 0.0);
    out[4] = static_cast<float>(thr_max > 0 ? thr / std::max(thr_max, 1e-9) : 0.0);
    out[5] = static_cast<float>(m2);
    out[6] = static_cast<float>(m.LossRate());
    started_ = true;
    rtt_ = rtt;
    thr_max_ = thr_max;
    m2_ = m2;
  }

  bool AfterAction(const Policy& p, const PolicyOutput& out, const RunningStats& run, double, double,
                   double* rate, double* cwnd) override {
    const Head& h = p.head();
    const double a = out.values.empty() ? 0.0 : out.values[0];
    double u = (a - h.low) / (h.high - h.low);
    u = std::isnan(u) ? 0.0 : std::min(std::max(u, 0.0), 1.0);
    last_action_ = u;
    const double r = low_mbps_ * std::exp(u * std::log(bound_mbps_ / low_mbps_)) * kBytesPerMbit;
    *rate = ClampRate(p, r);
    if (cwnd_rtts_ > 0 && started_) *cwnd = std::max(cwnd_rtts_ * r * run.KnownMinRtt(rtt_guess_), 2.0 * kMss);
    return true;
  }

 private:
  static constexpr double kCwndRttsMax = 100.0;  // jaxcc/envs/deepcc.py CWND_RTTS_MAX
  double gain_, bound_mbps_, low_mbps_, ratio_max_, cwnd_rtts_;
  size_t goal_dim_;
  std::vector<float> empty_;
  std::vector<double> scratch_;
  bool started_ = false;
  double last_action_, rtt_ = 0, thr_max_ = 0, m2_ = 1.0;
};

// New feature sets: their section above this line (datapath/templates/feature_set).

// Every feature set, one row each: the name a policy file's features.name gives, and how its
// section is built from the file's features block. The one registration point of the C++ side.
struct FeatureSetEntry {
  const char* name;
  std::unique_ptr<FeatureFn> (*make)(const json& features);
};

template <class T>
std::unique_ptr<FeatureFn> Make(const json& f) {
  return std::make_unique<T>(f);
}

const FeatureSetEntry kFeatureSets[] = {
    {"aurora_v1",
     [](const json& f) -> std::unique_ptr<FeatureFn> { return std::make_unique<AuroraFeatures>(f, false); }},
    {"aurora_v2",
     [](const json& f) -> std::unique_ptr<FeatureFn> { return std::make_unique<AuroraFeatures>(f, true); }},
    {"pareto_v1", Make<ParetoFeatures>},
    {"pareto_v2", Make<ParetoV2Features>},
    {"eagle_v1", Make<EagleFeatures>},
    {"mocc_v1", Make<MoccFeatures>},
    {"deepcc_v1", Make<DeepccFeatures>},
    // New feature sets: their row above this line.
};

}  // namespace

std::vector<std::string> KnownFeatureSets() {
  std::vector<std::string> out;
  for (const FeatureSetEntry& e : kFeatureSets) out.push_back(e.name);
  return out;
}

std::unique_ptr<FeatureFn> MakeFeatureFn(const std::string& name, const std::string& features_json) {
  json f = json::parse(features_json, nullptr, false);
  if (f.is_discarded() || !f.is_object()) throw PolicyError("policy features: not a JSON object");
  for (const FeatureSetEntry& e : kFeatureSets)
    if (name == e.name) return e.make(f);
  std::string known;
  for (const auto& k : KnownFeatureSets()) known += (known.empty() ? "" : ", ") + k;
  throw PolicyError("feature set '" + name + "' is not implemented in the datapath (known: " + known + ")");
}

void Decide(const Policy& policy, FeatureFn* features, const PolicyOutput& out, const RunningStats& run,
            double rate, double cwnd, double srtt, double* new_rate, double* new_cwnd) {
  policy.MapAction(out, rate, cwnd, new_rate, new_cwnd);
  const bool paced = features->AfterAction(policy, out, run, rate, cwnd, new_rate, new_cwnd);
  if (!paced && policy.action().type == ActionType::kCwndTable)
    *new_rate = std::max(2.0 * *new_cwnd / std::max(srtt, 1e-6), policy.action().min_mbps * kBytesPerMbit);
}

}  // namespace jaxcc
