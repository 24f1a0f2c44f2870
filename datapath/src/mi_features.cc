#include "mi_features.h"

#include <algorithm>
#include <cmath>
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

// jaxcc/envs/aurora.py `features`: (latency gradient, latency ratio, sending ratio).
class AuroraFeatures : public FeatureFn {
 public:
  explicit AuroraFeatures(const json& f)
      : clip_(Param(f, "send_ratio_clip", 1000.0)), empty_(EmptyFrom(f, {0.0f, 1.0f, 1.0f})) {}
  int dim() const override { return 3; }
  std::vector<float> Empty() const override { return empty_; }
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
  }

 private:
  double clip_;
  std::vector<float> empty_;
};

inline double Ewma(double prev, double now, double gain, bool first) {
  return first ? now : gain * now + (1.0 - gain) * prev;
}

// jaxcc/envs/pareto.py `signals` + `features`:
// [delay flag, dR/20, (dD/dT)/5, dL/dT, X]; stateful across MIs (EWMAs, previous step).
class ParetoFeatures : public FeatureFn {
 public:
  explicit ParetoFeatures(const json& f)
      : gain_(Param(f, "ewma_gain", 0.8)),
        scale_dR_(Param(f, "scale_dR", 20.0)),
        scale_dD_(Param(f, "scale_dD", 5.0)),
        d_min_ms_(Param(f, "d_min_ms", 4.0)),
        d_floor_ms_(Param(f, "d_floor_ms", 0.01)),
        l_floor_(Param(f, "l_floor", 0.001)),
        empty_(EmptyFrom(f, {0, 0, 0, 0, 0})) {}
  int dim() const override { return 5; }
  std::vector<float> Empty() const override { return empty_; }
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

 private:
  double gain_, scale_dR_, scale_dD_, d_min_ms_, d_floor_ms_, l_floor_;
  std::vector<float> empty_;
  bool started_ = false, exp_delay_ = false;
  double rtt_ = 0, R_ = 0, l_ = 0, d_ms_ = 0;
};

}  // namespace

std::vector<std::string> KnownFeatureSets() { return {"aurora_v1", "pareto_v1"}; }

std::unique_ptr<FeatureFn> MakeFeatureFn(const std::string& name, const std::string& features_json) {
  json f = json::parse(features_json, nullptr, false);
  if (f.is_discarded() || !f.is_object()) throw PolicyError("policy features: not a JSON object");
  if (name == "aurora_v1") return std::make_unique<AuroraFeatures>(f);
  if (name == "pareto_v1") return std::make_unique<ParetoFeatures>(f);
  std::string known;
  for (const auto& k : KnownFeatureSets()) known += (known.empty() ? "" : ", ") + k;
  throw PolicyError("feature set '" + name + "' is not implemented in the datapath (known: " + known + ")");
}

}  // namespace jaxcc
