#include "safety.h"

#include <algorithm>
#include <cmath>

namespace jaxcc {

int MisFor(double rtts, double mi_rtts) { return std::max(1, static_cast<int>(std::ceil(rtts / mi_rtts - 1e-9))); }

bool NoFeedback(const MonitorStats& mi) { return mi.acked <= 0 && mi.n_samples <= 0; }

void Guard(bool dark, double rate_in, double cwnd_in, double* rate, double* cwnd) {
  if (!dark) return;
  *rate = std::min(*rate, rate_in);
  *cwnd = std::min(*cwnd, cwnd_in);
}

bool SafetyMonitor::Step(double acked, double lost, double n_samples, double duration, bool answered) {
  if (!answered) return fallback_;
  const double known = acked + lost;
  const double loss = known > 0 ? lost / std::max(known, 1e-30) : 0.0;
  const bool dark = acked <= 0 && n_samples <= 0;
  const bool bad = dark || loss >= kLossEnter;
  const bool good = !dark && loss < kLossExit;
  bad_run_ = bad ? bad_run_ + 1 : 0;
  bad_s_ = bad ? bad_s_ + duration : 0.0;
  good_run_ = good ? good_run_ + 1 : 0;
  if (fallback_) ++fallback_mis_;
  if (!fallback_ && bad_run_ >= enter_mis_ && bad_s_ >= kMinEnterS - kTimeSlackS) {
    fallback_ = true;
    ++entries_;
  } else if (fallback_ && good_run_ >= exit_mis_) {
    fallback_ = false;
  }
  return fallback_;
}

}  // namespace jaxcc
