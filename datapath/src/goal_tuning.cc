#include "goal_tuning.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <vector>

namespace jaxcc {
namespace {

std::string Trim(const std::string& s) {
  const char* ws = " \t\r\n";
  const size_t a = s.find_first_not_of(ws);
  if (a == std::string::npos) return "";
  const size_t b = s.find_last_not_of(ws);
  return s.substr(a, b - a + 1);
}

constexpr float kPrior[GoalTuner::kDim] = {1.0f, -1.0f, -1.0f};  // dm/dg without a usable pair

// m^(1) >= T^(1), m^(2) <= T^(2), m^(3) <= T^(3).
std::array<bool, GoalTuner::kDim> Met(const GoalTuner::Vec& m, const GoalTuner::Vec& t) {
  return {m[0] >= t[0], m[1] <= t[1], m[2] <= t[2]};
}

}  // namespace

std::string ParseNumberList(const std::string& text, std::vector<double>* out) {
  out->clear();
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    const std::string item = Trim(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    char* end = nullptr;
    errno = 0;
    const double x = std::strtod(item.c_str(), &end);
    if (item.empty() || *end != '\0' || errno != 0 || !std::isfinite(x)) return "'" + item + "' is not a number";
    out->push_back(x);
    if (comma == std::string::npos) return "";
    start = comma + 1;
  }
}

int GoalTuner::IntervalDecisions(double mi_rtts) {
  return std::max(1, static_cast<int>(std::ceil(kTuningRtts / mi_rtts - 1e-9)));
}

std::string GoalTuner::ParseTarget(const std::string& text, Vec* out) {
  const std::string bad =
      "must be throughput_mbps,delay_ms,loss (3 numbers: >= 0, >= 0, in [0, 1]), got '" + text + "'";
  std::vector<double> v;
  const std::string why = ParseNumberList(text, &v);
  if (!why.empty()) return bad + " (" + why + ")";
  if (v.size() != 3) return bad + " (" + std::to_string(v.size()) + " numbers)";
  if (v[0] < 0) return bad + " (throughput_mbps < 0)";
  if (v[1] < 0) return bad + " (delay_ms < 0)";
  if (v[2] < 0 || v[2] > 1) return bad + " (loss outside [0, 1])";
  for (int k = 0; k < 3; ++k) (*out)[k] = static_cast<float>(v[k]);
  return "";
}

GoalTuner::Vec GoalTuner::TargetHat(const Vec& target, float thr_max, float min_rtt) {
  return {target[0] * 125000.0f / std::max(thr_max, 1e-9f), 1.0f + target[1] / 1000.0f / std::max(min_rtt, 1e-9f),
          target[2]};
}

bool GoalTuner::ParseMode(const std::string& text, Mode* out) {
  if (text == "paper") {
    *out = Mode::kPaper;
  } else if (text == "p95") {
    *out = Mode::kP95;
  } else {
    return false;
  }
  return true;
}

float GoalTuner::DelayTail(std::vector<float> samples) {
  const int n = static_cast<int>(samples.size());
  if (n == 0) return 0.0f;
  const int r = (kTailPct * n + 99) / 100;  // ceil(95 n / 100), in integers as the Python twin
  std::sort(samples.begin(), samples.end());
  return samples[r - 1];
}

GoalTuner::GoalTuner(const Vec& target, const Vec& g0, Mode mode) : goal_(g0), target_(target), mode_(mode) {}

void GoalTuner::StepHat(const Vec& m_in, const Vec& t, float d_tail) {
  const bool p95 = mode_ == Mode::kP95;
  Vec m = m_in;
  if (p95) m[1] = d_tail;  // the interval's delay tail replaces its mean delay ratio
  // Store (goal in force, its measurement), oldest first.
  for (int j = 0; j + 1 < kK; ++j) {
    g_hist_[j] = g_hist_[j + 1];
    m_hist_[j] = m_hist_[j + 1];
  }
  g_hist_[kK - 1] = goal_;
  m_hist_[kK - 1] = m;
  n_ = std::min(n_ + 1, kK);
  const int first = kK - n_;
  Vec grad{};
  for (int i = 0; i < kDim; ++i) {
    // eq. 8: f = T on met dims; dJ/df = mean of (f - T).
    float s = 0;
    for (int j = first; j < kK; ++j) {
      const auto mt = Met(m_hist_[j], t);
      const float f = mt[i] ? t[i] : m_hist_[j][i];
      s += f - t[i];
    }
    const float dj_df = s / static_cast<float>(n_);
    // eq. 10: mean of dm/dg over stored consecutive pairs with |dg| >= kDgEps.
    float q = 0;
    int cnt = 0;
    for (int j = first; j + 1 < kK; ++j) {
      const float dg = g_hist_[j + 1][i] - g_hist_[j][i];
      if (std::fabs(dg) >= kDgEps) {
        q += (m_hist_[j + 1][i] - m_hist_[j][i]) / dg;
        ++cnt;
      }
    }
    const float qm = q / static_cast<float>(cnt > 0 ? cnt : 1);
    const float df_dg = (cnt > 0 && qm * kPrior[i] > 0) ? qm : kPrior[i];  // with the sign guard
    grad[i] = dj_df * df_dg;  // eq. 9
  }
  const auto now = Met(m, t);
  if (now[0] && now[1] && now[2]) {  // the newest interval met the whole target
    ++met_steps_;
    if (first_met_step_ == 0) first_met_step_ = steps_ + 1;
  }
  const bool thr_delay_met = now[0] && now[1];
  const bool follows = p95 && !now[1];  // "p95": g3 follows g2 whenever the delay is unmet
  const bool loss_active = (!now[2] && !thr_delay_met) || follows;
  grad[2] = loss_active ? grad[1] : 0.0f;
  const bool on[kDim] = {!now[0], !now[1], loss_active};
  // Adam (optax.adam: bias-corrected moments, eps outside the square root).
  ++count_;
  const float c1 = 1.0f - std::pow(kBeta1, static_cast<float>(count_));
  const float c2 = 1.0f - std::pow(kBeta2, static_cast<float>(count_));
  // "p95": the delay's jump distance against the target's queueing delay T2 itself (t[1] - 1).
  const float d_delay = (m[1] - t[1]) / (p95 ? std::max(t[1] - 1.0f, 1e-9f) : std::max(t[1], 1e-9f));
  const float dist[kDim] = {(t[0] - m[0]) / std::max(t[0], 1e-9f), d_delay,
                            follows ? d_delay : (m[2] - t[2]) / std::max(t[2], kLossScale)};
  const float lr = p95 ? kLrP95 : kLr;
  Vec g = goal_;
  float sum = 0;
  for (int i = 0; i < kDim; ++i) {
    const float gr = on[i] ? grad[i] : 0.0f;
    mu_[i] = kBeta1 * mu_[i] + (1.0f - kBeta1) * gr;
    nu_[i] = kBeta2 * nu_[i] + (1.0f - kBeta2) * gr * gr;
    const float upd = -lr * ((mu_[i] / c1) / (std::sqrt(nu_[i] / c2) + kAdamEps));
    if (on[i]) g[i] += upd;
    if (on[i] && dist[i] > kJumpThreshold) g[i] += kJumpValue;  // jump-out
    g[i] = std::max(g[i], kGFloor);                                // eq. 12
    sum += g[i];
  }
  for (int i = 0; i < kDim; ++i) goal_[i] = g[i] / sum;
  ++steps_;
}

}  // namespace jaxcc
